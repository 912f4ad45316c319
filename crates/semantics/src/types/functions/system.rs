//! The system functions: NEWID, CHECKSUM, ISNUMERIC, GREATEST and LEAST (ISDATE is with
//! the date functions).

use super::super::compare::compare;
use super::super::convert::cast;
use super::super::typing::{family, Family};
use super::super::{num, Value};
use super::{Call, KeyEncoding};
use rand::rngs::SmallRng;
use rand::RngCore;
use tessera_errors::{msg, SqlResult};

impl Call<'_> {
    /// GREATEST / LEAST: the largest / smallest argument not NULL, in the result type
    /// (NULL when every one is).
    pub(super) fn extreme(&self) -> SqlResult<Value> {
        let mut best: Option<Value> = None;
        for (v, t) in self.args.iter().zip(self.types) {
            if v.is_null() {
                continue;
            }
            let v = cast(v, t, self.result, None)?;
            let better = match &best {
                None => true,
                Some(b) => {
                    let o = compare(&v, b);
                    if self.name == "GREATEST" {
                        o == Some(std::cmp::Ordering::Greater)
                    } else {
                        o == Some(std::cmp::Ordering::Less)
                    }
                }
            };
            if better {
                best = Some(v);
            }
        }
        Ok(best.unwrap_or(Value::Null))
    }

    pub(super) fn checksum(&self, keys: Option<&dyn KeyEncoding>) -> SqlResult<Value> {
        let keys = keys.ok_or_else(|| msg::INTERNAL_QUERY_PROCESSOR_ERROR.err())?;
        // FNV-1a over each argument's collation key, so that CHECKSUM('a') = CHECKSUM('A')
        let mut h: u32 = 0x811C_9DC5;
        for (v, t) in self.args.iter().zip(self.types) {
            keys.key(v, t, &mut |key| {
                for &b in key {
                    h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
                }
            });
        }
        Ok(Value::Int(i64::from(h as i32)))
    }

    pub(super) fn isnumeric(&self) -> SqlResult<Value> {
        let ok = match (&self.args[0], family(&self.types[0])) {
            (Value::Null, _) => false,
            (_, Family::Int | Family::Decimal | Family::Money | Family::Float | Family::Bit) => true,
            (Value::Str(s), _) => is_numeric_text(s),
            _ => false,
        };
        Ok(Value::Int(i64::from(ok)))
    }
}

/// A random (version 4) uniqueidentifier, in SQL Server's byte order.
pub(super) fn new_guid(rng: &mut SmallRng) -> [u8; 16] {
    let mut g = [0u8; 16];
    rng.fill_bytes(&mut g);
    g[7] = 0x40 | (g[7] & 0x0F); // the version nibble of the third group (stored little-endian)
    g[8] = 0x80 | (g[8] & 0x3F);
    g
}

fn is_numeric_text(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return false;
    }
    let money: String = t.chars().filter(|c| !matches!(c, ',' | '$' | '€' | '£' | '¥')).collect();
    let body = money.trim_start_matches(['+', '-']);
    if body.is_empty() || body == "." || num::parse_decimal_text(&money).is_some() {
        return true;
    }
    t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && t.trim_end_matches(['e', 'E']).parse::<f64>().is_ok_and(f64::is_finite)
}
