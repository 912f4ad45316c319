//! `UPDATE … SET col.WRITE(value, offset, length)`: the new value of a row's `(max)`
//! column (read from the old one and the inserted bytes where they are), and, when the
//! old value is stored off the row, its partial rewrite — only the chunks that change
//! written and logged (`tessera_access::lob::Rewriter`) — in place of a new value.

use super::storage::lob_tree;
use crate::exec::eval;
use crate::runtime::ExecCtx;
use tessera_access::row::{self, OffRow};
use tessera_errors::{msg, SqlResult};
use tessera_semantics::catalog::Table;
use tessera_semantics::plan::PartialWrite;
use tessera_semantics::types::large::LAZY_BYTES;
use tessera_semantics::types::{self, encode_cp1252, LargeKind, LargeValue, SqlType, Value};

/// A change of part of a value, in bytes of its stored form: `removed` bytes from byte
/// `at` of the old value (of `old_len` bytes) replaced by `inserted`.
pub(super) struct Splice {
    column: usize,
    old_len: u64,
    at: u64,
    removed: u64,
    inserted: LargeValue,
}

/// The column's new value after `w` on a row whose values are `old` (the source row
/// `source` evaluates the arguments), and the splice that makes it. SQL Server's errors:
/// 5302 on a NULL value, 7116 for an offset outside it, 7135 for a negative length.
pub(super) fn apply(
    ctx: &mut ExecCtx,
    w: &PartialWrite,
    source: &[Value],
    old: &[Value],
    table: &Table,
) -> SqlResult<(Value, Splice)> {
    let column = &table.columns[w.column];
    let kind = LargeKind::of(&column.ty).expect("bound to a (max) column");
    let unit = kind.unit_bytes();
    let base = match &old[w.column] {
        Value::Null => return Err(msg::MUTATOR_ON_NULL.with(&[&"write()", &column.name])),
        v => in_form(v, kind)?,
    };
    let value = eval(&w.value.0, source, ctx)?;
    let value = types::cast(&value, &w.value.1, &column.ty, None)?;
    let offset = bigint(ctx, &w.offset, source)?;
    let length = bigint(ctx, &w.length, source)?;
    let units = base.len_bytes() / unit;
    let (at, removed) = match offset {
        None => (units, 0),
        Some(o) if o < 0 || o as u64 > units => return Err(msg::LOB_OFFSET_OUT_OF_RANGE.with(&[&o])),
        Some(o) => {
            let rest = units - o as u64;
            let removed = match length {
                _ if value.is_null() => rest,
                None => rest,
                Some(l) if l < 0 => return Err(msg::LOB_DELETION_LENGTH_OUT_OF_RANGE.with(&[&l])),
                Some(l) => (l as u64).min(rest),
            };
            (o as u64, removed)
        }
    };
    let inserted = match &value {
        Value::Null => LargeValue::in_memory(kind, Vec::new()),
        v => in_form(v, kind)?,
    };
    let (at, removed) = (at * unit, removed * unit);
    if base.len_bytes() - removed + inserted.len_bytes() > tessera_types::MAX_LARGE_BYTES {
        return Err(msg::LOB_TOO_LARGE.err());
    }
    let old_len = base.len_bytes();
    let new = base.spliced(at, removed, inserted.clone());
    // As a row's value of that length would be: a handle from 1 MiB, else in memory.
    let new = if new.len_bytes() >= LAZY_BYTES { Value::Large(new) } else { new.value()? };
    Ok((new, Splice { column: w.column, old_len, at, removed, inserted }))
}

/// The value of an offset or length argument (None for NULL).
fn bigint(
    ctx: &mut ExecCtx,
    (e, t): &(tessera_semantics::plan::Expr, SqlType),
    source: &[Value],
) -> SqlResult<Option<i64>> {
    match types::cast(&eval(e, source, ctx)?, t, &SqlType::BigInt, None)? {
        Value::Int(n) => Ok(Some(n)),
        _ => Ok(None),
    }
}

/// A non-NULL value of a `(max)` column of `kind` as a large value of its stored form
/// (a large value as it is; another's bytes encoded).
fn in_form(v: &Value, kind: LargeKind) -> SqlResult<LargeValue> {
    Ok(match v {
        Value::Large(l) if l.kind() == kind => l.clone(),
        Value::Large(l) => return in_form(&l.value()?, kind),
        Value::Binary(b) => LargeValue::in_memory(kind, b.to_vec()),
        Value::Str(s) if kind == LargeKind::Unicode => {
            LargeValue::in_memory(kind, s.encode_utf16().flat_map(u16::to_le_bytes).collect())
        }
        Value::Str(s) => LargeValue::in_memory(kind, encode_cp1252(s)),
        v => unreachable!("a (max) column holds strings or bytes, not {v:?}"),
    })
}

/// Applies `splices` to the values the row stores off the row (`before`, by column) as
/// partial rewrites: the new pointers, by column. A value whose new length goes back in
/// the row (or one not stored off it) is left to the row's store, as any new value.
pub(super) fn rewrite_stored(
    ctx: &mut ExecCtx,
    db: &str,
    table: &Table,
    before: &[(usize, OffRow)],
    splices: &[Splice],
) -> SqlResult<Vec<(usize, OffRow)>> {
    let mut out = Vec::new();
    for s in splices {
        let Some(&(_, old)) = before.iter().find(|(c, _)| *c == s.column) else { continue };
        let new_len = old.len - s.removed + s.inserted.len_bytes();
        let stays_out = new_len > row::MAX_IN_ROW as u64 || table.large_values_out_of_row;
        // The stored value is the one the splice was computed on (the row is locked).
        assert_eq!(old.len, s.old_len, "a splice of the stored value");
        if !stays_out {
            continue;
        }
        let tree = lob_tree(ctx, db, table)?;
        let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
        let tx = ctx.transaction(db)?;
        let mut w = tx.lob_rewriter(rows_tree, tree, old, s.at, s.removed)?;
        s.inserted.for_each_piece(0, s.inserted.len_bytes(), |piece| Ok(tx.lob_rewrite_append(&mut w, piece)?))?;
        out.push((s.column, tx.lob_rewrite_finish(w)?));
    }
    Ok(out)
}
