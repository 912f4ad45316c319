//! Arithmetic, bitwise and concatenation operators on values whose operand and result
//! types come from [`super::arithmetic_plan`].

use super::convert::{cast, check_int, fit_string};
use super::datetime::DAYS_TO_1900;
use super::typing::{base_type_name, family, is_numeric, Family};
use super::{num, SqlType, Value};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{BinaryOp, UnaryOp};
use tessera_types::{MAX, TICKS_PER_DAY};

fn overflow(t: &SqlType) -> SqlError {
    let name = if matches!(t, SqlType::Decimal { .. }) { "numeric" } else { base_type_name(t) };
    msg::ARITHMETIC_OVERFLOW.with(&[&"expression", &name])
}

fn divide_by_zero() -> SqlError {
    msg::DIVIDE_BY_ZERO.err()
}

fn invalid(op: &str, t: &SqlType) -> SqlError {
    msg::INVALID_OPERAND_TYPE.with(&[&base_type_name(t), &op])
}

/// `a op b` for `+ - * / % & | ^` with both operands already of the types the binder
/// chose (decimals keep their own scales) and `result` from
/// [`super::arithmetic_type`]: integer overflow and decimal precision overflow raise 8115,
/// division or modulo by zero 8134, NULL gives NULL; strings and binaries concatenate;
/// `datetime ± datetime` adds the second as days since 1900-01-01.
pub fn binary_op(op: BinaryOp, a: &Value, b: &Value, result: &SqlType) -> SqlResult<Value> {
    use Value as V;
    if a.is_null() || b.is_null() {
        return Ok(V::Null);
    }
    match (family(result), a, b) {
        (Family::Char | Family::NChar, V::Str(x), V::Str(y)) if op == BinaryOp::Add => {
            let mut s = String::with_capacity(x.len() + y.len());
            s.push_str(x);
            s.push_str(y);
            Ok(fit_string(&s, result))
        }
        (Family::Binary, V::Binary(x), V::Binary(y)) if op == BinaryOp::Add => {
            let mut out = [&x[..], &y[..]].concat();
            if let SqlType::Binary(n) | SqlType::VarBinary(n) = *result {
                if n != MAX {
                    out.truncate(usize::from(n));
                }
            }
            Ok(V::Binary(Arc::from(out)))
        }
        (Family::Bit, V::Bit(x), V::Bit(y)) => match op {
            BinaryOp::BitAnd => Ok(V::Bit(x & y)),
            BinaryOp::BitOr => Ok(V::Bit(x | y)),
            BinaryOp::BitXor => Ok(V::Bit(x ^ y)),
            _ => Err(invalid(op_word(op), result)),
        },
        (Family::Int, _, _) => int_op(op, as_int(a)?, as_int(b)?, result),
        (Family::Float, _, _) => float_op(op, as_f64(a)?, as_f64(b)?, result),
        (Family::Decimal | Family::Money, _, _) => decimal_op(op, as_decimal(a)?, as_decimal(b)?, result),
        (Family::DateTime, V::DateTime { days, ticks }, V::DateTime { days: d2, ticks: t2 }) => {
            datetime_op(op, (*days, *ticks), (*d2 - DAYS_TO_1900, *t2), result)
        }
        _ => Err(invalid(op_word(op), result)),
    }
}

fn op_word(op: BinaryOp) -> &'static str {
    super::typing::operator_name(op)
}

fn as_int(v: &Value) -> SqlResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bit(b) => Ok(i64::from(*b)),
        _ => Err(msg::INTERNAL_QUERY_PROCESSOR_ERROR.err()),
    }
}

fn as_f64(v: &Value) -> SqlResult<f64> {
    match v {
        Value::Float(x) => Ok(*x),
        Value::Int(i) => Ok(*i as f64),
        Value::Bit(b) => Ok(f64::from(u8::from(*b))),
        Value::Decimal { value, scale } => Ok(num::decimal_to_f64(*value, *scale)),
        _ => Err(msg::INTERNAL_QUERY_PROCESSOR_ERROR.err()),
    }
}

fn as_decimal(v: &Value) -> SqlResult<(i128, u8)> {
    match v {
        Value::Decimal { value, scale } => Ok((*value, *scale)),
        Value::Int(i) => Ok((i128::from(*i), 0)),
        Value::Bit(b) => Ok((i128::from(*b), 0)),
        _ => Err(msg::INTERNAL_QUERY_PROCESSOR_ERROR.err()),
    }
}

fn int_op(op: BinaryOp, x: i64, y: i64, result: &SqlType) -> SqlResult<Value> {
    let (x, y) = (i128::from(x), i128::from(y));
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Subtract => x - y,
        BinaryOp::Multiply => x * y,
        BinaryOp::Divide | BinaryOp::Modulo if y == 0 => return Err(divide_by_zero()),
        BinaryOp::Divide => x / y,
        BinaryOp::Modulo => x % y,
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
        _ => return Err(invalid(op_word(op), result)),
    };
    check_int(r, result)
}

fn float_op(op: BinaryOp, x: f64, y: f64, result: &SqlType) -> SqlResult<Value> {
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Subtract => x - y,
        BinaryOp::Multiply => x * y,
        BinaryOp::Divide if y == 0.0 => return Err(divide_by_zero()),
        BinaryOp::Divide => x / y,
        _ => return Err(invalid(op_word(op), result)),
    };
    let r = if matches!(result, SqlType::Real) { f64::from(r as f32) } else { r };
    if !r.is_finite() {
        return Err(overflow(result));
    }
    Ok(Value::Float(r))
}

fn decimal_op(op: BinaryOp, (x, sx): (i128, u8), (y, sy): (i128, u8), result: &SqlType) -> SqlResult<Value> {
    let (precision, scale, money) = match *result {
        SqlType::Decimal { precision, scale } => (precision, scale, None),
        SqlType::SmallMoney => (10, 4, Some(i128::from(i32::MAX))),
        _ => (19, 4, Some(i128::from(i64::MAX))),
    };
    let r = match op {
        BinaryOp::Add => num::add(x, sx, y, sy, scale),
        BinaryOp::Subtract => num::add(x, sx, -y, sy, scale),
        BinaryOp::Multiply => num::mul(x, sx, y, sy, scale),
        BinaryOp::Divide | BinaryOp::Modulo if y == 0 => return Err(divide_by_zero()),
        BinaryOp::Divide => num::div(x, sx, y, sy, scale),
        BinaryOp::Modulo => num::rem(x, sx, y, sy, scale),
        _ => return Err(invalid(op_word(op), result)),
    };
    let r = r.ok_or_else(|| overflow(result))?;
    let fits = match money {
        Some(max) => r <= max && r >= -max - 1,
        None => num::fits_precision(r, precision),
    };
    if !fits {
        return Err(overflow(result));
    }
    Ok(Value::Decimal { value: r, scale })
}

/// `datetime ± n` where `n` is a datetime taken as days since 1900-01-01 (how SQL Server
/// adds numbers to datetimes).
fn datetime_op(
    op: BinaryOp,
    (days, ticks): (i32, u64),
    (n_days, n_ticks): (i32, u64),
    result: &SqlType,
) -> SqlResult<Value> {
    let total = |d: i32, t: u64| i128::from(d) * i128::from(TICKS_PER_DAY) + i128::from(t);
    let r = match op {
        BinaryOp::Add => total(days, ticks) + total(n_days, n_ticks),
        BinaryOp::Subtract => total(days, ticks) - total(n_days, n_ticks),
        _ => return Err(invalid(op_word(op), result)),
    };
    let overflowed = || msg::DATE_ADD_OVERFLOW.with(&[&base_type_name(result)]);
    let per_day = i128::from(TICKS_PER_DAY);
    let d = i32::try_from(r.div_euclid(per_day)).map_err(|_| overflowed())?;
    let t = r.rem_euclid(per_day) as u64;
    cast(&Value::DateTime { days: d, ticks: t }, &SqlType::DateTime2 { scale: 7 }, result, None)
        .map_err(|_| overflowed())
}

/// The type of a unary operator's result: `-x` and `+x` keep numeric types (`+` also
/// strings), `~x` integer types and bit.
pub fn unary_type(op: UnaryOp, t: &SqlType) -> SqlResult<SqlType> {
    let ok = match op {
        UnaryOp::Minus => is_numeric(t),
        UnaryOp::Plus => is_numeric(t) || matches!(family(t), Family::Char | Family::NChar),
        UnaryOp::BitNot => matches!(family(t), Family::Int | Family::Bit),
        UnaryOp::Not => matches!(t, SqlType::Bit),
    };
    if !ok {
        let name = match op {
            UnaryOp::Minus => "minus",
            UnaryOp::Plus => "plus",
            UnaryOp::BitNot => "'~'",
            UnaryOp::Not => "not",
        };
        return Err(msg::INVALID_OPERAND_TYPE.with(&[&base_type_name(t), &name]));
    }
    Ok(*t)
}

/// `-v`: overflow for the most negative integer (`-(-2147483648)` as int) raises 8115.
pub fn negate(v: &Value, t: &SqlType) -> SqlResult<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Int(i) => check_int(-i128::from(*i), t),
        Value::Float(x) => Ok(Value::Float(-x)),
        Value::Decimal { value, scale } => Ok(Value::Decimal { value: -value, scale: *scale }),
        _ => Err(invalid("minus", t)),
    }
}

/// `~v`: bitwise complement within the type (`~CAST(1 AS tinyint)` is 254).
pub fn bit_not(v: &Value, t: &SqlType) -> SqlResult<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Bit(b) => Ok(Value::Bit(!b)),
        Value::Int(i) if matches!(t, SqlType::TinyInt) => Ok(Value::Int(!i & 0xFF)),
        Value::Int(i) => Ok(Value::Int(!i)),
        _ => Err(invalid("'~'", t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::typing::arithmetic_plan;
    use proptest::prelude::*;
    use BinaryOp::*;

    fn dec(value: i128, scale: u8) -> Value {
        Value::Decimal { value, scale }
    }

    #[test]
    fn integers() {
        assert_eq!(binary_op(Add, &Value::Int(2), &Value::Int(3), &SqlType::Int).unwrap(), Value::Int(5));
        assert_eq!(binary_op(Divide, &Value::Int(7), &Value::Int(2), &SqlType::Int).unwrap(), Value::Int(3));
        assert_eq!(binary_op(Divide, &Value::Int(-7), &Value::Int(2), &SqlType::Int).unwrap(), Value::Int(-3));
        assert_eq!(binary_op(Modulo, &Value::Int(-7), &Value::Int(2), &SqlType::Int).unwrap(), Value::Int(-1));
        assert_eq!(binary_op(BitAnd, &Value::Int(6), &Value::Int(3), &SqlType::Int).unwrap(), Value::Int(2));
        assert_eq!(binary_op(BitXor, &Value::Int(6), &Value::Int(3), &SqlType::Int).unwrap(), Value::Int(5));
        let e = binary_op(Add, &Value::Int(i32::MAX.into()), &Value::Int(1), &SqlType::Int).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (8115, "Arithmetic overflow error converting expression to data type int.")
        );
        let e = binary_op(Multiply, &Value::Int(i64::MAX), &Value::Int(2), &SqlType::BigInt).unwrap_err();
        assert_eq!(e.message, "Arithmetic overflow error converting expression to data type bigint.");
        let e = binary_op(Divide, &Value::Int(1), &Value::Int(0), &SqlType::Int).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (8134, "Divide by zero error encountered."));
        assert_eq!(binary_op(Modulo, &Value::Int(1), &Value::Int(0), &SqlType::Int).unwrap_err().number, 8134);
        assert_eq!(binary_op(Add, &Value::Null, &Value::Int(0), &SqlType::Int).unwrap(), Value::Null);
        assert_eq!(binary_op(Add, &Value::Int(200), &Value::Int(100), &SqlType::TinyInt).unwrap_err().number, 8115);
    }

    #[test]
    fn decimals_follow_the_result_scale() {
        let d = |p, s| SqlType::Decimal { precision: p, scale: s };
        let plan = arithmetic_plan(Divide, &SqlType::Int, &SqlType::Int).unwrap();
        assert_eq!(plan.result, SqlType::Int);
        // SELECT 1.0/3 → 0.333333: the constant 3 is decimal(1,0) there, so decimal(7,6)
        let plan = arithmetic_plan(Divide, &d(2, 1), &d(1, 0)).unwrap();
        assert_eq!(plan.result, d(7, 6));
        assert_eq!(arithmetic_plan(Divide, &d(2, 1), &SqlType::Int).unwrap().result, d(13, 12));
        assert_eq!(binary_op(Divide, &dec(10, 1), &dec(3, 0), &plan.result).unwrap(), dec(333_333, 6));
        // 2.50 + 1.5 = 4.00
        assert_eq!(binary_op(Add, &dec(250, 2), &dec(15, 1), &d(4, 2)).unwrap(), dec(400, 2));
        assert_eq!(binary_op(Subtract, &dec(250, 2), &dec(15, 1), &d(4, 2)).unwrap(), dec(100, 2));
        assert_eq!(binary_op(Multiply, &dec(15, 1), &dec(15, 1), &d(5, 2)).unwrap(), dec(225, 2));
        assert_eq!(binary_op(Add, &dec(99, 0), &dec(1, 0), &d(2, 0)).unwrap_err().number, 8115);
        assert_eq!(
            binary_op(Add, &dec(99, 0), &dec(1, 0), &d(2, 0)).unwrap_err().message,
            "Arithmetic overflow error converting expression to data type numeric."
        );
        assert_eq!(binary_op(Divide, &dec(1, 0), &dec(0, 2), &d(10, 6)).unwrap_err().number, 8134);
        // money keeps 4 decimals
        assert_eq!(binary_op(Multiply, &dec(25_000, 4), &dec(30_000, 4), &SqlType::Money).unwrap(), dec(75_000, 4));
        assert_eq!(binary_op(Divide, &dec(10_000, 4), &dec(30_000, 4), &SqlType::Money).unwrap(), dec(3333, 4));
    }

    #[test]
    fn floats_strings_and_dates() {
        assert_eq!(
            binary_op(Divide, &Value::Float(1.0), &Value::Float(4.0), &SqlType::Float).unwrap(),
            Value::Float(0.25)
        );
        assert_eq!(
            binary_op(Divide, &Value::Float(1.0), &Value::Float(0.0), &SqlType::Float).unwrap_err().number,
            8134
        );
        assert_eq!(
            binary_op(Multiply, &Value::Float(1e308), &Value::Float(10.0), &SqlType::Float).unwrap_err().number,
            8115
        );
        assert_eq!(
            binary_op(Add, &Value::str("ab"), &Value::str("cd"), &SqlType::VarChar(4)).unwrap(),
            Value::str("abcd")
        );
        assert_eq!(
            binary_op(Add, &Value::str("ab"), &Value::str("cd"), &SqlType::VarChar(3)).unwrap(),
            Value::str("abc")
        );
        let bin = |b: &[u8]| Value::Binary(Arc::from(b));
        assert_eq!(binary_op(Add, &bin(&[1]), &bin(&[2]), &SqlType::VarBinary(2)).unwrap(), bin(&[1, 2]));
        // datetime + 1 day: the binder casts 1 to datetime (1900-01-02)
        let one = cast(&Value::Int(1), &SqlType::Int, &SqlType::DateTime, None).unwrap();
        let d = Value::DateTime { days: 738_915, ticks: 0 };
        assert_eq!(binary_op(Add, &d, &one, &SqlType::DateTime).unwrap(), Value::DateTime { days: 738_916, ticks: 0 });
        assert_eq!(
            binary_op(Subtract, &d, &one, &SqlType::DateTime).unwrap(),
            Value::DateTime { days: 738_914, ticks: 0 }
        );
        let half = cast(&Value::Float(0.5), &SqlType::Float, &SqlType::DateTime, None).unwrap();
        assert_eq!(
            binary_op(Add, &d, &half, &SqlType::DateTime).unwrap(),
            Value::DateTime { days: 738_915, ticks: TICKS_PER_DAY / 2 }
        );
        let max = Value::DateTime { days: DAYS_TO_1900 + 2_958_463, ticks: 0 };
        assert_eq!(binary_op(Add, &max, &one, &SqlType::DateTime).unwrap_err().number, 517);
    }

    #[test]
    fn unary() {
        let e = negate(&Value::Int(i32::MIN.into()), &SqlType::Int).unwrap_err();
        assert_eq!(e.message, "Arithmetic overflow error converting expression to data type int.");
        assert_eq!(negate(&Value::Int(5), &SqlType::Int).unwrap(), Value::Int(-5));
        assert_eq!(negate(&dec(15, 1), &SqlType::Decimal { precision: 2, scale: 1 }).unwrap(), dec(-15, 1));
        assert_eq!(bit_not(&Value::Int(1), &SqlType::TinyInt).unwrap(), Value::Int(254));
        assert_eq!(bit_not(&Value::Int(0), &SqlType::Int).unwrap(), Value::Int(-1));
        assert_eq!(bit_not(&Value::Bit(true), &SqlType::Bit).unwrap(), Value::Bit(false));
        assert_eq!(unary_type(UnaryOp::Minus, &SqlType::VarChar(1)).unwrap_err().number, 8117);
        assert_eq!(unary_type(UnaryOp::BitNot, &SqlType::Float).unwrap_err().number, 8117);
    }

    proptest! {
        #[test]
        fn decimal_addition_matches_i128(a in -10i128.pow(17)..10i128.pow(17), b in -10i128.pow(17)..10i128.pow(17)) {
            let t = SqlType::Decimal { precision: 18, scale: 2 };
            let plan = arithmetic_plan(Add, &t, &t).unwrap();
            prop_assert_eq!(binary_op(Add, &dec(a, 2), &dec(b, 2), &plan.result).unwrap(), dec(a + b, 2));
            let plan = arithmetic_plan(Multiply, &t, &t).unwrap();
            prop_assert_eq!(binary_op(Multiply, &dec(a, 2), &dec(b, 2), &plan.result).unwrap(), dec(a * b, 4));
        }
    }
}
