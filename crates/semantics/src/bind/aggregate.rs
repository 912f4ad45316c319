//! Aggregates: a grouped query's binding context, aggregate calls and their result types, and
//! the errors for columns neither grouped nor aggregated.

use super::conversion::convert;
use super::names::{qualified_name, Scope};
use super::Binder;
use crate::plan::{AggCall, AggFunc, Expr, SortKey, StringAgg};
use crate::types::{self, SqlType};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, ObjectName};

/// Post-aggregation binding: group expressions and aggregate calls become columns of the
/// Aggregate operator's output.
pub(super) struct AggContext {
    pub(super) group_asts: Vec<ast::Expr>,
    pub(super) group_types: Vec<SqlType>,
    pub(super) calls: Vec<AggCall>,
    /// Scope of the rows fed into the aggregate.
    pub(super) input: Scope,
    /// The clause being bound, for errors 8120/8121/8127.
    pub(super) clause: AggClause,
    /// GROUP BY has grouping sets (ROLLUP, CUBE, GROUPING SETS): GROUPING reads each row's
    /// grouping bits.
    pub(super) sets: bool,
}

/// Where a grouped query's grouping bits are while its select list is bound (renumbered
/// to the column after the aggregates once they are all known).
pub(super) const GROUPING_BITS: usize = 1 << 22;

#[derive(Clone, Copy, PartialEq)]
pub(super) enum AggClause {
    Select,
    Having,
    OrderBy,
}

/// A column neither grouped nor aggregated: error 8120, 8121 or 8127 by clause.
pub(super) fn not_grouped(clause: AggClause, column: &str) -> SqlError {
    let error = match clause {
        AggClause::Select => &msg::COLUMN_NOT_IN_GROUP_BY,
        AggClause::Having => &msg::HAVING_COLUMN_NOT_GROUPED,
        AggClause::OrderBy => &msg::ORDER_BY_COLUMN_NOT_GROUPED,
    };
    error.with(&[&column])
}

pub(super) fn agg_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "COUNT" => AggFunc::Count,
        "COUNT_BIG" => AggFunc::CountBig,
        "SUM" => AggFunc::Sum,
        "AVG" => AggFunc::Avg,
        "MIN" => AggFunc::Min,
        "MAX" => AggFunc::Max,
        "STRING_AGG" => AggFunc::StringAgg,
        _ => return None,
    })
}

impl<'a> Binder<'a> {
    /// `GROUPING(expr)` and `GROUPING_ID(expr, …)`: whether each GROUP BY expression named
    /// is aggregated in the row's grouping set (0 without grouping sets); 8161 for an
    /// argument GROUP BY does not name.
    pub(super) fn bind_grouping(&mut self, fname: &str, args: &[ast::Expr]) -> SqlResult<(Expr, SqlType, bool)> {
        // Without GROUP BY no argument names one of its expressions.
        let Some(agg) = &self.agg else { return Err(msg::GROUPING_ARGUMENT_NOT_GROUPED.with(&[&1, &fname])) };
        if args.is_empty() || (fname == "GROUPING" && args.len() != 1) {
            return Err(msg::WRONG_ARGUMENT_COUNT.with(&[&fname.to_lowercase(), &1]));
        }
        let n = agg.group_asts.len();
        let mut positions = Vec::with_capacity(args.len());
        for (k, a) in args.iter().enumerate() {
            match agg.group_asts.iter().position(|g| g == a) {
                Some(i) => positions.push(i),
                None => return Err(msg::GROUPING_ARGUMENT_NOT_GROUPED.with(&[&(k + 1), &fname])),
            }
        }
        let ty = if fname == "GROUPING" { SqlType::TinyInt } else { SqlType::Int };
        if !agg.sets {
            return Ok((Expr::Const(crate::types::Value::Int(0)), ty, false));
        }
        let int = SqlType::Int;
        let k = positions.len();
        let mut sum: Option<Expr> = None;
        for (j, i) in positions.into_iter().enumerate() {
            let bit = Expr::Func {
                name: "$BIT".into(),
                args: vec![Expr::Column(GROUPING_BITS), Expr::Const(crate::types::Value::Int((n - 1 - i) as i64))],
                arg_types: vec![int, int],
                ty: int,
            };
            let weight = Expr::Const(crate::types::Value::Int(1 << (k - 1 - j)));
            let term =
                Expr::Arith { op: ast::BinaryOp::Multiply, left: Box::new(bit), right: Box::new(weight), ty: int };
            sum = Some(match sum {
                None => term,
                Some(s) => Expr::Arith { op: ast::BinaryOp::Add, left: Box::new(s), right: Box::new(term), ty: int },
            });
        }
        let e = sum.expect("at least one argument");
        Ok((convert(e, &int, &ty)?, ty, false))
    }

    pub(super) fn bind_in_aggregate_input_error(&mut self, name: &ObjectName) -> SqlResult<(Expr, SqlType, bool)> {
        // A column in a grouped query that is neither grouped nor aggregated. Columns of
        // enclosing queries are still fine (outer references).
        let agg = self.agg.as_ref().expect("in aggregate context");
        if let Some(i) = Self::find_in_scope(&agg.input, name)? {
            return Err(not_grouped(agg.clause, &qualified_name(&agg.input.columns[i])));
        }
        self.resolve_column(name)
    }

    pub(super) fn bind_aggregate(
        &mut self,
        func: AggFunc,
        fname: &str,
        args: &[ast::Expr],
        distinct: bool,
        star: bool,
        within_group: &[ast::OrderItem],
    ) -> SqlResult<(Expr, SqlType, bool)> {
        if !within_group.is_empty() && func != AggFunc::StringAgg {
            return Err(msg::WITHIN_GROUP_NOT_ALLOWED.with(&[&fname.to_lowercase()]));
        }
        let Some(mut agg) = self.agg.take() else {
            return Err(msg::AGGREGATE_IN_WHERE.err());
        };
        // The argument is computed from the aggregate's input rows.
        let result = (|| -> SqlResult<AggCall> {
            if star {
                if func != AggFunc::Count && func != AggFunc::CountBig {
                    return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"*"]));
                }
                let ty = if func == AggFunc::Count { SqlType::Int } else { SqlType::BigInt };
                return Ok(AggCall { func, arg: None, arg_type: SqlType::Int, distinct: false, ty, string_agg: None });
            }
            if args.iter().any(|a| a.any(&|x| matches!(x, ast::Expr::Function { over: Some(_), .. }))) {
                return Err(msg::WINDOW_IN_WINDOW.err());
            }
            if args.iter().any(|a| contains_aggregate(a) || contains_subquery(a)) {
                return Err(msg::NESTED_AGGREGATE.err());
            }
            let wanted = if func == AggFunc::StringAgg { 2 } else { 1 };
            if args.len() != wanted {
                return Err(msg::WRONG_ARGUMENT_COUNT.with(&[&fname.to_lowercase(), &wanted]));
            }
            let (arg, arg_type) = self.with_scope(agg.input.clone(), |b| b.bind_expr(&args[0]))?;
            let ty = aggregate_type(func, &arg_type, fname)?;
            let string_agg = if func == AggFunc::StringAgg {
                self.with_scope(agg.input.clone(), |b| -> SqlResult<_> {
                    let (separator, st) = b.bind_expr(&args[1])?;
                    let separator = convert(separator, &st, &SqlType::NVarChar(tessera_types::MAX))?;
                    let mut order = Vec::with_capacity(within_group.len());
                    for o in within_group {
                        if matches!(o.expr, ast::Expr::Literal(ast::Literal::Integer(_))) {
                            return Err(msg::WINDOW_ORDER_BY_POSITION.err());
                        }
                        order.push(SortKey { expr: b.bind_expr(&o.expr)?.0, descending: o.descending });
                    }
                    Ok(Some(Box::new(StringAgg { separator, order })))
                })?
            } else {
                None
            };
            Ok(AggCall { func, arg: Some(arg), arg_type, distinct, ty, string_agg })
        })();
        let call = match result {
            Ok(c) => c,
            Err(e) => {
                self.agg = Some(agg);
                return Err(e);
            }
        };
        let ty = call.ty;
        let index = agg.group_asts.len() + agg.calls.len();
        agg.calls.push(call);
        self.agg = Some(agg);
        Ok((Expr::Column(index), ty, true))
    }
}

/// Whether an expression calls an aggregate (outside nested queries and windows).
pub fn contains_aggregate(e: &ast::Expr) -> bool {
    e.any(&|x| {
        matches!(x, ast::Expr::Function { name, over: None, .. } if agg_func(&name.name().value.to_uppercase()).is_some())
    })
}

/// Whether an expression contains a subquery (outside nested queries).
pub(super) fn contains_subquery(e: &ast::Expr) -> bool {
    use ast::Expr as E;
    e.any(&|x| matches!(x, E::Subquery(_) | E::Exists(_) | E::InSubquery { .. } | E::Quantified { .. }))
}

/// The type of `fname` (an aggregate) over an argument of type `arg_type`.
pub(super) fn aggregate_type(func: AggFunc, arg_type: &SqlType, fname: &str) -> SqlResult<SqlType> {
    Ok(match func {
        AggFunc::Count => SqlType::Int,
        AggFunc::CountBig => SqlType::BigInt,
        AggFunc::Min | AggFunc::Max if *arg_type == SqlType::Bit => {
            return Err(msg::INVALID_OPERAND_TYPE.with(&[&"bit", &fname.to_lowercase()]));
        }
        AggFunc::Min | AggFunc::Max => *arg_type,
        AggFunc::Sum | AggFunc::Avg => sum_type(func, arg_type, fname)?,
        // nvarchar(4000) or varchar(8000), or the (max) type of a (max) argument.
        AggFunc::StringAgg => match arg_type {
            SqlType::VarChar(n) | SqlType::Char(n) if *n != tessera_types::MAX => SqlType::VarChar(8000),
            SqlType::VarChar(_) => SqlType::VarChar(tessera_types::MAX),
            SqlType::NVarChar(n) if *n == tessera_types::MAX => SqlType::NVarChar(tessera_types::MAX),
            _ => SqlType::NVarChar(4000),
        },
    })
}

fn sum_type(func: AggFunc, t: &SqlType, fname: &str) -> SqlResult<SqlType> {
    use SqlType::*;
    Ok(match t {
        TinyInt | SmallInt | Int => Int,
        BigInt => BigInt,
        Decimal { scale, .. } => {
            if func == AggFunc::Avg {
                Decimal { precision: 38, scale: (*scale).max(6) }
            } else {
                Decimal { precision: 38, scale: *scale }
            }
        }
        Money | SmallMoney => Money,
        Real | Float => Float,
        _ => return Err(msg::INVALID_OPERAND_TYPE.with(&[&types::base_type_name(t), &fname.to_lowercase()])),
    })
}
