//! System stored procedures (`sp_…`), implemented in Rust. `sp_executesql` is run by the
//! session itself (it executes a batch); the others produce result sets from the engine and
//! the catalogs.

use crate::error::{SqlError, SqlResult};
use crate::output::ResultSink;
use crate::runtime::ExecCtx;
use crate::types::{SqlType, Value};

/// An argument of a system procedure: its `@name` if given by name, and its value
/// (None for DEFAULT).
pub type NamedArg = (Option<String>, Option<(Value, SqlType)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemProc {
    ExecuteSql,
}

/// The system procedure a name refers to (`sp_executesql`, `sys.sp_executesql`,
/// `master.dbo.sp_executesql` all end in the same name).
pub fn lookup(name: &str) -> Option<SystemProc> {
    match name.to_ascii_lowercase().as_str() {
        "sp_executesql" => Some(SystemProc::ExecuteSql),
        _ => None,
    }
}

/// Runs a system procedure other than `sp_executesql`; returns its return status.
pub fn run(which: SystemProc, _args: &[NamedArg], _ctx: &mut ExecCtx, _sink: &mut dyn ResultSink) -> SqlResult<i32> {
    match which {
        SystemProc::ExecuteSql => Err(SqlError::new(50000, "sp_executesql runs in the session")),
    }
}
