//! SQL Server's static type rules, in one place: type names, data type precedence, the
//! implicit/explicit conversion chart, the common type of two expressions (comparisons,
//! CASE, UNION) and the result types of the arithmetic operators.

use super::SqlType;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{BinaryOp, TypeArg, TypeName};
use tessera_types::MAX;

/// The most digits a `decimal` can have.
pub const MAX_PRECISION: u8 = 38;
/// The longest non-`max` `char`/`varchar`/`binary`/`varbinary`, in bytes.
pub const MAX_BYTES: u16 = 8000;
/// The longest non-`max` `nchar`/`nvarchar`, in characters.
pub const MAX_NCHARS: u16 = 4000;

/// Groups of types that convert, compare and compute alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Bit,
    /// tinyint, smallint, int, bigint
    Int,
    /// real, float
    Float,
    Decimal,
    /// money, smallmoney
    Money,
    /// char, varchar
    Char,
    /// nchar, nvarchar
    NChar,
    /// binary, varbinary
    Binary,
    Date,
    Time,
    /// datetime, smalldatetime
    DateTime,
    DateTime2,
    DateTimeOffset,
    Guid,
}

/// The family of a type.
pub fn family(t: &SqlType) -> Family {
    use SqlType as T;
    match t {
        T::Bit => Family::Bit,
        T::TinyInt | T::SmallInt | T::Int | T::BigInt => Family::Int,
        T::Real | T::Float => Family::Float,
        T::Decimal { .. } => Family::Decimal,
        T::Money | T::SmallMoney => Family::Money,
        T::Char(_) | T::VarChar(_) => Family::Char,
        T::NChar(_) | T::NVarChar(_) => Family::NChar,
        T::Binary(_) | T::VarBinary(_) => Family::Binary,
        T::Date => Family::Date,
        T::Time { .. } => Family::Time,
        T::DateTime | T::SmallDateTime => Family::DateTime,
        T::DateTime2 { .. } => Family::DateTime2,
        T::DateTimeOffset { .. } => Family::DateTimeOffset,
        T::UniqueIdentifier => Family::Guid,
    }
}

/// True for the character types.
pub fn is_string(t: &SqlType) -> bool {
    matches!(family(t), Family::Char | Family::NChar)
}

/// True for `nchar` and `nvarchar`.
pub fn is_unicode(t: &SqlType) -> bool {
    family(t) == Family::NChar
}

/// True for the exact and approximate numeric types (bit excluded).
pub fn is_numeric(t: &SqlType) -> bool {
    matches!(family(t), Family::Int | Family::Float | Family::Decimal | Family::Money)
}

/// True for date, time, datetime, smalldatetime, datetime2 and datetimeoffset.
pub fn is_temporal(t: &SqlType) -> bool {
    matches!(family(t), Family::Date | Family::Time | Family::DateTime | Family::DateTime2 | Family::DateTimeOffset)
}

fn data_type_not_found(name: &str) -> SqlError {
    msg::TYPE_NOT_FOUND.with(&[&"Column, parameter, or variable #1: ", &name])
}

fn no_width(name: &str) -> SqlError {
    msg::COLUMN_WIDTH_NOT_ALLOWED.with(&[&name])
}

fn zero_length() -> SqlError {
    msg::ZERO_LENGTH_OR_PRECISION.err()
}

/// Resolves a type as written (`varchar(10)`, `decimal(10, 2)`, `double precision`) to a
/// [`SqlType`]. Length defaults to 1, or 30 inside `CAST`/`CONVERT` (`in_cast`).
pub fn resolve_type(t: &TypeName, in_cast: bool) -> SqlResult<SqlType> {
    use SqlType as T;
    let name = t.name.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    let name = name.strip_prefix("sys.").unwrap_or(&name);
    let fixed = |ty: SqlType| if t.args.is_empty() { Ok(ty) } else { Err(no_width(name)) };
    let default_len = if in_cast { 30 } else { 1 };
    let length = |unicode: bool, allow_max: bool| -> SqlResult<u16> {
        let limit = if unicode { MAX_NCHARS } else { MAX_BYTES };
        match t.args.as_slice() {
            [] => Ok(default_len),
            [TypeArg::Max] if allow_max => Ok(MAX),
            [TypeArg::Max] => Err(msg::COLUMN_SIZE_TOO_LARGE.with(&[&limit])),
            [TypeArg::Number(0)] => Err(zero_length()),
            [TypeArg::Number(n)] if *n > u32::from(limit) => Err(msg::TYPE_SIZE_TOO_LARGE.with(&[&n, &name, &limit])),
            [TypeArg::Number(n)] => Ok(*n as u16),
            _ => Err(no_width(name)),
        }
    };
    let scale7 = || -> SqlResult<u8> {
        match t.args.as_slice() {
            [] => Ok(7),
            [TypeArg::Number(s)] if *s <= 7 => Ok(*s as u8),
            [TypeArg::Number(s)] => Err(msg::INVALID_SCALE.with(&[&s])),
            _ => Err(no_width(name)),
        }
    };
    Ok(match name {
        "bit" => fixed(T::Bit)?,
        "tinyint" => fixed(T::TinyInt)?,
        "smallint" => fixed(T::SmallInt)?,
        "int" | "integer" => fixed(T::Int)?,
        "bigint" => fixed(T::BigInt)?,
        "real" => fixed(T::Real)?,
        "double precision" => fixed(T::Float)?,
        "float" => match t.args.as_slice() {
            [] => T::Float,
            [TypeArg::Number(0)] => return Err(zero_length()),
            [TypeArg::Number(n)] if *n <= 24 => T::Real,
            [TypeArg::Number(n)] if *n <= 53 => T::Float,
            [TypeArg::Number(n)] => return Err(msg::PRECISION_TOO_LARGE.with(&[&1, &n, &53])),
            _ => return Err(no_width(name)),
        },
        "decimal" | "numeric" | "dec" => decimal_type(&t.args)?,
        "money" => fixed(T::Money)?,
        "smallmoney" => fixed(T::SmallMoney)?,
        "char" | "character" => T::Char(length(false, false)?),
        "varchar" | "char varying" | "character varying" => T::VarChar(length(false, true)?),
        "nchar" | "national char" | "national character" => T::NChar(length(true, false)?),
        "nvarchar" | "national char varying" | "national character varying" => T::NVarChar(length(true, true)?),
        "binary" => T::Binary(length(false, false)?),
        "varbinary" | "binary varying" => T::VarBinary(length(false, true)?),
        "sysname" => fixed(T::NVarChar(128))?,
        "text" => fixed(T::VarChar(MAX))?,
        "ntext" => fixed(T::NVarChar(MAX))?,
        "image" => fixed(T::VarBinary(MAX))?,
        "date" => fixed(T::Date)?,
        "time" => T::Time { scale: scale7()? },
        "datetime" => fixed(T::DateTime)?,
        "datetime2" => T::DateTime2 { scale: scale7()? },
        "datetimeoffset" => T::DateTimeOffset { scale: scale7()? },
        "smalldatetime" => fixed(T::SmallDateTime)?,
        "uniqueidentifier" => fixed(T::UniqueIdentifier)?,
        _ => return Err(data_type_not_found(&t.name)),
    })
}

fn decimal_type(args: &[TypeArg]) -> SqlResult<SqlType> {
    let (p, s) = match args {
        [] => (18, 0),
        [TypeArg::Number(p)] => (*p, 0),
        [TypeArg::Number(p), TypeArg::Number(s)] => (*p, *s),
        _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"max"])),
    };
    if p == 0 {
        return Err(zero_length());
    }
    if p > u32::from(MAX_PRECISION) {
        return Err(msg::PRECISION_TOO_LARGE.with(&[&1, &p, &MAX_PRECISION]));
    }
    if s > p {
        return Err(msg::SCALE_EXCEEDS_PRECISION.with(&[&s, &p]));
    }
    Ok(SqlType::Decimal { precision: p as u8, scale: s as u8 })
}

/// The type's name without parameters, as SQL Server spells it in messages (`varchar`).
pub fn base_type_name(t: &SqlType) -> &'static str {
    use SqlType as T;
    match t {
        T::Bit => "bit",
        T::TinyInt => "tinyint",
        T::SmallInt => "smallint",
        T::Int => "int",
        T::BigInt => "bigint",
        T::Real => "real",
        T::Float => "float",
        T::Decimal { .. } => "decimal",
        T::Money => "money",
        T::SmallMoney => "smallmoney",
        T::Char(_) => "char",
        T::VarChar(_) => "varchar",
        T::NChar(_) => "nchar",
        T::NVarChar(_) => "nvarchar",
        T::Binary(_) => "binary",
        T::VarBinary(_) => "varbinary",
        T::Date => "date",
        T::Time { .. } => "time",
        T::DateTime => "datetime",
        T::DateTime2 { .. } => "datetime2",
        T::SmallDateTime => "smalldatetime",
        T::DateTimeOffset { .. } => "datetimeoffset",
        T::UniqueIdentifier => "uniqueidentifier",
    }
}

/// The type's full name as SQL Server spells it: `int`, `varchar(10)`, `nvarchar(max)`,
/// `decimal(10,2)`, `datetime2(7)`.
pub fn type_name(t: &SqlType) -> String {
    use SqlType as T;
    let base = base_type_name(t);
    match *t {
        T::Char(n) | T::VarChar(n) | T::NChar(n) | T::NVarChar(n) | T::Binary(n) | T::VarBinary(n) => {
            if n == MAX {
                format!("{base}(max)")
            } else {
                format!("{base}({n})")
            }
        }
        T::Decimal { precision, scale } => format!("{base}({precision},{scale})"),
        T::Time { scale } | T::DateTime2 { scale } | T::DateTimeOffset { scale } => format!("{base}({scale})"),
        _ => base.to_string(),
    }
}

/// SQL Server's data type precedence: when two types meet, the one with the higher number
/// wins (datetimeoffset highest, binary lowest).
pub fn precedence(t: &SqlType) -> u8 {
    use SqlType as T;
    match t {
        T::Binary(_) => 1,
        T::VarBinary(_) => 2,
        T::Char(_) => 3,
        T::VarChar(_) => 4,
        T::NChar(_) => 5,
        T::NVarChar(_) => 6,
        T::UniqueIdentifier => 7,
        T::Bit => 8,
        T::TinyInt => 9,
        T::SmallInt => 10,
        T::Int => 11,
        T::BigInt => 12,
        T::SmallMoney => 13,
        T::Money => 14,
        T::Decimal { .. } => 15,
        T::Real => 16,
        T::Float => 17,
        T::Time { .. } => 18,
        T::Date => 19,
        T::SmallDateTime => 20,
        T::DateTime => 21,
        T::DateTime2 { .. } => 22,
        T::DateTimeOffset { .. } => 23,
    }
}

/// Whether a value of one type may be converted to another, per SQL Server's conversion
/// chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    /// Happens on its own where types meet (comparison, assignment, arithmetic).
    Implicit,
    /// Only with `CAST` or `CONVERT`.
    Explicit,
    /// Error 529 even with `CAST`.
    NotAllowed,
}

/// SQL Server's conversion chart for `from` → `to`.
pub fn conversion(from: &SqlType, to: &SqlType) -> Conversion {
    use Conversion::*;
    use Family as F;
    let (f, t) = (family(from), family(to));
    if f == t {
        return Implicit;
    }
    let numeric = |x: F| matches!(x, F::Bit | F::Int | F::Float | F::Decimal | F::Money);
    let string = |x: F| matches!(x, F::Char | F::NChar);
    match f {
        _ if string(t) => Implicit,
        F::Char | F::NChar if t == F::Binary => Explicit,
        F::Char | F::NChar => Implicit,
        F::Bit | F::Int | F::Decimal | F::Money => match t {
            F::Binary | F::DateTime => Implicit,
            _ if numeric(t) => Implicit,
            _ => NotAllowed,
        },
        F::Float => match t {
            F::Binary => Explicit,
            F::DateTime => Implicit,
            _ if numeric(t) => Implicit,
            _ => NotAllowed,
        },
        F::Binary => match t {
            F::Bit | F::Int | F::Decimal | F::Money | F::DateTime | F::Guid => Implicit,
            F::Date | F::Time | F::DateTime2 | F::DateTimeOffset => Explicit,
            _ => NotAllowed,
        },
        F::Date => match t {
            F::DateTime | F::DateTime2 | F::DateTimeOffset => Implicit,
            F::Binary => Explicit,
            _ => NotAllowed,
        },
        F::Time => match t {
            F::DateTime | F::DateTime2 | F::DateTimeOffset => Implicit,
            F::Binary => Explicit,
            _ => NotAllowed,
        },
        F::DateTime => match t {
            F::Date | F::Time | F::DateTime2 | F::DateTimeOffset => Implicit,
            F::Binary => Explicit,
            _ if numeric(t) => Explicit,
            _ => NotAllowed,
        },
        F::DateTime2 | F::DateTimeOffset => match t {
            F::Date | F::Time | F::DateTime | F::DateTime2 | F::DateTimeOffset => Implicit,
            F::Binary => Explicit,
            _ => NotAllowed,
        },
        F::Guid => match t {
            F::Binary => Implicit,
            _ => NotAllowed,
        },
    }
}

/// Error 206, `Operand type clash: date is incompatible with int`.
pub fn type_clash(a: &SqlType, b: &SqlType) -> SqlError {
    msg::OPERAND_TYPE_CLASH.with(&[&base_type_name(a), &base_type_name(b)])
}

/// Error 257 for a conversion that needs `CONVERT`.
pub fn implicit_not_allowed(from: &SqlType, to: &SqlType) -> SqlError {
    msg::IMPLICIT_CONVERSION_NOT_ALLOWED.with(&[&base_type_name(from), &base_type_name(to)])
}

/// Checks that a value of type `from` may be assigned or implicitly converted to `to`
/// (206 or 257 otherwise).
pub fn check_implicit(from: &SqlType, to: &SqlType) -> SqlResult<()> {
    match conversion(from, to) {
        Conversion::Implicit => Ok(()),
        Conversion::Explicit => Err(implicit_not_allowed(from, to)),
        Conversion::NotAllowed => Err(type_clash(from, to)),
    }
}

/// The exact decimal type an integer, bit or money type converts to when it meets a
/// decimal: int → decimal(10,0), money → decimal(19,4).
pub fn as_decimal(t: &SqlType) -> Option<(u8, u8)> {
    use SqlType as T;
    match *t {
        T::Bit => Some((1, 0)),
        T::TinyInt => Some((3, 0)),
        T::SmallInt => Some((5, 0)),
        T::Int => Some((10, 0)),
        T::BigInt => Some((19, 0)),
        T::SmallMoney => Some((10, 4)),
        T::Money => Some((19, 4)),
        T::Decimal { precision, scale } => Some((precision, scale)),
        _ => None,
    }
}

/// `decimal(p, s)` with p > 38 brought back to 38 the way SQL Server does: the integral
/// digits are kept and the scale shrinks, but not below min(s, 6).
pub fn decimal_result(p: u32, s: u32) -> SqlType {
    let (p, s) = if p > 38 {
        let integral = p.saturating_sub(s);
        let s = (s.min(38u32.saturating_sub(integral))).max(s.min(6));
        (38, s)
    } else {
        (p, s)
    };
    SqlType::Decimal { precision: p.max(1) as u8, scale: s as u8 }
}

fn decimal_union(a: (u8, u8), b: (u8, u8)) -> SqlType {
    let (p1, s1, p2, s2) = (u32::from(a.0), u32::from(a.1), u32::from(b.0), u32::from(b.1));
    let s = s1.max(s2);
    let integral = p1.saturating_sub(s1).max(p2.saturating_sub(s2));
    let p = s + integral;
    // union results keep the integral digits: scale is cut first
    if p > 38 {
        return SqlType::Decimal { precision: 38, scale: 38u32.saturating_sub(integral) as u8 };
    }
    SqlType::Decimal { precision: p as u8, scale: s as u8 }
}

fn string_length(t: &SqlType) -> u16 {
    use SqlType as T;
    match *t {
        T::Char(n) | T::VarChar(n) | T::NChar(n) | T::NVarChar(n) | T::Binary(n) | T::VarBinary(n) => n,
        _ => 30,
    }
}

fn is_var(t: &SqlType) -> bool {
    matches!(t, SqlType::VarChar(_) | SqlType::NVarChar(_) | SqlType::VarBinary(_))
}

/// A character or binary type of the given kind and length, capped at the kind's limit.
fn sized(unicode: bool, binary: bool, var: bool, len: u32) -> SqlType {
    use SqlType as T;
    let limit = if unicode { MAX_NCHARS } else { MAX_BYTES };
    let n = if len == u32::from(MAX) { MAX } else { len.min(u32::from(limit)).max(1) as u16 };
    match (binary, unicode, var) {
        (true, _, true) => T::VarBinary(n),
        (true, _, false) => T::Binary(n),
        (false, true, true) => T::NVarChar(n),
        (false, true, false) => T::NChar(n),
        (false, false, true) => T::VarChar(n),
        (false, false, false) => T::Char(n),
    }
}

/// The type both `a` and `b` convert to when they meet in a comparison, `CASE`,
/// `COALESCE` or `UNION`: the type of higher precedence, with lengths, precision and scale
/// widened to hold both. Fails with 206 (or 257) when SQL Server refuses the conversion.
pub fn common_type(a: &SqlType, b: &SqlType) -> SqlResult<SqlType> {
    use SqlType as T;
    let (lo, hi) = if precedence(a) > precedence(b) { (b, a) } else { (a, b) };
    match conversion(lo, hi) {
        Conversion::Implicit => {}
        Conversion::Explicit => return Err(implicit_not_allowed(lo, hi)),
        Conversion::NotAllowed => return Err(type_clash(a, b)),
    }
    let (fl, fh) = (family(lo), family(hi));
    Ok(match (fl, fh) {
        (Family::Char | Family::NChar | Family::Binary, Family::Char | Family::NChar | Family::Binary) => {
            let (la, lb) = (string_length(lo), string_length(hi));
            let len = if la == MAX || lb == MAX { u32::from(MAX) } else { u32::from(la.max(lb)) };
            sized(is_unicode(hi), fh == Family::Binary, is_var(lo) || is_var(hi), len)
        }
        (_, Family::Decimal) => match (as_decimal(lo), as_decimal(hi)) {
            (Some(x), Some(y)) => decimal_union(x, y),
            _ => *hi,
        },
        (_, Family::Time) => T::Time { scale: max_scale(lo, hi) },
        (_, Family::DateTime2) => T::DateTime2 { scale: max_scale(lo, hi) },
        (_, Family::DateTimeOffset) => T::DateTimeOffset { scale: max_scale(lo, hi) },
        _ => *hi,
    })
}

/// Fractional-second digits of a temporal type (datetime: 3, smalldatetime: 0).
pub(crate) fn fraction_digits(t: &SqlType) -> u8 {
    match *t {
        SqlType::Time { scale } | SqlType::DateTime2 { scale } | SqlType::DateTimeOffset { scale } => scale,
        SqlType::DateTime => 3,
        _ => 0,
    }
}

fn max_scale(a: &SqlType, b: &SqlType) -> u8 {
    let s = |t: &SqlType| if is_temporal(t) { fraction_digits(t) } else { 7 };
    s(a).max(s(b))
}

/// SQL Server's name for an arithmetic operator in messages 8117 and 402.
pub fn operator_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "add",
        BinaryOp::Subtract => "subtract",
        BinaryOp::Multiply => "multiply",
        BinaryOp::Divide => "divide",
        BinaryOp::Modulo => "modulo",
        BinaryOp::BitAnd => "boolean AND",
        BinaryOp::BitOr => "boolean OR",
        BinaryOp::BitXor => "boolean XOR",
        BinaryOp::Eq => "equal to",
        BinaryOp::NotEq => "not equal to",
        BinaryOp::Lt => "less than",
        BinaryOp::LtEq => "less than or equal to",
        BinaryOp::Gt => "greater than",
        BinaryOp::GtEq => "greater than or equal to",
        BinaryOp::NotLt => "not less than",
        BinaryOp::NotGt => "not greater than",
        BinaryOp::And => "and",
        BinaryOp::Or => "or",
    }
}

fn invalid_operand(op: BinaryOp, t: &SqlType) -> SqlError {
    msg::INVALID_OPERAND_TYPE.with(&[&base_type_name(t), &operator_name(op)])
}

fn incompatible(op: BinaryOp, a: &SqlType, b: &SqlType) -> SqlError {
    msg::INCOMPATIBLE_OPERATOR_TYPES.with(&[&base_type_name(a), &base_type_name(b), &operator_name(op)])
}

/// How the binder evaluates `a op b`: the types to cast the left and right operands to,
/// and the result type that [`super::binary_op`] produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArithmeticPlan {
    pub left: SqlType,
    pub right: SqlType,
    pub result: SqlType,
}

/// The result type of `a op b` for `+ - * / % & | ^`.
pub fn arithmetic_type(op: BinaryOp, a: &SqlType, b: &SqlType) -> SqlResult<SqlType> {
    Ok(arithmetic_plan(op, a, b)?.result)
}

/// The operand and result types of `a op b` for `+ - * / % & | ^`, per SQL Server: string
/// `+` concatenates, numbers go to the type of higher precedence with SQL Server's decimal
/// precision and scale formulas, `datetime ± number` adds days; everything else fails with
/// 8117, 402 or 206 as SQL Server does.
pub fn arithmetic_plan(op: BinaryOp, a: &SqlType, b: &SqlType) -> SqlResult<ArithmeticPlan> {
    use Family as F;
    let (fa, fb) = (family(a), family(b));
    let text = |f: F| matches!(f, F::Char | F::NChar);
    if op == BinaryOp::Add && text(fa) && text(fb) {
        return Ok(concatenation(a, b, false));
    }
    if op == BinaryOp::Add && fa == F::Binary && fb == F::Binary {
        return Ok(concatenation(a, b, true));
    }
    if (text(fa) && fb == F::Binary) || (fa == F::Binary && text(fb)) {
        return Err(incompatible(op, a, b));
    }
    if matches!(op, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor) {
        return bitwise(op, a, b);
    }
    let other_temporal = |f: F| matches!(f, F::Date | F::Time | F::DateTime2 | F::DateTimeOffset);
    if is_temporal(a) && is_temporal(b) && fa != fb && (other_temporal(fa) || other_temporal(fb)) {
        return Err(incompatible(op, a, b));
    }
    let operand = common_type(a, b)?;
    let same = |t: SqlType| Ok(ArithmeticPlan { left: t, right: t, result: t });
    match family(&operand) {
        F::Int => same(operand),
        F::Float => {
            if op == BinaryOp::Modulo {
                return Err(invalid_operand(op, &operand));
            }
            same(operand)
        }
        F::Money => same(operand),
        F::Decimal => decimal_plan(op, a, b),
        F::DateTime if matches!(op, BinaryOp::Add | BinaryOp::Subtract) => same(operand),
        _ => {
            // datetime with * / %, date/time/datetime2, bit, strings, guid, binary
            let bad = [a, b].into_iter().find(|t| !matches!(family(t), F::Int | F::Float | F::Decimal | F::Money));
            Err(invalid_operand(op, bad.unwrap_or(&operand)))
        }
    }
}

fn concatenation(a: &SqlType, b: &SqlType, binary: bool) -> ArithmeticPlan {
    let unicode = is_unicode(a) || is_unicode(b);
    let (la, lb) = (string_length(a), string_length(b));
    let len = if la == MAX || lb == MAX { u32::from(MAX) } else { u32::from(la) + u32::from(lb) };
    let var = is_var(a) || is_var(b);
    let result = sized(unicode, binary, var, len);
    // each operand keeps its length; nvarchar wins over varchar
    let widen = |t: &SqlType| {
        if unicode && !is_unicode(t) {
            sized(true, false, is_var(t), string_length(t).into())
        } else {
            *t
        }
    };
    ArithmeticPlan { left: widen(a), right: widen(b), result }
}

fn bitwise(op: BinaryOp, a: &SqlType, b: &SqlType) -> SqlResult<ArithmeticPlan> {
    use Family as F;
    let ok = |t: &SqlType| matches!(family(t), F::Bit | F::Int | F::Binary);
    if let Some(bad) = [a, b].into_iter().find(|t| !ok(t)) {
        return Err(invalid_operand(op, bad));
    }
    if family(a) == F::Binary && family(b) == F::Binary {
        return Err(msg::INCOMPATIBLE_OPERATOR_TYPES.with(&[
            &base_type_name(a),
            &base_type_name(b),
            &operator_name(op),
        ]));
    }
    // binary operands take the integer type of the other side
    let t = match (family(a), family(b)) {
        (F::Binary, _) => *b,
        (_, F::Binary) => *a,
        _ if precedence(a) >= precedence(b) => *a,
        _ => *b,
    };
    Ok(ArithmeticPlan { left: t, right: t, result: t })
}

fn decimal_plan(op: BinaryOp, a: &SqlType, b: &SqlType) -> SqlResult<ArithmeticPlan> {
    // strings meeting a decimal become that decimal type
    let pick = |t: &SqlType, other: &SqlType| as_decimal(t).or_else(|| as_decimal(other)).unwrap_or((18, 0));
    let (p1, s1) = pick(a, b);
    let (p2, s2) = pick(b, a);
    let (p1, s1, p2, s2) = (u32::from(p1), u32::from(s1), u32::from(p2), u32::from(s2));
    let (i1, i2) = (p1.saturating_sub(s1), p2.saturating_sub(s2));
    let result = match op {
        BinaryOp::Add | BinaryOp::Subtract => {
            let s = s1.max(s2);
            decimal_result(s + i1.max(i2) + 1, s)
        }
        BinaryOp::Multiply => decimal_result(p1 + p2 + 1, s1 + s2),
        BinaryOp::Divide => {
            let s = 6.max(s1 + p2 + 1);
            decimal_result(i1 + s2 + s, s)
        }
        BinaryOp::Modulo => {
            let s = s1.max(s2);
            decimal_result(i1.min(i2) + s, s)
        }
        _ => return Err(invalid_operand(op, a)),
    };
    let dec = |p: u32, s: u32| SqlType::Decimal { precision: p as u8, scale: s as u8 };
    Ok(ArithmeticPlan { left: dec(p1, s1), right: dec(p2, s2), result })
}

#[cfg(test)]
mod tests {
    use super::*;
    use SqlType as T;

    fn tn(name: &str, args: &[TypeArg]) -> TypeName {
        TypeName { name: name.to_uppercase(), args: args.to_vec() }
    }

    #[test]
    fn resolves_names_and_defaults() {
        use TypeArg::*;
        assert_eq!(resolve_type(&tn("int", &[]), false).unwrap(), T::Int);
        assert_eq!(resolve_type(&tn("Integer", &[]), false).unwrap(), T::Int);
        assert_eq!(resolve_type(&tn("varchar", &[]), false).unwrap(), T::VarChar(1));
        assert_eq!(resolve_type(&tn("varchar", &[]), true).unwrap(), T::VarChar(30));
        assert_eq!(resolve_type(&tn("nvarchar", &[Max]), false).unwrap(), T::NVarChar(MAX));
        assert_eq!(resolve_type(&tn("national character varying", &[Number(5)]), false).unwrap(), T::NVarChar(5));
        assert_eq!(resolve_type(&tn("decimal", &[]), false).unwrap(), T::Decimal { precision: 18, scale: 0 });
        assert_eq!(
            resolve_type(&tn("numeric", &[Number(10), Number(2)]), false).unwrap(),
            T::Decimal { precision: 10, scale: 2 }
        );
        assert_eq!(resolve_type(&tn("float", &[Number(24)]), false).unwrap(), T::Real);
        assert_eq!(resolve_type(&tn("float", &[Number(25)]), false).unwrap(), T::Float);
        assert_eq!(resolve_type(&tn("double precision", &[]), false).unwrap(), T::Float);
        assert_eq!(resolve_type(&tn("time", &[]), false).unwrap(), T::Time { scale: 7 });
        assert_eq!(resolve_type(&tn("datetime2", &[Number(3)]), false).unwrap(), T::DateTime2 { scale: 3 });
        assert_eq!(resolve_type(&tn("datetimeoffset", &[]), false).unwrap(), T::DateTimeOffset { scale: 7 });
        assert_eq!(resolve_type(&tn("datetimeoffset", &[Number(0)]), false).unwrap(), T::DateTimeOffset { scale: 0 });
        assert_eq!(resolve_type(&tn("sysname", &[]), false).unwrap(), T::NVarChar(128));
        assert_eq!(resolve_type(&tn("text", &[]), false).unwrap(), T::VarChar(MAX));
        assert_eq!(resolve_type(&tn("image", &[]), false).unwrap(), T::VarBinary(MAX));
    }

    #[test]
    fn type_errors_match_sql_server() {
        use TypeArg::*;
        let e = resolve_type(&tn("foo", &[]), false).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (2715, "Column, parameter, or variable #1: Cannot find data type FOO.")
        );
        let e = resolve_type(&tn("varchar", &[Number(9000)]), false).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (131, "The size (9000) given to the type 'varchar' exceeds the maximum allowed for any data type (8000).")
        );
        assert_eq!(resolve_type(&tn("nchar", &[Number(4001)]), false).unwrap_err().number, 131);
        let e = resolve_type(&tn("decimal", &[Number(39)]), false).unwrap_err();
        assert_eq!(
            e.message,
            "Column or parameter #1: Specified column precision 39 is greater than the maximum precision of 38."
        );
        assert_eq!(e.number, 2750);
        let e = resolve_type(&tn("char", &[Number(0)]), false).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (1001, "Line 1: Length or precision specification 0 is invalid."));
        assert_eq!(resolve_type(&tn("decimal", &[Number(3), Number(5)]), false).unwrap_err().number, 2751);
        assert_eq!(resolve_type(&tn("int", &[Number(3)]), false).unwrap_err().number, 2716);
        assert_eq!(resolve_type(&tn("time", &[Number(8)]), false).unwrap_err().number, 1002);
        assert_eq!(resolve_type(&tn("datetimeoffset", &[Number(8)]), false).unwrap_err().number, 1002);
    }

    #[test]
    fn names() {
        assert_eq!(type_name(&T::VarChar(10)), "varchar(10)");
        assert_eq!(type_name(&T::NVarChar(MAX)), "nvarchar(max)");
        assert_eq!(type_name(&T::Decimal { precision: 10, scale: 2 }), "decimal(10,2)");
        assert_eq!(type_name(&T::DateTime2 { scale: 7 }), "datetime2(7)");
        assert_eq!(type_name(&T::Time { scale: 7 }), "time(7)");
        assert_eq!(type_name(&T::DateTimeOffset { scale: 3 }), "datetimeoffset(3)");
        assert_eq!(type_name(&T::Float), "float");
        assert_eq!(base_type_name(&T::VarChar(3)), "varchar");
    }

    #[test]
    fn precedence_follows_the_documented_list() {
        let order = [
            T::DateTimeOffset { scale: 7 },
            T::DateTime2 { scale: 7 },
            T::DateTime,
            T::SmallDateTime,
            T::Date,
            T::Time { scale: 7 },
            T::Float,
            T::Real,
            T::Decimal { precision: 18, scale: 0 },
            T::Money,
            T::SmallMoney,
            T::BigInt,
            T::Int,
            T::SmallInt,
            T::TinyInt,
            T::Bit,
            T::UniqueIdentifier,
            T::NVarChar(1),
            T::NChar(1),
            T::VarChar(1),
            T::Char(1),
            T::VarBinary(1),
            T::Binary(1),
        ];
        for w in order.windows(2) {
            assert!(precedence(&w[0]) > precedence(&w[1]), "{:?} vs {:?}", w[0], w[1]);
        }
    }

    #[test]
    fn common_types() {
        let d = |p, s| T::Decimal { precision: p, scale: s };
        assert_eq!(common_type(&T::Int, &T::VarChar(10)).unwrap(), T::Int);
        assert_eq!(common_type(&T::TinyInt, &T::BigInt).unwrap(), T::BigInt);
        assert_eq!(common_type(&T::VarChar(10), &T::NChar(20)).unwrap(), T::NVarChar(20));
        assert_eq!(common_type(&T::Char(10), &T::Char(3)).unwrap(), T::Char(10));
        assert_eq!(common_type(&T::VarChar(MAX), &T::Char(3)).unwrap(), T::VarChar(MAX));
        assert_eq!(common_type(&d(10, 2), &d(5, 4)).unwrap(), d(12, 4));
        assert_eq!(common_type(&d(10, 2), &T::Int).unwrap(), d(12, 2));
        assert_eq!(common_type(&d(38, 0), &d(38, 38)).unwrap(), d(38, 0));
        assert_eq!(common_type(&T::Money, &d(5, 2)).unwrap(), d(19, 4));
        assert_eq!(common_type(&T::Money, &T::Int).unwrap(), T::Money);
        assert_eq!(common_type(&T::Float, &d(5, 2)).unwrap(), T::Float);
        assert_eq!(common_type(&T::DateTime, &T::VarChar(20)).unwrap(), T::DateTime);
        assert_eq!(common_type(&T::DateTime, &T::Int).unwrap(), T::DateTime);
        assert_eq!(common_type(&T::Date, &T::DateTime).unwrap(), T::DateTime);
        assert_eq!(common_type(&T::DateTime2 { scale: 2 }, &T::DateTime).unwrap(), T::DateTime2 { scale: 3 });
        assert_eq!(common_type(&T::UniqueIdentifier, &T::VarChar(36)).unwrap(), T::UniqueIdentifier);
        let dto = |scale| T::DateTimeOffset { scale };
        assert_eq!(common_type(&dto(0), &T::DateTime2 { scale: 3 }).unwrap(), dto(3));
        assert_eq!(common_type(&T::DateTime, &dto(2)).unwrap(), dto(3));
        assert_eq!(common_type(&dto(2), &T::VarChar(40)).unwrap(), dto(7));
        assert_eq!(common_type(&dto(7), &T::Int).unwrap_err().number, 206);
        assert_eq!(common_type(&T::VarBinary(4), &T::Int).unwrap(), T::Int);
        let e = common_type(&T::Date, &T::Int).unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (206, "Operand type clash: date is incompatible with int"));
        assert_eq!(common_type(&T::UniqueIdentifier, &T::Int).unwrap_err().number, 206);
        assert_eq!(common_type(&T::VarBinary(3), &T::Date).unwrap_err().number, 257);
    }

    #[test]
    fn conversion_chart() {
        use Conversion::*;
        assert_eq!(conversion(&T::Int, &T::Date), NotAllowed);
        assert_eq!(conversion(&T::DateTime, &T::Int), Explicit);
        assert_eq!(conversion(&T::Int, &T::DateTime), Implicit);
        assert_eq!(conversion(&T::VarChar(1), &T::VarBinary(1)), Explicit);
        assert_eq!(conversion(&T::VarBinary(1), &T::VarChar(1)), Implicit);
        assert_eq!(conversion(&T::UniqueIdentifier, &T::Int), NotAllowed);
        assert_eq!(conversion(&T::Date, &T::Time { scale: 7 }), NotAllowed);
        let dto = T::DateTimeOffset { scale: 7 };
        assert_eq!(conversion(&dto, &T::DateTime2 { scale: 7 }), Implicit);
        assert_eq!(conversion(&T::SmallDateTime, &dto), Implicit);
        assert_eq!(conversion(&dto, &T::VarBinary(10)), Explicit);
        assert_eq!(conversion(&dto, &T::Int), NotAllowed);
        assert_eq!(conversion(&T::Int, &dto), NotAllowed);
    }

    #[test]
    fn arithmetic_types() {
        use BinaryOp::*;
        let d = |p, s| T::Decimal { precision: p, scale: s };
        assert_eq!(arithmetic_type(Add, &T::Int, &T::SmallInt).unwrap(), T::Int);
        assert_eq!(arithmetic_type(Add, &T::Int, &T::VarChar(5)).unwrap(), T::Int);
        assert_eq!(arithmetic_type(Divide, &T::Int, &T::Float).unwrap(), T::Float);
        // documented formulas
        assert_eq!(arithmetic_type(Add, &d(10, 2), &d(5, 4)).unwrap(), d(13, 4));
        assert_eq!(arithmetic_type(Multiply, &d(10, 2), &d(5, 4)).unwrap(), d(16, 6));
        assert_eq!(arithmetic_type(Divide, &d(10, 2), &d(5, 4)).unwrap(), d(20, 8));
        assert_eq!(arithmetic_type(Modulo, &d(10, 2), &d(5, 4)).unwrap(), d(5, 4));
        // int / decimal: int is decimal(10,0)
        assert_eq!(arithmetic_type(Divide, &T::Int, &d(5, 2)).unwrap(), d(18, 6));
        assert_eq!(arithmetic_type(Add, &d(38, 10), &d(38, 10)).unwrap(), d(38, 9));
        // reduction beyond 38 digits
        assert_eq!(arithmetic_type(Multiply, &d(38, 10), &d(38, 10)).unwrap(), d(38, 6));
        assert_eq!(arithmetic_type(Divide, &d(38, 10), &d(38, 10)).unwrap(), d(38, 6));
        assert_eq!(arithmetic_type(Multiply, &d(18, 4), &d(18, 4)).unwrap(), d(37, 8));
        assert_eq!(arithmetic_type(Divide, &d(18, 0), &d(18, 0)).unwrap(), d(37, 19));
        assert_eq!(arithmetic_type(Add, &T::Money, &T::Int).unwrap(), T::Money);
        assert_eq!(arithmetic_type(Add, &T::VarChar(10), &T::VarChar(20)).unwrap(), T::VarChar(30));
        assert_eq!(arithmetic_type(Add, &T::VarChar(5000), &T::VarChar(5000)).unwrap(), T::VarChar(8000));
        assert_eq!(arithmetic_type(Add, &T::VarChar(MAX), &T::VarChar(5)).unwrap(), T::VarChar(MAX));
        assert_eq!(arithmetic_type(Add, &T::VarChar(3000), &T::NVarChar(3000)).unwrap(), T::NVarChar(4000));
        assert_eq!(arithmetic_type(Add, &T::DateTime, &T::Int).unwrap(), T::DateTime);
        assert_eq!(arithmetic_type(BitAnd, &T::Int, &T::TinyInt).unwrap(), T::Int);
        assert_eq!(arithmetic_type(BitAnd, &T::Bit, &T::Bit).unwrap(), T::Bit);

        let e = arithmetic_type(Subtract, &T::VarChar(1), &T::VarChar(1)).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (8117, "Operand data type varchar is invalid for subtract operator.")
        );
        let e = arithmetic_type(BitAnd, &T::Float, &T::Int).unwrap_err();
        assert_eq!(e.message, "Operand data type float is invalid for boolean AND operator.");
        assert_eq!(arithmetic_type(Modulo, &T::Float, &T::Int).unwrap_err().number, 8117);
        assert_eq!(arithmetic_type(Add, &T::Date, &T::Int).unwrap_err().number, 206);
        assert_eq!(arithmetic_type(Add, &T::Date, &T::Date).unwrap_err().number, 8117);
        assert_eq!(arithmetic_type(Multiply, &T::DateTime, &T::Int).unwrap_err().number, 8117);
        assert_eq!(arithmetic_type(Add, &T::Bit, &T::Bit).unwrap_err().number, 8117);
        assert_eq!(arithmetic_type(Add, &T::DateTime, &T::Date).unwrap_err().number, 402);
        let e = arithmetic_type(Add, &T::VarChar(1), &T::VarBinary(1)).unwrap_err();
        assert_eq!(e.message, "The data types varchar and varbinary are incompatible in the add operator.");
    }
}
