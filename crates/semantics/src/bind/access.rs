//! Access paths and join methods (the optimizer): the index seek or range a table's filters
//! pin down best, index nested loops, hash joins, nested loops.

use super::expr_walk::{conjoin, map_columns};
use super::from::{FromNode, LeafSource, TableSource};
use super::Binder;
use crate::catalog::Table;
use crate::plan::{columns_used, Expr, Plan, RangeBound, ScanNode, WantedIndex};
use std::sync::Arc;
use tessera_errors::{msg, SqlResult};
use tessera_syntax::ast::{BinaryOp, JoinHint, JoinKind};

impl<'a> Binder<'a> {
    /// Turns a FROM tree with pushed-down filters into a plan over its local row.
    pub(super) fn build(&mut self, node: FromNode) -> SqlResult<Plan> {
        match node {
            FromNode::Leaf { source, offset, filters, .. } => {
                let local: Vec<Expr> = filters.iter().map(|f| map_columns(f, &|i| i - offset)).collect();
                Ok(match *source {
                    LeafSource::Table(table) => {
                        let usable = self.usable_indexes(&table.table, &local);
                        access_path(table, local, &usable)
                    }
                    LeafSource::Plan(p) => match conjoin(local) {
                        Some(pred) => Plan::Filter { input: Box::new(p), predicate: pred },
                        None => p,
                    },
                })
            }
            FromNode::Join { left, right, kind, on, offset, hint, .. } => {
                let join = JoinSpec {
                    kind,
                    on: on.iter().map(|f| map_columns(f, &|i| i - offset)).collect(),
                    left_width: left.width(),
                    right_width: right.width(),
                    // A hint in the join, else the statement's (`OPTION (LOOP JOIN)`).
                    hint: hint.or(self.join_hint),
                };
                if matches!(kind, JoinKind::CrossApply | JoinKind::OuterApply) {
                    let right_width = right.width();
                    let on = conjoin(join.on);
                    let (left, right) = (Box::new(self.build(*left)?), Box::new(self.build(*right)?));
                    return Ok(Plan::Apply { left, right, kind, on, right_width });
                }
                let right_offset = right.offset();
                // Index nested loops: the inner side is a table whose index the join pins
                // (unless the query asks for a hash or merge join).
                let loops = !matches!(join.hint, Some(JoinHint::Hash | JoinHint::Merge));
                let inner_is_table =
                    matches!(&*right, FromNode::Leaf { source, .. } if matches!(**source, LeafSource::Table(_)));
                if loops && inner_is_table && matches!(kind, JoinKind::Inner | JoinKind::Left) {
                    let FromNode::Leaf { source, filters, .. } = *right else { unreachable!("checked above") };
                    let LeafSource::Table(table) = *source else { unreachable!("checked above") };
                    let own: Vec<Expr> = filters.iter().map(|f| map_columns(f, &|i| i - right_offset)).collect();
                    let usable = self.usable_indexes(&table.table, &own);
                    let lp = self.build(*left)?;
                    return join_with_table(lp, table, own, join, &usable);
                }
                let lp = self.build(*left)?;
                let rp = self.build(*right)?;
                hash_or_loop(lp, rp, join)
            }
        }
    }
}

impl Binder<'_> {
    /// Which of `table`'s indexes may answer a read under `filters` (its own, over its
    /// row): every index of all rows, and a filtered index whose filter's every conjunct
    /// is one of the read's (so every row the read wants is in it).
    fn usable_indexes(&mut self, table: &Table, filters: &[Expr]) -> Vec<bool> {
        let wanted: Vec<String> = filters.iter().map(|f| format!("{f:?}")).collect();
        let mut usable = Vec::with_capacity(table.indexes.len());
        for ix in &table.indexes {
            let Some(text) = &ix.filter else {
                usable.push(true);
                continue;
            };
            let bound = tessera_syntax::unparse::parse_definition(text)
                .and_then(|e| self.with_table_scope(table, |b| b.bind_predicate(&e)));
            let covered = match bound {
                Ok(predicate) => {
                    let mut conjuncts = Vec::new();
                    super::expr_walk::split_conjuncts(predicate, &mut conjuncts);
                    conjuncts.iter().all(|c| wanted.contains(&format!("{c:?}")))
                }
                Err(_) => false,
            };
            usable.push(covered);
        }
        usable
    }
}

/// A join of two inputs as the query states it: its kind and ON conjuncts (over the left
/// row then the right), the inputs' widths, and the join hint in force.
struct JoinSpec {
    kind: JoinKind,
    on: Vec<Expr>,
    left_width: usize,
    right_width: usize,
    hint: Option<JoinHint>,
}

/// A comparison `Column(col) op value` where value does not read the row.
fn column_comparison(e: &Expr) -> Option<(usize, BinaryOp, &Expr)> {
    let Expr::Compare { op, left, right } = e else { return None };
    let independent = |x: &Expr| {
        let mut used = Vec::new();
        columns_used(x, &mut used) && used.is_empty()
    };
    match (left.as_ref(), right.as_ref()) {
        (Expr::Column(c), v) if independent(v) => Some((*c, *op, v)),
        (v, Expr::Column(c)) if independent(v) => Some((*c, flip(*op), v)),
        _ => None,
    }
}

fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        BinaryOp::NotLt => BinaryOp::NotGt,
        BinaryOp::NotGt => BinaryOp::NotLt,
        op => op,
    }
}

/// What an index seek gets from facts `(column, op, value, source)`: equality on a key
/// prefix, then a range on the next key column.
struct Seek {
    prefix: Vec<Expr>,
    lower: Option<RangeBound>,
    upper: Option<RangeBound>,
    /// A unique index pinned on all its columns: at most one row.
    single: bool,
    /// Sources of the facts the bounds represent exactly.
    used: Vec<usize>,
}

impl Seek {
    fn useful(&self) -> bool {
        !self.prefix.is_empty() || self.lower.is_some() || self.upper.is_some()
    }
}

type Fact = (usize, BinaryOp, Expr, usize);

fn seek_bounds(table: &Table, index: usize, facts: &[Fact]) -> Seek {
    let idx = &table.indexes[index];
    let mut prefix = Vec::new();
    let mut used = Vec::new();
    for &(col, _) in &idx.columns {
        match facts.iter().find(|(c, op, _, _)| *c == col && *op == BinaryOp::Eq) {
            Some((_, _, v, src)) => {
                prefix.push(v.clone());
                used.push(*src);
            }
            None => break,
        }
    }
    let n = prefix.len();
    let single = idx.unique && n == idx.columns.len() && n > 0;
    let (mut lower, mut upper) = (None, None);
    let (mut lo_src, mut hi_src) = (None, None);
    if let Some(&(col, desc)) = idx.columns.get(n) {
        for (c, op, v, src) in facts {
            if *c != col {
                continue;
            }
            // A descending column stores larger values first: swap the roles.
            let (is_lower, inclusive) = match op {
                BinaryOp::Gt => (!desc, false),
                BinaryOp::GtEq | BinaryOp::NotLt => (!desc, true),
                BinaryOp::Lt => (desc, false),
                BinaryOp::LtEq | BinaryOp::NotGt => (desc, true),
                _ => continue,
            };
            let bound = Some(RangeBound { value: v.clone(), inclusive });
            if is_lower {
                lower = bound;
                lo_src = Some(*src);
            } else {
                upper = bound;
                hi_src = Some(*src);
            }
        }
    }
    used.extend(lo_src);
    used.extend(hi_src);
    Seek { prefix, lower, upper, single, used }
}

/// Chooses how to read a table given filters over its own row: the index the filters pin
/// down best, a full scan otherwise.
fn access_path(source: TableSource, filters: Vec<Expr>, usable: &[bool]) -> Plan {
    let facts: Vec<Fact> = filters
        .iter()
        .enumerate()
        .filter_map(|(i, f)| column_comparison(f).map(|(c, op, v)| (c, op, v.clone(), i)))
        .collect();
    let mut best: Option<(usize, Seek, i32)> = None;
    for (i, &ok) in usable.iter().enumerate() {
        // A filtered index holds only some rows: it answers the reads its filter covers.
        if source.table.indexes[i].is_heap() || !ok {
            continue;
        }
        let seek = seek_bounds(&source.table, i, &facts);
        // A filtered index the read's filters cover holds fewer rows than the table: worth
        // reading even without a seek.
        let filtered = source.table.indexes[i].filter.is_some();
        let score = (if seek.single { 1000 } else { 0 })
            + seek.prefix.len() as i32 * 10
            + i32::from(seek.lower.is_some() || seek.upper.is_some()) * 5
            + i32::from(filtered) * 3
            - i as i32;
        if (seek.useful() || filtered) && best.as_ref().is_none_or(|b| score > b.2) {
            best = Some((i, seek, score));
        }
    }
    let (index, seek, wanted) = match best {
        Some((i, seek, _)) => (i, seek, None),
        None => {
            let seek = Seek { prefix: Vec::new(), lower: None, upper: None, single: false, used: Vec::new() };
            (0, seek, wanted_index(&facts))
        }
    };
    seek_plan(source, index, seek, filters, wanted)
}

/// The index a scan of the whole table under `facts` wants (SQL Server's missing-index
/// suggestion): the columns compared with `=`, then those compared otherwise, each in
/// column order; None without comparisons.
fn wanted_index(facts: &[Fact]) -> Option<Arc<WantedIndex>> {
    if facts.is_empty() {
        return None;
    }
    let columns = |equality: bool| {
        let mut c: Vec<usize> = facts.iter().filter(|f| (f.1 == BinaryOp::Eq) == equality).map(|f| f.0).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let equality = columns(true);
    let mut inequality = columns(false);
    inequality.retain(|c| !equality.contains(c));
    // SQL Server's guesses without statistics.
    let selectivity: f64 = facts
        .iter()
        .map(|f| match f.1 {
            BinaryOp::Eq => 0.1,
            BinaryOp::NotEq => 0.9,
            _ => 0.3,
        })
        .product();
    let impact = ((1.0 - selectivity) * 10_000.0).round() / 100.0;
    Some(Arc::new(WantedIndex { equality, inequality, included: Vec::new(), impact }))
}

/// The scan of index `index` of `source` that `seek` describes, under the filters it does
/// not represent exactly: those whose numbers are not in `seek.used` stay as a residual
/// predicate; the others are dropped (so a non-deterministic value such as `RAND()` is
/// computed once, for the seek). `wanted`: the index a scan of the whole table wants.
fn seek_plan(
    source: TableSource,
    index: usize,
    seek: Seek,
    filters: Vec<Expr>,
    wanted: Option<Arc<WantedIndex>>,
) -> Plan {
    let TableSource { db, table, alias, with_key, hints } = source;
    let scan = Plan::Scan(Box::new(ScanNode {
        db,
        table,
        alias,
        index,
        prefix: seek.prefix,
        lower: seek.lower,
        upper: seek.upper,
        reverse: false,
        with_key,
        single: seek.single,
        hints,
        wanted,
    }));
    let residual: Vec<Expr> =
        filters.into_iter().enumerate().filter(|(i, _)| !seek.used.contains(i)).map(|(_, f)| f).collect();
    match conjoin(residual) {
        Some(pred) => Plan::Filter { input: Box::new(scan), predicate: pred },
        None => scan,
    }
}

/// An equality `left expr = right column` between the two sides of a join (right columns
/// start at `left_width`).
fn join_equalities(on: &[Expr], left_width: usize) -> Vec<(usize, Expr, Expr, usize)> {
    let mut out = Vec::new();
    for (i, c) in on.iter().enumerate() {
        let Expr::Compare { op: BinaryOp::Eq, left, right } = c else { continue };
        let side = |x: &Expr| -> Option<bool> {
            let mut used = Vec::new();
            if !columns_used(x, &mut used) || used.is_empty() {
                return None;
            }
            if used.iter().all(|&u| u < left_width) {
                Some(true)
            } else if used.iter().all(|&u| u >= left_width) {
                Some(false)
            } else {
                None
            }
        };
        match (side(left), side(right)) {
            (Some(true), Some(false)) => out.push((i, (**left).clone(), (**right).clone(), i)),
            (Some(false), Some(true)) => out.push((i, (**right).clone(), (**left).clone(), i)),
            _ => {}
        }
    }
    out
}

/// Joins `left` with the table `inner` (its own filters `own`, over its row) by index
/// nested loops when the join pins a key prefix of one of its indexes, else by a hash join
/// or nested loops.
fn join_with_table(left: Plan, inner: TableSource, own: Vec<Expr>, join: JoinSpec, usable: &[bool]) -> SqlResult<Plan> {
    // Facts about the inner table's columns: its own filters that compare a column with a
    // value independent of any row (`S_W_ID = @w`), numbered by filter, then the join's
    // equalities whose values come from the left row (`S_I_ID = OL_I_ID`), numbered
    // usize::MAX.
    let mut facts: Vec<Fact> = own
        .iter()
        .enumerate()
        .filter_map(|(i, f)| column_comparison(f).map(|(c, op, v)| (c, op, v.clone(), i)))
        .collect();
    for (_, l, r, _) in join_equalities(&join.on, join.left_width) {
        if let Expr::Column(rc) = r {
            facts.push((rc - join.left_width, BinaryOp::Eq, l, usize::MAX));
        }
    }
    // The index whose seek the join pins on the longest key prefix; the join must pin at
    // least one key column, or the seek would not depend on the left row.
    let mut best: Option<(usize, Seek)> = None;
    for (i, &ok) in usable.iter().enumerate() {
        if inner.table.indexes[i].is_heap() || !ok {
            continue;
        }
        let seek = seek_bounds(&inner.table, i, &facts);
        let joined = seek.used.contains(&usize::MAX);
        if joined && best.as_ref().is_none_or(|b| seek.prefix.len() > b.1.prefix.len()) {
            best = Some((i, seek));
        }
    }
    match best {
        Some((index, seek)) => {
            let right = seek_plan(inner, index, seek, own, None);
            let JoinSpec { kind, on, right_width, .. } = join;
            Ok(Plan::Apply { left: Box::new(left), right: Box::new(right), kind, on: conjoin(on), right_width })
        }
        None => hash_or_loop(left, access_path(inner, own, usable), join),
    }
}

/// A hash join on the join's equalities, or nested loops where there are none or the
/// query asks for loops. A hash or merge join asked for without an equality to join on
/// cannot be made (8622); a merge join is made as a hash join, whose rows are the same.
fn hash_or_loop(left: Plan, right: Plan, join: JoinSpec) -> SqlResult<Plan> {
    let JoinSpec { kind, on, left_width, right_width, hint } = join;
    let eqs = join_equalities(&on, left_width);
    let loops = eqs.is_empty() || kind == JoinKind::Cross || hint == Some(JoinHint::Loop);
    if loops && matches!(hint, Some(JoinHint::Hash | JoinHint::Merge)) {
        return Err(msg::QUERY_HINTS_CANNOT_BE_MET.err());
    }
    if loops {
        return Ok(Plan::NestedLoop {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            on: conjoin(on),
            left_width,
            right_width,
        });
    }
    let used: Vec<usize> = eqs.iter().map(|e| e.0).collect();
    let left_keys: Vec<Expr> = eqs.iter().map(|e| e.1.clone()).collect();
    let right_keys: Vec<Expr> = eqs.iter().map(|e| map_columns(&e.2, &|i| i - left_width)).collect();
    let residual: Vec<Expr> = on.into_iter().enumerate().filter(|(i, _)| !used.contains(i)).map(|(_, e)| e).collect();
    Ok(Plan::HashJoin {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        left_keys,
        right_keys,
        residual: conjoin(residual),
        left_width,
        right_width,
    })
}
