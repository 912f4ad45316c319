//! Variables: the slots a batch or module declares (and its labels), the variables a
//! statement sees, DECLARE of scalar and table variables, and `SET @v = …` as an
//! assignment.

use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_execution::ddl;
use tessera_execution::runtime::PENDING_TABLE_VARIABLE;
pub(super) use tessera_semantics::frame::{addr, Frame};
use tessera_semantics::types::{self, SqlType};
use tessera_syntax::ast::{self, Statement};

/// A table variable a frame declared, or a table-valued parameter it was given: its
/// lower-cased name, the mapping of the name it shadows, the table type it is of, and
/// whether the frame owns its table (a parameter's table is its caller's variable's).
pub(super) struct TableVar {
    pub(super) name: String,
    shadowed: Option<String>,
    pub(super) of_type: Option<(i32, String)>,
    owned: bool,
}

impl TableVar {
    pub(super) fn declared(name: String, shadowed: Option<String>, of_type: Option<(i32, String)>) -> TableVar {
        TableVar { name, shadowed, of_type, owned: true }
    }

    /// A table-valued parameter: `name` stands for its caller's table.
    pub(super) fn given(name: String, shadowed: Option<String>, of_type: (i32, String)) -> TableVar {
        TableVar { name, shadowed, of_type: Some(of_type), owned: false }
    }
}

impl<'a> Runner<'a> {
    pub(super) fn visible(&self, stmt: &Statement) -> &'a [(String, SqlType)] {
        let n = self.frame.visible.get(&addr(stmt)).copied().unwrap_or(self.frame.decls.len());
        &self.frame.decls[..n]
    }
}

impl Runner<'_> {
    /// DECLARE: a table variable is created (noting the mapping of the name it shadows), a
    /// scalar's initial value goes into its slot.
    pub(super) fn declare(&mut self, s: &Statement, decls: &[ast::Declaration]) -> SqlResult<()> {
        for d in decls {
            let lower = d.name.to_lowercase();
            let typed = matches!(&d.kind, ast::DeclarationKind::Scalar { .. }) && self.frame.is_table_variable(&lower);
            if matches!(&d.kind, ast::DeclarationKind::Table { .. }) || typed {
                if self.table_vars.iter().any(|v| v.name == lower) {
                    return Err(msg::VARIABLE_ALREADY_DECLARED.with(&[&d.name]));
                }
                let previous = self.state.temp_tables.get(&lower).cloned();
                let of_type = match &d.kind {
                    ast::DeclarationKind::Table { columns, constraints } => {
                        self.with_ctx(|ctx| ddl::declare_table_variable(ctx, &d.name, columns, constraints))?;
                        None
                    }
                    ast::DeclarationKind::Scalar { ty, .. } => {
                        let found = self.with_ctx(|ctx| ddl::declare_typed_table_variable(ctx, &d.name, ty))?;
                        Some((found.id, found.name))
                    }
                    ast::DeclarationKind::Cursor => None,
                };
                self.table_vars.push(TableVar::declared(lower, previous, of_type));
                continue;
            }
            if let ast::DeclarationKind::Cursor = &d.kind {
                self.state.cursors.declare_variable(&d.name);
                continue;
            }
            if let ast::DeclarationKind::Scalar { init: Some(init), .. } = &d.kind {
                let (v, t) = self.eval_scalar(s, init)?;
                let slot =
                    self.frame.decls.iter().position(|(n, _)| n.eq_ignore_ascii_case(&d.name)).expect("declared");
                let vt = self.frame.decls[slot].1;
                self.state.vars[slot] = types::cast(&v, &t, &vt, None)?.to_keep()?;
            }
        }
        Ok(())
    }

    /// Drops the table variables this frame declared (at the end of its batch or
    /// procedure), restoring what they shadowed. One the session's open transaction wrote
    /// cannot go before that transaction ends (its undo may yet need it): it goes out of
    /// scope now and waits, under a name no statement can write, for
    /// [`Runner::drop_pending_table_variables`].
    pub(super) fn drop_table_variables(&mut self) {
        for TableVar { name, shadowed: previous, owned, .. } in std::mem::take(&mut self.table_vars).into_iter().rev() {
            let object = ast::ObjectName(vec![ast::Ident::new(name.clone())]);
            if !owned {
                self.state.temp_tables.remove(&name);
            } else if self.with_ctx(|ctx| ddl::drop_table(ctx, &object, true)).is_err() {
                if let Some(real) = self.state.temp_tables.remove(&name) {
                    let pending = format!("#{PENDING_TABLE_VARIABLE}{}", real.to_lowercase());
                    self.state.temp_tables.insert(pending, real);
                }
            }
            if let Some(p) = previous {
                self.state.temp_tables.insert(name, p);
            }
        }
    }

    /// Drops the table variables left waiting by [`Runner::drop_table_variables`], once no
    /// transaction is open.
    pub(super) fn drop_pending_table_variables(&mut self) {
        if self.state.txns.count > 0 || !self.state.txns.open.is_empty() {
            return;
        }
        let pending: Vec<String> = self
            .state
            .temp_tables
            .keys()
            .filter(|k| k.strip_prefix('#').is_some_and(|r| r.starts_with(PENDING_TABLE_VARIABLE)))
            .cloned()
            .collect();
        for name in pending {
            let object = ast::ObjectName(vec![ast::Ident::new(name.clone())]);
            if self.with_ctx(|ctx| ddl::drop_table(ctx, &object, true)).is_ok() {
                self.state.temp_tables.remove(&name);
            }
        }
    }
}

/// `SET @v = expr` as the equivalent `SELECT @v = expr`.
pub(super) fn assign_select(name: &str, op: Option<ast::BinaryOp>, value: &ast::Expr) -> ast::Select {
    ast::Select {
        distinct: false,
        top: None,
        items: vec![ast::SelectItem::Assign { variable: name.to_string(), op, value: value.clone() }],
        into: None,
        from: Vec::new(),
        selection: None,
        group_by: Vec::new(),
        grouping_sets: None,
        having: None,
    }
}
