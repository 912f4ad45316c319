//! SET SHOWPLAN_TEXT ON: statements are compiled, not run. For each statement the client
//! gets a result set with one `StmtText` row holding the statement's text, then — for a
//! query or data change — a second one with its plan, one operator a row
//! (`tessera_semantics::plan::statement_plan`). Only SET statements (SHOWPLAN_TEXT OFF among them)
//! and USE run, as in SQL Server; control flow is not followed: the statements of every
//! branch and loop body are shown in text order. A SET SHOWPLAN statement must be alone
//! in its batch (error 1067).

use super::{Flow, Runner, Stop};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::{DbRef, Table};
use tessera_semantics::output::Command;
use tessera_semantics::output::OutputColumn;
use tessera_semantics::output::ResultSink;
use tessera_semantics::plan::PlanSite;
use tessera_semantics::types::{SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// Error 1067 when a batch holds a SET SHOWPLAN statement and anything else.
pub(super) fn check_showplan_alone(stmts: &[Statement]) -> SqlResult<()> {
    fn is_showplan(s: &Statement) -> bool {
        matches!(&s.kind, StatementKind::SetOption { options, .. } if options.iter().any(|o| o.starts_with("SHOWPLAN")))
    }
    fn find(stmts: &[Statement]) -> Option<&Statement> {
        stmts.iter().find_map(|s| match &s.kind {
            _ if is_showplan(s) => Some(s),
            StatementKind::If { then, otherwise, .. } => find(std::slice::from_ref(then))
                .or_else(|| otherwise.as_deref().and_then(|o| find(std::slice::from_ref(o)))),
            StatementKind::While { body, .. } => find(std::slice::from_ref(body)),
            StatementKind::Block(b) => find(b),
            StatementKind::TryCatch { try_block, catch_block } => find(try_block).or_else(|| find(catch_block)),
            _ => None,
        })
    }
    match find(stmts) {
        Some(s) if stmts.len() > 1 || !is_showplan(&stmts[0]) => Err(msg::SHOWPLAN_NOT_ALONE.err().at_line(s.line)),
        _ => Ok(()),
    }
}

fn stmt_text_column() -> [OutputColumn; 1] {
    [OutputColumn { name: "StmtText".to_string(), ty: SqlType::NVarChar(tessera_access::row::MAX), nullable: true }]
}

impl Runner<'_> {
    /// Shows the statements of a block instead of running them.
    pub(super) fn show_block(&mut self, stmts: &[Statement]) -> Result<Flow, Stop> {
        for s in stmts {
            self.show_one(s)?;
        }
        Ok(Flow::Next)
    }

    fn show_one(&mut self, s: &Statement) -> Result<(), Stop> {
        match &s.kind {
            StatementKind::SetOption { .. } | StatementKind::Use(_) => {
                self.run_one(s)?;
            }
            StatementKind::If { then, otherwise, .. } => {
                self.show_one(then)?;
                if let Some(o) = otherwise {
                    self.show_one(o)?;
                }
            }
            StatementKind::While { body, .. } => self.show_one(body)?,
            StatementKind::Block(b) => {
                self.show_block(b)?;
            }
            StatementKind::TryCatch { try_block, catch_block } => {
                self.show_block(try_block)?;
                self.show_block(catch_block)?;
            }
            StatementKind::Label(_)
            | StatementKind::Goto(_)
            | StatementKind::Break
            | StatementKind::Continue
            | StatementKind::Return(None) => {}
            _ => {
                let text = self.batch.text.get(s.span.0..s.span.1).unwrap_or_default().to_string();
                self.show_rows(&[text]);
                match self.plan_rows(s) {
                    Ok(Some(rows)) => self.show_rows(&rows),
                    Ok(None) => {}
                    Err(e) => {
                        self.fail(s, e)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// One StmtText result set.
    fn show_rows(&mut self, rows: &[String]) {
        self.sink.columns(&stmt_text_column());
        for r in rows {
            self.sink.row(&[Value::str(r)]);
        }
        let count = (!self.state.options.nocount).then_some(rows.len() as u64);
        self.sink.done(count, Command::Select);
    }

    /// The plan of a query or data change (None for statements without one).
    fn plan_rows(&mut self, s: &Statement) -> SqlResult<Option<Vec<String>>> {
        let vars = self.frame.decls.as_slice();
        if let StatementKind::Insert(i) = &s.kind {
            if matches!(i.source, ast::InsertSource::Execute(_)) {
                return Ok(None);
            }
        }
        if let StatementKind::Query(q) = &s.kind {
            if let ast::SetExpr::Select(sel) = &q.body {
                if let Some(into) = &sel.into {
                    let mut plain = (**q).clone();
                    if let ast::SetExpr::Select(inner) = &mut plain.body {
                        inner.into = None;
                    }
                    let bound = Binder::new(self.shared, self.state, self.visible(s)).bind_query(&plain)?;
                    let target: Vec<String> = into.0.iter().map(|p| format!("[{}]", p.value)).collect();
                    return Ok(Some(self.with_site(|at| {
                        tessera_semantics::plan::select_into_plan(&bound.plan, &target.join("."), vars, at)
                    })));
                }
            }
        }
        let Some(checked) = self.compile_statement(s)? else { return Ok(None) };
        Ok(Some(self.with_site(|at| tessera_semantics::plan::statement_plan(checked.plan(), vars, at))))
    }

    /// Shows a plan as it runs in the session's database.
    pub(super) fn with_site<T>(&self, show: impl FnOnce(&PlanSite) -> T) -> T {
        let current = &self.state.database;
        let table = |db: &DbRef, def: &Arc<Table>| {
            (self.shared.table_for_plan(self.state, db, def))
                .unwrap_or_else(|_| (Arc::from(db.name(current)), def.clone()))
        };
        show(&PlanSite { database: current, table: &table })
    }
}
