//! Index, sort and grouping keys of SQL values: the memcomparable form of
//! `tessera_access::key`, ordered as `tessera_semantics::types::compare` compares (under
//! the default collation) — and the form CHECKSUM hashes ([`KEYS`]).

use tessera_access::key::KeyBuf;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::types::typing::{family, Family};
use tessera_semantics::types::{guid_key, rescale_round, sort_key, strip_trailing_zeros, KeyEncoding, SqlType, Value};

/// A value that does not have the type its key column says: a bug in the caller, reported as
/// SQL Server reports its own internal failures (8630).
fn bad_key(_v: &Value, _t: &SqlType) -> SqlError {
    msg::INTERNAL_QUERY_PROCESSOR_ERROR.err()
}

/// Appends the memcomparable key of `v` (of type `t`) to `out`: byte order matches
/// `types::compare`, and values equal under `compare` (`'a'`, `'A '`) give equal bytes.
/// Used for index keys, sorting, grouping and DISTINCT. NULL sorts first (last when `desc`).
pub fn encode_key(v: &Value, t: &SqlType, desc: bool, out: &mut KeyBuf) -> SqlResult<()> {
    use Value as V;
    match (family(t), v) {
        (_, V::Null) => out.null(desc),
        (Family::Bit, V::Bit(b)) => out.bool(*b, desc),
        (Family::Int, V::Int(i)) => out.i64(*i, desc),
        (Family::Float, V::Float(x)) => out.f64(*x, desc),
        (Family::Decimal | Family::Money, V::Decimal { value, scale }) => {
            let target = match *t {
                SqlType::Decimal { scale, .. } => scale,
                _ => 4,
            };
            let x = rescale_round(*value, *scale, target).ok_or_else(|| bad_key(v, t))?;
            out.i128(x, desc)
        }
        (Family::Char | Family::NChar, V::Str(s)) => out.bytes(&sort_key(s), desc),
        (Family::Binary, V::Binary(b)) => out.bytes(strip_trailing_zeros(b), desc),
        (Family::Date, V::Date(d)) => out.i32(*d, desc),
        (Family::Time, V::Time(x)) => out.u64(*x, desc),
        (Family::DateTime | Family::DateTime2, V::DateTime { days, ticks }) => out.i32(*days, desc).u64(*ticks, desc),
        (Family::DateTimeOffset, V::DateTimeOffset { days, ticks, .. }) => out.i32(*days, desc).u64(*ticks, desc),
        (Family::Guid, V::Guid(g)) => out.fixed(&guid_key(g), desc),
        // A large value's key is made from the value read whole.
        (_, V::Large(l)) => return encode_key(&l.value()?, t, desc, out),
        _ => return Err(bad_key(v, t)),
    };
    Ok(())
}

/// The key form the functions hash (CHECKSUM), set in every session's `FunctionContext`
/// and given to the binder to fold CHECKSUM of constants.
pub static KEYS: StorageKeys = StorageKeys;

/// [`encode_key`] as the semantics layer asks for it.
pub struct StorageKeys;

impl KeyEncoding for StorageKeys {
    fn key(&self, v: &Value, t: &SqlType, with: &mut dyn FnMut(&[u8])) {
        let mut key = KeyBuf::new();
        if encode_key(v, t, false, &mut key).is_err() {
            key.clear();
        }
        with(key.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use tessera_semantics::types::{call_function, compare, FunctionContext};

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    fn key(v: &Value, t: &SqlType) -> Vec<u8> {
        let mut k = KeyBuf::new();
        encode_key(v, t, false, &mut k).unwrap();
        k.into_vec()
    }

    #[test]
    fn keys() {
        let t = SqlType::VarChar(10);
        assert_eq!(key(&s("a"), &t), key(&s("A  "), &t));
        assert!(key(&s("a"), &t) < key(&s("ab"), &t));
        let d = SqlType::Decimal { precision: 10, scale: 2 };
        assert_eq!(key(&Value::Decimal { value: 150, scale: 2 }, &d), key(&Value::Decimal { value: 15, scale: 1 }, &d));
        assert!(key(&Value::Null, &d) < key(&Value::Decimal { value: -1, scale: 2 }, &d));
        assert!(encode_key(&Value::Int(1), &SqlType::VarChar(1), false, &mut KeyBuf::new()).is_err());
    }

    #[test]
    fn checksum_hashes_the_key_form() {
        let mut c = FunctionContext::new();
        c.keys = Some(&KEYS);
        let mut checksum = |v: Value| call_function("CHECKSUM", &[v], &[SqlType::VarChar(1)], &SqlType::Int, &mut c);
        assert_eq!(checksum(s("a")).unwrap(), checksum(s("A")).unwrap());
        assert_ne!(checksum(s("a")).unwrap(), checksum(s("b")).unwrap());
        // trailing spaces are not part of the key
        assert_eq!(checksum(s("a")).unwrap(), checksum(s("a ")).unwrap());
    }

    proptest! {
        #[test]
        fn string_keys_order_like_compare(a in "[aAbBéÉe \\-zZ0]{0,6}", b in "[aAbBéÉe \\-zZ0]{0,6}") {
            let t = SqlType::NVarChar(20);
            let (va, vb) = (s(&a), s(&b));
            prop_assert_eq!(compare(&va, &vb), Some(key(&va, &t).cmp(&key(&vb, &t))));
        }

        #[test]
        fn numeric_keys_order_like_compare(a in any::<i64>(), b in any::<i64>(), x in any::<f64>(), y in any::<f64>()) {
            prop_assert_eq!(compare(&Value::Int(a), &Value::Int(b)), Some(key(&Value::Int(a), &SqlType::BigInt).cmp(&key(&Value::Int(b), &SqlType::BigInt))));
            prop_assume!(x.is_finite() && y.is_finite());
            prop_assert_eq!(compare(&Value::Float(x), &Value::Float(y)), Some(key(&Value::Float(x), &SqlType::Float).cmp(&key(&Value::Float(y), &SqlType::Float))));
        }

        #[test]
        fn decimal_and_datetime_keys_order_like_compare(a in -10i128.pow(20)..10i128.pow(20), b in -10i128.pow(20)..10i128.pow(20), d1 in 0i32..3_000_000, d2 in 0i32..3_000_000, t1 in 0u64..1000, t2 in 0u64..1000) {
            let dt = SqlType::Decimal { precision: 38, scale: 5 };
            let (va, vb) = (Value::Decimal { value: a, scale: 5 }, Value::Decimal { value: b, scale: 5 });
            prop_assert_eq!(compare(&va, &vb), Some(key(&va, &dt).cmp(&key(&vb, &dt))));
            let t = SqlType::DateTime2 { scale: 7 };
            let (va, vb) = (Value::DateTime { days: d1, ticks: t1 }, Value::DateTime { days: d2, ticks: t2 });
            prop_assert_eq!(compare(&va, &vb), Some(key(&va, &t).cmp(&key(&vb, &t))));
        }

        #[test]
        fn guid_and_binary_keys_order_like_compare(a in any::<[u8; 16]>(), b in any::<[u8; 16]>(), x in prop::collection::vec(0u8..3, 0..5), y in prop::collection::vec(0u8..3, 0..5)) {
            let t = SqlType::UniqueIdentifier;
            prop_assert_eq!(compare(&Value::Guid(a), &Value::Guid(b)), Some(key(&Value::Guid(a), &t).cmp(&key(&Value::Guid(b), &t))));
            let t = SqlType::VarBinary(10);
            let (vx, vy) = (Value::Binary(Arc::from(x)), Value::Binary(Arc::from(y)));
            prop_assert_eq!(compare(&vx, &vy), Some(key(&vx, &t).cmp(&key(&vy, &t))));
        }
    }
}
