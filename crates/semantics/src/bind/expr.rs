//! Expression binding: literals, names, operators, CASE, CAST/CONVERT and subqueries, with
//! the implicit conversions their operands need.

use super::conversion::{
    convert, decimal_literal, integer_literal, is_null_literal, literal, narrow_int_literal, project_cast, unify,
};
use super::deduce::Rule;
use super::functions::global_variable;
use super::names::Scope;
use super::query::check_nested_order_by;
use super::Binder;
use crate::plan::{BoundQuery, Expr, SessionFn, Subquery, SubqueryKind};
use crate::types::{self, SqlType, Value};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{self, BinaryOp, Literal, UnaryOp};

impl<'a> Binder<'a> {
    /// Binds a condition: it must be a predicate (error 4145 otherwise).
    pub fn bind_predicate(&mut self, e: &ast::Expr) -> SqlResult<Expr> {
        let (b, _) = self.bind_expr(e)?;
        if !is_predicate(&b) {
            return Err(msg::NON_BOOLEAN_CONDITION.with(&[&near_text(e)]));
        }
        Ok(b)
    }

    pub fn bind_expr(&mut self, e: &ast::Expr) -> SqlResult<(Expr, SqlType)> {
        self.bind_expr_n(e).map(|(e, t, _)| (e, t))
    }

    /// Binds an expression; returns it with its type and nullability.
    pub fn bind_expr_n(&mut self, e: &ast::Expr) -> SqlResult<(Expr, SqlType, bool)> {
        if let Some(agg) = &self.agg {
            if let Some(i) = agg.group_asts.iter().position(|g| g == e) {
                return Ok((Expr::Column(i), agg.group_types[i], true));
            }
        }
        Ok(match e {
            ast::Expr::Literal(l) => {
                let (v, t) = literal(l)?;
                let null = v.is_null();
                (Expr::Const(v), t, null)
            }
            ast::Expr::Column(name) => {
                if self.agg.is_some() {
                    return self.bind_in_aggregate_input_error(name);
                }
                self.resolve_column(name)?
            }
            ast::Expr::NextValueFor(name) => {
                let (db, sequence) = self.sequence(name)?;
                let ty = sequence.ty;
                (Expr::NextValue { db, sequence }, ty, false)
            }
            ast::Expr::Variable(name) => {
                let lower = name.to_lowercase();
                if let Some((e, t, _)) = self.substitutions.iter().find(|(_, _, n)| *n == lower) {
                    let levels = self.scopes.len().saturating_sub(self.substitution_depth);
                    let e = super::expr_walk::deeper(e, levels);
                    if super::expr_walk::reads_outer(&e) {
                        // It reads an enclosing row (an APPLY's left row): every query from
                        // the function's body in is correlated.
                        let from = self.substitution_depth.saturating_sub(1);
                        for s in &mut self.scopes[from..] {
                            s.correlated = true;
                        }
                    }
                    return Ok((e, *t, true));
                }
                if let Some(deduced) = self.deduced_as(name) {
                    let (e, t) = self.note_deduced(name, deduced, false, None);
                    return Ok((e, t, true));
                }
                let (slot, ty) = self.variable(name).map_err(|_| self.undeclared_error(name))?;
                (Expr::Var(slot), ty, true)
            }
            ast::Expr::GlobalVariable(name) => {
                let (func, ty) = global_variable(name).ok_or_else(|| msg::UNDECLARED_VARIABLE.with(&[&name]))?;
                (Expr::Session { func, args: Vec::new() }, ty, true)
            }
            ast::Expr::Default => return Err(msg::SYNTAX_ERROR_NEAR_KEYWORD.with(&[&"DEFAULT"])),
            ast::Expr::Nested(inner) => return self.bind_expr_n(inner),
            ast::Expr::Collate { expr, .. } => return self.bind_expr_n(expr),
            ast::Expr::Unary { op, expr } => self.bind_unary(*op, expr)?,
            ast::Expr::Binary { op, left, right } => self.bind_binary(*op, left, right)?,
            ast::Expr::IsNull { expr, negated } => {
                let (x, _) = self.bind_expr(expr)?;
                (Expr::IsNull { expr: Box::new(x), negated: *negated }, SqlType::Bit, false)
            }
            ast::Expr::Between { expr, negated, low, high } => {
                let ge = ast::Expr::Binary { op: BinaryOp::GtEq, left: expr.clone(), right: low.clone() };
                let le = ast::Expr::Binary { op: BinaryOp::LtEq, left: expr.clone(), right: high.clone() };
                let (a, _) = self.bind_expr(&ge)?;
                let (b, _) = self.bind_expr(&le)?;
                let both = Expr::And(Box::new(a), Box::new(b));
                (if *negated { Expr::Not(Box::new(both)) } else { both }, SqlType::Bit, true)
            }
            ast::Expr::Like { expr, negated, pattern, escape } => {
                let text = |e: Expr, t: SqlType| -> SqlResult<Expr> {
                    let to = if matches!(t, SqlType::NChar(_) | SqlType::NVarChar(_)) {
                        SqlType::NVarChar(tessera_types::MAX)
                    } else {
                        SqlType::VarChar(tessera_types::MAX)
                    };
                    convert(e, &t, &to)
                };
                let ((x, xt, _), (p, pt, _)) = self.bind_operands(expr, pattern, Rule::Nearest)?;
                let x = text(x, xt)?;
                let p = text(p, pt)?;
                let esc = match escape {
                    Some(e) => {
                        let (e, t) = self.bind_expr(e)?;
                        Some(Box::new(text(e, t)?))
                    }
                    None => None,
                };
                (
                    Expr::Like { expr: Box::new(x), pattern: Box::new(p), escape: esc, negated: *negated },
                    SqlType::Bit,
                    true,
                )
            }
            ast::Expr::InList { expr, negated, list } => {
                let (x, xt) = self.bind_expr(expr)?;
                let mut items = Vec::with_capacity(list.len());
                let mut t = xt;
                for i in list {
                    let (b, bt) = self.bind_for(i, &xt)?;
                    if !is_null_literal(&b) {
                        t = types::common_type(&t, &bt)?;
                    }
                    items.push((b, bt));
                }
                let x = convert(x, &xt, &t)?;
                let items = items.into_iter().map(|(b, bt)| convert(b, &bt, &t)).collect::<SqlResult<Vec<_>>>()?;
                (Expr::InList { expr: Box::new(x), list: items, negated: *negated }, SqlType::Bit, true)
            }
            ast::Expr::InSubquery { expr, negated, query } => {
                let (x, xt) = self.bind_expr(expr)?;
                let (sub, correlated) = self.bind_subquery(query)?;
                let st = sub.columns[0].ty;
                let t = types::common_type(&xt, &st)?;
                let plan = project_cast(sub, &t)?;
                let kind = SubqueryKind::In { expr: convert(x, &xt, &t)?, negated: *negated };
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(plan), kind, correlated })), SqlType::Bit, true)
            }
            ast::Expr::Quantified { op, all, left, query } => {
                let (x, xt) = self.bind_expr(left)?;
                let (sub, correlated) = self.bind_subquery(query)?;
                let t = types::common_type(&xt, &sub.columns[0].ty)?;
                let plan = project_cast(sub, &t)?;
                let kind = SubqueryKind::Quantified { expr: convert(x, &xt, &t)?, op: *op, all: *all };
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(plan), kind, correlated })), SqlType::Bit, true)
            }
            ast::Expr::Exists(query) => {
                let (sub, correlated) = self.bind_subquery_any(query)?;
                let kind = SubqueryKind::Exists { negated: false };
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(sub.plan), kind, correlated })), SqlType::Bit, false)
            }
            ast::Expr::Subquery(query) => {
                let (sub, correlated) = self.bind_subquery(query)?;
                let ty = sub.columns[0].ty;
                let kind = SubqueryKind::Scalar;
                (Expr::Subquery(Box::new(Subquery { plan: Arc::new(sub.plan), kind, correlated })), ty, true)
            }
            ast::Expr::Case { operand, branches, otherwise } => {
                self.bind_case(operand.as_deref(), branches, otherwise.as_deref())?
            }
            ast::Expr::Cast { expr, ty, try_ } => self.bind_cast(expr, ty, None, *try_)?,
            ast::Expr::Convert { ty, expr, style, try_ } => self.bind_cast(expr, ty, style.as_deref(), *try_)?,
            ast::Expr::Function { name, args, distinct, star, over, within_group } => {
                self.bind_function(name, args, *distinct, *star, over.as_deref(), within_group)?
            }
        })
    }

    fn bind_unary(&mut self, op: UnaryOp, expr: &ast::Expr) -> SqlResult<(Expr, SqlType, bool)> {
        if op == UnaryOp::Minus {
            match expr {
                ast::Expr::Literal(Literal::Integer(t)) => {
                    let (v, ty) = integer_literal(&format!("-{t}"))?;
                    return Ok((Expr::Const(v), ty, false));
                }
                ast::Expr::Literal(Literal::Decimal(t)) => {
                    let (v, ty) = decimal_literal(t)?;
                    return Ok((Expr::Const(types::negate(&v, &ty)?), ty, false));
                }
                _ => {}
            }
        }
        if op == UnaryOp::Not {
            let x = self.bind_predicate(expr)?;
            return Ok((Expr::Not(Box::new(x)), SqlType::Bit, true));
        }
        let (x, t, n) = self.bind_expr_n(expr)?;
        if let Expr::Const(v) = &x {
            let v = match op {
                UnaryOp::Minus => types::negate(v, &t)?,
                UnaryOp::BitNot => types::bit_not(v, &t)?,
                _ => v.clone(),
            };
            return Ok((Expr::Const(v), t, n));
        }
        Ok((Expr::Unary { op, expr: Box::new(x), ty: t }, t, n))
    }

    fn bind_binary(&mut self, op: BinaryOp, left: &ast::Expr, right: &ast::Expr) -> SqlResult<(Expr, SqlType, bool)> {
        match op {
            BinaryOp::And | BinaryOp::Or => {
                let l = self.bind_predicate(left)?;
                let r = self.bind_predicate(right)?;
                let e = if op == BinaryOp::And {
                    Expr::And(Box::new(l), Box::new(r))
                } else {
                    Expr::Or(Box::new(l), Box::new(r))
                };
                Ok((e, SqlType::Bit, true))
            }
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq
            | BinaryOp::NotLt
            | BinaryOp::NotGt => {
                let rule = if matches!(op, BinaryOp::Eq | BinaryOp::NotEq) { Rule::Same } else { Rule::Nearest };
                let ((l, lt, _), (r, rt, _)) = self.bind_operands(left, right, rule)?;
                // SET ANSI_NULLS OFF: `x = NULL` is true when x is NULL.
                if !self.session.ansi_nulls() && matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
                    let other = match (is_null_literal(&l), is_null_literal(&r)) {
                        (true, _) => Some(r.clone()),
                        (_, true) => Some(l.clone()),
                        _ => None,
                    };
                    if let Some(x) = other {
                        return Ok((
                            Expr::IsNull { expr: Box::new(x), negated: op == BinaryOp::NotEq },
                            SqlType::Bit,
                            false,
                        ));
                    }
                }
                let t = if is_null_literal(&l) {
                    rt
                } else if is_null_literal(&r) {
                    lt
                } else {
                    types::common_type(&lt, &rt)?
                };
                let l = convert(l, &lt, &t)?;
                let r = convert(r, &rt, &t)?;
                Ok((Expr::Compare { op, left: Box::new(l), right: Box::new(r) }, SqlType::Bit, true))
            }
            _ => {
                let ((l, lt, ln), (r, rt, rn)) = self.bind_operands(left, right, Rule::Nearest)?;
                let lt = if is_null_literal(&l) { rt } else { lt };
                let rt = if is_null_literal(&r) { lt } else { rt };
                let (l, lt) = narrow_int_literal(l, lt, &rt, left);
                let (r, rt) = narrow_int_literal(r, rt, &lt, right);
                let plan = types::arithmetic_plan(op, &lt, &rt)?;
                let ty = plan.result;
                let mut l = convert(l, &lt, &plan.left)?;
                let mut r = convert(r, &rt, &plan.right)?;
                // SET CONCAT_NULL_YIELDS_NULL OFF: NULL concatenates as ''.
                let text =
                    matches!(ty, SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_));
                if op == BinaryOp::Add && text && !self.session.concat_null_yields_null() {
                    l = Expr::Coalesce(vec![l, Expr::Const(Value::str(""))]);
                    r = Expr::Coalesce(vec![r, Expr::Const(Value::str(""))]);
                }
                if let (Expr::Const(a), Expr::Const(b)) = (&l, &r) {
                    // Constant folding: errors surface when the statement runs, not here.
                    if let Ok(v) = types::binary_op(op, a, b, &ty) {
                        return Ok((Expr::Const(v), ty, ln || rn));
                    }
                }
                Ok((Expr::Arith { op, left: Box::new(l), right: Box::new(r), ty }, ty, ln || rn))
            }
        }
    }

    fn bind_case(
        &mut self,
        operand: Option<&ast::Expr>,
        branches: &[(ast::Expr, ast::Expr)],
        otherwise: Option<&ast::Expr>,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        // The NULL constant alone gives CASE no type (a missing ELSE is one too).
        let null = |e: &ast::Expr| matches!(e, ast::Expr::Literal(ast::Literal::Null));
        if branches.iter().all(|(_, then)| null(then)) && otherwise.is_none_or(null) {
            return Err(msg::CASE_ALL_NULL.err());
        }
        let mut conds = Vec::with_capacity(branches.len());
        let mut results = Vec::with_capacity(branches.len() + 1);
        for (when, then) in branches {
            let cond = match operand {
                Some(op) => {
                    let eq = ast::Expr::Binary {
                        op: BinaryOp::Eq,
                        left: Box::new(op.clone()),
                        right: Box::new(when.clone()),
                    };
                    self.bind_expr(&eq)?.0
                }
                None => self.bind_predicate(when)?,
            };
            conds.push(cond);
            results.push(self.bind_expr(then)?);
        }
        let other = match otherwise {
            Some(o) => Some(self.bind_expr(o)?),
            None => None,
        };
        let ty = unify(results.iter().chain(other.iter()))?;
        let mut out = Vec::with_capacity(conds.len());
        for (c, (r, rt)) in conds.into_iter().zip(results) {
            out.push((c, convert(r, &rt, &ty)?));
        }
        let other = match other {
            Some((o, ot)) => Some(Box::new(convert(o, &ot, &ty)?)),
            None => None,
        };
        Ok((Expr::Case { branches: out, otherwise: other }, ty, true))
    }

    fn bind_cast(
        &mut self,
        expr: &ast::Expr,
        ty: &ast::TypeName,
        style: Option<&ast::Expr>,
        try_: bool,
    ) -> SqlResult<(Expr, SqlType, bool)> {
        let to = types::resolve_type(ty, true)?;
        let (x, from, n) = match self.undeclared(expr) {
            Some(p) => {
                let (x, from) = self.note_deduced(p, to, false, None);
                (x, from, true)
            }
            None => self.bind_expr_n(expr)?,
        };
        let style = match style {
            None => None,
            Some(s) => match self.bind_expr(s)? {
                (Expr::Const(Value::Int(v)), _) => Some(v as i32),
                (_, t) => return Err(msg::INVALID_ARGUMENT_TYPE.with(&[&types::base_type_name(&t), &3, &"convert"])),
            },
        };
        // a conversion the chart forbids is a compile error, even in TRY_CAST (NULL converts)
        if !is_null_literal(&x) {
            types::check_explicit(&from, &to)?;
        }
        if let Expr::Const(v) = &x {
            if let Ok(c) = types::cast(v, &from, &to, style) {
                return Ok((Expr::Const(c), to, n));
            }
        }
        Ok((Expr::Cast { expr: Box::new(x), from, to, style, try_, implicit: false }, to, n || try_))
    }

    fn bind_subquery_any(&mut self, query: &ast::Query) -> SqlResult<(BoundQuery, bool)> {
        check_nested_order_by(query)?;
        self.scopes.push(Scope::default());
        let saved_agg = self.agg.take();
        let saved_ctes = self.ctes.len();
        let bound = self.bind_query(query);
        self.ctes.truncate(saved_ctes);
        self.agg = saved_agg;
        let scope = self.scopes.pop().expect("pushed above");
        Ok((bound?, scope.correlated))
    }

    fn bind_subquery(&mut self, query: &ast::Query) -> SqlResult<(BoundQuery, bool)> {
        let (b, c) = self.bind_subquery_any(query)?;
        if b.columns.len() != 1 {
            return Err(msg::SUBQUERY_MULTIPLE_COLUMNS.err());
        }
        Ok((b, c))
    }
}

fn is_predicate(e: &Expr) -> bool {
    match e {
        Expr::Compare { .. }
        | Expr::And(..)
        | Expr::Or(..)
        | Expr::Not(_)
        | Expr::IsNull { .. }
        | Expr::Like { .. }
        | Expr::InList { .. } => true,
        Expr::Subquery(sq) => !matches!(sq.kind, SubqueryKind::Scalar),
        Expr::Const(Value::Bit(_)) => true,
        // `UPDATE(col)` in a trigger.
        Expr::Session { func: SessionFn::ColumnUpdated, .. } => true,
        _ => false,
    }
}

fn near_text(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Column(n) => n.name().value.clone(),
        ast::Expr::Literal(Literal::Integer(t)) => t.clone(),
        _ => String::new(),
    }
}
