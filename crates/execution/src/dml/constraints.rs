//! The constraints a stored row meets: column length (2628), NOT NULL (515), CHECK (547)
//! and unique keys (2627/2601), and the check of existing rows against a new constraint.

use super::{object_name, TargetAt};
use crate::exec::eval;
use crate::runtime::ExecCtx;
use tessera_access::row;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::{Index, Table};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast;

/// Converts a value for storing in a column: strings and binaries longer than the column
/// fail (error 2628) instead of being cut, as SQL Server does on INSERT and UPDATE.
pub fn assign_value(v: &Value, from: &SqlType, db: &str, table: &Table, col: usize) -> SqlResult<Value> {
    let c = &table.columns[col];
    if let Some(limit) = char_limit(&c.ty) {
        let len = match v {
            Value::Str(s)
                if matches!(
                    from,
                    SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_)
                ) =>
            {
                s.trim_end_matches(' ').chars().count()
            }
            Value::Binary(b) if matches!(from, SqlType::Binary(_) | SqlType::VarBinary(_)) => b.len(),
            Value::Large(l) => l.trimmed_len_units()? as usize,
            _ => 0,
        };
        if len > limit {
            let shown: String = match v {
                Value::Str(s) => s.chars().take(limit).collect(),
                Value::Large(l) => match l.slice(0, limit as u64)? {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                },
                _ => String::new(),
            };
            return Err(msg::STRING_TRUNCATED.with(&[&db, &object_name(table), &c.name, &shown]));
        }
    }
    types::cast(v, from, &c.ty, None)
}

fn char_limit(t: &SqlType) -> Option<usize> {
    use SqlType::*;
    match *t {
        Char(n) | VarChar(n) | NChar(n) | NVarChar(n) | Binary(n) | VarBinary(n) if n != row::MAX => {
            Some(usize::from(n))
        }
        _ => None,
    }
}

pub(super) fn key_values(table: &Table, index: &Index, row: &[Value]) -> String {
    index
        .columns
        .iter()
        .map(|&(c, _)| types::display_text(&row[c], &table.columns[c].ty))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn duplicate_error(table: &Table, index: &Index, row: &[Value]) -> SqlError {
    let values = key_values(table, index, row);
    if index.primary_key || index.unique_constraint {
        let kind = if index.primary_key { "PRIMARY KEY" } else { "UNIQUE KEY" };
        msg::DUPLICATE_KEY.with(&[&kind, &format!(" '{}'", index.name), &object_name(table), &values])
    } else {
        msg::DUPLICATE_INDEX_KEY.with(&[&object_name(table), &index.name, &values])
    }
}

pub(super) fn map_duplicate(e: tessera_database::Error, table: &Table, index: &Index, row: &[Value]) -> SqlError {
    match e {
        tessera_database::Error::DuplicateKey { .. } => duplicate_error(table, index, row),
        e => e.into(),
    }
}

/// Checks NOT NULL and CHECK constraints of a complete new row: `kind` is the statement
/// the errors name, `inserted` whether the row is a new one (an insert, not an update).
pub(super) fn check_row(
    ctx: &mut ExecCtx,
    target: &TargetAt,
    row: &[Value],
    kind: &str,
    inserted: bool,
) -> SqlResult<()> {
    let table = &target.table;
    for (i, c) in table.columns.iter().enumerate() {
        if !c.nullable && row[i].is_null() {
            let verb = if inserted { "INSERT fails." } else { "UPDATE fails." };
            return Err(msg::NULL_INTO_NOT_NULL.with(&[&c.name, &target.db, &object_name(table), &verb]).with_state(2));
        }
    }
    for (pred, def) in target.checks.iter().zip(&table.checks) {
        let name = &def.name;
        let v = eval(pred, row, ctx)?;
        if v == Value::Bit(false) {
            // SQL Server names the column when the constraint reads exactly one.
            let column = single_column(&def.text).map(|c| format!(", column '{c}'")).unwrap_or_default();
            return Err(msg::CONSTRAINT_CONFLICT
                .with(&[&kind, &"CHECK", &name, &target.db, &object_name(table), &column])
                .with_state(0));
        }
    }
    Ok(())
}

/// The one column a CHECK definition reads, if it reads exactly one.
fn single_column(definition: &str) -> Option<String> {
    fn walk(e: &ast::Expr, out: &mut Vec<String>) {
        use ast::Expr as E;
        match e {
            E::Column(n) => {
                let name = n.name().value.clone();
                if !out.iter().any(|c| c.eq_ignore_ascii_case(&name)) {
                    out.push(name);
                }
            }
            E::Unary { expr, .. }
            | E::IsNull { expr, .. }
            | E::Nested(expr)
            | E::Collate { expr, .. }
            | E::Cast { expr, .. } => walk(expr, out),
            E::Convert { expr, .. } => walk(expr, out),
            E::Binary { left, right, .. } => {
                walk(left, out);
                walk(right, out);
            }
            E::Between { expr, low, high, .. } => {
                walk(expr, out);
                walk(low, out);
                walk(high, out);
            }
            E::Like { expr, pattern, .. } => {
                walk(expr, out);
                walk(pattern, out);
            }
            E::InList { expr, list, .. } => {
                walk(expr, out);
                list.iter().for_each(|x| walk(x, out));
            }
            E::Function { args, .. } => args.iter().for_each(|x| walk(x, out)),
            E::Case { operand, branches, otherwise } => {
                if let Some(o) = operand {
                    walk(o, out);
                }
                for (a, b) in branches {
                    walk(a, out);
                    walk(b, out);
                }
                if let Some(o) = otherwise {
                    walk(o, out);
                }
            }
            _ => {}
        }
    }
    let e = tessera_syntax::unparse::parse_definition(definition).ok()?;
    let mut cols = Vec::new();
    walk(&e, &mut cols);
    (cols.len() == 1).then(|| cols.remove(0))
}
