//! Exact decimal arithmetic on scaled integers (`value × 10^-scale`), with a 256-bit
//! intermediate so that products and quotients of 38-digit numbers are exact before they
//! are rounded (half away from zero, as SQL Server rounds) to the result's scale.

use std::cmp::Ordering;

/// An unsigned 256-bit integer, four little-endian 64-bit limbs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct U256([u64; 4]);

impl Ord for U256 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.iter().rev().cmp(other.0.iter().rev())
    }
}

impl PartialOrd for U256 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl U256 {
    fn from_u128(v: u128) -> U256 {
        U256([v as u64, (v >> 64) as u64, 0, 0])
    }

    fn to_u128(self) -> Option<u128> {
        if self.0[2] != 0 || self.0[3] != 0 {
            return None;
        }
        Some(u128::from(self.0[0]) | u128::from(self.0[1]) << 64)
    }

    fn is_zero(&self) -> bool {
        self.0 == [0; 4]
    }

    fn checked_add(self, o: U256) -> Option<U256> {
        let mut out = [0u64; 4];
        let mut carry = false;
        for (i, slot) in out.iter_mut().enumerate() {
            let (s, c1) = self.0[i].overflowing_add(o.0[i]);
            let (s, c2) = s.overflowing_add(carry as u64);
            *slot = s;
            carry = c1 || c2;
        }
        (!carry).then_some(U256(out))
    }

    /// `self - o`; requires `self >= o`.
    fn sub(self, o: U256) -> U256 {
        let mut out = [0u64; 4];
        let mut borrow = false;
        for (i, slot) in out.iter_mut().enumerate() {
            let (d, b1) = self.0[i].overflowing_sub(o.0[i]);
            let (d, b2) = d.overflowing_sub(borrow as u64);
            *slot = d;
            borrow = b1 || b2;
        }
        U256(out)
    }

    fn checked_mul(self, o: U256) -> Option<U256> {
        let mut out = [0u64; 8];
        for i in 0..4 {
            let mut carry = 0u128;
            for j in 0..4 {
                let t = u128::from(self.0[i]) * u128::from(o.0[j]) + u128::from(out[i + j]) + carry;
                out[i + j] = t as u64;
                carry = t >> 64;
            }
            out[i + 4] = carry as u64;
        }
        if out[4..].iter().any(|&l| l != 0) {
            return None;
        }
        Some(U256([out[0], out[1], out[2], out[3]]))
    }

    fn bit(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }

    fn shl1(self) -> U256 {
        let l = self.0;
        U256([l[0] << 1, l[1] << 1 | l[0] >> 63, l[2] << 1 | l[1] >> 63, l[3] << 1 | l[2] >> 63])
    }

    /// Quotient and remainder; `d` must be non-zero.
    fn divrem(self, d: U256) -> (U256, U256) {
        let mut q = U256::default();
        let mut r = U256::default();
        for i in (0..256).rev() {
            // a remainder that shifts past 2^256 is certainly ≥ d; the wrapping subtraction
            // below is then still exact
            let carry = r.bit(255);
            r = r.shl1();
            if self.bit(i) {
                r.0[0] |= 1;
            }
            if carry || r >= d {
                r = r.sub(d);
                q.0[i / 64] |= 1 << (i % 64);
            }
        }
        (q, r)
    }

    fn pow10(n: u32) -> Option<U256> {
        let ten = U256::from_u128(10);
        (0..n).try_fold(U256::from_u128(1), |acc, _| acc.checked_mul(ten))
    }

    /// `self × 10^(to - from)`, rounded half away from zero when the scale shrinks.
    fn rescale(self, from: u32, to: u32) -> Option<U256> {
        if to >= from {
            return self.checked_mul(U256::pow10(to - from)?);
        }
        let d = U256::pow10(from - to)?;
        let (q, r) = self.divrem(d);
        if r.shl1() >= d {
            q.checked_add(U256::from_u128(1))
        } else {
            Some(q)
        }
    }
}

/// A signed 256-bit number as sign and magnitude.
#[derive(Clone, Copy, Debug)]
struct Wide {
    neg: bool,
    mag: U256,
}

impl Wide {
    fn new(v: i128) -> Wide {
        Wide { neg: v < 0, mag: U256::from_u128(v.unsigned_abs()) }
    }

    fn add(self, o: Wide) -> Option<Wide> {
        if self.neg == o.neg {
            return Some(Wide { neg: self.neg, mag: self.mag.checked_add(o.mag)? });
        }
        Some(if self.mag >= o.mag {
            Wide { neg: self.neg, mag: self.mag.sub(o.mag) }
        } else {
            Wide { neg: o.neg, mag: o.mag.sub(self.mag) }
        })
    }

    fn to_i128(self) -> Option<i128> {
        let m = self.mag.to_u128()?;
        let v = i128::try_from(m).ok()?;
        Some(if self.neg { -v } else { v })
    }

    fn rescale(self, from: u8, to: u8) -> Option<Wide> {
        Some(Wide { neg: self.neg, mag: self.mag.rescale(u32::from(from), u32::from(to))? })
    }
}

/// 10^n as i128 (n ≤ 38).
pub(crate) fn pow10(n: u8) -> Option<i128> {
    10i128.checked_pow(u32::from(n))
}

/// True when `v` has at most `precision` digits.
pub(crate) fn fits_precision(v: i128, precision: u8) -> bool {
    pow10(precision).is_none_or(|limit| v.unsigned_abs() < limit.unsigned_abs())
}

/// `value × 10^-from` at scale `to`, rounded half away from zero; `None` on overflow.
pub fn rescale_round(value: i128, from: u8, to: u8) -> Option<i128> {
    Wide::new(value).rescale(from, to)?.to_i128()
}

/// `value × 10^-from` at scale `to`, truncated toward zero; `None` on overflow.
pub(crate) fn rescale_trunc(value: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        return value.checked_mul(pow10(to - from)?);
    }
    match pow10(from - to) {
        Some(d) => Some(value / d),
        None => Some(0),
    }
}

/// `a + b` (`b` negated for subtraction) at scale `s`.
pub(crate) fn add(a: i128, sa: u8, b: i128, sb: u8, s: u8) -> Option<i128> {
    let common = sa.max(sb);
    let x = Wide::new(a).rescale(sa, common)?;
    let y = Wide::new(b).rescale(sb, common)?;
    x.add(y)?.rescale(common, s)?.to_i128()
}

/// `a × b` at scale `s`.
pub(crate) fn mul(a: i128, sa: u8, b: i128, sb: u8, s: u8) -> Option<i128> {
    let mag = U256::from_u128(a.unsigned_abs()).checked_mul(U256::from_u128(b.unsigned_abs()))?;
    Wide { neg: (a < 0) != (b < 0), mag }.rescale(sa + sb, s)?.to_i128()
}

/// `a ÷ b` at scale `s`, rounded half away from zero; `b` must be non-zero.
pub(crate) fn div(a: i128, sa: u8, b: i128, sb: u8, s: u8) -> Option<i128> {
    // a/10^sa ÷ b/10^sb × 10^s × 10 (a guard digit) = (a × 10^(s + sb + 1)) ÷ (b × 10^sa),
    // with the common power of ten cancelled so that only a quotient too large for the
    // result can overflow
    let (up, down) = (u32::from(s) + u32::from(sb) + 1, u32::from(sa));
    let common = up.min(down);
    let num = U256::from_u128(a.unsigned_abs()).checked_mul(U256::pow10(up - common)?)?;
    let Some(den) = U256::pow10(down - common).and_then(|p| U256::from_u128(b.unsigned_abs()).checked_mul(p)) else {
        return Some(0);
    };
    // one extra digit, truncated, decides the rounding
    let (q, _) = num.divrem(den);
    let (q, last) = q.divrem(U256::from_u128(10));
    let q = if last.to_u128()? >= 5 { q.checked_add(U256::from_u128(1))? } else { q };
    Wide { neg: (a < 0) != (b < 0) && !q.is_zero(), mag: q }.to_i128()
}

/// `a % b` (sign of `a`) at scale `s`; `b` must be non-zero.
pub(crate) fn rem(a: i128, sa: u8, b: i128, sb: u8, s: u8) -> Option<i128> {
    let common = sa.max(sb);
    let x = Wide::new(a).rescale(sa, common)?;
    let y = Wide::new(b).rescale(sb, common)?;
    let (_, r) = x.mag.divrem(y.mag);
    Wide { neg: a < 0, mag: r }.rescale(common, s)?.to_i128()
}

/// Compares `a × 10^-sa` with `b × 10^-sb` exactly.
pub(crate) fn cmp(a: i128, sa: u8, b: i128, sb: u8) -> Ordering {
    let common = sa.max(sb);
    let (Some(x), Some(y)) = (Wide::new(a).rescale(sa, common), Wide::new(b).rescale(sb, common)) else {
        return a.signum().cmp(&b.signum());
    };
    match (x.neg && !x.mag.is_zero(), y.neg && !y.mag.is_zero()) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => x.mag.cmp(&y.mag),
        (true, true) => y.mag.cmp(&x.mag),
    }
}

/// A decimal number as written: sign, integer digits and fraction digits (ASCII digits
/// only, either may be empty but not both).
#[derive(Debug, PartialEq)]
pub(crate) struct DecimalText<'a> {
    pub neg: bool,
    pub int: &'a str,
    pub frac: &'a str,
}

/// Parses `[+-]digits[.digits]` (no exponent), surrounding white space allowed.
pub(crate) fn parse_decimal_text(s: &str) -> Option<DecimalText<'_>> {
    let s = s.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n');
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    Some(DecimalText { neg, int, frac })
}

impl DecimalText<'_> {
    /// The number scaled to `scale` digits, rounded half away from zero; `None` when it
    /// needs more than 38 digits.
    pub(crate) fn scaled(&self, scale: u8) -> Option<i128> {
        let int = self.int.trim_start_matches('0');
        let mut v: i128 = 0;
        let push = |v: i128, d: u8| v.checked_mul(10)?.checked_add(i128::from(d - b'0'));
        for d in int.bytes() {
            v = push(v, d)?;
        }
        let frac = self.frac.as_bytes();
        for i in 0..usize::from(scale) {
            v = push(v, *frac.get(i).unwrap_or(&b'0'))?;
        }
        if frac.get(usize::from(scale)).is_some_and(|&d| d >= b'5') {
            v = v.checked_add(1)?;
        }
        if !fits_precision(v, 38) {
            return None;
        }
        Some(if self.neg { -v } else { v })
    }

    /// Digits left of the point, leading zeros dropped.
    pub(crate) fn integral_digits(&self) -> usize {
        self.int.trim_start_matches('0').len()
    }
}

/// `value × 10^-scale` written out: `-12.50`, `0.05`, `7`.
pub(crate) fn format_decimal(value: i128, scale: u8) -> String {
    let digits = value.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let digits =
        if digits.len() <= scale { format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits) } else { digits };
    let (int, frac) = digits.split_at(digits.len() - scale);
    let sign = if value < 0 { "-" } else { "" };
    if scale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

/// The decimal as a float (correctly rounded).
pub(crate) fn decimal_to_f64(value: i128, scale: u8) -> f64 {
    format_decimal(value, scale).parse().unwrap_or(0.0)
}

/// `x` rounded to `scale` digits as a scaled integer; `None` on overflow.
pub(crate) fn f64_to_decimal(x: f64, scale: u8) -> Option<i128> {
    if !x.is_finite() {
        return None;
    }
    let text = format!("{}", x.abs());
    let t = parse_decimal_text(&text)?;
    let v = t.scaled(scale)?;
    Some(if x < 0.0 { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(rescale_round(125, 2, 1), Some(13));
        assert_eq!(rescale_round(-125, 2, 1), Some(-13));
        assert_eq!(rescale_round(124, 2, 1), Some(12));
        assert_eq!(rescale_round(5, 0, 3), Some(5000));
        assert_eq!(rescale_round(i128::MAX, 0, 1), None);
        assert_eq!(rescale_trunc(-129, 2, 0), Some(-1));
    }

    #[test]
    fn decimal_ops() {
        // 1.5 + 2.25 = 3.75
        assert_eq!(add(15, 1, 225, 2, 2), Some(375));
        // 10 / 3 at scale 6 = 3.333333
        assert_eq!(div(10, 0, 3, 0, 6), Some(3_333_333));
        // 2 / 3 = 0.666667
        assert_eq!(div(2, 0, 3, 0, 6), Some(666_667));
        assert_eq!(div(-2, 0, 3, 0, 6), Some(-666_667));
        // 1.23 × 4.5 = 5.535
        assert_eq!(mul(123, 2, 45, 1, 3), Some(5535));
        assert_eq!(mul(123, 2, 45, 1, 2), Some(554));
        // -7.5 % 2 = -1.5
        assert_eq!(rem(-75, 1, 2, 0, 1), Some(-15));
        // 38-digit products stay exact before rounding
        let big = 10i128.pow(30);
        assert_eq!(mul(big, 20, big, 20, 6), Some(10i128.pow(26)));
        assert_eq!(mul(big, 0, big, 0, 0), None);
    }

    #[test]
    fn text() {
        let t = parse_decimal_text(" -12.345 ").unwrap();
        assert_eq!(t.scaled(2), Some(-1235));
        assert_eq!(parse_decimal_text(".5").unwrap().scaled(1), Some(5));
        assert_eq!(parse_decimal_text("5.").unwrap().scaled(0), Some(5));
        assert!(parse_decimal_text("1e5").is_none());
        assert!(parse_decimal_text(".").is_none());
        assert!(parse_decimal_text("").is_none());
        assert_eq!(format_decimal(-1250, 3), "-1.250");
        assert_eq!(format_decimal(5, 2), "0.05");
        assert_eq!(format_decimal(-5, 0), "-5");
        assert_eq!(f64_to_decimal(2.675, 2), Some(268));
        assert_eq!(decimal_to_f64(15, 1), 1.5);
    }

    fn reference(op: u8, a: i128, b: i128) -> Option<i128> {
        match op {
            0 => a.checked_add(b),
            1 => a.checked_mul(b),
            _ => a.checked_rem(b),
        }
    }

    proptest! {
        #[test]
        fn integer_scale_ops_match_i128(a in -10i128.pow(18)..10i128.pow(18), b in -10i128.pow(18)..10i128.pow(18), op in 0u8..3) {
            prop_assume!(op != 2 || b != 0);
            let got = match op { 0 => add(a, 0, b, 0, 0), 1 => mul(a, 0, b, 0, 0), _ => rem(a, 0, b, 0, 0) };
            prop_assert_eq!(got, reference(op, a, b));
        }

        #[test]
        fn scaled_ops_match_i128(a in -10i128.pow(15)..10i128.pow(15), sa in 0u8..10, b in -10i128.pow(15)..10i128.pow(15), sb in 0u8..10) {
            // a/10^sa + b/10^sb at scale max(sa, sb) is exact
            let s = sa.max(sb);
            let want = a * 10i128.pow(u32::from(s - sa)) + b * 10i128.pow(u32::from(s - sb));
            prop_assert_eq!(add(a, sa, b, sb, s), Some(want));
            prop_assert_eq!(mul(a, sa, b, sb, sa + sb), Some(a * b));
            if b != 0 {
                // quotient at scale 6, checked against truncated i128 division with one guard digit
                let num = a * 10i128.pow(u32::from(6 + sb + 1));
                let den = b * 10i128.pow(u32::from(sa));
                let q = num / den;
                let want = if q.abs() % 10 >= 5 { q / 10 + q.signum() } else { q / 10 };
                prop_assert_eq!(div(a, sa, b, sb, 6), Some(want));
            }
        }
    }
}
