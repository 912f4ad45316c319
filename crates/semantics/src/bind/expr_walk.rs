//! Walks over bound expressions: renumbering their columns, the columns they read, splitting
//! and joining conjunctions.

use crate::plan::{Expr, Subquery, SubqueryKind};

/// Applies `f` to every column reference of an expression (not descending into
/// subqueries, whose plans address their own rows).
pub fn map_columns(e: &Expr, f: &dyn Fn(usize) -> usize) -> Expr {
    map_references(e, &|r| match r {
        Expr::Column(i) => Expr::Column(f(*i)),
        other => other.clone(),
    })
}

/// `e` as it reads when used `levels` query levels deeper than it was bound (a function's
/// argument substituted into its body): its outer references reach that much further.
pub fn deeper(e: &Expr, levels: usize) -> Expr {
    map_references(e, &|r| match r {
        Expr::OuterRef { depth, index } => Expr::OuterRef { depth: depth + levels, index: *index },
        other => other.clone(),
    })
}

/// Whether `e` reads an enclosing query's row (not looking into subqueries).
pub(super) fn reads_outer(e: &Expr) -> bool {
    let found = std::cell::Cell::new(false);
    map_references(e, &|r| {
        found.set(found.get() || matches!(r, Expr::OuterRef { .. }));
        r.clone()
    });
    found.get()
}

/// Applies `f` to every column and outer reference of an expression (not descending into
/// subqueries).
fn map_references(e: &Expr, f: &dyn Fn(&Expr) -> Expr) -> Expr {
    let map_columns = map_references;
    let m = |x: &Expr| Box::new(map_references(x, f));
    match e {
        Expr::Column(_) | Expr::OuterRef { .. } => f(e),
        Expr::Const(_) | Expr::Var(_) | Expr::NextValue { .. } => e.clone(),
        Expr::Cast { expr, from, to, style, try_, implicit } => {
            Expr::Cast { expr: m(expr), from: *from, to: *to, style: *style, try_: *try_, implicit: *implicit }
        }
        Expr::Unary { op, expr, ty } => Expr::Unary { op: *op, expr: m(expr), ty: *ty },
        Expr::Arith { op, left, right, ty } => Expr::Arith { op: *op, left: m(left), right: m(right), ty: *ty },
        Expr::Compare { op, left, right } => Expr::Compare { op: *op, left: m(left), right: m(right) },
        Expr::And(a, b) => Expr::And(m(a), m(b)),
        Expr::Or(a, b) => Expr::Or(m(a), m(b)),
        Expr::Not(a) => Expr::Not(m(a)),
        Expr::IsNull { expr, negated } => Expr::IsNull { expr: m(expr), negated: *negated },
        Expr::Like { expr, pattern, escape, negated } => {
            Expr::Like { expr: m(expr), pattern: m(pattern), escape: escape.as_ref().map(|x| m(x)), negated: *negated }
        }
        Expr::InList { expr, list, negated } => {
            Expr::InList { expr: m(expr), list: list.iter().map(|x| map_columns(x, f)).collect(), negated: *negated }
        }
        Expr::Case { branches, otherwise } => Expr::Case {
            branches: branches.iter().map(|(c, t)| (map_columns(c, f), map_columns(t, f))).collect(),
            otherwise: otherwise.as_ref().map(|x| m(x)),
        },
        Expr::Coalesce(args) => Expr::Coalesce(args.iter().map(|x| map_columns(x, f)).collect()),
        Expr::Func { name, args, arg_types, ty } => Expr::Func {
            name: name.clone(),
            args: args.iter().map(|x| map_columns(x, f)).collect(),
            arg_types: arg_types.clone(),
            ty: *ty,
        },
        Expr::Session { func, args } => {
            Expr::Session { func: func.clone(), args: args.iter().map(|x| map_columns(x, f)).collect() }
        }
        Expr::UserFunction { call, args } => {
            Expr::UserFunction { call: call.clone(), args: args.iter().map(|x| map_columns(x, f)).collect() }
        }
        Expr::Subquery(sq) => {
            let kind = match &sq.kind {
                SubqueryKind::In { expr, negated } => {
                    SubqueryKind::In { expr: map_columns(expr, f), negated: *negated }
                }
                SubqueryKind::Quantified { expr, op, all } => {
                    SubqueryKind::Quantified { expr: map_columns(expr, f), op: *op, all: *all }
                }
                k => k.clone(),
            };
            Expr::Subquery(Box::new(Subquery { plan: sq.plan.clone(), kind, correlated: sq.correlated }))
        }
    }
}

pub(super) fn split_conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_conjuncts(*a, out);
            split_conjuncts(*b, out);
        }
        e => out.push(e),
    }
}

pub(super) fn conjoin(mut conj: Vec<Expr>) -> Option<Expr> {
    let first = if conj.is_empty() { return None } else { conj.remove(0) };
    Some(conj.into_iter().fold(first, |a, b| Expr::And(Box::new(a), Box::new(b))))
}
