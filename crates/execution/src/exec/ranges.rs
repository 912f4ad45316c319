//! The key range a scan or seek reads: its index prefix and bounds, evaluated against the
//! correlation row, as key bytes.

use super::evaluate::eval;
use crate::encoding::{encode_prefix, prefix_successor};
use crate::runtime::ExecCtx;
use std::ops::Bound;
use tessera_access::key::KeyBuf;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{RangeBound, ScanNode};
use tessera_semantics::types::Value;

pub(super) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

pub(super) fn scan_range(node: &ScanNode, corr: &[Value], ctx: &mut ExecCtx) -> SqlResult<Option<KeyRange>> {
    let mut values = Vec::with_capacity(node.prefix.len() + 1);
    for e in &node.prefix {
        values.push(eval(e, corr, ctx)?);
    }
    let bound_value = |b: &Option<RangeBound>, ctx: &mut ExecCtx| -> SqlResult<Option<(Value, bool)>> {
        match b {
            Some(b) => Ok(Some((eval(&b.value, corr, ctx)?, b.inclusive))),
            None => Ok(None),
        }
    };
    let lower = bound_value(&node.lower, ctx)?;
    let upper = bound_value(&node.upper, ctx)?;
    // Comparisons with NULL are never true: the range is empty.
    if values.iter().chain(lower.iter().map(|b| &b.0)).chain(upper.iter().map(|b| &b.0)).any(Value::is_null) {
        return Ok(None);
    }
    let mut key = KeyBuf::new();
    encode_prefix(&node.table, node.index, &values, &mut key)?;
    let prefix = key.into_vec();
    let with = |extra: &Value| -> SqlResult<Vec<u8>> {
        let mut all = values.clone();
        all.push(extra.clone());
        let mut k = KeyBuf::new();
        encode_prefix(&node.table, node.index, &all, &mut k)?;
        Ok(k.into_vec())
    };
    // A one-sided range must not run into the column's NULLs (which sort first, or last
    // in a descending column): no comparison with NULL is true.
    let desc = node.table.indexes[node.index].columns.get(values.len()).is_some_and(|c| c.1);
    let lo = match &lower {
        Some((v, true)) => Bound::Included(with(v)?),
        Some((v, false)) => {
            let k = with(v)?;
            prefix_successor(&k).map_or(Bound::Excluded(k), Bound::Included)
        }
        None if upper.is_some() && !desc => {
            let k = with(&Value::Null)?;
            prefix_successor(&k).map_or(Bound::Excluded(k), Bound::Included)
        }
        None if prefix.is_empty() => Bound::Unbounded,
        None => Bound::Included(prefix.clone()),
    };
    let hi = match &upper {
        Some((v, true)) => prefix_successor(&with(v)?).map_or(Bound::Unbounded, Bound::Excluded),
        Some((v, false)) => Bound::Excluded(with(v)?),
        None if lower.is_some() && desc => Bound::Excluded(with(&Value::Null)?),
        None if prefix.is_empty() => Bound::Unbounded,
        None => prefix_successor(&prefix).map_or(Bound::Unbounded, Bound::Excluded),
    };
    Ok(Some((lo, hi)))
}
