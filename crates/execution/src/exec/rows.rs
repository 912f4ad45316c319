//! What an open operator is: a cursor that hands out its rows one at a time, and rows held
//! in memory (under the statement's grant, or small by construction).

use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_governance::grant::{Collector, Reservation};
use tessera_semantics::plan::Row;

/// An open operator.
pub trait Cursor {
    /// The next row, or None once the operator has no more.
    fn next(&mut self, ctx: &mut ExecCtx) -> SqlResult<Option<Row>>;
}

/// An open plan: its root operator.
pub type Rows<'p> = Box<dyn Cursor + 'p>;

/// Every row of an open plan, held under the statement's grant.
pub fn drain(mut rows: Rows<'_>, ctx: &mut ExecCtx) -> SqlResult<Collector> {
    let mut out = Collector::new(&ctx.grant());
    while let Some(r) = rows.next(ctx)? {
        out.push(r)?;
    }
    Ok(out)
}

/// Rows held in memory, handed out in order.
pub(super) struct Held {
    rows: std::vec::IntoIter<Row>,
    _reservation: Option<Reservation>,
}

impl Held {
    pub(super) fn new(rows: Collector) -> Held {
        let (rows, reservation) = rows.into_parts();
        Held { rows: rows.into_iter(), _reservation: Some(reservation) }
    }

    /// Rows that are small by construction (system views, work tables, a locked TOP).
    pub(super) fn loose(rows: Vec<Row>) -> Held {
        Held { rows: rows.into_iter(), _reservation: None }
    }
}

impl Cursor for Held {
    fn next(&mut self, _: &mut ExecCtx) -> SqlResult<Option<Row>> {
        Ok(self.rows.next())
    }
}

/// At most one row, already read (a point lookup's).
pub(super) struct OneRow(pub(super) Option<Row>);

impl Cursor for OneRow {
    fn next(&mut self, _: &mut ExecCtx) -> SqlResult<Option<Row>> {
        Ok(self.0.take())
    }
}
