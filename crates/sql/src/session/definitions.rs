//! Data definition as statements: CREATE/ALTER/DROP of databases, tables, indexes,
//! procedures, functions, views, sequences and schemas — each one's permission check here
//! (with SQL Server's message for a missing or forbidden object), the work in
//! `tessera_execution::ddl`, `tessera_execution::modules` and
//! `tessera_execution::sequences`.

use super::Runner;
use tessera_errors::catalog::Message;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::ddl;
use tessera_execution::modules::Definition;
use tessera_semantics::bind::Binder;
use tessera_semantics::catalog::ModuleKind;
use tessera_syntax::ast::{self, Statement, StatementKind};

impl Runner<'_> {
    /// Data definition: databases, tables, indexes, modules (procedures, functions,
    /// views) and schemas, each after its permission check.
    pub(super) fn define(&mut self, s: &Statement) -> SqlResult<()> {
        match &s.kind {
            StatementKind::CreateDatabase(cd) => {
                // A database is made outside any transaction, as in SQL Server.
                if self.state.txns.count > 0 {
                    return Err(msg::NOT_IN_MULTI_STATEMENT_TRANSACTION.with(&[&"CREATE DATABASE"]));
                }
                if !self.shared.holds_server(self.state, "CREATE ANY DATABASE") {
                    return Err(msg::DATABASE_PERMISSION_DENIED.with(&[&"CREATE DATABASE", &"master"]));
                }
                // A copy reads everything of its source: only who controls it may copy it.
                if let Some(source) = &cd.copy_of {
                    let from = &source.database.value;
                    if self.shared.engine.exists(from) && !self.may_control_database(from)? {
                        return Err(msg::DATABASE_PERMISSION_DENIED.with(&[&"CREATE DATABASE AS COPY OF", from]));
                    }
                }
                self.with_ctx(|ctx| ddl::create_database(ctx, cd))?
            }
            StatementKind::DropDatabase { names, if_exists } => {
                if self.state.txns.count > 0 {
                    return Err(msg::NOT_IN_USER_TRANSACTION.with(&[&"DROP DATABASE"]));
                }
                for n in names {
                    if !self.may_control_database(&n.value)? {
                        return Err(msg::DROP_OBJECT_NOT_FOUND.with(&[&"database", &n.value]));
                    }
                    self.with_ctx(|ctx| ddl::drop_database(ctx, n, *if_exists))?;
                }
            }
            StatementKind::AlterDatabase { name, action } => {
                if self.state.txns.count > 0 {
                    return Err(msg::NOT_IN_MULTI_STATEMENT_TRANSACTION.with(&[&"ALTER DATABASE"]));
                }
                let target = if name.is("CURRENT") { self.state.database.clone() } else { name.value.clone() };
                if !self.may_control_database(&target)? {
                    return Err(msg::ALTER_DATABASE_DENIED.with(&[&target]));
                }
                self.with_ctx(|ctx| ddl::alter_database(ctx, name, action))?
            }
            StatementKind::CreateTable(ct) => {
                self.check_create("CREATE TABLE", &ct.name)?;
                self.check_references(&ct.columns, &ct.constraints)?;
                self.with_ctx(|ctx| ddl::create_table(ctx, ct))?
            }
            StatementKind::DropTable { names, if_exists } => {
                for n in names {
                    self.check_alter(n, || msg::DROP_OBJECT_NOT_FOUND.with(&[&"table", &object_shown(n)]))?;
                    self.with_ctx(|ctx| ddl::drop_table(ctx, n, *if_exists))?;
                }
            }
            StatementKind::AlterTable { table, action } => {
                self.check_alter(table, || cannot_find(&msg::ALTER_TABLE_NOT_FOUND, table))?;
                if let ast::AlterTableAction::Add { columns, constraints } = action {
                    self.check_references(columns, constraints)?;
                }
                self.with_ctx(|ctx| ddl::alter_table(ctx, table, action))?
            }
            StatementKind::TruncateTable(t) => {
                self.check_alter(t, || cannot_find(&msg::INDEX_TABLE_NOT_FOUND, t))?;
                self.with_ctx(|ctx| ddl::truncate_table(ctx, t))?
            }
            StatementKind::CreateIndex(ci) => {
                let on_view = self.with_ctx(|ctx| {
                    Ok(tessera_execution::modules::find(ctx, &ci.table)?
                        .is_some_and(|(_, m)| m.kind == ModuleKind::View))
                })?;
                if on_view {
                    return Err(msg::INDEXED_VIEWS_NOT_SUPPORTED.with(&[&ci.table.name().value]));
                }
                self.check_alter(&ci.table, || cannot_find(&msg::INDEX_TABLE_NOT_FOUND, &ci.table))?;
                self.with_ctx(|ctx| ddl::create_index(ctx, ci))?
            }
            StatementKind::DropIndex { indexes, if_exists } => {
                for (ix, t) in indexes {
                    self.check_alter(t, || cannot_find(&msg::INDEX_TABLE_NOT_FOUND, t))?;
                    self.with_ctx(|ctx| ddl::drop_index(ctx, ix, t, *if_exists))?;
                }
            }
            StatementKind::CreateProcedure(cp) => {
                self.check_define("CREATE PROCEDURE", &cp.name, cp.alter || cp.or_alter)?;
                self.check_module_execute_as(&cp.execute_as)?;
                self.check_table_parameters(&cp.params)?;
                let text = cp.text.clone();
                self.with_ctx(|ctx| {
                    let def = Definition {
                        name: &cp.name,
                        kind: ModuleKind::Procedure,
                        or_alter: cp.or_alter,
                        alter: cp.alter,
                        text: &text,
                        trigger: None,
                    };
                    tessera_execution::modules::define(ctx, def)
                })?;
            }
            StatementKind::CreateFunction(cf) => {
                self.check_define("CREATE FUNCTION", &cf.name, cf.alter || cf.or_alter)?;
                if let ast::FunctionReturns::Scalar { execute_as, .. } = &cf.returns {
                    self.check_module_execute_as(execute_as)?;
                }
                match &cf.returns {
                    ast::FunctionReturns::Scalar { body, .. } | ast::FunctionReturns::MultiStatement { body, .. } => {
                        check_function_body(body)?
                    }
                    ast::FunctionReturns::InlineTable(_) => {}
                }
                let kind = match cf.returns {
                    ast::FunctionReturns::Scalar { .. } => ModuleKind::ScalarFunction,
                    ast::FunctionReturns::InlineTable(_) => ModuleKind::TableFunction,
                    ast::FunctionReturns::MultiStatement { .. } => ModuleKind::MultiStatementFunction,
                };
                let text = cf.text.clone();
                self.with_ctx(|ctx| {
                    let def = Definition {
                        name: &cf.name,
                        kind,
                        or_alter: cf.or_alter,
                        alter: cf.alter,
                        text: &text,
                        trigger: None,
                    };
                    tessera_execution::modules::define(ctx, def)
                })?;
            }
            StatementKind::CreateTableType { definition, text } => {
                self.check_create("CREATE TYPE", &definition.name)?;
                // The definition must make a table: it is checked by making one (a table
                // variable of a name no statement reaches) and dropping it.
                self.with_ctx(|ctx| {
                    let probe = TYPE_PROBE;
                    tessera_execution::ddl::declare_table_variable(
                        ctx,
                        probe,
                        &definition.columns,
                        &definition.constraints,
                    )?;
                    let name = ast::ObjectName(vec![ast::Ident::new(probe)]);
                    tessera_execution::ddl::drop_table(ctx, &name, true)
                })?;
                self.create_module(&definition.name, ModuleKind::TableType, text)?;
            }
            StatementKind::CreateSynonym { name, text, .. } => {
                self.check_create("CREATE SYNONYM", name)?;
                self.create_module(name, ModuleKind::Synonym, text)?;
            }
            StatementKind::CreateView(cv) => {
                self.check_define("CREATE VIEW", &cv.name, cv.alter || cv.or_alter)?;
                // A view must bind when it is created (its tables and columns must exist).
                let mut b = Binder::new(self.shared, self.state, &[]);
                let bound = b.bind_query(&cv.query)?;
                if !cv.columns.is_empty() && cv.columns.len() != bound.columns.len() {
                    return Err(msg::FEWER_COLUMNS_THAN_LIST.with(&[&(cv.name.name().value)]));
                }
                if cv.columns.is_empty() {
                    if let Some(i) = bound.columns.iter().position(|c| c.name.is_empty()) {
                        return Err(msg::VIEW_COLUMN_NAME_MISSING.with(&[&(i + 1)]));
                    }
                }
                let text = cv.text.clone();
                self.with_ctx(|ctx| {
                    let def = Definition {
                        name: &cv.name,
                        kind: ModuleKind::View,
                        or_alter: cv.or_alter,
                        alter: cv.alter,
                        text: &text,
                        trigger: None,
                    };
                    tessera_execution::modules::define(ctx, def)
                })?;
            }
            StatementKind::CreateTrigger(ct) if ct.table.is_none() => {
                if ct.all_server {
                    return Err(msg::DDL_TRIGGERS_NOT_SUPPORTED.err());
                }
                super::ddl_triggers::check_events(&ct.ddl_events)?;
                self.check_ddl_trigger_permission()?;
                self.check_module_execute_as(&ct.execute_as)?;
                let text = ct.text.clone();
                self.with_ctx(|ctx| {
                    let def = Definition {
                        name: &ct.name,
                        kind: ModuleKind::Trigger,
                        or_alter: ct.or_alter,
                        alter: ct.alter,
                        text: &text,
                        trigger: None,
                    };
                    tessera_execution::modules::define(ctx, def)
                })?;
            }
            StatementKind::CreateTrigger(ct) => {
                let Some(table) = &ct.table else { return Err(msg::DDL_TRIGGERS_NOT_SUPPORTED.err()) };
                self.check_alter(table, || msg::OBJECT_INVALID_FOR_OPERATION.with(&[&object_shown(table)]))?;
                self.check_module_execute_as(&ct.execute_as)?;
                let text = ct.text.clone();
                self.with_ctx(|ctx| {
                    let (name, site) = tessera_execution::modules::trigger_site(ctx, ct, table)?;
                    let def = Definition {
                        name: &name,
                        kind: ModuleKind::Trigger,
                        or_alter: ct.or_alter,
                        alter: ct.alter,
                        text: &text,
                        trigger: Some(site),
                    };
                    tessera_execution::modules::define(ctx, def)
                })?;
            }
            StatementKind::EnableTrigger { enable, names, table, all_server } => {
                if *all_server {
                    return Err(msg::DDL_TRIGGERS_NOT_SUPPORTED.err());
                }
                match table {
                    Some(table) => {
                        self.check_alter(table, || msg::OBJECT_INVALID_FOR_OPERATION.with(&[&object_shown(table)]))?
                    }
                    None => self.check_ddl_trigger_permission()?,
                }
                let table = table.as_ref();
                self.with_ctx(|ctx| tessera_execution::modules::enable_triggers(ctx, table, names, *enable))?;
            }
            StatementKind::DropModule { kind, names, if_exists } => {
                for n in names {
                    let word = kind.word();
                    self.check_alter(n, || msg::DROP_OBJECT_NOT_FOUND.with(&[&word, &object_shown(n)]))?;
                    self.with_ctx(|ctx| tessera_execution::modules::drop(ctx, *kind, n, *if_exists))?;
                }
            }
            StatementKind::CreateSequence { name, options } => {
                self.check_create("CREATE SEQUENCE", name)?;
                self.with_ctx(|ctx| tessera_execution::sequences::create(ctx, name, options))?
            }
            StatementKind::AlterSequence { name, options } => {
                let shown = object_shown(name);
                self.check_alter(name, || msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"alter", &"object", &shown]))?;
                self.with_ctx(|ctx| tessera_execution::sequences::alter(ctx, name, options))?
            }
            StatementKind::DropSequence { names, if_exists } => {
                for n in names {
                    self.check_alter(n, || msg::DROP_OBJECT_NOT_FOUND.with(&[&"sequence", &object_shown(n)]))?;
                    self.with_ctx(|ctx| tessera_execution::sequences::drop(ctx, n, *if_exists))?;
                }
            }
            StatementKind::CreateSchema { name, elements, .. } => {
                self.database_security(&s.kind)?;
                for element in elements {
                    let mut element = element.clone();
                    match &mut element.kind {
                        StatementKind::CreateTable(ct) => ct.name = super::permissions::in_schema(&ct.name, name),
                        StatementKind::CreateView(cv) => cv.name = super::permissions::in_schema(&cv.name, name),
                        _ => {}
                    }
                    self.exec(&element)?;
                }
            }
            _ => unreachable!("define runs only the statements `exec` sends it"),
        }
        Ok(())
    }

    /// Creates a module of a kind that has no ALTER (a synonym, a table type).
    fn create_module(&mut self, name: &ast::ObjectName, kind: ModuleKind, text: &str) -> SqlResult<()> {
        self.with_ctx(|ctx| {
            let def = Definition { name, kind, or_alter: false, alter: false, text, trigger: None };
            tessera_execution::modules::define(ctx, def)
        })
    }
}

/// The table variable CREATE TYPE … AS TABLE makes to check its definition (a name no
/// statement can write: it holds a NUL).
const TYPE_PROBE: &str = "@\0type";

/// An object name as written (`dbo.t`).
fn object_shown(name: &ast::ObjectName) -> String {
    name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".")
}

/// "Cannot find the object … because it does not exist or you do not have permissions."
/// (ALTER_TABLE_NOT_FOUND for ALTER TABLE, INDEX_TABLE_NOT_FOUND for TRUNCATE TABLE and
/// indexes).
fn cannot_find(error: &Message, name: &ast::ObjectName) -> SqlError {
    error.with(&[&object_shown(name)])
}

/// What a function's body may not do, as SQL Server refuses it when the function is
/// created: change anything but its own table variables, call procedures, print, raise
/// errors, control transactions (443), or send rows to the client (444).
fn check_function_body(body: &[ast::Statement]) -> tessera_errors::SqlResult<()> {
    use ast::StatementKind as K;
    for s in body {
        let refused = match &s.kind {
            K::If { then, otherwise, .. } => {
                check_function_body(std::slice::from_ref(then))?;
                if let Some(o) = otherwise {
                    check_function_body(std::slice::from_ref(&**o))?;
                }
                None
            }
            K::While { body, .. } => check_function_body(std::slice::from_ref(body)).map(|_| None)?,
            K::Block(b) => check_function_body(b).map(|_| None)?,
            K::TryCatch { .. } => Some("BEGIN TRY"),
            K::Insert(i) if !is_variable(&i.table) => Some("INSERT"),
            K::Update(u) if !is_variable(&u.table) => Some("UPDATE"),
            K::Delete(d) if !is_variable(&d.table) => Some("DELETE"),
            K::Merge(m) if !is_variable(&m.target) => Some("MERGE"),
            K::Execute(_) | K::ExecuteString(_) => Some("EXECUTE STRING"),
            K::Print(_) => Some("PRINT"),
            K::RaisError { .. } => Some("RAISERROR"),
            K::Throw(_) => Some("THROW"),
            K::BeginTransaction { .. } => Some("BEGIN TRANSACTION"),
            K::Commit { .. } => Some("COMMIT TRANSACTION"),
            K::Rollback { .. } => Some("ROLLBACK TRANSACTION"),
            K::SaveTransaction { .. } => Some("SAVE TRANSACTION"),
            K::Query(q) => {
                let assigns = matches!(&q.body, ast::SetExpr::Select(sel)
                    if sel.items.iter().all(|i| matches!(i, ast::SelectItem::Assign { .. })));
                if !assigns {
                    return Err(msg::FUNCTION_RETURNS_DATA.err().at_line(s.line));
                }
                None
            }
            _ => None,
        };
        if let Some(operator) = refused {
            return Err(msg::FUNCTION_SIDE_EFFECT.with(&[&operator]).at_line(s.line));
        }
    }
    Ok(())
}

/// Whether a data change's target is a table variable.
fn is_variable(name: &ast::ObjectName) -> bool {
    name.0.len() == 1 && name.0[0].value.starts_with('@')
}
