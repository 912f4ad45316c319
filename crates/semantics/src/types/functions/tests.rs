//! Tests of the built-in functions: result types and argument counts, then each group's
//! results and errors.

use super::super::datetime::TICKS_PER_HOUR;
use super::*;
use SqlType as T;

fn ctx() -> FunctionContext {
    let mut c = FunctionContext::new();
    c.rng = SmallRng::seed_from_u64(1);
    c
}

/// Calls `name` with literal-typed arguments (strings varchar, ints int, floats float).
fn call(name: &str, args: &[Value]) -> SqlResult<Value> {
    let types: Vec<SqlType> = args
        .iter()
        .map(|v| match v {
            Value::Str(s) => T::VarChar(s.len().max(1) as u16),
            Value::Int(_) | Value::Null => T::Int,
            Value::Float(_) => T::Float,
            Value::Decimal { value, scale } => T::Decimal {
                precision: (value.unsigned_abs().to_string().len() as u8).max(*scale).max(1),
                scale: *scale,
            },
            Value::Date(_) => T::Date,
            Value::Time(_) => T::Time { scale: 7 },
            Value::DateTime { .. } => T::DateTime2 { scale: 7 },
            Value::DateTimeOffset { .. } => T::DateTimeOffset { scale: 7 },
            Value::Binary(b) => T::VarBinary(b.len() as u16),
            Value::Bit(_) => T::Bit,
            Value::Guid(_) => T::UniqueIdentifier,
            Value::Large(l) => l.kind().max_type(),
        })
        .collect();
    let result = function_type(name, &types)?.expect("known function");
    call_function(name, args, &types, &result, &mut ctx())
}

fn s(x: &str) -> Value {
    Value::str(x)
}

fn i(x: i64) -> Value {
    Value::Int(x)
}

fn ok(name: &str, args: &[Value]) -> Value {
    call(name, args).unwrap()
}

fn dt(text: &str) -> Value {
    cast(&s(text), &T::VarChar(30), &T::DateTime2 { scale: 7 }, None).unwrap()
}

#[test]
fn types_and_arity() {
    assert_eq!(function_type("LEN", &[T::VarChar(10)]).unwrap(), Some(T::Int));
    assert_eq!(function_type("LEN", &[T::VarChar(MAX)]).unwrap(), Some(T::BigInt));
    assert_eq!(function_type("NOPE", &[]).unwrap(), None);
    assert_eq!(function_type("SUBSTRING", &[T::Char(10), T::Int, T::Int]).unwrap(), Some(T::VarChar(10)));
    assert_eq!(
        function_type("REPLACE", &[T::VarChar(10), T::VarChar(1), T::NVarChar(1)]).unwrap(),
        Some(T::NVarChar(4000))
    );
    assert_eq!(function_type("CONCAT", &[T::VarChar(10), T::Int]).unwrap(), Some(T::VarChar(22)));
    assert_eq!(
        function_type("ROUND", &[T::Decimal { precision: 5, scale: 2 }, T::Int]).unwrap(),
        Some(T::Decimal { precision: 5, scale: 2 })
    );
    assert_eq!(
        function_type("POWER", &[T::Decimal { precision: 5, scale: 2 }, T::Int]).unwrap(),
        Some(T::Decimal { precision: 38, scale: 2 })
    );
    assert_eq!(
        function_type("FLOOR", &[T::Decimal { precision: 5, scale: 2 }]).unwrap(),
        Some(T::Decimal { precision: 5, scale: 0 })
    );
    assert_eq!(function_type("DATEADD", &[T::VarChar(3), T::Int, T::VarChar(10)]).unwrap(), Some(T::DateTime));
    assert_eq!(function_type("DATEADD", &[T::VarChar(3), T::Int, T::Date]).unwrap(), Some(T::Date));
    assert_eq!(function_type("SYSDATETIME", &[]).unwrap(), Some(T::DateTime2 { scale: 7 }));
    let e = function_type("LEN", &[]).unwrap_err();
    assert_eq!((e.number, e.message.as_str()), (174, "The len function requires 1 argument(s)."));
    let e = function_type("CHARINDEX", &[T::Int]).unwrap_err();
    assert_eq!((e.number, e.message.as_str()), (189, "The charindex function requires 2 to 3 arguments."));
    let e = function_type("SUBSTRING", &[T::Int, T::Int, T::Int]).unwrap_err();
    assert_eq!(
        (e.number, e.message.as_str()),
        (8116, "Argument data type int is invalid for argument 1 of substring function.")
    );
    let e = function_type("DATEADD", &[T::VarChar(3), T::Int, T::UniqueIdentifier]).unwrap_err();
    assert_eq!(e.message, "Argument data type uniqueidentifier is invalid for argument 3 of dateadd function.");
}

#[test]
fn string_functions() {
    assert_eq!(ok("LEN", &[s("abc  ")]), i(3));
    assert_eq!(ok("LEN", &[s("\u{1F980} Ferris \u{1F4DA}")]), i(12), "a surrogate pair counts 2");
    assert_eq!(ok("LEN", &[i(12345)]), i(5));
    assert_eq!(ok("LEN", &[Value::Null]), Value::Null);
    assert_eq!(ok("DATALENGTH", &[s("abc  ")]), i(5));
    assert_eq!(call_function("DATALENGTH", &[s("ab")], &[T::NVarChar(2)], &T::Int, &mut ctx()).unwrap(), i(4));
    assert_eq!(ok("DATALENGTH", &[i(1)]), i(4));
    assert_eq!(ok("SUBSTRING", &[s("abcdef"), i(2), i(3)]), s("bcd"));
    assert_eq!(ok("SUBSTRING", &[s("abcdef"), i(0), i(3)]), s("ab"));
    assert_eq!(ok("SUBSTRING", &[s("abc"), i(5), i(3)]), s(""));
    assert_eq!(call("SUBSTRING", &[s("abc"), i(1), i(-1)]).unwrap_err().number, 537);
    assert_eq!(ok("LEFT", &[s("abcdef"), i(2)]), s("ab"));
    assert_eq!(ok("RIGHT", &[s("abcdef"), i(2)]), s("ef"));
    assert_eq!(ok("RIGHT", &[s("ab"), i(5)]), s("ab"));
    assert_eq!(ok("UPPER", &[s("abé")]), s("ABÉ"));
    assert_eq!(ok("LOWER", &[s("ABC")]), s("abc"));
    assert_eq!(ok("LTRIM", &[s("  a ")]), s("a "));
    assert_eq!(ok("RTRIM", &[s("  a ")]), s("  a"));
    assert_eq!(ok("TRIM", &[s("  a ")]), s("a"));
    assert_eq!(ok("REPLACE", &[s("Hello hello"), s("HELLO"), s("x")]), s("x x"));
    assert_eq!(ok("REPLACE", &[s("abc"), s(""), s("x")]), s("abc"));
    assert_eq!(ok("REPLICATE", &[s("ab"), i(3)]), s("ababab"));
    assert_eq!(ok("REPLICATE", &[s("ab"), i(-1)]), Value::Null);
    assert_eq!(ok("REVERSE", &[s("abc")]), s("cba"));
    assert_eq!(ok("CHARINDEX", &[s("B"), s("abcb")]), i(2));
    assert_eq!(ok("CHARINDEX", &[s("b"), s("abcb"), i(3)]), i(4));
    assert_eq!(ok("CHARINDEX", &[s("z"), s("abcb")]), i(0));
    assert_eq!(ok("PATINDEX", &[s("%c%"), s("abcb")]), i(3));
    assert_eq!(ok("PATINDEX", &[s("%[0-9]%"), s("ab1")]), i(3));
    assert_eq!(ok("PATINDEX", &[s("b%"), s("abc")]), i(0));
    assert_eq!(ok("CONCAT", &[s("a"), Value::Null, i(1)]), s("a1"));
    assert_eq!(ok("CONCAT_WS", &[s(","), s("a"), Value::Null, s("b")]), s("a,b"));
    assert_eq!(ok("STR", &[Value::Float(123.45), i(6), i(1)]), s(" 123.5"));
    assert_eq!(ok("STR", &[Value::Float(123.0)]), s("       123"));
    assert_eq!(ok("STR", &[Value::Float(1234567.0), i(5)]), s("*****"));
    assert_eq!(ok("SPACE", &[i(3)]), s("   "));
    assert_eq!(ok("CHAR", &[i(65)]), s("A"));
    assert_eq!(ok("CHAR", &[i(128)]), s("€"));
    assert_eq!(ok("CHAR", &[i(300)]), Value::Null);
    assert_eq!(ok("ASCII", &[s("A")]), i(65));
    assert_eq!(ok("NCHAR", &[i(233)]), s("é"));
    assert_eq!(ok("UNICODE", &[s("é")]), i(233));
    assert_eq!(ok("STUFF", &[s("abcdef"), i(2), i(3), s("XY")]), s("aXYef"));
    assert_eq!(ok("STUFF", &[s("abc"), i(5), i(1), s("X")]), Value::Null);
    assert_eq!(ok("QUOTENAME", &[s("a]b")]), s("[a]]b]"));
}

#[test]
fn math_functions() {
    let dec = |value, scale| Value::Decimal { value, scale };
    assert_eq!(ok("ABS", &[i(-5)]), i(5));
    assert_eq!(call("ABS", &[i(i32::MIN.into())]).unwrap_err().number, 8115);
    assert_eq!(ok("ABS", &[dec(-150, 2)]), dec(150, 2));
    assert_eq!(ok("ROUND", &[dec(12345, 3), i(2)]), dec(12350, 3));
    assert_eq!(ok("ROUND", &[dec(12345, 3), i(2), i(1)]), dec(12340, 3));
    assert_eq!(ok("ROUND", &[dec(74858, 2), i(-2)]), dec(70000, 2));
    // ROUND(748.58, -3) overflows decimal(5,2) (documented)
    assert_eq!(call("ROUND", &[dec(74858, 2), i(-3)]).unwrap_err().number, 8115);
    assert_eq!(ok("ROUND", &[i(1234), i(-2)]), i(1200));
    assert_eq!(ok("ROUND", &[Value::Float(2.5), i(0)]), Value::Float(3.0));
    assert_eq!(ok("FLOOR", &[dec(-15, 1)]), dec(-2, 0));
    assert_eq!(ok("CEILING", &[dec(-15, 1)]), dec(-1, 0));
    assert_eq!(ok("CEILING", &[dec(11, 1)]), dec(2, 0));
    assert_eq!(ok("FLOOR", &[Value::Float(-1.5)]), Value::Float(-2.0));
    assert_eq!(ok("SIGN", &[i(-7)]), i(-1));
    assert_eq!(ok("POWER", &[i(2), i(10)]), i(1024));
    assert_eq!(ok("POWER", &[i(2), i(-1)]), i(0));
    assert_eq!(ok("POWER", &[dec(20, 1), i(-1)]), dec(5, 1));
    assert_eq!(ok("SQRT", &[i(16)]), Value::Float(4.0));
    let e = call("SQRT", &[i(-1)]).unwrap_err();
    assert_eq!((e.number, e.message.as_str()), (3623, "An invalid floating point operation occurred."));
    assert_eq!(ok("SQUARE", &[i(3)]), Value::Float(9.0));
    assert_eq!(ok("LOG10", &[i(100)]), Value::Float(2.0));
    assert_eq!(ok("LOG", &[i(8), i(2)]), Value::Float(3.0));
    assert_eq!(ok("PI", &[]), Value::Float(std::f64::consts::PI));
    assert_eq!(ok("EXP", &[i(0)]), Value::Float(1.0));
}

#[test]
fn rand_newid_checksum() {
    let mut c = ctx();
    let r1 = call_function("RAND", &[i(42)], &[T::Int], &T::Float, &mut c).unwrap();
    let r2 = call_function("RAND", &[i(42)], &[T::Int], &T::Float, &mut c).unwrap();
    assert_eq!(r1, r2);
    let Value::Float(x) = call_function("RAND", &[], &[], &T::Float, &mut c).unwrap() else { panic!() };
    assert!((0.0..1.0).contains(&x));
    let Value::Guid(g) = call_function("NEWID", &[], &[], &T::UniqueIdentifier, &mut c).unwrap() else { panic!() };
    assert_eq!(super::super::convert::guid_text(&g).as_bytes()[14], b'4');
    // CHECKSUM hashes storage's key form, which the execution layer provides (its tests)
    assert_eq!(call_function("CHECKSUM", &[s("a")], &[T::VarChar(1)], &T::Int, &mut c).unwrap_err().number, 8630);
    assert_eq!(ok("ISNUMERIC", &[s("12.5")]), i(1));
    assert_eq!(ok("ISNUMERIC", &[s("$")]), i(1));
    assert_eq!(ok("ISNUMERIC", &[s("1e5")]), i(1));
    assert_eq!(ok("ISNUMERIC", &[s("abc")]), i(0));
    assert_eq!(ok("ISNUMERIC", &[s("")]), i(0));
    assert_eq!(ok("ISDATE", &[s("2024-01-31")]), i(1));
    assert_eq!(ok("ISDATE", &[s("2024-02-30")]), i(0));
    assert_eq!(ok("ISDATE", &[s("1700-01-01")]), i(0));
}

#[test]
fn clock() {
    let mut c = ctx();
    c.set_now(UNIX_EPOCH + std::time::Duration::from_millis(1_706_708_700_123)); // 2024-01-31 13:45:00.123 UTC
    let v = call_function("GETDATE", &[], &[], &T::DateTime, &mut c).unwrap();
    assert_eq!(super::super::convert::display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
    assert_eq!(v, call_function("CURRENT_TIMESTAMP", &[], &[], &T::DateTime, &mut c).unwrap());
    c.utc_offset_minutes = 60;
    let v = call_function("SYSDATETIME", &[], &[], &T::DateTime2 { scale: 7 }, &mut c).unwrap();
    assert_eq!(super::super::convert::display_text(&v, &T::DateTime2 { scale: 7 }), "2024-01-31 14:45:00.1230000");
    let v = call_function("GETUTCDATE", &[], &[], &T::DateTime, &mut c).unwrap();
    assert_eq!(super::super::convert::display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
    let dto = T::DateTimeOffset { scale: 7 };
    assert_eq!(function_type("SYSDATETIMEOFFSET", &[]).unwrap(), Some(dto));
    let v = call_function("SYSDATETIMEOFFSET", &[], &[], &dto, &mut c).unwrap();
    assert_eq!(super::super::convert::display_text(&v, &dto), "2024-01-31 14:45:00.1230000 +01:00");
}

fn dto(text: &str) -> Value {
    cast(&s(text), &T::VarChar(40), &T::DateTimeOffset { scale: 7 }, None).unwrap()
}

fn shown(v: &Value) -> String {
    super::super::convert::display_text(v, &T::DateTimeOffset { scale: 7 })
}

#[test]
fn datetimeoffset_functions() {
    let d = dto("2025-03-04 10:11:12.1234567 +05:30");
    assert_eq!(shown(&ok("SWITCHOFFSET", &[d.clone(), s("-05:00")])), "2025-03-03 23:41:12.1234567 -05:00");
    assert_eq!(shown(&ok("SWITCHOFFSET", &[d.clone(), i(-840)])), "2025-03-03 14:41:12.1234567 -14:00");
    assert_eq!(ok("SWITCHOFFSET", &[d.clone(), s("+01:00")]), ok("SWITCHOFFSET", &[d.clone(), i(60)]));
    let local = dt("2025-03-04 10:11:12.1234567");
    assert_eq!(shown(&ok("TODATETIMEOFFSET", &[local.clone(), s("+13:00")])), "2025-03-04 10:11:12.1234567 +13:00");
    assert_eq!(shown(&ok("TODATETIMEOFFSET", &[local.clone(), i(-120)])), "2025-03-04 10:11:12.1234567 -02:00");
    assert_eq!(ok("TODATETIMEOFFSET", &[local.clone(), Value::Null]), Value::Null);
    for bad in [s("+14:01"), s("5"), s("+5:00"), s("+05:60"), i(841), i(-841)] {
        let e = call("TODATETIMEOFFSET", &[local.clone(), bad.clone()]).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (9812, "The timezone provided to builtin function todatetimeoffset is invalid."),
            "{bad:?}"
        );
    }
    assert_eq!(call("SWITCHOFFSET", &[d.clone(), i(900)]).unwrap_err().number, 9812);
    // an offset that moves the local date out of range
    let first = dto("0001-01-01 00:00:00 +00:00");
    assert_eq!(call("SWITCHOFFSET", &[first, s("-01:00")]).unwrap_err().number, 517);
    // dateparts are of the local time; tzoffset is the offset
    let part = |p: &str| ok("DATEPART", &[s(p), d.clone()]);
    assert_eq!((part("hour"), part("minute"), part("day")), (i(10), i(11), i(4)));
    assert_eq!((part("tz"), part("TZoffset")), (i(330), i(330)));
    assert_eq!(ok("DATENAME", &[s("tz"), d.clone()]), s("+05:30"));
    assert_eq!(ok("DATEPART", &[s("tz"), s("2007-05-10 00:00:01.1234567 +05:10")]), i(310));
    assert_eq!(ok("DATEPART", &[s("tz"), local.clone()]), i(0));
    let e = call("DATEPART", &[s("tz"), Value::Date(1)]).unwrap_err();
    assert_eq!(
        (e.number, e.message.as_str()),
        (9810, "The datepart tzoffset is not supported by date function datepart for data type date.")
    );
    assert_eq!(call("DATEADD", &[s("tz"), i(1), d.clone()]).unwrap_err().number, 9810);
    // DATEADD moves the local time and keeps the offset; DATEDIFF counts UTC boundaries
    assert_eq!(shown(&ok("DATEADD", &[s("hour"), i(20), d.clone()])), "2025-03-05 06:11:12.1234567 +05:30");
    let (a, b) = (dto("2025-03-04 23:00 -05:00"), dto("2025-03-05 01:00 -05:00"));
    assert_eq!(ok("DATEDIFF", &[s("day"), a.clone(), b.clone()]), i(0));
    assert_eq!(ok("DATEDIFF", &[s("hour"), a, b]), i(2));
    assert_eq!(ok("YEAR", &[dto("2025-01-01 01:00 +05:00")]), i(2025));
}

#[test]
fn date_parts() {
    assert_eq!(date_part("YYYY").unwrap(), DatePart::Year);
    assert_eq!(date_part("dw").unwrap(), DatePart::Weekday);
    let e = date_part("foo").unwrap_err();
    assert_eq!((e.number, e.message.as_str()), (155, "'foo' is not a recognized datepart option."));
    let d = dt("2024-01-31 13:45:07.1234567");
    let part = |p: &str| ok("DATEPART", &[s(p), d.clone()]);
    assert_eq!(part("year"), i(2024));
    assert_eq!(part("quarter"), i(1));
    assert_eq!(part("month"), i(1));
    assert_eq!(part("dayofyear"), i(31));
    assert_eq!(part("day"), i(31));
    assert_eq!(part("week"), i(5));
    assert_eq!(part("weekday"), i(4)); // Wednesday, Sunday = 1
    assert_eq!(part("hour"), i(13));
    assert_eq!(part("minute"), i(45));
    assert_eq!(part("second"), i(7));
    assert_eq!(part("millisecond"), i(123));
    assert_eq!(part("microsecond"), i(123_456));
    assert_eq!(part("nanosecond"), i(123_456_700));
    assert_eq!(part("iso_week"), i(5));
    assert_eq!(ok("DATEPART", &[s("iso_week"), dt("2021-01-03")]), i(53));
    assert_eq!(ok("DATEPART", &[s("week"), dt("2024-01-06")]), i(1));
    assert_eq!(ok("DATEPART", &[s("week"), dt("2024-01-07")]), i(2));
    assert_eq!(ok("DATENAME", &[s("month"), d.clone()]), s("January"));
    assert_eq!(ok("DATENAME", &[s("weekday"), d.clone()]), s("Wednesday"));
    assert_eq!(ok("DATENAME", &[s("year"), d.clone()]), s("2024"));
    assert_eq!(ok("YEAR", &[s("2024-01-31")]), i(2024));
    assert_eq!(ok("MONTH", std::slice::from_ref(&d)), i(1));
    assert_eq!(ok("DAY", &[i(0)]), i(1));
    let e = call("DATEPART", &[s("hour"), Value::Date(738_915)]).unwrap_err();
    assert_eq!(
        (e.number, e.message.as_str()),
        (9810, "The datepart hour is not supported by date function datepart for data type date.")
    );
    let ms = cast(&s("2024-01-31 00:00:00.007"), &T::VarChar(30), &T::DateTime, None).unwrap();
    assert_eq!(
        call_function("DATEPART", &[s("ms"), ms], &[T::VarChar(2), T::DateTime], &T::Int, &mut ctx()).unwrap(),
        i(7)
    );
}

#[test]
fn dateadd_and_datediff() {
    assert_eq!(ok("DATEADD", &[s("month"), i(1), dt("2024-01-31")]), dt("2024-02-29"));
    assert_eq!(ok("DATEADD", &[s("year"), i(-1), dt("2024-02-29")]), dt("2023-02-28"));
    assert_eq!(ok("DATEADD", &[s("quarter"), i(1), dt("2024-01-15")]), dt("2024-04-15"));
    assert_eq!(ok("DATEADD", &[s("day"), i(1), dt("2024-12-31 10:00")]), dt("2025-01-01 10:00"));
    assert_eq!(ok("DATEADD", &[s("hour"), i(-11), dt("2024-01-01 10:00")]), dt("2023-12-31 23:00"));
    assert_eq!(ok("DATEADD", &[s("week"), i(1), Value::Date(738_915)]), Value::Date(738_922));
    assert_eq!(ok("DATEADD", &[s("hour"), i(25), Value::Time(0)]), Value::Time(TICKS_PER_HOUR));
    // a string date becomes datetime
    let v = ok("DATEADD", &[s("dd"), i(1), s("2024-01-31")]);
    assert_eq!(v, cast(&s("2024-02-01"), &T::VarChar(10), &T::DateTime, None).unwrap());
    // the classic DATEADD(dd, DATEDIFF(dd, 0, x), 0)
    assert_eq!(ok("DATEDIFF", &[s("dd"), i(0), s("2024-01-31 13:45")]), i(45_320));
    let e = call("DATEADD", &[s("year"), i(1), dt("9999-06-01")]).unwrap_err();
    assert_eq!((e.number, e.message.as_str()), (517, "Adding a value to a 'datetime2' column caused an overflow."));
    assert_eq!(call("DATEADD", &[s("hour"), i(1), Value::Date(1)]).unwrap_err().number, 9810);
    let diff = |p: &str, a: &str, b: &str| ok("DATEDIFF", &[s(p), dt(a), dt(b)]);
    assert_eq!(diff("year", "2023-12-31 23:59:59", "2024-01-01"), i(1));
    assert_eq!(diff("month", "2024-01-31", "2024-02-01"), i(1));
    assert_eq!(diff("quarter", "2024-03-31", "2024-04-01"), i(1));
    assert_eq!(diff("day", "2024-01-31 23:59", "2024-02-01 00:01"), i(1));
    assert_eq!(diff("week", "2024-01-06", "2024-01-07"), i(1)); // Saturday → Sunday
    assert_eq!(diff("week", "2024-01-07", "2024-01-13"), i(0));
    assert_eq!(diff("hour", "2024-01-01 10:59", "2024-01-01 11:00"), i(1));
    assert_eq!(diff("second", "2024-01-01 10:00:00.9", "2024-01-01 10:00:01.1"), i(1));
    assert_eq!(diff("day", "2024-02-01", "2024-01-31"), i(-1));
    let e = call("DATEDIFF", &[s("ns"), dt("2000-01-01"), dt("2024-01-01")]).unwrap_err();
    assert_eq!(e.number, 535);
    assert_eq!(ok("DATEDIFF_BIG", &[s("ns"), dt("2024-01-01"), dt("2024-01-02")]), i(86_400_000_000_000));
}

#[test]
fn date_construction() {
    assert_eq!(ok("EOMONTH", &[dt("2024-02-10")]), Value::Date(days_from_civil(2024, 2, 29)));
    assert_eq!(ok("EOMONTH", &[dt("2024-01-31"), i(1)]), Value::Date(days_from_civil(2024, 2, 29)));
    assert_eq!(ok("DATEFROMPARTS", &[i(2024), i(1), i(31)]), Value::Date(738_915));
    assert_eq!(call("DATEFROMPARTS", &[i(2024), i(2), i(30)]).unwrap_err().number, 289);
    assert_eq!(ok("DATEFROMPARTS", &[i(2024), Value::Null, i(31)]), Value::Null);
    let v = ok("DATETIMEFROMPARTS", &[i(2024), i(1), i(31), i(13), i(45), i(0), i(123)]);
    assert_eq!(super::super::convert::display_text(&v, &T::DateTime), "2024-01-31 13:45:00.123");
}

proptest::proptest! {
    #[test]
    fn functions_never_panic(
        text in "\\PC{0,8}",
        n in proptest::prelude::any::<i64>(),
        m in -50i64..50,
        x in proptest::prelude::any::<f64>(),
        pick in proptest::collection::vec(0usize..6, 0..5),
    ) {
        let x = if x.is_finite() { x } else { 0.0 };
        let parts = ["year", "month", "day", "week", "hour", "ns", "iso_week", "quarter"];
        let pool = [
            (s(&text), T::NVarChar(20)),
            (i(n), T::BigInt),
            (i(m), T::Int),
            (Value::Float(x), T::Float),
            (Value::Decimal { value: i128::from(m) * 12345, scale: 3 }, T::Decimal { precision: 10, scale: 3 }),
            (dt("2024-01-31 13:45"), T::DateTime2 { scale: 7 }),
        ];
        let names = ["LEN", "DATALENGTH", "SUBSTRING", "LEFT", "RIGHT", "UPPER", "LTRIM", "REPLACE", "REPLICATE",
            "REVERSE", "CHARINDEX", "PATINDEX", "CONCAT", "CONCAT_WS", "STR", "SPACE", "CHAR", "ASCII", "NCHAR",
            "UNICODE", "STUFF", "QUOTENAME", "ABS", "ROUND", "FLOOR", "CEILING", "POWER", "SQRT", "SQUARE", "SIGN",
            "EXP", "LOG", "LOG10", "CHECKSUM", "ISNUMERIC", "ISDATE", "DATEADD", "DATEDIFF", "DATEDIFF_BIG",
            "DATEPART", "DATENAME", "YEAR", "EOMONTH", "DATEFROMPARTS"];
        let mut c = ctx();
        for name in names {
            let mut args: Vec<Value> = pick.iter().map(|&k| pool[k].0.clone()).collect();
            let mut types: Vec<SqlType> = pick.iter().map(|&k| pool[k].1).collect();
            if name.starts_with("DATE") && !name.ends_with("PARTS") {
                args.insert(0, s(parts[(n.unsigned_abs() % 8) as usize]));
                types.insert(0, T::VarChar(10));
            }
            if let Ok(Some(result)) = function_type(name, &types) {
                let _ = call_function(name, &args, &types, &result, &mut c);
            }
        }
    }
}
