//! Where a runner's results go: straight through to the session's sink, except that a
//! statement running in autocommit mode is not done until its commit is. While such a
//! statement runs, its last DONE (the row count a client takes as the statement's result)
//! is held; the commit's success releases it, a failed commit discards it, and the
//! client sees the commit's error as the statement's result instead of a count for
//! changes that were never made durable.

use tessera_errors::SqlError;
use tessera_semantics::output::{ColumnOrigins, Command, EnvChange, OutputColumn, ResultSink, StoredRow};
use tessera_semantics::types::Value;

/// A DONE not passed on yet: its count and the statement it ends.
type Done = (Option<u64>, Command);

pub(super) struct Sink<'a> {
    inner: &'a mut dyn ResultSink,
    holding: bool,
    held: Option<Done>,
}

impl<'a> Sink<'a> {
    pub(super) fn new(inner: &'a mut dyn ResultSink) -> Sink<'a> {
        Sink { inner, holding: false, held: None }
    }

    /// From now on the last DONE waits for [`Sink::release`] or [`Sink::discard`].
    pub(super) fn hold(&mut self) {
        debug_assert!(self.held.is_none(), "nothing is held before a statement starts");
        self.holding = true;
    }

    /// The statement is complete (its commit succeeded): its DONE goes out.
    pub(super) fn release(&mut self) {
        self.holding = false;
        self.pass_held();
    }

    /// The statement failed after its DONE was made (its commit failed): the DONE and
    /// its count never go out.
    pub(super) fn discard(&mut self) {
        self.holding = false;
        self.held = None;
    }

    /// Anything after a held DONE follows it: the DONE goes out first.
    fn pass_held(&mut self) {
        if let Some((count, command)) = self.held.take() {
            self.inner.done(count, command);
        }
    }
}

impl ResultSink for Sink<'_> {
    fn columns(&mut self, columns: &[OutputColumn]) {
        self.pass_held();
        self.inner.columns(columns);
    }
    fn cursor_columns(&mut self, columns: &[OutputColumn], origins: &ColumnOrigins) {
        self.pass_held();
        self.inner.cursor_columns(columns, origins);
    }
    fn order(&mut self, columns: &[u16]) {
        self.inner.order(columns);
    }
    fn row(&mut self, row: &[Value]) {
        self.inner.row(row);
    }
    fn takes_stored_rows(&self) -> bool {
        self.inner.takes_stored_rows()
    }
    fn stored_row(&mut self, row: &StoredRow<'_>) {
        self.inner.stored_row(row);
    }
    fn done(&mut self, count: Option<u64>, command: Command) {
        self.pass_held();
        if self.holding {
            self.held = Some((count, command));
        } else {
            self.inner.done(count, command);
        }
    }
    fn message(&mut self, message: &SqlError) {
        self.pass_held();
        self.inner.message(message);
    }
    fn env_change(&mut self, change: &EnvChange) {
        self.pass_held();
        self.inner.env_change(change);
    }
    fn return_status(&mut self, status: i32) {
        self.pass_held();
        self.inner.return_status(status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_semantics::output::Collected;

    #[test]
    fn a_held_done_waits_for_release_and_a_discarded_one_never_goes_out() {
        let mut out = Collected::default();
        let mut sink = Sink::new(&mut out);
        sink.hold();
        sink.done(Some(3), Command::Insert);
        sink.done(Some(1), Command::Insert);
        sink.release();
        sink.hold();
        sink.done(Some(7), Command::Insert);
        sink.discard();
        sink.message(&SqlError::new(50000, "the commit failed"));
        sink.done(Some(2), Command::Insert);
        assert_eq!(out.counts, vec![3, 1, 2]);
        assert_eq!(out.messages.len(), 1);
    }
}
