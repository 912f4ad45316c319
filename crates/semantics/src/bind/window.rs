//! Window functions: ROW_NUMBER, RANK, DENSE_RANK, NTILE, PERCENT_RANK, CUME_DIST, LAG,
//! LEAD, FIRST_VALUE, LAST_VALUE and every aggregate `OVER (PARTITION BY … ORDER BY …
//! [ROWS | RANGE …])`, in a select list or ORDER BY (4108 elsewhere).
//!
//! While a select list and its ORDER BY are bound, each call becomes a placeholder column
//! (`WINDOW_BASE + k`); then the calls with the same PARTITION BY and ORDER BY share one
//! `Plan::Window` over the query's rows (after grouping and HAVING), which appends their
//! columns, and the placeholders are renumbered to those columns.

use super::aggregate::{agg_func, aggregate_type, contains_aggregate};
use super::conversion::convert;
use super::expr_walk::map_columns;
use super::Binder;
use crate::plan::{AggCall, Expr, Plan, SortKey, WindowCall, WindowFunc};
use crate::types::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, FrameBound, WindowFrame};

/// Where placeholder columns start: far beyond any row's width.
const WINDOW_BASE: usize = 1 << 24;

/// The window calls of the select list and ORDER BY being bound, in order.
#[derive(Default)]
pub(super) struct WindowContext {
    calls: Vec<Pending>,
}

struct Pending {
    /// The `OVER` clause's PARTITION BY and ORDER BY as written (calls with the same ones
    /// share a window).
    spec: (Vec<ast::Expr>, Vec<ast::OrderItem>),
    partition: Vec<Expr>,
    order: Vec<SortKey>,
    call: WindowCall,
}

/// The frame an aggregate gets without one: with ORDER BY, the partition's rows up to the
/// current row's last peer; without, the whole partition.
const DEFAULT_FRAME: WindowFrame =
    WindowFrame { rows: false, start: FrameBound::UnboundedPreceding, end: FrameBound::CurrentRow };

/// Functions that rank or offset rows: they need ORDER BY, and take no frame.
fn ranking(name: &str) -> Option<WindowFunc> {
    Some(match name {
        "ROW_NUMBER" => WindowFunc::RowNumber,
        "RANK" => WindowFunc::Rank,
        "DENSE_RANK" => WindowFunc::DenseRank,
        "NTILE" => WindowFunc::Ntile,
        "PERCENT_RANK" => WindowFunc::PercentRank,
        "CUME_DIST" => WindowFunc::CumeDist,
        "LAG" => WindowFunc::Lag,
        "LEAD" => WindowFunc::Lead,
        _ => return None,
    })
}

/// Whether `name` is a function that only exists with OVER (10753 without it).
pub(super) fn needs_over(name: &str) -> bool {
    ranking(name).is_some() || matches!(name, "FIRST_VALUE" | "LAST_VALUE")
}

impl Binder<'_> {
    /// A call `fname(args) OVER (w)` in a select list or ORDER BY: its placeholder column.
    pub(super) fn bind_window_call(
        &mut self,
        fname: &str,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
        w: &ast::Window,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let Some(mut context) = self.windows.take() else {
            return Err(msg::WINDOW_FUNCTION_MISPLACED.err());
        };
        let bound = self.bind_window_parts(fname, args, distinct, star, w);
        let k = context.calls.len();
        let result = bound.map(|pending| {
            let ty = pending.call.ty;
            context.calls.push(pending);
            (Expr::Column(WINDOW_BASE + k), ty, true)
        });
        self.windows = Some(context);
        result
    }

    fn bind_window_parts(
        &mut self,
        fname: &str,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
        w: &ast::Window,
    ) -> SqlResult<Pending> {
        let nested = args.iter().chain(&w.partition_by).chain(w.order_by.iter().map(|o| &o.expr));
        if nested.clone().any(|e| e.any(&|x| matches!(x, ast::Expr::Function { over: Some(_), .. }))) {
            return Err(msg::WINDOW_IN_WINDOW.err());
        }
        if distinct {
            return Err(msg::DISTINCT_WITH_OVER.err());
        }
        if w.order_by.iter().any(|o| matches!(o.expr, ast::Expr::Literal(ast::Literal::Integer(_)))) {
            return Err(msg::WINDOW_ORDER_BY_POSITION.err());
        }
        let mut partition = Vec::with_capacity(w.partition_by.len());
        for e in &w.partition_by {
            partition.push(self.bind_expr(e)?.0);
        }
        let mut order = Vec::with_capacity(w.order_by.len());
        for o in &w.order_by {
            order.push(SortKey { expr: self.bind_expr(&o.expr)?.0, descending: o.descending });
        }
        let arity = |n: std::ops::RangeInclusive<usize>| {
            if n.contains(&args.len()) {
                Ok(())
            } else {
                Err(msg::WRONG_ARGUMENT_COUNT.with(&[&fname.to_lowercase(), n.start()]))
            }
        };
        let (func, args, ty) = if fname == "$NEXT_VALUE_FOR" {
            let [ast::Expr::Column(name)] = args else { return Err(msg::WINDOW_FUNCTION_MISPLACED.err()) };
            if w.order_by.is_empty() {
                return Err(msg::WINDOW_NEEDS_ORDER_BY.with(&[&"NEXT VALUE FOR"]));
            }
            if w.frame.is_some() {
                return Err(msg::WINDOW_FRAME_NOT_ALLOWED.with(&[&"next value for"]));
            }
            let (db, sequence) = self.sequence(name)?;
            let ty = sequence.ty;
            (WindowFunc::NextValue { db, sequence }, Vec::new(), ty)
        } else if let Some(func) = ranking(fname) {
            if w.order_by.is_empty() {
                return Err(msg::WINDOW_NEEDS_ORDER_BY.with(&[&fname]));
            }
            if w.frame.is_some() {
                return Err(msg::WINDOW_FRAME_NOT_ALLOWED.with(&[&fname.to_lowercase()]));
            }
            match func {
                WindowFunc::Ntile => {
                    arity(1..=1)?;
                    let (e, t) = self.bind_expr(&args[0])?;
                    (func, vec![convert(e, &t, &SqlType::BigInt)?], SqlType::BigInt)
                }
                WindowFunc::Lag | WindowFunc::Lead => {
                    arity(1..=3)?;
                    let (value, ty) = self.bind_expr(&args[0])?;
                    let offset = match args.get(1) {
                        Some(e) => {
                            let (e, t) = self.bind_expr(e)?;
                            convert(e, &t, &SqlType::BigInt)?
                        }
                        None => Expr::Const(Value::Int(1)),
                    };
                    let default = match args.get(2) {
                        Some(e) => {
                            let (e, t) = self.bind_expr(e)?;
                            convert(e, &t, &ty)?
                        }
                        None => Expr::Const(Value::Null),
                    };
                    (func, vec![value, offset, default], ty)
                }
                WindowFunc::PercentRank | WindowFunc::CumeDist => {
                    arity(0..=0)?;
                    (func, Vec::new(), SqlType::Float)
                }
                _ => {
                    arity(0..=0)?;
                    (func, Vec::new(), SqlType::BigInt)
                }
            }
        } else if matches!(fname, "FIRST_VALUE" | "LAST_VALUE") {
            arity(1..=1)?;
            let (value, ty) = self.bind_expr(&args[0])?;
            let func = if fname == "FIRST_VALUE" { WindowFunc::FirstValue } else { WindowFunc::LastValue };
            (func, vec![value], ty)
        } else if let Some(agg) = agg_func(fname).filter(|&a| a != crate::plan::AggFunc::StringAgg) {
            let call = if star {
                if !matches!(agg, crate::plan::AggFunc::Count | crate::plan::AggFunc::CountBig) {
                    return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"*"]));
                }
                let ty = aggregate_type(agg, &SqlType::Int, fname)?;
                AggCall { func: agg, arg: None, arg_type: SqlType::Int, distinct: false, ty, string_agg: None }
            } else {
                arity(1..=1)?;
                if self.agg.is_none() && contains_aggregate(&args[0]) {
                    return Err(msg::NESTED_AGGREGATE.err());
                }
                let (arg, arg_type) = self.bind_expr(&args[0])?;
                let ty = aggregate_type(agg, &arg_type, fname)?;
                AggCall { func: agg, arg: Some(arg.clone()), arg_type, distinct: false, ty, string_agg: None }
            };
            let ty = call.ty;
            let args = call.arg.iter().cloned().collect();
            (WindowFunc::Aggregate(call), args, ty)
        } else {
            return Err(msg::NOT_A_WINDOW_FUNCTION.with(&[&fname.to_lowercase()]));
        };
        let frame = match w.frame {
            Some(frame) => {
                if w.order_by.is_empty() {
                    return Err(msg::WINDOW_FRAME_NEEDS_ORDER_BY.err());
                }
                check_frame(frame)?;
                frame
            }
            None if w.order_by.is_empty() => {
                WindowFrame { rows: false, start: FrameBound::UnboundedPreceding, end: FrameBound::UnboundedFollowing }
            }
            None => DEFAULT_FRAME,
        };
        Ok(Pending {
            spec: (w.partition_by.clone(), w.order_by.clone()),
            partition,
            order,
            call: WindowCall { func, args, frame, ty },
        })
    }

    /// At the end of a select list and its ORDER BY: `input` (of `width` columns) under one
    /// Window per distinct OVER clause met, and `exprs` (over the input row and the
    /// placeholders) renumbered to its columns.
    pub(super) fn close_windows(&mut self, input: Plan, width: usize, exprs: &mut [Expr]) -> Plan {
        let context = self.windows.take().unwrap_or_default();
        if context.calls.is_empty() {
            return input;
        }
        // Group the calls by their OVER clause, first use first; each group's columns follow
        // the previous group's.
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (k, p) in context.calls.iter().enumerate() {
            match groups.iter_mut().find(|(first, _)| context.calls[*first].spec == p.spec) {
                Some((_, members)) => members.push(k),
                None => groups.push((k, vec![k])),
            }
        }
        let mut column = vec![0; context.calls.len()];
        let mut next = width;
        let mut plan = input;
        for (first, members) in &groups {
            let head = &context.calls[*first];
            let mut calls = Vec::with_capacity(members.len());
            for &k in members {
                column[k] = next;
                next += 1;
                calls.push(context.calls[k].call.clone());
            }
            let presorted = presorted(&plan.output_order(), &head.partition, &head.order);
            plan = Plan::Window {
                input: Box::new(plan),
                partition: head.partition.clone(),
                order: head.order.clone(),
                calls,
                presorted,
            };
        }
        let renumber = |i: usize| if i >= WINDOW_BASE { column[i - WINDOW_BASE] } else { i };
        for e in exprs.iter_mut() {
            *e = map_columns(e, &renumber);
        }
        plan
    }
}

/// A frame SQL Server accepts: RANGE only with UNBOUNDED and CURRENT ROW bounds, and a start
/// that is not after its end.
fn check_frame(frame: WindowFrame) -> SqlResult<()> {
    let rank = |b: FrameBound| match b {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(_) => 1,
        FrameBound::CurrentRow => 2,
        FrameBound::Following(_) => 3,
        FrameBound::UnboundedFollowing => 4,
    };
    let offset = |b: FrameBound| matches!(b, FrameBound::Preceding(_) | FrameBound::Following(_));
    if !frame.rows && (offset(frame.start) || offset(frame.end)) {
        return Err(msg::RANGE_FRAME_OFFSET.err());
    }
    if frame.start == FrameBound::UnboundedFollowing || frame.end == FrameBound::UnboundedPreceding {
        return Err(msg::WINDOW_FRAME_INVALID.err());
    }
    let out_of_order = match (frame.start, frame.end) {
        (FrameBound::Preceding(a), FrameBound::Preceding(b)) => a < b,
        (FrameBound::Following(a), FrameBound::Following(b)) => a > b,
        (s, e) => rank(s) > rank(e),
    };
    if out_of_order {
        return Err(msg::WINDOW_FRAME_INVALID.err());
    }
    Ok(())
}

/// Whether rows in `input` order (columns, descending) come grouped by `partition` and,
/// within a partition, in `order`: the input's order starts with the partition's columns,
/// in any order and either direction, then the ORDER BY's columns and directions.
fn presorted(input: &[(usize, bool)], partition: &[Expr], order: &[SortKey]) -> bool {
    let mut wanted = Vec::with_capacity(partition.len());
    for e in partition {
        match e {
            Expr::Column(c) if !wanted.contains(c) => wanted.push(*c),
            _ => return false,
        }
    }
    if input.len() < wanted.len() + order.len() {
        return false;
    }
    let (head, rest) = input.split_at(wanted.len());
    let grouped = head.iter().all(|(c, _)| wanted.contains(c));
    grouped
        && order
            .iter()
            .zip(rest)
            .all(|(k, &(c, descending))| matches!(k.expr, Expr::Column(e) if e == c) && k.descending == descending)
}
