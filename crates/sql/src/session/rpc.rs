//! Remote procedure calls (TDS RPC requests) and the procedures that serve them:
//! `sp_executesql`, and `sp_prepare` / `sp_execute` / `sp_prepexec` / `sp_unprepare`
//! with the prepared statements they keep in the session. The API cursor procedures
//! (`sp_cursoropen` …) are `cursors`'.

use super::calls::{Argument, PreparedProc};
use super::{ErrorWatch, Runner, Session, Stop};
use std::sync::atomic::Ordering;
use tessera_errors::msg;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::Statement;

impl Session {
    /// Runs a remote procedure call: a stored procedure, `sp_executesql`, a
    /// prepared-statement procedure or an API cursor procedure (`cursors`), with typed
    /// parameter values. Result sets, messages and the return status go to `sink`; OUTPUT
    /// parameter values come back.
    pub fn execute_rpc(&mut self, procedure: &str, params: Vec<RpcParam>, sink: &mut dyn ResultSink) -> RpcOutcome {
        let text = rpc_text(procedure, &params);
        let mut watch = ErrorWatch { inner: sink, failed: false };
        let _request = self.begin_request(&text);
        self.state.cancel.store(false, Ordering::Relaxed);
        let outputs = match self.admit() {
            Ok(_slot) => {
                let outputs = if Session::is_api_cursor_procedure(procedure) {
                    self.run_api_cursor_procedure(procedure, &params, &mut watch)
                } else {
                    self.call_rpc_text(&text, &params, &mut watch)
                };
                self.release();
                outputs
            }
            Err(e) => {
                watch.message(&e);
                self.state.error = e.number;
                params.iter().filter(|p| p.output).map(|p| (p.name.clone(), Value::Null, p.ty)).collect()
            }
        };
        self.publish(None);
        RpcOutcome { outputs, failed: watch.failed }
    }

    /// Runs `procedure` with `params` inside a request already admitted (the API cursor
    /// procedures run their statements this way); returns the OUTPUT parameters' values.
    pub(super) fn call_rpc(
        &mut self,
        procedure: &str,
        params: &[RpcParam],
        sink: &mut dyn ResultSink,
    ) -> Vec<(Option<String>, Value, SqlType)> {
        self.call_rpc_text(&rpc_text(procedure, params), params, sink)
    }

    fn call_rpc_text(
        &mut self,
        text: &str,
        params: &[RpcParam],
        sink: &mut dyn ResultSink,
    ) -> Vec<(Option<String>, Value, SqlType)> {
        let decls = params.iter().enumerate().map(|(i, p)| (format!("@__rpc{i}"), p.ty)).collect();
        for (i, p) in params.iter().enumerate() {
            if let Some(rows) = &p.table {
                self.state.table_arguments.insert(format!("@__rpc{i}"), rows.clone());
            }
        }
        self.run_bound(text, decls, params.iter().map(|p| p.value.clone()).collect(), sink);
        self.state.table_arguments.clear();
        params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.output)
            .map(|(i, p)| (p.name.clone(), self.state.vars.get(i).cloned().unwrap_or(Value::Null), p.ty))
            .collect()
    }
}

/// The batch an RPC runs as: `EXEC proc @a = @__rpc0, @__rpc1 OUTPUT, …`, whose variables
/// hold the parameter values; the text names the types so that a cached plan is only
/// reused for the same parameter types.
/// The text of a procedure's text argument (a statement, a parameter list), a large one
/// read whole; None for a value that is not text.
pub(super) fn as_text(v: &Value) -> Option<String> {
    match &*v.whole().ok()? {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

fn rpc_text(procedure: &str, params: &[RpcParam]) -> String {
    let mut text = String::from("-- rpc:");
    for p in params {
        text.push(' ');
        match &p.table {
            Some(t) => text.push_str(&format!("table {}", t.type_name)),
            None => text.push_str(&types::type_name(&p.ty)),
        }
    }
    text.push_str("\nEXEC ");
    // `..name` (FreeTDS's ODBC driver calls `..sp_stored_procedures`): empty database
    // and schema parts name the current database and the default schema.
    text.push_str(&quote_name(procedure.trim_start_matches('.')));
    for (i, p) in params.iter().enumerate() {
        text.push_str(if i == 0 { " " } else { ", " });
        if let Some(n) = &p.name {
            text.push_str(n);
            text.push_str(" = ");
        }
        text.push_str(&format!("@__rpc{i}"));
        if p.output {
            text.push_str(" OUTPUT");
        }
    }
    text
}

/// A parameter of a remote procedure call (TDS RPC request).
#[derive(Clone, Debug)]
pub struct RpcParam {
    /// `@name`, or None for a positional parameter.
    pub name: Option<String>,
    pub value: Value,
    pub ty: SqlType,
    pub output: bool,
    /// A table-valued parameter's rows (its value is then NULL).
    pub table: Option<tessera_execution::runtime::TableRows>,
}

/// What an RPC returns besides its result sets: the values of its OUTPUT parameters, in
/// the order they were given (name, value, type).
#[derive(Clone, Debug, Default)]
pub struct RpcOutcome {
    pub outputs: Vec<(Option<String>, Value, SqlType)>,
    pub failed: bool,
}

impl Runner<'_> {
    /// sp_prepare / sp_execute / sp_prepexec / sp_unprepare: statements prepared once per
    /// session and run by handle.
    pub(super) fn run_prepared_proc(
        &mut self,
        s: &Statement,
        kind: PreparedProc,
        mut args: Vec<Argument>,
    ) -> Result<i32, Stop> {
        let int_arg = |a: Option<&Argument>| match a.and_then(|a| a.value.as_ref()) {
            Some((Value::Int(n), _)) => Some(*n as i32),
            _ => None,
        };
        let prepare = |this: &mut Self, args: &mut Vec<Argument>| -> Result<i32, Stop> {
            if args.len() < 3 {
                return Err(Stop::Error(msg::MISSING_PARAMETER.with(&[&"sp_prepare", &"@stmt"])));
            }
            let text = |a: &Argument| a.value.as_ref().and_then(|(v, _)| as_text(v)).unwrap_or_default();
            let (params, stmt) = (text(&args[1]), text(&args[2]));
            let handle = this.state.next_prepared_handle();
            this.state.prepared.insert(handle, (params, stmt));
            if let Some((slot, ty)) = args[0].output {
                this.state.vars[slot] =
                    types::cast(&Value::Int(i64::from(handle)), &SqlType::Int, &ty, None).map_err(Stop::Error)?;
            }
            args.drain(..3);
            Ok(handle)
        };
        match kind {
            PreparedProc::Prepare => prepare(self, &mut args).map(|_| 0),
            PreparedProc::PrepExec => {
                let handle = prepare(self, &mut args)?;
                self.execute_handle(s, handle, args)
            }
            PreparedProc::Execute => {
                let Some(handle) = int_arg(args.first()) else {
                    return Err(Stop::Error(msg::PREPARED_HANDLE_NOT_FOUND.with(&[&"0"])));
                };
                args.remove(0);
                self.execute_handle(s, handle, args)
            }
            PreparedProc::Unprepare => {
                let handle = int_arg(args.first()).unwrap_or(0);
                if self.state.prepared.remove(&handle).is_none() {
                    return Err(Stop::Error(msg::PREPARED_HANDLE_NOT_FOUND.with(&[&handle])));
                }
                Ok(0)
            }
        }
    }

    fn execute_handle(&mut self, s: &Statement, handle: i32, args: Vec<Argument>) -> Result<i32, Stop> {
        let Some((params, stmt)) = self.state.prepared.get(&handle).cloned() else {
            return Err(Stop::Error(msg::PREPARED_HANDLE_NOT_FOUND.with(&[&handle])));
        };
        let mut all = vec![Argument::text(&stmt), Argument::text(&params)];
        all.extend(args);
        self.run_executesql(s, all)
    }

    /// `sp_executesql @stmt [, @params, args…]`: a parameterised batch.
    pub(super) fn run_executesql(&mut self, s: &Statement, mut args: Vec<Argument>) -> Result<i32, Stop> {
        let text_of = |a: &Argument| a.value.as_ref().and_then(|(v, _)| as_text(v));
        if args.is_empty() {
            return Err(Stop::Error(msg::MISSING_PARAMETER.with(&[&"sp_executesql", &"@statement"])));
        }
        let stmt = args.remove(0);
        let Some(stmt_text) = text_of(&stmt) else {
            return Err(Stop::Error(msg::PARAMETER_TYPE_EXPECTED.with(&[&"@statement", &"ntext/nchar/nvarchar"])));
        };
        let params_text = if args
            .first()
            .is_some_and(|a| a.name.is_none() || a.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case("@params")))
        {
            let p = args.remove(0);
            text_of(&p).unwrap_or_default()
        } else {
            String::new()
        };
        let db = self.state.database.clone();
        let params = self.declared_parameters(&params_text).map_err(Stop::Error)?;
        let cached = match self.shared.plans.get_or_parse(&stmt_text, tessera_syntax::parser::parse_batch) {
            Ok(c) => c,
            Err(e) => return Err(Stop::Error(e)),
        };
        self.invoke(s, &cached, &params, &cached.batch.statements, None, &db, args, None)
    }
}

impl Runner<'_> {
    /// The parameters a declaration string declares (`@a int, @b varchar(10) OUTPUT`), as
    /// `sp_executesql` and `sp_describe_first_result_set` take them in `@params`.
    pub(super) fn declared_parameters(
        &self,
        params_text: &str,
    ) -> tessera_errors::SqlResult<Vec<tessera_syntax::ast::Parameter>> {
        tessera_execution::first_result::declared_parameters(self.shared, params_text)
    }
}

/// `[name]` unless the name is a plain identifier (or already qualified/bracketed).
pub(super) fn quote_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '#' | '@')) {
        name.to_string()
    } else {
        format!("[{}]", name.replace(']', "]]"))
    }
}
