//! Table-valued parameters: a procedure's `@p type READONLY` parameters of a table type.
//!
//! The caller gives a table variable of the same type (`EXEC p @t`), whose table the
//! procedure then reads under the parameter's name for as long as it runs (nothing is
//! copied); an RPC gives the rows themselves (a TDS table-valued parameter), which go into
//! a table variable of the type made for the call; an omitted one is an empty table of
//! the type. The procedure may not change it (10700). A parameter of a table type
//! without READONLY is 352 and READONLY on any other is 346, when the procedure is
//! created.

use super::variables::{Frame, TableVar};
use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_execution::ddl;
use tessera_execution::runtime::TableRows;
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// What a caller gives a table-valued parameter.
#[derive(Clone, Debug)]
pub enum TableArgument {
    /// A table variable of the caller's: its name, and the table type it is of (its id
    /// and name; None: a `DECLARE @t TABLE (…)`, of no type).
    Variable { name: String, of_type: Option<(i32, String)> },
    /// A value (206).
    Value(SqlType),
    /// Rows sent by the client (a TDS table-valued parameter).
    Rows(TableRows),
}

impl Runner<'_> {
    /// CREATE PROCEDURE: a parameter of a table type must be READONLY (352), a READONLY
    /// one must be of a table type (346); a type of neither kind is 2715.
    pub(super) fn check_table_parameters(&mut self, params: &[ast::Parameter]) -> SqlResult<()> {
        for p in params {
            if p.ty.name.eq_ignore_ascii_case("CURSOR") {
                continue;
            }
            let builtin = types::resolve_type(&p.ty, false);
            match builtin {
                Ok(_) if p.readonly => return Err(msg::READONLY_NOT_TABLE_PARAMETER.with(&[&p.name])),
                Ok(_) => {}
                Err(e) if e.number != msg::TYPE_NOT_FOUND.number || !p.ty.args.is_empty() => return Err(e),
                Err(_) => {
                    self.with_ctx(|ctx| tessera_execution::runtime::table_type(ctx, &p.ty))?;
                    if !p.readonly {
                        return Err(msg::TABLE_PARAMETER_NOT_READONLY.with(&[&p.name]));
                    }
                }
            }
        }
        Ok(())
    }

    /// A data change of a table-valued parameter of the running procedure is 10700.
    pub(super) fn refuse_readonly(&self, s: &Statement) -> SqlResult<()> {
        if self.frame.table_parameters.is_empty() {
            return Ok(());
        }
        let (target, from) = match &s.kind {
            StatementKind::Insert(i) => (&i.table, &[][..]),
            StatementKind::Update(u) => (&u.table, &u.from[..]),
            StatementKind::Delete(d) => (&d.table, &d.from[..]),
            StatementKind::Merge(m) => (&m.target, &[][..]),
            StatementKind::TruncateTable(name) => (name, &[][..]),
            _ => return Ok(()),
        };
        // `UPDATE x … FROM @p x` changes @p.
        let mut names = vec![target];
        for r in from {
            if let ast::TableRef::Named { name, alias: Some(alias), .. } = r {
                if target.0.len() == 1 && alias.value.eq_ignore_ascii_case(&target.name().value) {
                    names.push(name);
                }
            }
        }
        for name in names {
            let lower = name.name().value.to_lowercase();
            if name.0.len() == 1 && self.frame.table_parameters.contains(&lower) {
                return Err(msg::TABLE_PARAMETER_READONLY.with(&[&name.name().value]));
            }
        }
        Ok(())
    }

    /// What the caller's argument `value` gives a table-valued parameter, when it names
    /// one of the caller's table variables.
    pub(super) fn table_argument(&mut self, value: &ast::Expr) -> Option<TableArgument> {
        let ast::Expr::Variable(v) = value else { return None };
        if let Some(rows) = self.state.table_arguments.remove(&v.to_lowercase()) {
            return Some(TableArgument::Rows(rows));
        }
        if !self.frame.is_table_variable(v) {
            return None;
        }
        let lower = v.to_lowercase();
        let of_type = self.table_vars.iter().rev().find(|t| t.name == lower).and_then(|t| t.of_type.clone());
        Some(TableArgument::Variable { name: lower, of_type })
    }

    /// Makes a procedure's table-valued parameters (`given`: each one's name, type and
    /// argument) tables of this frame, the procedure's, before its body runs: a caller's
    /// variable of the same type under the parameter's name (206 for another type or a
    /// value), rows into a new table variable of the type, or an empty one.
    pub(super) fn give_table_parameters(
        &mut self,
        given: Vec<(String, ast::TypeName, Option<TableArgument>)>,
    ) -> SqlResult<()> {
        for (parameter, ty, argument) in given {
            let lower = parameter.to_lowercase();
            let shadowed = self.state.temp_tables.get(&lower).cloned();
            match argument {
                Some(TableArgument::Variable { name, of_type }) => {
                    let found = self.with_ctx(|ctx| tessera_execution::runtime::table_type(ctx, &ty))?;
                    match of_type {
                        Some((id, _)) if id == found.id => {}
                        Some((_, other)) => return Err(msg::OPERAND_TYPE_CLASH.with(&[&other, &found.name])),
                        None => return Err(msg::OPERAND_TYPE_CLASH.with(&[&"table", &found.name])),
                    }
                    let Some(real) = self.state.temp_tables.get(&name).cloned() else {
                        return Err(msg::UNDECLARED_VARIABLE.with(&[&name]));
                    };
                    self.state.temp_tables.insert(lower.clone(), real);
                    self.table_vars.push(TableVar::given(lower, shadowed, (found.id, found.name)));
                }
                Some(TableArgument::Rows(TableRows { type_name, columns, rows })) => {
                    let found = self.with_ctx(|ctx| ddl::declare_typed_table_variable(ctx, &parameter, &ty))?;
                    self.table_vars.push(TableVar::declared(lower, shadowed, Some((found.id, found.name.clone()))));
                    let named = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
                    if !named(&type_name).eq_ignore_ascii_case(&named(&found.name)) {
                        return Err(msg::OPERAND_TYPE_CLASH.with(&[&type_name, &found.name]));
                    }
                    let names = found.definition.columns.iter().map(|c| c.name.value.clone());
                    let given = names.zip(columns).filter_map(|(n, t)| Some((n, t?))).collect();
                    self.insert_rows(&parameter, given, rows)?;
                }
                Some(TableArgument::Value(given)) => {
                    let found = self.with_ctx(|ctx| tessera_execution::runtime::table_type(ctx, &ty))?;
                    return Err(msg::OPERAND_TYPE_CLASH.with(&[&types::type_name(&given), &found.name]));
                }
                None => {
                    let found = self.with_ctx(|ctx| ddl::declare_typed_table_variable(ctx, &parameter, &ty))?;
                    self.table_vars.push(TableVar::declared(lower, shadowed, Some((found.id, found.name))));
                }
            }
        }
        Ok(())
    }

    /// Inserts `rows` (values of `columns`, by name and type; the others take their
    /// defaults) into the table variable `name`, as one statement whose rows are the
    /// load's (see `dml::run_insert`).
    fn insert_rows(&mut self, name: &str, columns: Vec<(String, SqlType)>, rows: Vec<Vec<Value>>) -> SqlResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let params: Vec<String> = (0..columns.len()).map(|c| format!("@__tvp{c}")).collect();
        let names: Vec<String> = columns.iter().map(|(n, _)| format!("[{}]", n.replace(']', "]]"))).collect();
        let text = format!("INSERT INTO {name} ({}) VALUES ({})", names.join(", "), params.join(", "));
        let frame = Frame::with_decls(params.into_iter().zip(columns.into_iter().map(|(_, t)| t)).collect());
        self.state.bulk_rows = Some(rows);
        let result = self.run_internal(&text, &frame, "The table-valued parameter could not be loaded.");
        self.state.bulk_rows = None;
        result.map(|_| ())
    }
}
