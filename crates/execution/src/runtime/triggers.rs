//! What a session keeps for triggers: the rows a data change captures for the triggers it
//! fires, the frames of the triggers running (their `inserted` and `deleted` rows), and
//! the changes a trigger fires on.

use super::ExecCtx;
use std::sync::Arc;
use tessera_semantics::catalog::{Module, Table};
use tessera_semantics::plan::Row;
use tessera_semantics::types::Value;
use tessera_syntax::ast::{StatementKind, TriggerEvents};

/// The rows one statement changed in its target, captured while its table has triggers
/// (`SessionState::transitions`): each kind of change apart, as a MERGE makes several.
#[derive(Debug, Default)]
pub struct Transitions {
    pub inserted: Vec<Row>,
    /// (old, new) pairs.
    pub updated: Vec<(Row, Row)>,
    pub deleted: Vec<Row>,
    /// The columns the statement's SET lists assigned (UPDATE() and COLUMNS_UPDATED()).
    pub updated_columns: Vec<usize>,
}

/// A trigger that is running: its id, its table, and the rows it sees as `deleted` and
/// `inserted`.
#[derive(Debug)]
pub struct TriggerFrame {
    pub trigger: i32,
    pub db: String,
    pub table: Arc<Table>,
    pub deleted: Vec<Row>,
    pub inserted: Vec<Row>,
    /// Per column: whether the statement set it (every column, for an INSERT).
    pub updated: Vec<bool>,
}

impl TriggerFrame {
    /// COLUMNS_UPDATED(): a bit per column, the first column the low bit of the first
    /// byte.
    pub fn columns_updated(&self) -> Value {
        let mut bytes = vec![0u8; self.updated.len().div_ceil(8).max(1)];
        for (i, _) in self.updated.iter().enumerate().filter(|(_, set)| **set) {
            bytes[i / 8] |= 1 << (i % 8);
        }
        Value::Binary(Arc::from(bytes))
    }
}

/// The data changes a trigger fires on, from its definition.
pub fn trigger_events(ctx: &ExecCtx, m: &Module) -> Option<TriggerEvents> {
    let cached = ctx.shared.plans.get_or_parse(&m.text, tessera_syntax::parser::parse_batch).ok()?;
    match cached.batch.statements.first().map(|s| &s.kind) {
        Some(StatementKind::CreateTrigger(ct)) => Some(ct.events),
        _ => None,
    }
}
