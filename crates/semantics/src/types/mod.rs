//! SQL types and values: the runtime value, conversions, comparison under the default
//! collation, arithmetic, and the built-in scalar functions.
//!
//! * [`typing`] — SQL Server's static rules: type names, precedence, the conversion chart,
//!   common types and arithmetic result types.
//! * [`convert`] — `CAST`/`CONVERT`, display text.
//! * [`compare`] — collation-aware comparison, `LIKE`.
//! * [`arith`] — operators.
//! * [`functions`] — built-in scalar functions.
//!
//! Nothing here knows storage's forms of values (rows, memcomparable keys): the execution
//! layer maps values to and from them (`tessera_execution::encoding`), with the pieces of
//! SQL meaning re-exported below for it (varchar's code page, the collation's sort keys, a
//! uniqueidentifier's byte order, decimal rounding).

pub mod arith;
pub mod compare;
pub mod convert;
mod datetime;
pub mod functions;
mod hijri;
pub mod large;
mod num;
mod text;
pub mod typing;
mod value;

pub use arith::{binary_op, bit_not, negate, unary_type};
pub use compare::{compare, guid_key, like, strip_trailing_zeros};
pub use convert::{cast, check_explicit, display_text, natural_type, would_truncate};
pub use datetime::set_session_date_format;
pub use datetime::{civil_from_days, days_from_civil};
pub use functions::{call_function, date_part, function_type, DatePart, FunctionContext, KeyEncoding};
pub use num::rescale_round;
pub use text::{decode_cp1252, encode_cp1252, sort_key};
pub use typing::{
    arithmetic_plan, arithmetic_type, base_type_name, check_implicit, common_type, conversion, is_numeric, is_string,
    is_temporal, is_unicode, precedence, resolve_type, type_name, ArithmeticPlan, Conversion,
};
pub use value::{LargeKind, LargeSource, LargeValue, SqlType, Value};
