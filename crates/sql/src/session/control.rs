//! Control flow: IF, WHILE, BEGIN…END and TRY…CATCH, RETURN and WAITFOR, and BREAK,
//! CONTINUE and GOTO as the `Flow` a statement hands to the block around it.

use super::{Flow, Runner, Stop};
use std::sync::atomic::Ordering;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};

impl Runner<'_> {
    pub(super) fn run_control(&mut self, s: &Statement) -> Result<Flow, Stop> {
        match &s.kind {
            StatementKind::If { condition, then, otherwise } => {
                let c = match self.condition(s, condition) {
                    Ok(c) => c,
                    Err(e) => return self.fail(s, e),
                };
                if c {
                    self.run_one(then)
                } else if let Some(o) = otherwise {
                    self.run_one(o)
                } else {
                    Ok(Flow::Next)
                }
            }
            StatementKind::While { condition, body } => loop {
                let c = match self.condition(s, condition) {
                    Ok(c) => c,
                    Err(e) => return self.fail(s, e),
                };
                if !c {
                    return Ok(Flow::Next);
                }
                if self.state.cancel.load(Ordering::Relaxed) {
                    return self.fail(s, msg::QUERY_CANCELLED.err());
                }
                match self.run_one(body)? {
                    Flow::Break => return Ok(Flow::Next),
                    Flow::Next | Flow::Continue => {}
                    other => return Ok(other),
                }
            },
            StatementKind::Block(stmts) => self.run_block(stmts),
            StatementKind::TryCatch { try_block, catch_block } => {
                self.try_depth += 1;
                let r = self.run_block(try_block);
                self.try_depth -= 1;
                match r {
                    Err(Stop::Error(e)) => {
                        let previous = self.state.caught.replace(e);
                        let r = self.run_block(catch_block);
                        self.state.caught = previous;
                        r
                    }
                    other => other,
                }
            }
            _ => unreachable!("control statements only"),
        }
    }

    /// RETURN with a value: a scalar function's result, or a procedure's return status.
    pub(super) fn return_value(&mut self, s: &Statement, e: &ast::Expr) -> SqlResult<Flow> {
        if let Some(ty) = self.returns {
            let (v, t) = self.eval_scalar(s, e)?;
            self.returned = Some(types::cast(&v, &t, &ty, None)?);
            return Ok(Flow::Return(None));
        }
        if self.procedure.is_none() {
            return Err(msg::INVALID_RETURN_VALUE.err());
        }
        let (v, t) = self.eval_scalar(s, e)?;
        let status = match types::cast(&v, &t, &SqlType::Int, None)? {
            Value::Int(n) => n as i32,
            _ => 0,
        };
        Ok(Flow::Return(Some(status)))
    }

    pub(super) fn wait_for(&mut self, s: &Statement, delay: bool, value: &ast::Expr) -> SqlResult<()> {
        let (v, t) = self.eval_scalar(s, value)?;
        let time = types::cast(&v, &t, &SqlType::Time { scale: 7 }, None)?;
        let Value::Time(ticks) = time else {
            return Err(msg::INVALID_WAITFOR_TIME.err());
        };
        let wait = if delay {
            std::time::Duration::from_nanos(ticks * 100)
        } else {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let today = std::time::Duration::from_secs(now.as_secs() % 86_400)
                + std::time::Duration::from_nanos(u64::from(now.subsec_nanos()));
            let target = std::time::Duration::from_nanos(ticks * 100);
            if target >= today {
                target - today
            } else {
                target + std::time::Duration::from_secs(86_400) - today
            }
        };
        let end = std::time::Instant::now() + wait;
        let _waiting = tessera_waits::begin(tessera_waits::WaitType::WaitFor, tessera_waits::Resource::Nothing);
        while std::time::Instant::now() < end {
            if self.state.cancel.load(Ordering::Relaxed) {
                return Err(msg::QUERY_CANCELLED.err());
            }
            std::thread::sleep((end - std::time::Instant::now()).min(std::time::Duration::from_millis(20)));
        }
        Ok(())
    }
}
