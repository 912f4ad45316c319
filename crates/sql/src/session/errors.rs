//! Error handling: a failing statement's error reported (or handed to CATCH) and whether
//! the batch goes on, and the errors a batch raises itself: THROW and RAISERROR (with its
//! printf-style message).

use super::{Flow, Runner, Stop};
use tessera_errors::catalog::Abort;
use tessera_errors::msg;
use tessera_errors::{ErrorDetail, SqlError, SqlResult};
use tessera_semantics::output::{EnvChange, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// Sends an error to the client after the errors reported before it.
pub(super) fn report(sink: &mut dyn ResultSink, e: &SqlError) {
    for p in &e.preceding {
        sink.message(p);
    }
    sink.message(e);
}

impl Runner<'_> {
    /// A statement failed: undo it, report or hand the error to CATCH, and decide whether
    /// the batch goes on.
    pub(super) fn fail(&mut self, s: &Statement, e: SqlError) -> Result<Flow, Stop> {
        // An error that already names its procedure keeps its line (SQL Server reports
        // parameter errors at line 0 of the procedure).
        let mut e = if e.procedure.is_some() { e } else { e.at_line(s.line) };
        if e.procedure.is_none() && e.severity > 10 {
            e.procedure = self.procedure.clone();
        }
        // A data change stopped by an error found while it ran (IDENTITY_INSERT errors are
        // found then too, but SQL Server reports them as compile errors).
        let terminated = std::mem::take(&mut self.changing) && !matches!(e.number, 544 | 545 | 8101);
        self.state.error = e.number;
        self.state.rowcount = 0;
        // What the error ends comes from the error catalog (`tessera_errors::catalog`).
        let aborts = e.aborts();
        // RAISERROR is the one error XACT_ABORT leaves alone (THROW is not).
        let raiserror = matches!(s.kind, StatementKind::RaisError { .. });
        let doom = (self.state.options.xact_abort && !raiserror) || aborts == Abort::Transaction;
        let rolled_back = self.undo_statement(doom);
        if self.try_depth > 0 && e.severity > 10 && e.severity < 20 {
            return Err(Stop::Error(e));
        }
        if e.severity >= 19 {
            // As SQL Server does, severe errors go to ERRORLOG as well as to the client.
            let spid = self.state.spid;
            self.shared
                .write_errorlog(spid, &format!("Error: {}, Severity: {}, State: {}.", e.number, e.severity, e.state));
            self.shared.write_errorlog(spid, &e.message);
        }
        report(&mut self.sink, &e);
        if rolled_back {
            self.sink.env_change(&EnvChange::RollbackTransaction);
        }
        // Severity 20 and above is fatal: the batch stops and the connection ends (but
        // for a cancelled request: an Attention ends the request, not the connection).
        let fatal = e.severity >= 20 && e.number != msg::QUERY_CANCELLED.number;
        self.state.fatal_error |= fatal;
        if doom || fatal || aborts >= Abort::Batch || matches!(s.kind, StatementKind::Throw(_)) {
            return Err(Stop::Abort);
        }
        if terminated || e.number == 1505 || e.preceding.iter().any(|p| p.number == 1505) {
            self.sink.message(&msg::STATEMENT_TERMINATED.err());
        }
        if let Some(command) = super::commands::failed_statement_command(&s.kind) {
            // Its own DONE, with DONE_ERROR: the batch's next statement counts apart.
            self.sink.done(None, command);
        }
        Ok(Flow::Next)
    }

    pub(super) fn throw(
        &mut self,
        s: &Statement,
        args: Option<&(ast::Expr, ast::Expr, ast::Expr)>,
    ) -> SqlResult<SqlError> {
        let Some((n, m, st)) = args else {
            return match &self.state.caught {
                Some(e) => Ok(e.clone()),
                None => Err(msg::THROW_OUTSIDE_CATCH.err()),
            };
        };
        let number = match self.eval_scalar(s, n)?.0 {
            Value::Int(n) if n >= 50000 => n as i32,
            Value::Int(n) => {
                return Err(msg::THROW_NUMBER_OUT_OF_RANGE.with(&[&n]));
            }
            _ => 50000,
        };
        let (mv, mt) = self.eval_scalar(s, m)?;
        let message = match types::cast(&mv, &mt, &SqlType::NVarChar(2048), None)? {
            Value::Str(s) => s.to_string(),
            _ => String::new(),
        };
        let state = match self.eval_scalar(s, st)?.0 {
            Value::Int(n) => n.clamp(0, 255) as u8,
            _ => 1,
        };
        Ok(SqlError::new(number, message).with_state(state))
    }

    pub(super) fn raiserror(
        &mut self,
        s: &Statement,
        message: &ast::Expr,
        severity: &ast::Expr,
        state: &ast::Expr,
        args: &[ast::Expr],
        options: &[String],
    ) -> SqlResult<()> {
        let (mv, mt) = self.eval_scalar(s, message)?;
        let (number, format) = match mv {
            Value::Int(n) => {
                // No sys.messages: a message number has no text to raise.
                let severity = match self.eval_scalar(s, severity)?.0 {
                    Value::Int(v) => v,
                    _ => 16,
                };
                let state = match self.eval_scalar(s, state)?.0 {
                    Value::Int(v) => v,
                    _ => 1,
                };
                return Err(msg::MESSAGE_NOT_FOUND.with(&[&n, &severity, &state]));
            }
            v => (
                50000,
                match types::cast(&v, &mt, &SqlType::NVarChar(2047), None)? {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                },
            ),
        };
        let severity = match self.eval_scalar(s, severity)?.0 {
            Value::Int(n) => n.clamp(0, 25) as u8,
            _ => 16,
        };
        if severity > 18 && !options.iter().any(|o| o == "LOG") {
            return Err(msg::SEVERITY_REQUIRES_SYSADMIN.err());
        }
        let state = match self.eval_scalar(s, state)?.0 {
            Value::Int(n) => n.clamp(0, 255) as u8,
            _ => 1,
        };
        let mut values = Vec::new();
        for a in args {
            values.push(self.eval_scalar(s, a)?);
        }
        let text = format_message(&format, &values);
        let e = SqlError::from(ErrorDetail {
            number,
            severity,
            state,
            message: text,
            line: s.line,
            procedure: None,
            preceding: Vec::new(),
        });
        if options.iter().any(|o| o == "SETERROR") {
            self.state.error = number;
        }
        if severity <= 10 {
            self.sink.message(&e);
            return Ok(());
        }
        Err(e)
    }
}

/// RAISERROR's printf-style substitution: %d %i %u %s %x %X %o with optional width.
pub fn format_message(format: &str, args: &[(Value, SqlType)]) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek() {
            if d.is_ascii_digit() || matches!(d, '-' | '+' | ' ' | '#' | '.' | 'l' | 'h' | 'I' | '6' | '4') {
                spec.push(d);
                chars.next();
            } else {
                break;
            }
        }
        let Some(kind) = chars.next() else { break };
        let text = match next.next() {
            None => "(null)".to_string(),
            Some((v, t)) => match kind {
                'x' | 'X' | 'o' => match v {
                    Value::Int(n) => match kind {
                        'x' => format!("{n:x}"),
                        'X' => format!("{n:X}"),
                        _ => format!("{n:o}"),
                    },
                    _ => "(null)".into(),
                },
                _ => {
                    if v.is_null() {
                        "(null)".to_string()
                    } else {
                        types::display_text(v, t)
                    }
                }
            },
        };
        let width: usize =
            spec.trim_start_matches(['-', '+', ' ', '#']).split('.').next().unwrap_or("").parse().unwrap_or(0);
        if text.chars().count() < width {
            let pad = " ".repeat(width - text.chars().count());
            if spec.starts_with('-') {
                out.push_str(&text);
                out.push_str(&pad);
            } else {
                out.push_str(&pad);
                out.push_str(&text);
            }
        } else {
            out.push_str(&text);
        }
    }
    out
}
