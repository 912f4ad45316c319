//! Tests of `CAST`/`CONVERT` between the type families and display text (the storage
//! mapping's are the execution layer's, `tessera_execution::encoding::values`).

use std::sync::Arc;

use super::super::datetime::TICKS_PER_SECOND;
use super::*;
use proptest::prelude::*;
use tessera_types::TICKS_PER_DAY;
use SqlType as T;

fn c(v: Value, from: T, to: T) -> SqlResult<Value> {
    cast(&v, &from, &to, None)
}

fn s(x: &str) -> Value {
    Value::str(x)
}

fn err(r: SqlResult<Value>) -> (i32, String) {
    let e = r.unwrap_err();
    (e.number, e.message.clone())
}

fn dec(value: i128, scale: u8) -> Value {
    Value::Decimal { value, scale }
}

fn d(p: u8, s: u8) -> T {
    T::Decimal { precision: p, scale: s }
}

#[test]
fn integer_narrowing() {
    assert_eq!(c(Value::Int(300), T::Int, T::SmallInt).unwrap(), Value::Int(300));
    assert_eq!(
        err(c(Value::Int(300), T::Int, T::TinyInt)),
        (220, "Arithmetic overflow error for data type tinyint, value = 300.".into())
    );
    assert_eq!(
        err(c(dec(3_000_000_000, 0), d(10, 0), T::Int)),
        (8115, "Arithmetic overflow error converting expression to data type int.".into())
    );
    assert_eq!(c(Value::Float(2.7), T::Float, T::Int).unwrap(), Value::Int(2));
    assert_eq!(c(Value::Float(-2.7), T::Float, T::Int).unwrap(), Value::Int(-2));
    assert_eq!(c(dec(-25, 1), d(2, 1), T::Int).unwrap(), Value::Int(-2));
    // money rounds
    assert_eq!(c(dec(25_000, 4), T::Money, T::Int).unwrap(), Value::Int(3));
    assert_eq!(c(Value::Float(1e20), T::Float, T::Int).unwrap_err().number, 8115);
    assert_eq!(c(Value::Bit(true), T::Bit, T::Int).unwrap(), Value::Int(1));
}

#[test]
fn strings_to_numbers() {
    assert_eq!(c(s(" 42 "), T::VarChar(10), T::Int).unwrap(), Value::Int(42));
    assert_eq!(c(s("-7"), T::VarChar(10), T::Int).unwrap(), Value::Int(-7));
    assert_eq!(c(s(""), T::VarChar(10), T::Int).unwrap(), Value::Int(0));
    assert_eq!(
        err(c(s("1.5"), T::VarChar(10), T::Int)),
        (245, "Conversion failed when converting the varchar value '1.5' to data type int.".into())
    );
    assert_eq!(
        err(c(s("x"), T::NVarChar(10), T::Int)).1,
        "Conversion failed when converting the nvarchar value 'x' to data type int."
    );
    assert_eq!(err(c(s("99999999999"), T::VarChar(20), T::Int)).0, 248);
    assert_eq!(c(s("1.255"), T::VarChar(10), d(5, 2)).unwrap(), dec(126, 2));
    assert_eq!(
        err(c(s("abc"), T::VarChar(10), d(5, 2))),
        (8114, "Error converting data type varchar to numeric.".into())
    );
    assert_eq!(
        err(c(s("12345"), T::VarChar(10), d(5, 2))),
        (8115, "Arithmetic overflow error converting varchar to data type numeric.".into())
    );
    assert_eq!(c(s("1e3"), T::VarChar(10), T::Float).unwrap(), Value::Float(1000.0));
    assert_eq!(
        err(c(s("abc"), T::VarChar(10), T::Float)),
        (8114, "Error converting data type varchar to float.".into())
    );
    assert_eq!(c(s("$1,234.56"), T::VarChar(10), T::Money).unwrap(), dec(12_345_600, 4));
    assert_eq!(err(c(s("x"), T::VarChar(10), T::Money)).0, 235);
    assert_eq!(c(s("true"), T::VarChar(10), T::Bit).unwrap(), Value::Bit(true));
    assert_eq!(c(s("0"), T::VarChar(10), T::Bit).unwrap(), Value::Bit(false));
    assert_eq!(c(s("5"), T::VarChar(10), T::Bit).unwrap(), Value::Bit(true));
    assert_eq!(err(c(s("yes"), T::VarChar(10), T::Bit)).0, 245);
}

#[test]
fn decimals() {
    assert_eq!(c(dec(12345, 3), d(10, 3), d(10, 2)).unwrap(), dec(1235, 2));
    assert_eq!(c(dec(-12345, 3), d(10, 3), d(10, 2)).unwrap(), dec(-1235, 2));
    assert_eq!(
        err(c(dec(12345, 2), d(10, 2), d(4, 2))),
        (8115, "Arithmetic overflow error converting numeric to data type numeric.".into())
    );
    assert_eq!(
        err(c(Value::Int(1000), T::Int, d(3, 0))).1,
        "Arithmetic overflow error converting int to data type numeric."
    );
    assert_eq!(c(Value::Float(2.675), T::Float, d(5, 2)).unwrap(), dec(268, 2));
    assert_eq!(c(Value::Int(5), T::Int, T::Money).unwrap(), dec(50_000, 4));
    assert_eq!(c(dec(15, 1), d(2, 1), T::Float).unwrap(), Value::Float(1.5));
    assert_eq!(c(Value::Int(i64::MAX), T::BigInt, T::SmallMoney).unwrap_err().number, 8115);
}

#[test]
fn numbers_to_strings() {
    assert_eq!(c(Value::Int(123), T::Int, T::VarChar(10)).unwrap(), s("123"));
    // too short: '*' for int to varchar, an error for decimal
    assert_eq!(c(Value::Int(123), T::Int, T::VarChar(2)).unwrap(), s("*"));
    assert_eq!(c(Value::Int(123), T::Int, T::NVarChar(2)).unwrap_err().number, 8115);
    assert_eq!(
        err(c(dec(12345, 2), d(5, 2), T::VarChar(2))),
        (8115, "Arithmetic overflow error converting numeric to data type varchar.".into())
    );
    assert_eq!(c(dec(150, 2), d(5, 2), T::VarChar(10)).unwrap(), s("1.50"));
    assert_eq!(c(dec(5, 2), d(5, 2), T::VarChar(10)).unwrap(), s("0.05"));
    assert_eq!(c(dec(125_000, 4), T::Money, T::VarChar(10)).unwrap(), s("12.50"));
    assert_eq!(cast(&dec(12_345_678_900, 4), &T::Money, &T::VarChar(20), Some(1)).unwrap(), s("1,234,567.89"));
    assert_eq!(cast(&dec(125_000, 4), &T::Money, &T::VarChar(20), Some(2)).unwrap(), s("12.5000"));
    // float: CAST uses 6 significant digits
    assert_eq!(c(Value::Float(1.0 / 3.0), T::Float, T::VarChar(30)).unwrap(), s("0.333333"));
    assert_eq!(c(Value::Float(123_456_789.0), T::Float, T::VarChar(30)).unwrap(), s("1.23457e+008"));
    assert_eq!(c(Value::Float(123_456.0), T::Float, T::VarChar(30)).unwrap(), s("123456"));
    assert_eq!(c(Value::Float(0.0001), T::Float, T::VarChar(30)).unwrap(), s("0.0001"));
    assert_eq!(c(Value::Float(0.00001), T::Float, T::VarChar(30)).unwrap(), s("1e-005"));
    assert_eq!(cast(&Value::Float(1.0 / 3.0), &T::Float, &T::VarChar(30), Some(1)).unwrap(), s("3.3333333e-001"));
    assert_eq!(
        cast(&Value::Float(1.0 / 3.0), &T::Float, &T::VarChar(30), Some(2)).unwrap(),
        s("3.333333333333333e-001")
    );
    assert_eq!(cast(&Value::Float(1.0 / 3.0), &T::Float, &T::VarChar(30), Some(3)).unwrap(), s("0.33333333333333331"));
    assert_eq!(c(Value::Bit(true), T::Bit, T::VarChar(3)).unwrap(), s("1"));
}

#[test]
fn strings_to_strings() {
    assert_eq!(c(s("abcdef"), T::VarChar(10), T::VarChar(3)).unwrap(), s("abc"));
    assert_eq!(c(s("ab"), T::VarChar(10), T::Char(4)).unwrap(), s("ab  "));
    assert_eq!(c(s("中a"), T::NVarChar(10), T::VarChar(10)).unwrap(), s("?a"));
    assert_eq!(c(s("😀x"), T::NVarChar(10), T::NVarChar(2)).unwrap(), s("😀"));
    assert_eq!(c(s("😀x"), T::NVarChar(10), T::NVarChar(1)).unwrap(), s(""));
}

#[test]
fn binary() {
    let b = |x: &[u8]| Value::Binary(Arc::from(x));
    assert_eq!(c(s("AB"), T::VarChar(2), T::VarBinary(10)).unwrap(), b(b"AB"));
    assert_eq!(c(s("A"), T::NVarChar(2), T::VarBinary(10)).unwrap(), b(&[0x41, 0]));
    assert_eq!(c(s("A"), T::VarChar(2), T::Binary(3)).unwrap(), b(&[0x41, 0, 0]));
    assert_eq!(c(Value::Int(258), T::Int, T::VarBinary(10)).unwrap(), b(&[0, 0, 1, 2]));
    assert_eq!(c(Value::Int(258), T::Int, T::Binary(2)).unwrap(), b(&[1, 2]));
    assert_eq!(c(Value::Int(1), T::Int, T::Binary(6)).unwrap(), b(&[0, 0, 0, 0, 0, 1]));
    assert_eq!(c(b(&[1, 2]), T::VarBinary(2), T::Int).unwrap(), Value::Int(258));
    assert_eq!(c(b(&[0xFF, 0xFF, 0xFF, 0xFF]), T::VarBinary(4), T::Int).unwrap(), Value::Int(-1));
    assert_eq!(c(b(&[0xFF]), T::VarBinary(4), T::TinyInt).unwrap(), Value::Int(255));
    assert_eq!(cast(&b(&[0x0A, 0xFF]), &T::VarBinary(2), &T::VarChar(10), Some(1)).unwrap(), s("0x0AFF"));
    assert_eq!(cast(&b(&[0x0A, 0xFF]), &T::VarBinary(2), &T::VarChar(10), Some(2)).unwrap(), s("0AFF"));
    assert_eq!(cast(&s("0x0aff"), &T::VarChar(10), &T::VarBinary(10), Some(1)).unwrap(), b(&[0x0A, 0xFF]));
    assert_eq!(c(b(b"hi"), T::VarBinary(2), T::VarChar(10)).unwrap(), s("hi"));
    let bytes = c(dec(-15, 1), d(5, 1), T::VarBinary(20)).unwrap();
    assert_eq!(c(bytes, T::VarBinary(20), d(5, 1)).unwrap(), dec(-15, 1));
}

fn dt(s: &str) -> Value {
    c(Value::str(s), T::VarChar(30), T::DateTime2 { scale: 7 }).unwrap()
}

#[test]
fn dates_from_strings() {
    let v = c(s("2024-01-31 13:45:00.123"), T::VarChar(30), T::DateTime).unwrap();
    assert_eq!(display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
    // datetime rounds to .000, .003, .007
    for (text, shown) in
        [("00:00:00.001", ".000"), ("00:00:00.002", ".003"), ("00:00:00.005", ".007"), ("00:00:00.009", ".010")]
    {
        let v = c(s(text), T::VarChar(30), T::DateTime).unwrap();
        assert!(display_text(&v, &T::DateTime).ends_with(shown), "{text}");
    }
    let v = c(s("23:59:59.999"), T::VarChar(30), T::DateTime).unwrap();
    assert_eq!(display_text(&v, &T::DateTime), "1900-01-02 00:00:00.000");
    assert_eq!(
        err(c(s("1700-01-01"), T::VarChar(30), T::DateTime)),
        (
            242,
            "The conversion of a varchar data type to a datetime data type resulted in an out-of-range value.".into()
        )
    );
    assert_eq!(
        err(c(s("garbage"), T::VarChar(30), T::DateTime)),
        (241, "Conversion failed when converting date and/or time from character string.".into())
    );
    assert_eq!(err(c(s("2024-01-31 10:00:00.1234"), T::VarChar(30), T::DateTime)).0, 241);
    assert_eq!(c(s("2024-01-31 13:45"), T::VarChar(30), T::Date).unwrap(), Value::Date(738_915));
    let v = c(s("2024-01-31 13:45:29.999"), T::VarChar(30), T::SmallDateTime).unwrap();
    assert_eq!(display_text(&v, &T::SmallDateTime), "2024-01-31 13:46:00");
    let v = c(s("2024-01-31 13:45:29.998"), T::VarChar(30), T::SmallDateTime).unwrap();
    assert_eq!(display_text(&v, &T::SmallDateTime), "2024-01-31 13:45:00");
    let v = c(s("13:45:00.1234567"), T::VarChar(30), T::Time { scale: 3 }).unwrap();
    assert_eq!(display_text(&v, &T::Time { scale: 3 }), "13:45:00.123");
    let v = cast(&s("31/01/2024"), &T::VarChar(30), &T::Date, Some(103)).unwrap();
    assert_eq!(v, Value::Date(738_915));
}

#[test]
fn dates_to_strings() {
    let v = c(s("2024-01-31 13:45:00.123"), T::VarChar(30), T::DateTime).unwrap();
    assert_eq!(c(v.clone(), T::DateTime, T::VarChar(30)).unwrap(), s("Jan 31 2024  1:45PM"));
    assert_eq!(cast(&v, &T::DateTime, &T::VarChar(30), Some(121)).unwrap(), s("2024-01-31 13:45:00.123"));
    // A date shows only its date, a time only its time, in a style that shows both.
    let date = cast(&s("2006-01-02"), &T::VarChar(10), &T::Date, None).unwrap();
    assert_eq!(cast(&date, &T::Date, &T::VarChar(30), Some(121)).unwrap(), s("2006-01-02"));
    assert_eq!(cast(&date, &T::Date, &T::VarChar(30), Some(100)).unwrap(), s("Jan  2 2006"));
    let time = cast(&s("22:04:05"), &T::VarChar(10), &T::Time { scale: 7 }, None).unwrap();
    assert_eq!(cast(&time, &T::Time { scale: 7 }, &T::VarChar(30), Some(121)).unwrap(), s("22:04:05.0000000"));
    assert_eq!(cast(&time, &T::Time { scale: 7 }, &T::VarChar(30), Some(120)).unwrap(), s("22:04:05"));
    assert_eq!(cast(&v, &T::DateTime, &T::VarChar(30), Some(112)).unwrap(), s("20240131"));
    assert_eq!(err(cast(&v, &T::DateTime, &T::VarChar(30), Some(99))).0, 281);
    let v2 = c(v.clone(), T::DateTime, T::DateTime2 { scale: 7 }).unwrap();
    assert_eq!(c(v2, T::DateTime2 { scale: 7 }, T::VarChar(30)).unwrap(), s("2024-01-31 13:45:00.1233333"));
    assert_eq!(c(Value::Date(738_915), T::Date, T::VarChar(30)).unwrap(), s("2024-01-31"));
    let t = c(v.clone(), T::DateTime, T::Time { scale: 7 }).unwrap();
    assert_eq!(c(t, T::Time { scale: 7 }, T::VarChar(30)).unwrap(), s("13:45:00.1233333"));
    assert_eq!(c(Value::Date(738_915), T::Date, T::DateTime).unwrap(), Value::DateTime { days: 738_915, ticks: 0 });
}

#[test]
fn dates_and_numbers() {
    let v = c(Value::Int(1), T::Int, T::DateTime).unwrap();
    assert_eq!(display_text(&v, &T::DateTime), "1900-01-02 00:00:00.000");
    let v = c(Value::Float(1.5), T::Float, T::DateTime).unwrap();
    assert_eq!(display_text(&v, &T::DateTime), "1900-01-02 12:00:00.000");
    assert_eq!(c(v.clone(), T::DateTime, T::Float).unwrap(), Value::Float(1.5));
    // datetime → int rounds to the nearest day
    assert_eq!(c(v, T::DateTime, T::Int).unwrap(), Value::Int(2));
    assert_eq!(
        err(c(Value::Int(1), T::Int, T::Date)),
        (529, "Explicit conversion from data type int to date is not allowed.".into())
    );
    assert_eq!(err(c(Value::Date(1), T::Date, T::Int)).0, 529);
    let v = dt("2024-01-31 13:45:00.1234567");
    assert_eq!(
        c(v.clone(), T::DateTime2 { scale: 7 }, T::DateTime2 { scale: 2 }).unwrap(),
        dt("2024-01-31 13:45:00.12")
    );
    assert_eq!(display_text(&v, &T::DateTime2 { scale: 7 }), "2024-01-31 13:45:00.1234567");
}

#[test]
fn datetimeoffset() {
    let dto = |scale| T::DateTimeOffset { scale };
    let v = c(s("2025-03-04 10:11:12.1234567 +05:30"), T::VarChar(40), dto(7)).unwrap();
    // stored as the UTC instant
    let day = super::super::days_from_civil(2025, 3, 4);
    let utc = (4 * 3600 + 41 * 60 + 12) * TICKS_PER_SECOND + 1_234_567;
    assert_eq!(v, Value::DateTimeOffset { days: day, ticks: utc, offset: 330 });
    assert_eq!(display_text(&v, &dto(7)), "2025-03-04 10:11:12.1234567 +05:30");
    assert_eq!(c(v.clone(), dto(7), T::VarChar(40)).unwrap(), s("2025-03-04 10:11:12.1234567 +05:30"));
    assert_eq!(cast(&v, &dto(7), &T::VarChar(40), Some(126)).unwrap(), s("2025-03-04T10:11:12.1234567+05:30"));
    assert_eq!(cast(&v, &dto(7), &T::VarChar(40), Some(127)).unwrap(), s("2025-03-04T04:41:12.1234567Z"));
    // the local time survives conversion to the types without an offset
    assert_eq!(c(v.clone(), dto(7), T::DateTime2 { scale: 7 }).unwrap(), dt("2025-03-04 10:11:12.1234567"));
    assert_eq!(c(v.clone(), dto(7), T::Date).unwrap(), Value::Date(day));
    // … and datetime2 gets +00:00
    let back = c(dt("2025-03-04 10:11:12.1234567"), T::DateTime2 { scale: 7 }, dto(7)).unwrap();
    assert_eq!(display_text(&back, &dto(7)), "2025-03-04 10:11:12.1234567 +00:00");
    // scale: rounded half up, carrying into the next day
    let r = c(s("2025-12-31 23:59:59.9999999 -02:00"), T::VarChar(40), dto(0)).unwrap();
    assert_eq!(display_text(&r, &dto(0)), "2026-01-01 00:00:00 -02:00");
    assert_eq!(display_text(&c(v.clone(), dto(7), dto(3)).unwrap(), &dto(3)), "2025-03-04 10:11:12.123 +05:30");
    // range: both the UTC and the local date must exist
    assert_eq!(err(c(s("0001-01-01 00:00 +01:00"), T::VarChar(40), dto(7))).0, 242);
    assert_eq!(err(c(s("9999-12-31 23:00 -01:00"), T::VarChar(40), dto(7))).0, 242);
    assert_eq!(err(c(s("2025-01-01 +14:30"), T::VarChar(40), dto(7))).0, 241);
    assert_eq!(err(c(v.clone(), dto(7), T::Int)).0, 529);
    let bytes = c(v.clone(), dto(7), T::VarBinary(20)).unwrap();
    assert_eq!(c(bytes, T::VarBinary(20), dto(7)).unwrap(), v);
}

#[test]
fn guids() {
    let text = "6F9619FF-8B86-D011-B42D-00C04FC964FF";
    let g = c(s(&text.to_lowercase()), T::VarChar(36), T::UniqueIdentifier).unwrap();
    assert_eq!(
        g,
        Value::Guid([0xFF, 0x19, 0x96, 0x6F, 0x86, 0x8B, 0x11, 0xD0, 0xB4, 0x2D, 0x00, 0xC0, 0x4F, 0xC9, 0x64, 0xFF])
    );
    assert_eq!(c(g.clone(), T::UniqueIdentifier, T::VarChar(36)).unwrap(), s(text));
    assert_eq!(display_text(&g, &T::UniqueIdentifier), text);
    assert_eq!(c(s(&format!("{{{text}}}")), T::VarChar(38), T::UniqueIdentifier).unwrap(), g);
    assert_eq!(
        err(c(s("nope"), T::VarChar(36), T::UniqueIdentifier)),
        (8169, "Conversion failed when converting from a character string to uniqueidentifier.".into())
    );
    assert_eq!(err(c(g, T::UniqueIdentifier, T::Char(10))).0, 8170);
}

#[test]
fn truncation() {
    assert!(would_truncate(&s("abcd"), &T::VarChar(3)));
    assert!(!would_truncate(&s("abc   "), &T::VarChar(3)));
    assert!(!would_truncate(&s("中文"), &T::NVarChar(2)));
    assert!(would_truncate(&Value::Binary(Arc::from(&[0u8; 4][..])), &T::Binary(3)));
    assert!(!would_truncate(&s("abcd"), &T::VarChar(MAX)));
}

#[test]
fn display() {
    assert_eq!(display_text(&Value::Null, &T::Int), "NULL");
    assert_eq!(display_text(&dec(150, 2), &d(5, 2)), "1.50");
    assert_eq!(display_text(&dec(125_000, 4), &T::Money), "12.5000");
    assert_eq!(display_text(&Value::Float(1.0 / 3.0), &T::Float), "0.33333333333333331");
    assert_eq!(display_text(&Value::Float(f64::from(1.0f32 / 3.0)), &T::Real), "0.3333333");
    assert_eq!(display_text(&Value::Float(1.0), &T::Float), "1");
    assert_eq!(display_text(&Value::Binary(Arc::from(&[0x0A, 0xFF][..])), &T::VarBinary(2)), "0x0AFF");
    assert_eq!(display_text(&Value::Bit(true), &T::Bit), "1");
    assert_eq!(display_text(&Value::Time(0), &T::Time { scale: 7 }), "00:00:00.0000000");
}

proptest! {
    #[test]
    fn int_varchar_round_trip(x in any::<i64>()) {
        let text = c(Value::Int(x), T::BigInt, T::VarChar(30)).unwrap();
        prop_assert_eq!(c(text, T::VarChar(30), T::BigInt).unwrap(), Value::Int(x));
    }

    #[test]
    fn decimal_varchar_round_trip(x in -10i128.pow(20)..10i128.pow(20), scale in 0u8..10) {
        let t = d(38, scale);
        let text = c(dec(x, scale), t, T::VarChar(50)).unwrap();
        prop_assert_eq!(c(text, T::VarChar(50), t).unwrap(), dec(x, scale));
    }

    #[test]
    fn float_style3_round_trip(x in any::<f64>()) {
        prop_assume!(x.is_finite());
        let text = cast(&Value::Float(x), &T::Float, &T::VarChar(40), Some(3)).unwrap();
        prop_assert_eq!(c(text, T::VarChar(40), T::Float).unwrap(), Value::Float(x));
    }

    #[test]
    fn datetime2_text_round_trip(days in 0i32..=tessera_types::MAX_DATE_DAYS, ticks in 0u64..TICKS_PER_DAY) {
        let t = T::DateTime2 { scale: 7 };
        let v = Value::DateTime { days, ticks };
        let text = c(v.clone(), t, T::VarChar(40)).unwrap();
        prop_assert_eq!(c(text, T::VarChar(40), t).unwrap(), v);
    }

    #[test]
    fn datetimeoffset_text_round_trip(
        days in 1i32..tessera_types::MAX_DATE_DAYS,
        ticks in 0u64..TICKS_PER_DAY,
        offset in -840i16..=840,
    ) {
        let t = T::DateTimeOffset { scale: 7 };
        let v = Value::DateTimeOffset { days, ticks, offset };
        let text = c(v.clone(), t, T::VarChar(40)).unwrap();
        prop_assert_eq!(c(text, T::VarChar(40), t).unwrap(), v.clone());
        let iso = cast(&v, &t, &T::VarChar(40), Some(126)).unwrap();
        prop_assert_eq!(c(iso, T::VarChar(40), t).unwrap(), v);
    }

    #[test]
    fn casts_never_panic(x in any::<i64>(), f in any::<f64>(), text in "\\PC{0,12}") {
        let types = [T::Bit, T::TinyInt, T::Int, T::BigInt, T::Real, T::Float, d(5, 2), d(38, 10), T::Money, T::SmallMoney,
            T::Char(3), T::VarChar(5), T::NVarChar(2), T::Binary(3), T::VarBinary(MAX), T::Date, T::Time { scale: 2 },
            T::DateTime, T::SmallDateTime, T::DateTime2 { scale: 0 }, T::DateTimeOffset { scale: 3 }, T::UniqueIdentifier];
        for from in [T::BigInt, T::Float, T::NVarChar(MAX)] {
            let v = match from { T::BigInt => Value::Int(x), T::Float if f.is_finite() => Value::Float(f), T::Float => Value::Float(0.0), _ => s(&text) };
            for to in &types {
                if let Ok(r) = cast(&v, &from, to, None) {
                    let _ = display_text(&r, to);
                    for back in &types {
                        let _ = cast(&r, to, back, None);
                    }
                }
            }
        }
    }
}
