//! Variables: the slots a batch or module declares (and its labels), the variables a
//! statement sees, DECLARE of scalar and table variables, and `SET @v = …` as an
//! assignment.

use std::collections::HashMap;

use super::Runner;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::ddl;
use tessera_semantics::types::{self, SqlType};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// The variables of a batch: declarations in text order, and for each statement how many
/// of them are declared before it.
pub(super) struct Frame {
    pub(super) decls: Vec<(String, SqlType)>,
    pub(super) visible: HashMap<usize, usize>,
    /// Labels declared, and GOTOs with their lines (checked when the frame is built).
    pub(super) labels: Vec<String>,
    pub(super) gotos: Vec<(String, u32)>,
}

pub(super) fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

impl Frame {
    pub(super) fn of(batch: &ast::Batch) -> SqlResult<Frame> {
        let mut f = Frame { decls: Vec::new(), visible: HashMap::new(), labels: Vec::new(), gotos: Vec::new() };
        f.walk(&batch.statements)?;
        f.check_labels()?;
        Ok(f)
    }

    fn check_labels(&self) -> SqlResult<()> {
        for (label, line) in &self.gotos {
            if !self.labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
                return Err(SqlError::new(
                    133,
                    format!("A GOTO statement references the label '{label}' but the label has not been declared."),
                )
                .with_severity(15)
                .at_line(*line));
            }
        }
        Ok(())
    }

    /// A procedure's frame: its parameters first, then the body's declarations.
    pub(super) fn of_procedure(params: &[ast::Parameter], body: &[Statement]) -> SqlResult<Frame> {
        let mut f = Frame { decls: Vec::new(), visible: HashMap::new(), labels: Vec::new(), gotos: Vec::new() };
        for p in params {
            let lower = p.name.to_lowercase();
            if f.decls.iter().any(|(n, _)| *n == lower) {
                return Err(SqlError::new(
                    134,
                    format!("The variable name '{}' has already been declared. Variable names must be unique within a query batch or stored procedure.", p.name),
                )
                .with_severity(15));
            }
            f.decls.push((lower, types::resolve_type(&p.ty, false)?));
        }
        f.walk(body)?;
        f.check_labels()?;
        Ok(f)
    }

    fn walk(&mut self, stmts: &[Statement]) -> SqlResult<()> {
        for s in stmts {
            self.visible.insert(addr(s), self.decls.len());
            match &s.kind {
                StatementKind::Declare(decls) => {
                    for d in decls {
                        let lower = d.name.to_lowercase();
                        if self.decls.iter().any(|(n, _)| *n == lower) {
                            return Err(SqlError::new(
                                134,
                                format!("The variable name '{}' has already been declared. Variable names must be unique within a query batch or stored procedure.", d.name),
                            )
                            .with_severity(15)
                            .at_line(s.line));
                        }
                        // Table variables are tables (see `ddl::declare_table_variable`), not slots.
                        if let ast::DeclarationKind::Scalar { ty, .. } = &d.kind {
                            let ty = types::resolve_type(ty, false).map_err(|e| e.at_line(s.line))?;
                            self.decls.push((lower, ty));
                        }
                    }
                    // The statement itself sees its own variables (initialisers may not,
                    // but assignments after the declaration in a DECLARE list do).
                    self.visible.insert(addr(s), self.decls.len());
                }
                StatementKind::If { then, otherwise, .. } => {
                    self.walk(std::slice::from_ref(then))?;
                    if let Some(o) = otherwise {
                        self.walk(std::slice::from_ref(o))?;
                    }
                }
                StatementKind::While { body, .. } => self.walk(std::slice::from_ref(body))?,
                StatementKind::Block(b) => self.walk(b)?,
                StatementKind::TryCatch { try_block, catch_block } => {
                    self.walk(try_block)?;
                    self.walk(catch_block)?;
                }
                StatementKind::Label(l) => self.labels.push(l.value.clone()),
                StatementKind::Goto(l) => self.gotos.push((l.value.clone(), s.line)),
                _ => {}
            }
        }
        Ok(())
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
            if let ast::DeclarationKind::Table { columns, constraints } = &d.kind {
                let lower = d.name.to_lowercase();
                if self.table_vars.iter().any(|(n, _)| *n == lower) {
                    return Err(SqlError::new(
                        134,
                        format!("The variable name '{}' has already been declared. Variable names must be unique within a query batch or stored procedure.", d.name),
                    )
                    .with_severity(15));
                }
                let previous = self.state.temp_tables.get(&lower).cloned();
                self.with_ctx(|ctx| ddl::declare_table_variable(ctx, &d.name, columns, constraints))?;
                self.table_vars.push((lower, previous));
                continue;
            }
            if let ast::DeclarationKind::Scalar { init: Some(init), .. } = &d.kind {
                let (v, t) = self.eval_scalar(s, init)?;
                let slot =
                    self.frame.decls.iter().position(|(n, _)| n.eq_ignore_ascii_case(&d.name)).expect("declared");
                let vt = self.frame.decls[slot].1;
                self.state.vars[slot] = types::cast(&v, &t, &vt, None)?;
            }
        }
        Ok(())
    }

    /// Drops the table variables this frame declared (at the end of its batch or
    /// procedure), restoring what they shadowed.
    pub(super) fn drop_table_variables(&mut self) {
        for (name, previous) in std::mem::take(&mut self.table_vars).into_iter().rev() {
            let object = ast::ObjectName(vec![ast::Ident::new(name.clone())]);
            let _ = self.with_ctx(|ctx| ddl::drop_table(ctx, &object, true));
            if let Some(p) = previous {
                self.state.temp_tables.insert(name, p);
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
        having: None,
    }
}
