//! A table's in-memory counters: identity values and the uniquifier of a non-unique
//! clustered index, loaded from its rows once.

use std::sync::atomic::Ordering;

use tessera_access::row;

use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::catalog::Table;
use tessera_semantics::types::{self, SqlType, Value};

/// Loads a table's in-memory counters (identity, row number) from its rows once.
pub fn load_counters(ctx: &mut ExecCtx, db: &str, table: &Table) -> SqlResult<()> {
    let mut loaded = table.counters.loaded.lock().unwrap_or_else(|e| e.into_inner());
    if *loaded {
        return Ok(());
    }
    let rows_tree = ctx.tree(db, &table.indexes[0].tree, table)?;
    let schema = crate::encoding::row_schema(table)?;
    let identity = table.identity_column();
    let mut max_id: Option<i64> = None;
    let mut max_uniq = 0u64;
    let tx = ctx.transaction(db)?;
    // The rows as they are now, never versions: the counters continue from the largest
    // value stored.
    tx.reading_current(|tx| -> SqlResult<()> {
        let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
        for item in tx.scan(rows_tree, all.0, all.1, tessera_database::Direction::Forward) {
            let (k, v) = item?;
            if table.has_uniquifier() && k.len() >= 8 {
                max_uniq = max_uniq.max(u64::from_be_bytes(k[k.len() - 8..].try_into().expect("8 bytes")));
            }
            if let Some(i) = identity {
                let stored = row::column(&schema, &v, i)?;
                if let Value::Int(n) = decimal_to_int(crate::encoding::from_storage(stored, &table.columns[i].ty)) {
                    let inc = table.columns[i].identity.map_or(1, |x| x.1);
                    max_id = Some(match max_id {
                        None => n,
                        Some(m) if inc > 0 => m.max(n),
                        Some(m) => m.min(n),
                    });
                }
            }
        }
        Ok(())
    })?;
    if let Some(i) = identity {
        let (seed, inc) = table.columns[i].identity.expect("identity column");
        table.counters.identity.store(max_id.unwrap_or(seed - inc), Ordering::Relaxed);
    }
    table.counters.uniquifier.store(max_uniq, Ordering::Relaxed);
    *loaded = true;
    Ok(())
}

fn decimal_to_int(v: Value) -> Value {
    match v {
        Value::Decimal { value, scale: 0 } => Value::Int(value as i64),
        v => v,
    }
}

pub(super) fn next_identity(table: &Table, col: usize) -> SqlResult<Value> {
    let (_, inc) = table.columns[col].identity.expect("identity column");
    let v = table.counters.identity.fetch_add(inc, Ordering::Relaxed) + inc;
    let ty = table.columns[col].ty;
    types::cast(&Value::Int(v), &SqlType::BigInt, &ty, None)
        .map_err(|_| msg::ARITHMETIC_OVERFLOW.with(&[&"IDENTITY", &types::base_type_name(&ty)]))
}

/// Notes an explicitly inserted identity value (IDENTITY_INSERT ON): later values continue
/// above it.
pub(super) fn observe_identity(table: &Table, col: usize, v: &Value) {
    if let Value::Int(n) = decimal_to_int(v.clone()) {
        let inc = table.columns[col].identity.map_or(1, |x| x.1);
        if inc > 0 {
            table.counters.identity.fetch_max(n, Ordering::Relaxed);
        } else {
            table.counters.identity.fetch_min(n, Ordering::Relaxed);
        }
    }
}
