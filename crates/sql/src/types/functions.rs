//! Built-in scalar functions.

use super::{SqlType, Value};
use crate::error::{SqlError, SqlResult};

/// A part of a date for DATEADD, DATEDIFF, DATEPART and DATENAME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatePart {
    Year,
    Quarter,
    Month,
    DayOfYear,
    Day,
    Week,
    Weekday,
    Hour,
    Minute,
    Second,
    Millisecond,
    Microsecond,
    Nanosecond,
    IsoWeek,
}

/// Per-statement state of the functions: the statement's time and the session's RNG.
#[derive(Default, Clone, Debug)]
pub struct FunctionContext {}

impl FunctionContext {
    pub fn start_statement(&mut self) {}
}

pub fn date_part(name: &str) -> SqlResult<DatePart> {
    Err(SqlError::new(155, format!("'{name}' is not a recognized datepart option.")))
}

pub fn function_type(_name: &str, _args: &[SqlType]) -> SqlResult<Option<SqlType>> {
    Ok(None)
}

pub fn call_function(
    _name: &str,
    _args: &[Value],
    _arg_types: &[SqlType],
    _result: &SqlType,
    _ctx: &mut FunctionContext,
) -> SqlResult<Value> {
    Ok(Value::Null)
}
