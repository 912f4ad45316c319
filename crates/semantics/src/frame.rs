//! The variables of a batch or module: the slots it declares, in text order, which of
//! them each statement sees, and its labels. Worked out from the text alone, so a cached
//! batch works its frame out once ([`crate::cache::CachedBatch::frame`]).

use crate::types::{self, SqlType};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, Statement, StatementKind};

/// The variables of a batch: declarations in text order, and for each statement how many
/// of them are declared before it.
pub struct Frame {
    pub decls: Vec<(String, SqlType)>,
    pub visible: foldhash::HashMap<usize, usize>,
    /// Labels declared, and GOTOs with their lines (checked when the frame is built).
    pub labels: Vec<String>,
    pub gotos: Vec<(String, u32)>,
    /// The table variables declared (lower-cased): tables, not slots, but their names
    /// share the namespace.
    table_variables: Vec<String>,
    /// The cursor variables declared (lower-cased, `DECLARE @c CURSOR`): cursors, not
    /// slots (the session's cursors hold them), sharing the namespace too.
    pub cursor_variables: Vec<String>,
    /// A procedure's table-valued parameters (lower-cased, `@p type READONLY`): table
    /// variables its caller gives, which it may not change; each keeps a slot (holding
    /// nothing) so that the parameters keep their positions.
    pub table_parameters: Vec<String>,
}

pub fn addr<T>(x: &T) -> usize {
    x as *const T as usize
}

impl Frame {
    pub fn of(batch: &ast::Batch) -> SqlResult<Frame> {
        let mut f = Frame::with_decls(Vec::new());
        f.walk(&batch.statements)?;
        f.check_labels()?;
        Ok(f)
    }

    fn check_labels(&self) -> SqlResult<()> {
        for (label, line) in &self.gotos {
            if !self.labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
                return Err(msg::GOTO_LABEL_NOT_DECLARED.with(&[&label]).at_line(*line));
            }
        }
        Ok(())
    }

    /// A frame of the given variables and nothing else (every statement sees them all):
    /// the parameters of an RPC batch, before any DECLARE of its own is walked.
    pub fn with_decls(decls: Vec<(String, SqlType)>) -> Frame {
        Frame {
            decls,
            visible: Default::default(),
            labels: Vec::new(),
            gotos: Vec::new(),
            table_variables: Vec::new(),
            cursor_variables: Vec::new(),
            table_parameters: Vec::new(),
        }
    }

    /// Whether `name` (with its `@`) is a table variable or table-valued parameter here.
    pub fn is_table_variable(&self, name: &str) -> bool {
        let lower = name.to_lowercase();
        self.table_variables.contains(&lower)
    }

    /// A procedure's frame: its parameters first, then the body's declarations.
    pub fn of_procedure(params: &[ast::Parameter], body: &[Statement]) -> SqlResult<Frame> {
        let mut f = Frame::with_decls(Vec::new());
        for p in params {
            let lower = p.name.to_lowercase();
            if f.decls.iter().any(|(n, _)| *n == lower) {
                return Err(already_declared(&p.name));
            }
            if p.ty.name.eq_ignore_ascii_case("CURSOR") {
                // A cursor parameter is a cursor variable; its slot keeps the parameters'
                // positions and holds nothing.
                f.cursor_variables.push(lower.clone());
                f.decls.push((lower, SqlType::Int));
                continue;
            }
            match builtin_type(&p.ty) {
                Some(Err(e)) => return Err(e),
                // `@p type READONLY`: a table-valued parameter of a table type (the
                // session finds the type when the procedure runs).
                None if p.readonly => {
                    f.table_variables.push(lower.clone());
                    f.table_parameters.push(lower.clone());
                    f.decls.push((lower, SqlType::Int));
                }
                None => return Err(types::resolve_type(&p.ty, false).expect_err("no built-in type")),
                Some(Ok(ty)) => f.decls.push((lower, ty)),
            }
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
                        if self.decls.iter().any(|(n, _)| *n == lower)
                            || self.table_variables.contains(&lower)
                            || self.cursor_variables.contains(&lower)
                        {
                            return Err(already_declared(&d.name).at_line(s.line));
                        }
                        // Table variables are tables (see `ddl::declare_table_variable`), not slots.
                        match &d.kind {
                            ast::DeclarationKind::Scalar { ty, .. } => match builtin_type(ty) {
                                Some(ty) => self.decls.push((lower, ty.map_err(|e| e.at_line(s.line))?)),
                                // A type of no built-in name: a table type, which the
                                // DECLARE finds when it runs.
                                None => self.table_variables.push(lower),
                            },
                            ast::DeclarationKind::Table { .. } => self.table_variables.push(lower),
                            ast::DeclarationKind::Cursor => self.cursor_variables.push(lower),
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

/// A built-in type as written (Some: resolved, or its error), or None for a name no
/// built-in type has (a user-defined type's).
fn builtin_type(ty: &ast::TypeName) -> Option<SqlResult<SqlType>> {
    match types::resolve_type(ty, false) {
        Err(e) if e.number == msg::TYPE_NOT_FOUND.number && ty.args.is_empty() => None,
        resolved => Some(resolved),
    }
}

/// Error 134: a batch or procedure declares `name` twice.
fn already_declared(name: &str) -> SqlError {
    msg::VARIABLE_ALREADY_DECLARED.with(&[&name])
}
