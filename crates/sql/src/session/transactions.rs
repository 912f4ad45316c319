//! Transactions: BEGIN, COMMIT, ROLLBACK and SAVE TRANSACTION, the statements that start
//! one under IMPLICIT_TRANSACTIONS, and what a failed statement undoes (the whole
//! transaction, or dooming it, under XACT_ABORT or after a deadlock).

use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::output::EnvChange;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::Value;
use tessera_syntax::ast::{self, Statement, StatementKind};

/// Statements that start a transaction under SET IMPLICIT_TRANSACTIONS ON.
pub(super) fn starts_implicit_transaction(k: &StatementKind) -> bool {
    matches!(
        k,
        StatementKind::Insert(_)
            | StatementKind::Update(_)
            | StatementKind::Delete(_)
            | StatementKind::Merge(_)
            | StatementKind::CreateTable(_)
            | StatementKind::DropTable { .. }
            | StatementKind::AlterTable { .. }
            | StatementKind::TruncateTable(_)
            | StatementKind::CreateIndex(_)
            | StatementKind::DropIndex { .. }
            | StatementKind::BeginTransaction { .. }
    ) || matches!(k, StatementKind::Query(q) if matches!(&q.body, ast::SetExpr::Select(s) if !s.from.is_empty()))
}

impl Runner<'_> {
    /// A statement starts: in autocommit mode (no transaction open) it is done only when
    /// its commit is, so its DONE waits in the sink.
    pub(super) fn begin_autocommit(&mut self) {
        if self.state.txns.count == 0 {
            self.sink.hold();
        }
    }

    /// The statement ran: in autocommit mode its work commits, and then its DONE goes
    /// out; a failed commit is the statement's error, and its DONE (its count) never goes.
    pub(super) fn end_autocommit(&mut self) -> SqlResult<()> {
        if self.state.txns.count == 0 {
            if let Err(e) = self.state.txns.commit_all(false) {
                self.sink.discard();
                return Err(e);
            }
        }
        self.sink.release();
        Ok(())
    }

    /// BEGIN TRANSACTION: the outermost one names the transaction.
    pub(super) fn begin_transaction(&mut self, s: &Statement, name: Option<&ast::Expr>) -> SqlResult<()> {
        let name = match name {
            Some(n) => Some(self.name_of(s, n)?),
            None => None,
        };
        let txns = &mut self.state.txns;
        txns.count += 1;
        if txns.count == 1 {
            txns.name = name;
            self.sink.env_change(&EnvChange::BeginTransaction);
        }
        Ok(())
    }

    /// COMMIT: the outermost one commits, unless the transaction is doomed.
    pub(super) fn commit(&mut self, delayed_durability: Option<bool>) -> SqlResult<()> {
        let txns = &mut self.state.txns;
        if txns.count == 0 {
            return Err(msg::COMMIT_WITHOUT_BEGIN.err());
        }
        if txns.doomed {
            return Err(msg::UNCOMMITTABLE_TRANSACTION.err());
        }
        txns.count -= 1;
        if txns.count == 0 {
            txns.commit_all(delayed_durability.unwrap_or(false))?;
            self.sink.env_change(&EnvChange::CommitTransaction);
        }
        Ok(())
    }

    /// SAVE TRANSACTION: a savepoint ROLLBACK can return to.
    pub(super) fn save_transaction(&mut self, s: &Statement, name: &ast::Expr) -> SqlResult<()> {
        let n = self.name_of(s, name)?;
        if self.state.txns.count == 0 {
            return Err(msg::SAVE_WITHOUT_TRANSACTION.err());
        }
        self.state.txns.savepoint(&n);
        Ok(())
    }

    fn name_of(&mut self, s: &Statement, e: &ast::Expr) -> SqlResult<String> {
        Ok(match e {
            ast::Expr::Column(n) => n.name().value.clone(),
            e => match self.eval_scalar(s, e)?.0 {
                Value::Str(v) => v.to_string(),
                _ => String::new(),
            },
        })
    }

    pub(super) fn rollback(&mut self, s: &Statement, name: Option<&ast::Expr>) -> SqlResult<()> {
        if self.state.txns.count == 0 {
            return Err(msg::ROLLBACK_WITHOUT_BEGIN.err());
        }
        if let Some(n) = name {
            let n = self.name_of(s, n)?;
            if self.state.txns.rollback_to(&n)? {
                return Ok(());
            }
            let outer = self.state.txns.name.as_deref();
            if !outer.is_some_and(|o| o.eq_ignore_ascii_case(&n)) {
                return Err(msg::SAVEPOINT_NOT_FOUND.with(&[&n]));
            }
        }
        self.state.txns.rollback_all()?;
        self.sink.env_change(&EnvChange::RollbackTransaction);
        Ok(())
    }

    /// The batch (or RPC) ended: a doomed transaction still open is rolled back, with
    /// error 3998, as SQL Server does.
    pub(super) fn end_batch(&mut self) {
        if self.state.txns.doomed && self.state.txns.count > 0 {
            let e = msg::UNCOMMITTABLE_AT_BATCH_END.err();
            self.sink.message(&e);
            self.state.error = e.number;
            // A failed rollback leaves nothing to do but what rollback_all already did:
            // every storage transaction is ended either way.
            let _ = self.state.txns.rollback_all();
            self.sink.env_change(&EnvChange::RollbackTransaction);
        }
    }

    /// Undoes a failed statement. With `doom` (XACT_ABORT, or a deadlock) outside TRY the
    /// transaction rolls back; otherwise the statement is undone (inside TRY, `doom` leaves
    /// the transaction doomed: it can only be rolled back), and with no user transaction
    /// open everything rolls back. Returns whether a user transaction was rolled back:
    /// the client must be told (ENVCHANGE), after the error, as SQL Server does.
    pub(super) fn undo_statement(&mut self, doom: bool) -> bool {
        let txns = &mut self.state.txns;
        if doom && self.try_depth == 0 {
            let open = txns.count > 0;
            let _ = txns.rollback_all();
            open
        } else {
            let _ = txns.rollback_statement();
            if self.state.nest_level == 0 {
                txns.end_statement();
            }
            if doom {
                txns.doomed = true;
            }
            if txns.count == 0 {
                let _ = txns.rollback_all();
            }
            false
        }
    }
}
