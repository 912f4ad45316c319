//! Deducing the types of undeclared parameters, for `sp_describe_undeclared_parameters`.
//!
//! A binder made [`Binder::deducing`] takes a variable that is neither declared nor an
//! inline function's parameter for an undeclared parameter, where it would otherwise be
//! 137. Where such a parameter is directly an operand whose type its context fixes, it
//! takes that type (SQL Server's "simple deduction"): the other side of `=` or `<>` (and
//! of `IN`), of an assignment, the column a VALUES item or a SET goes to, the type of CAST
//! or CONVERT, the parameter of the function or procedure it is passed to (with that
//! parameter's name), bigint for TOP, OFFSET and FETCH, the column a select item of
//! INSERT … SELECT goes to. Where SQL Server's "general
//! deduction" chooses among its candidate types (the other operand of `<`, `>`, `<=`,
//! `>=`, LIKE and arithmetic), the candidate nearest the other operand's type is taken —
//! the one a conversion to which only changes its length: varchar(8000), nvarchar(4000),
//! varbinary(8000), numeric(38,19), time(7), datetime2(7), datetimeoffset(7), the type
//! itself for the others (the docs' own examples: `c > @p` for a char(30) column is
//! varchar(8000), `Col_Int + @p` is int). Two undeclared parameters as the operands of one
//! operator are 11503; one anywhere else is 11502. A deducing binder's plans are never run:
//! a parameter is bound as a NULL cast to its type (not a constant, which clauses such as
//! OFFSET would check).

use super::Binder;
use crate::plan::Expr;
use crate::types::{SqlType, Value};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast;

/// What was deduced for one undeclared parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Deduced {
    /// As first written, with its `@`.
    pub name: String,
    pub ty: SqlType,
    /// Assigned to (`SELECT @p = …`, `SET @p = …`, an OUTPUT argument) rather than read.
    pub output: bool,
    /// The parameter of the function or procedure it is passed to.
    pub formal: Option<String>,
}

/// A bound operand: expression, type, nullability.
pub(super) type Operand = (Expr, SqlType, bool);

/// How an operand that is an undeclared parameter takes its type from the other operand.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Rule {
    /// The other operand's type (`=`, `<>`, IN).
    Same,
    /// The candidate type nearest it (`<`, `>`, LIKE, arithmetic).
    Nearest,
}

impl Rule {
    fn apply(self, other: &SqlType) -> SqlType {
        match self {
            Rule::Same => *other,
            Rule::Nearest => nearest_candidate(other),
        }
    }
}

/// The type among general deduction's candidates that `t` converts to with at most a
/// change of length (or fixed to variable length).
fn nearest_candidate(t: &SqlType) -> SqlType {
    use SqlType::*;
    match *t {
        Char(_) | VarChar(_) => VarChar(8000),
        NChar(_) | NVarChar(_) => NVarChar(4000),
        Binary(_) | VarBinary(_) => VarBinary(8000),
        Decimal { .. } => Decimal { precision: 38, scale: 19 },
        Time { .. } => Time { scale: 7 },
        DateTime2 { .. } => DateTime2 { scale: 7 },
        DateTimeOffset { .. } => DateTimeOffset { scale: 7 },
        other => other,
    }
}

impl<'a> Binder<'a> {
    /// This binder deduces the types of undeclared parameters (see the module's comment).
    pub fn deducing(mut self) -> Binder<'a> {
        self.deduced = Some(Vec::new());
        self
    }

    /// What has been deduced so far, in the order the parameters were met.
    pub fn take_deduced(&mut self) -> Vec<Deduced> {
        self.deduced.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The name of the undeclared parameter `e` is, while deducing.
    pub fn undeclared<'e>(&self, e: &'e ast::Expr) -> Option<&'e str> {
        self.deduced.as_ref()?;
        match e {
            ast::Expr::Nested(inner) => self.undeclared(inner),
            ast::Expr::Variable(name) => {
                let lower = name.to_lowercase();
                let known = self.variable(name).is_ok() || self.substitutions.iter().any(|(_, _, n)| *n == lower);
                (!known).then_some(name.as_str())
            }
            _ => None,
        }
    }

    /// Records that the undeclared parameter `name` is of type `ty` (the first deduction
    /// of a name stands) and binds it as a NULL of that type.
    pub fn note_deduced(&mut self, name: &str, ty: SqlType, output: bool, formal: Option<&str>) -> (Expr, SqlType) {
        if let Some(found) = self.deduced.as_mut() {
            if !found.iter().any(|d| d.name.eq_ignore_ascii_case(name)) {
                found.push(Deduced { name: name.to_string(), ty, output, formal: formal.map(str::to_string) });
            }
        }
        let placeholder = Expr::Cast {
            expr: Box::new(Expr::Const(Value::Null)),
            from: ty,
            to: ty,
            style: None,
            try_: false,
            implicit: true,
        };
        (placeholder, ty)
    }

    /// The type already deduced for the undeclared parameter `name`, while deducing.
    pub(super) fn deduced_as(&self, name: &str) -> Option<SqlType> {
        self.deduced.as_ref()?.iter().find(|d| d.name.eq_ignore_ascii_case(name)).map(|d| d.ty)
    }

    /// Binds `e`, whose value goes to something of type `target`: an undeclared parameter
    /// there takes that type.
    pub fn bind_for(&mut self, e: &ast::Expr, target: &SqlType) -> SqlResult<(Expr, SqlType)> {
        self.bind_passed(e, target, None)
    }

    /// Binds `e`, whose value goes to something of type `target` (the parameter `formal`
    /// of a function, if it has that name): an undeclared parameter there takes that type.
    pub(super) fn bind_passed(
        &mut self,
        e: &ast::Expr,
        target: &SqlType,
        formal: Option<&str>,
    ) -> SqlResult<(Expr, SqlType)> {
        match self.undeclared(e) {
            Some(name) => Ok(self.note_deduced(name, *target, false, formal)),
            None => self.bind_expr(e),
        }
    }

    /// Binds the two operands of an operator; an operand that is an undeclared parameter
    /// takes its type from the other by `rule`, and two of them are 11503.
    pub(super) fn bind_operands(
        &mut self,
        left: &ast::Expr,
        right: &ast::Expr,
        rule: Rule,
    ) -> SqlResult<(Operand, Operand)> {
        match (self.undeclared(left), self.undeclared(right)) {
            (None, None) => Ok((self.bind_expr_n(left)?, self.bind_expr_n(right)?)),
            (Some(a), Some(b)) => Err(msg::DEDUCE_TWO_UNTYPED.with(&[&a, &b])),
            (Some(p), None) => {
                let r = self.bind_expr_n(right)?;
                let (e, t) = self.note_deduced(p, rule.apply(&r.1), false, None);
                Ok(((e, t, true), r))
            }
            (None, Some(p)) => {
                let l = self.bind_expr_n(left)?;
                let (e, t) = self.note_deduced(p, rule.apply(&l.1), false, None);
                Ok((l, (e, t, true)))
            }
        }
    }

    /// The error for an undeclared parameter met where nothing fixes its type: 11502
    /// while deducing, else 137.
    pub(super) fn undeclared_error(&self, name: &str) -> tessera_errors::SqlError {
        if self.deduced.is_some() {
            msg::DEDUCE_NOT_IN_CONTEXT.with(&[&name])
        } else {
            msg::UNDECLARED_VARIABLE.with(&[&name]).with_state(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_types::MAX;

    #[test]
    fn nearest_candidates_change_only_length() {
        assert_eq!(nearest_candidate(&SqlType::Char(30)), SqlType::VarChar(8000));
        assert_eq!(nearest_candidate(&SqlType::NVarChar(50)), SqlType::NVarChar(4000));
        assert_eq!(nearest_candidate(&SqlType::NVarChar(MAX)), SqlType::NVarChar(4000));
        assert_eq!(
            nearest_candidate(&SqlType::Decimal { precision: 10, scale: 2 }),
            SqlType::Decimal { precision: 38, scale: 19 }
        );
        assert_eq!(nearest_candidate(&SqlType::Int), SqlType::Int);
    }
}
