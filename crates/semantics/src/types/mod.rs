//! SQL types and values: the runtime value, conversions, comparison under the default
//! collation, arithmetic, and the built-in scalar functions.
//!
//! * [`typing`] — SQL Server's static rules: type names, precedence, the conversion chart,
//!   common types and arithmetic result types.
//! * [`convert`] — `CAST`/`CONVERT`, display text, and the storage mapping.
//! * [`compare`] — collation-aware comparison, memcomparable keys, `LIKE`.
//! * [`arith`] — operators.
//! * [`functions`] — built-in scalar functions.

pub mod arith;
pub mod compare;
pub mod convert;
mod datetime;
pub mod functions;
mod num;
mod text;
pub mod typing;
mod value;

pub use arith::{binary_op, bit_not, negate, unary_type};
pub use compare::{compare, encode_key, like};
pub use convert::{cast, check_explicit, display_text, from_field, from_storage, to_storage, would_truncate};
pub use datetime::days_from_civil;
pub use datetime::set_session_date_format;
pub use functions::{call_function, date_part, function_type, DatePart, FunctionContext};
pub use typing::{
    arithmetic_plan, arithmetic_type, base_type_name, check_implicit, common_type, conversion, is_numeric, is_string,
    is_temporal, is_unicode, precedence, resolve_type, type_name, ArithmeticPlan, Conversion,
};
pub use value::{SqlType, Value};
