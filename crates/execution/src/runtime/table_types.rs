//! Table types (`CREATE TYPE … AS TABLE`): finding the one a table variable or a
//! table-valued parameter is declared of. A table type is a module of its database (kind
//! TT) whose text is its CREATE TYPE statement; its columns, constraints and indexes are
//! that statement's, read again when used.

use super::ExecCtx;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::ModuleKind;
use tessera_syntax::ast::{self, Ident, ObjectName, StatementKind};

/// A table type: its object id (what sys.types calls its user_type_id), its name as
/// `schema.name`, and its definition.
pub struct TableType {
    pub id: i32,
    pub name: String,
    pub definition: ast::CreateTable,
}

/// The table type `ty` names (`t`, `schema.t`) in the current database; 2715 when there
/// is none.
pub fn table_type(ctx: &ExecCtx, ty: &ast::TypeName) -> SqlResult<TableType> {
    let missing = || msg::TYPE_NOT_FOUND.with(&[&"Column, parameter, or variable #1: ", &ty.name]);
    let parts: Vec<Ident> = ty.name.split('.').map(Ident::new).collect();
    if parts.len() > 2 {
        return Err(missing());
    }
    let name = ObjectName(parts);
    let (db, schema, object) = Binder::new(ctx.shared, ctx.session, &[]).qualify(&name)?;
    let database = ctx.shared.database(&db)?;
    let catalog = ctx.catalog(&database)?;
    let found = catalog.module(&schema, &object).filter(|m| m.kind == ModuleKind::TableType).cloned();
    let m = found.ok_or_else(missing)?;
    let cached = ctx.shared.plans.get_or_parse(&m.text, tessera_syntax::parser::parse_batch)?;
    match cached.batch.statements.first().map(|s| &s.kind) {
        Some(StatementKind::CreateTableType { definition, .. }) => {
            Ok(TableType { id: m.id, name: format!("{}.{}", m.schema, m.name), definition: (**definition).clone() })
        }
        _ => Err(missing()),
    }
}
