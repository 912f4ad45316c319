//! SQL types and values: the runtime value, conversions, comparison under the default
//! collation, arithmetic, and the built-in scalar functions.

mod value;

pub use value::{SqlType, Value};
