//! Bulk loads (TDS `INSERT BULK` then BULK_LOAD): the statement checks and remembers
//! its target; the rows sent are then inserted as one statement, with one row count.

use std::sync::atomic::Ordering;

use super::rpc::quote_name;
use super::{Runner, Session};
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::runtime::BulkTarget;
use tessera_semantics::bind::{invalid_column, Binder};
use tessera_semantics::output::{Command, EnvChange, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::InsertBulk;

impl Runner<'_> {
    /// `INSERT BULK`: the table and columns must exist (208 and 207, as from SQL Server);
    /// the target is kept for the BULK_LOAD message the client sends next.
    pub(super) fn insert_bulk(&mut self, statement: &InsertBulk) -> SqlResult<()> {
        let resolved = Binder::new(self.shared, self.state, &[]).resolve_table(&statement.table)?;
        let table = &resolved.table;
        let columns = statement
            .columns
            .iter()
            .map(|c| {
                table.column(&c.value).map(|i| table.columns[i].name.clone()).ok_or_else(|| invalid_column(&c.value))
            })
            .collect::<SqlResult<Vec<String>>>()?;
        let parts: Vec<String> = statement
            .table
            .0
            .iter()
            .map(|p| if p.value.is_empty() { String::new() } else { bracketed(&p.value) })
            .collect();
        self.state.bulk_target = Some(BulkTarget {
            table: parts.join("."),
            columns,
            keep_identity: statement.keep_identity,
            identity: table.identity_column().map(|i| table.columns[i].name.clone()),
        });
        Ok(())
    }
}

impl Session {
    /// What the last `INSERT BULK` announced, if no BULK_LOAD has taken it yet.
    pub fn take_bulk_target(&mut self) -> Option<BulkTarget> {
        self.state.bulk_target.take()
    }

    /// A bulk load (TDS `INSERT BULK` then BULK_LOAD): inserts `rows`, whose values have
    /// the types in `columns`, into those columns of `table`, with the same constraint
    /// checks as INSERT, and reports one row count. Outside a user transaction the load
    /// is one transaction: all rows or none. `keep_identity` inserts the identity values
    /// sent (bcp's KEEPIDENTITY) instead of generating them. Returns true if it failed.
    pub fn bulk_insert(
        &mut self,
        table: &str,
        columns: &[(String, SqlType)],
        rows: Vec<Vec<Value>>,
        keep_identity: bool,
        sink: &mut dyn ResultSink,
    ) -> bool {
        assert!(!columns.is_empty(), "a bulk load names its columns");
        debug_assert!(rows.iter().all(|r| r.len() == columns.len()));
        let _request = self.begin_request("INSERT BULK");
        let mut counted = RowCounter { inner: sink, rows: 0, failed: false };
        // Admitted before the load's own transaction begins, so it counts against its
        // database's request limit like any other request.
        let _slot = match self.admit() {
            Ok(slot) => slot,
            Err(e) => {
                counted.message(&e);
                self.publish(None);
                return true;
            }
        };
        // The load's count is reported whatever SET NOCOUNT says.
        let nocount = std::mem::replace(&mut self.state.options.nocount, false);
        let own_transaction = self.state.txns.count == 0;
        if own_transaction {
            self.state.txns.count = 1;
        }
        // One statement for the whole load (so it can be minimally logged as a whole):
        // its text names one row of parameters, and its INSERT takes every row of the
        // load from `bulk_rows` instead (see `dml::run_insert`).
        let names: Vec<String> = columns.iter().map(|(n, _)| quote_name(n)).collect();
        let types: Vec<String> = columns.iter().map(|(_, t)| types::type_name(t)).collect();
        let identity =
            |on: &str| if keep_identity { format!("SET IDENTITY_INSERT {table} {on};\n") } else { String::new() };
        let params: Vec<String> = (0..columns.len()).map(|c| format!("@__b{c}")).collect();
        let text = format!(
            "-- bulk: {}\n{}INSERT INTO {table} ({}) VALUES ({});\n{}",
            types.join(", "),
            identity("ON"),
            names.join(", "),
            params.join(", "),
            identity("OFF")
        );
        let decls: Vec<(String, SqlType)> = params.into_iter().zip(columns.iter().map(|(_, t)| *t)).collect();
        let first = rows.first().cloned().unwrap_or_else(|| vec![Value::Null; columns.len()]);
        if !rows.is_empty() {
            self.state.bulk_rows = Some(rows);
            self.run_bound(&text, decls, first, &mut counted);
        }
        // Never left for a later statement, whatever stopped this one.
        self.state.bulk_rows = None;
        self.state.options.nocount = nocount;
        let cancelled = self.state.cancel.load(Ordering::Relaxed);
        if own_transaction {
            let ended = if counted.failed || cancelled {
                self.state.txns.rollback_all()
            } else {
                self.state.txns.commit_all(false)
            };
            if let Err(e) = ended {
                counted.message(&e);
            }
        }
        let (rows, failed) = (counted.rows, counted.failed);
        if !failed && !cancelled {
            sink.done(Some(rows), Command::BulkInsert);
        }
        self.release();
        self.publish(None);
        failed || cancelled
    }
}

/// Adds up the row counts of a bulk load's INSERTs (the client sees one count), passing
/// messages through.
struct RowCounter<'s> {
    inner: &'s mut dyn ResultSink,
    rows: u64,
    failed: bool,
}

impl ResultSink for RowCounter<'_> {
    fn columns(&mut self, _: &[tessera_semantics::output::OutputColumn]) {}
    fn row(&mut self, _: &[Value]) {}
    fn done(&mut self, count: Option<u64>, _: Command) {
        self.rows += count.unwrap_or(0);
    }
    fn message(&mut self, message: &SqlError) {
        self.failed |= message.severity > 10;
        self.inner.message(message);
    }
    fn env_change(&mut self, change: &EnvChange) {
        self.inner.env_change(change);
    }
    fn return_status(&mut self, _: i32) {}
}

/// `[name]`, with `]` doubled.
fn bracketed(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}
