//! Expressions back to SQL text, in SQL Server's normalised style (`([a]>(0))`, `(getdate())`):
//! how CHECK and DEFAULT definitions are stored in the catalog and shown in sys views.

use std::fmt::Write;

use crate::ast::{Expr, Literal, ObjectName, TypeArg, TypeName, UnaryOp};

fn name(n: &ObjectName) -> String {
    n.0.iter().map(|p| format!("[{}]", p.value.replace(']', "]]"))).collect::<Vec<_>>().join(".")
}

pub fn type_name(t: &TypeName) -> String {
    let mut s = t.name.to_lowercase();
    if !t.args.is_empty() {
        let args: Vec<String> = t
            .args
            .iter()
            .map(|a| match a {
                TypeArg::Number(n) => n.to_string(),
                TypeArg::Max => "max".to_string(),
            })
            .collect();
        let _ = write!(s, "({})", args.join(","));
    }
    s
}

fn list(items: &[Expr]) -> String {
    items.iter().map(inner).collect::<Vec<_>>().join(",")
}

fn inner(e: &Expr) -> String {
    match e {
        Expr::Literal(l) => match l {
            Literal::Integer(t) | Literal::Decimal(t) | Literal::Float(t) => format!("({t})"),
            Literal::Money(t) => format!("(${t})"),
            // Strings and binaries go unwrapped: `('x')` as a definition, `([a]='x')` in one.
            Literal::String { value, unicode } => {
                format!("{}'{}'", if *unicode { "N" } else { "" }, value.replace('\'', "''"))
            }
            Literal::Binary(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
                format!("0x{hex}")
            }
            Literal::Null => "NULL".to_string(),
        },
        Expr::Column(n) => name(n),
        Expr::Variable(v) | Expr::GlobalVariable(v) => v.clone(),
        Expr::Default => "DEFAULT".to_string(),
        // A negative number is one constant: `(-1)`.
        Expr::Unary { op: UnaryOp::Minus, expr }
            if matches!(
                &**expr,
                Expr::Literal(Literal::Integer(_) | Literal::Decimal(_) | Literal::Float(_) | Literal::Money(_))
            ) =>
        {
            format!("(-{})", inner(expr).trim_start_matches('(').trim_end_matches(')'))
        }
        Expr::Unary { op, expr } => match op {
            UnaryOp::Plus => format!("+{}", inner(expr)),
            UnaryOp::Minus => format!("-{}", inner(expr)),
            UnaryOp::BitNot => format!("~{}", inner(expr)),
            UnaryOp::Not => format!("NOT {}", inner(expr)),
        },
        Expr::Binary { op, left, right } => format!("({}{}{})", inner(left), op.text(), inner(right)),
        Expr::IsNull { expr, negated } => format!("({} IS {}NULL)", inner(expr), if *negated { "NOT " } else { "" }),
        Expr::Between { expr, negated, low, high } => format!(
            "({} {}BETWEEN {} AND {})",
            inner(expr),
            if *negated { "NOT " } else { "" },
            inner(low),
            inner(high)
        ),
        Expr::Like { expr, negated, pattern, escape } => {
            let mut s = format!("({} {}like {}", inner(expr), if *negated { "not " } else { "" }, inner(pattern));
            if let Some(e) = escape {
                let _ = write!(s, " escape {}", inner(e));
            }
            s.push(')');
            s
        }
        Expr::InList { expr, negated, list: items } => {
            format!("({} {}IN ({}))", inner(expr), if *negated { "NOT " } else { "" }, list(items))
        }
        Expr::Case { operand, branches, otherwise } => {
            let mut s = "case".to_string();
            if let Some(o) = operand {
                let _ = write!(s, " {}", inner(o));
            }
            for (w, t) in branches {
                let _ = write!(s, " when {} then {}", inner(w), inner(t));
            }
            if let Some(o) = otherwise {
                let _ = write!(s, " else {}", inner(o));
            }
            s.push_str(" end");
            s
        }
        Expr::Cast { expr, ty, try_ } => {
            format!("{}({} AS {})", if *try_ { "try_cast" } else { "CONVERT" }, inner(expr), type_name(ty))
        }
        Expr::Convert { ty, expr, style, try_ } => {
            let mut s = format!("{}({},{}", if *try_ { "try_convert" } else { "CONVERT" }, type_name(ty), inner(expr));
            if let Some(st) = style {
                let _ = write!(s, ",{}", inner(st));
            }
            s.push(')');
            s
        }
        Expr::Function { name: n, args, distinct, star, .. } => {
            let fname = n.0.iter().map(|p| p.value.to_lowercase()).collect::<Vec<_>>().join(".");
            // The niladic functions are stored as the functions they stand for.
            let fname = match fname.as_str() {
                "current_timestamp" if args.is_empty() => "getdate".to_string(),
                "current_user" | "session_user" | "user" if args.is_empty() => "user_name".to_string(),
                "system_user" if args.is_empty() => "suser_sname".to_string(),
                _ => fname,
            };
            if *star {
                format!("{fname}(*)")
            } else {
                format!("{fname}({}{})", if *distinct { "DISTINCT " } else { "" }, list(args))
            }
        }
        Expr::Collate { expr, collation } => format!("{} COLLATE {collation}", inner(expr)),
        Expr::NextValueFor(sequence) => format!("NEXT VALUE FOR {}", name(sequence)),
        Expr::Nested(e) => inner(e),
        // Subqueries are not allowed in CHECK and DEFAULT definitions.
        Expr::InSubquery { .. } | Expr::Exists(_) | Expr::Subquery(_) | Expr::Quantified { .. } => {
            "(subquery)".to_string()
        }
    }
}

/// Parses a stored definition back into an expression.
pub fn parse_definition(text: &str) -> tessera_errors::SqlResult<Expr> {
    let batch = crate::parser::parse_batch(&format!("SELECT {text}"))?;
    match batch.statements.into_iter().next().map(|s| s.kind) {
        Some(crate::ast::StatementKind::Query(q)) => match q.body {
            crate::ast::SetExpr::Select(s) => match s.items.into_iter().next() {
                Some(crate::ast::SelectItem::Expr { expr, .. }) => Ok(expr),
                _ => Err(tessera_errors::msg::SYNTAX_ERROR_NEAR.with(&[&text])),
            },
            _ => Err(tessera_errors::msg::SYNTAX_ERROR_NEAR.with(&[&text])),
        },
        _ => Err(tessera_errors::msg::SYNTAX_ERROR_NEAR.with(&[&text])),
    }
}

/// An expression as a definition, wrapped in parentheses once: `([a]>(0))`, `((0))`,
/// `(getdate())`.
pub fn definition(e: &Expr) -> String {
    match e {
        Expr::Binary { .. } | Expr::IsNull { .. } | Expr::Between { .. } | Expr::Like { .. } | Expr::InList { .. } => {
            inner(e)
        }
        Expr::Nested(x) => definition(x),
        _ => format!("({})", inner(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{BinaryOp, Ident};

    fn col(n: &str) -> Box<Expr> {
        Box::new(Expr::Column(ObjectName(vec![Ident::new(n)])))
    }

    #[test]
    fn definitions_look_like_sql_servers() {
        let check = Expr::Binary {
            op: BinaryOp::Gt,
            left: col("a"),
            right: Box::new(Expr::Literal(Literal::Integer("0".into()))),
        };
        assert_eq!(definition(&check), "([a]>(0))");
        assert_eq!(definition(&Expr::Literal(Literal::Integer("0".into()))), "((0))");
        let text = |value: &str| Expr::Literal(Literal::String { value: value.into(), unicode: false });
        assert_eq!(definition(&text("draft")), "('draft')");
        let minus_one = Expr::Unary { op: UnaryOp::Minus, expr: Box::new(Expr::Literal(Literal::Integer("1".into()))) };
        assert_eq!(definition(&minus_one), "((-1))");
        let equal = Expr::Binary { op: BinaryOp::Eq, left: col("s"), right: Box::new(text("a'b")) };
        assert_eq!(definition(&equal), "([s]='a''b')");
        let now = parse_definition("CURRENT_TIMESTAMP").expect("an expression");
        assert_eq!(definition(&now), "(getdate())");
    }
}
