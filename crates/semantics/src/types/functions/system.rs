//! The system functions: NEWID, CHECKSUM, ISNUMERIC, GREATEST and LEAST (ISDATE is with
//! the date functions).

use super::super::compare::compare;
use super::super::convert::cast;
use super::super::text::encode_cp1252;
use super::super::typing::is_unicode;
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

    /// HASHBYTES(algorithm, input): the digest of the input's bytes (varchar in its code
    /// page, nvarchar as UTF-16LE); NULL for an algorithm it does not know.
    pub(super) fn hashbytes(&self) -> SqlResult<Value> {
        use md5::Digest as _;
        let algorithm = or_null!(self.text(0)?).to_ascii_uppercase();
        let Some(bytes) = self.bytes(1)? else { return Ok(Value::Null) };
        let digest: Vec<u8> = match algorithm.as_str() {
            "MD5" => md5::Md5::digest(&bytes).to_vec(),
            "SHA" | "SHA1" => sha1::Sha1::digest(&bytes).to_vec(),
            "SHA2_256" => sha2::Sha256::digest(&bytes).to_vec(),
            "SHA2_512" => sha2::Sha512::digest(&bytes).to_vec(),
            _ => return Ok(Value::Null),
        };
        Ok(Value::Binary(digest.into()))
    }

    /// An argument's bytes as stored: varchar in its code page, nvarchar as UTF-16LE, a
    /// binary as it is, other types as their varchar text.
    fn bytes(&self, i: usize) -> SqlResult<Option<Vec<u8>>> {
        Ok(match (&self.args[i], self.types[i]) {
            (Value::Null, _) => None,
            (Value::Binary(b), _) => Some(b.to_vec()),
            (Value::Str(s), t) if is_unicode(&t) => Some(s.encode_utf16().flat_map(u16::to_le_bytes).collect()),
            (Value::Str(s), _) => Some(encode_cp1252(s)),
            _ => self.text(i)?.map(|s| encode_cp1252(&s)),
        })
    }

    /// BINARY_CHECKSUM(args…): a hash of the arguments' bytes (so, unlike CHECKSUM, case
    /// and trailing spaces count).
    pub(super) fn binary_checksum(&self) -> SqlResult<Value> {
        let mut h: u32 = 0x811C_9DC5;
        for i in 0..self.args.len() {
            for b in self.bytes(i)?.unwrap_or_default() {
                h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
            }
            h = h.rotate_left(5);
        }
        Ok(Value::Int(i64::from(h as i32)))
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
