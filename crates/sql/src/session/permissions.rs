//! Permission checks at run time: the permissions a statement's plan needs on the objects
//! it names (with ownership chaining through the module being run and through views),
//! EXECUTE on a procedure, database permissions of DDL and BACKUP, and the statements that
//! change principals and permissions.

use super::Runner;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_execution::ddl::principals as ddl;
use tessera_execution::runtime::ExecCtx;
use tessera_security::principals;
use tessera_security::principals::check::{
    allowed, any_column_allowed, column_allowed, column_denied, database_denied, object_denied, On,
};
use tessera_semantics::catalog::{DbRef, Module, ObjectDep};
use tessera_syntax::ast::{self, StatementKind};

/// The procedure or function a runner runs: its database, its schema (where its one-part
/// names are looked for first) and its owner, from which the objects its statements name
/// are reached without permissions of their own when they have the same owner (ownership
/// chaining).
#[derive(Clone, Debug)]
pub(super) struct ModuleContext {
    pub db: String,
    pub schema: String,
    pub owner: i32,
    /// The user who created or last altered the module (`EXECUTE AS SELF`).
    pub altered_by: Option<i32>,
}

impl Runner<'_> {
    /// Checks that the session holds what the plan with these dependencies needs on every
    /// object it names. An object reached through a module (the one being run, or a view
    /// or function the statement names) with the same owner needs nothing of its own
    /// (ownership chaining; across databases only where `chained` lets it).
    pub(super) fn check_plan(&mut self, deps: &[ObjectDep]) -> SqlResult<()> {
        if self.check_databases(deps)? {
            return Ok(());
        }
        for dep in deps.iter().filter(|d| !d.access.is_empty()) {
            let db = dep.db.name(&self.state.database).to_string();
            let (security, token) = self.shared.access(self.state, &db)?;
            if token.unrestricted {
                continue;
            }
            let of = self.state.catalog_of(self.shared, &db)?;
            let Some(object) = of.catalog.lookup_key(&dep.key) else { continue };
            // A session's #temp tables and table variables (and ##global ones, which any
            // session may use) need no permission.
            if of.database.eq_ignore_ascii_case("tempdb") && object.name().starts_with('#') {
                continue;
            }
            let schema = object.schema().to_string();
            // Reached through a module (a view or function the statement names, or the module
            // running) by an unbroken ownership chain: nothing of its own is needed.
            let chained = match (&dep.via, security.schema_owner(&schema)) {
                (_, None) => false,
                (Some((via_db, via_key)), Some(owner)) => {
                    let via_name = via_db.name(&self.state.database);
                    if via_name.eq_ignore_ascii_case(&db) {
                        // The same database: its catalog and security are at hand.
                        of.catalog.lookup_key(via_key).and_then(|m| security.schema_owner(m.schema())) == Some(owner)
                    } else {
                        let via = self.state.catalog_of(self.shared, via_name)?;
                        let module_schema = via.catalog.lookup_key(via_key).map(|m| m.schema().to_string());
                        let via_security = self.shared.security(&self.state.catalog_memo, via_name)?;
                        match module_schema.and_then(|s| via_security.schema_owner(&s)) {
                            Some(module_owner) => self.chained(via_name, module_owner, &db, &security, owner)?,
                            None => false,
                        }
                    }
                }
                (None, Some(owner)) => match &self.owner {
                    Some(m) => self.chained(&m.db, m.owner, &db, &security, owner)?,
                    None => false,
                },
            };
            if chained {
                continue;
            }
            for permission in dep.access.permissions() {
                let on = On::Object { schema: &schema, id: object.id() };
                let table = match object {
                    tessera_semantics::catalog::Object::Table(t) if matches!(permission, "SELECT" | "UPDATE") => t,
                    _ => {
                        if !allowed(&security, &token, permission, on) {
                            return Err(object_denied(permission, object.name(), &of.database, &schema));
                        }
                        continue;
                    }
                };
                // Column permissions: each column read (SELECT) or set (UPDATE) needs the
                // permission on it or on the table, and no DENY on it.
                if !allowed(&security, &token, permission, on)
                    && !any_column_allowed(&security, &token, permission, object.id())
                {
                    return Err(object_denied(permission, object.name(), &of.database, &schema));
                }
                let columns = dep.columns.iter().filter(|(_, a)| a.includes(permission)).map(|(c, _)| *c as usize);
                for c in columns.filter(|c| *c < table.columns.len()) {
                    if !column_allowed(&security, &token, permission, &schema, object.id(), c as i32 + 1) {
                        let column = &table.columns[c].name;
                        return Err(column_denied(permission, column, object.name(), &of.database, &schema));
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether an object of `db` owned by `owner` (a principal of `security`, `db`'s) is
    /// reached by an unbroken ownership chain from a module of `module_db` owned by
    /// `module_owner`: the same owner in one database; across two databases that let
    /// chains cross (`Shared::chains_between`), owners mapped to the same login.
    fn chained(
        &self,
        module_db: &str,
        module_owner: i32,
        db: &str,
        security: &principals::Security,
        owner: i32,
    ) -> SqlResult<bool> {
        if module_db.eq_ignore_ascii_case(db) {
            return Ok(module_owner == owner);
        }
        if !self.shared.chains_between(module_db, db) {
            return Ok(false);
        }
        let module_security = self.shared.security(&self.state.catalog_memo, module_db)?;
        let sid_of = |s: &principals::Security, id: i32| s.principal_by_id(id).and_then(|p| p.sid.clone());
        Ok(sid_of(&module_security, module_owner).is_some_and(|sid| sid_of(security, owner) == Some(sid)))
    }

    /// Checks that the session may use every database these names were looked up in;
    /// true when it is unrestricted in all of them (no object needs a look).
    pub(super) fn check_databases(&mut self, deps: &[ObjectDep]) -> SqlResult<bool> {
        let mut unrestricted = true;
        for (i, dep) in deps.iter().enumerate() {
            if deps[..i].iter().any(|d| d.db == dep.db) {
                continue;
            }
            // The current database exists (a USE checked it); another may not.
            let db = dep.db.name(&self.state.database);
            if dep.db == DbRef::Current || self.shared.engine.exists(db) {
                unrestricted &= self.shared.access(self.state, db)?.1.unrestricted;
            } else {
                unrestricted = false;
            }
        }
        Ok(unrestricted)
    }

    /// EXECUTE on a procedure of database `db` about to run; its database and owner when
    /// it may (the owner its statements chain from).
    pub(super) fn check_execute(&mut self, db: &str, module: &Module) -> SqlResult<ModuleContext> {
        let (security, token) = self.shared.access(self.state, db)?;
        let schema = module.schema.as_str();
        let owner = security.schema_owner(schema).unwrap_or(principals::DBO_ID);
        let chained = match &self.owner {
            Some(m) => self.chained(&m.db, m.owner, db, &security, owner)?,
            None => false,
        };
        if !chained && !allowed(&security, &token, "EXECUTE", On::Object { schema, id: module.id }) {
            return Err(object_denied("EXECUTE", &module.name, db, schema));
        }
        Ok(ModuleContext { db: db.to_string(), schema: schema.to_string(), owner, altered_by: module.altered_by })
    }

    /// CREATE TABLE / VIEW / PROCEDURE / FUNCTION of `name`: the database permission, and
    /// ALTER on the schema it goes in (error 2760 when that schema does not exist).
    pub(super) fn check_create(&mut self, permission: &str, name: &ast::ObjectName) -> SqlResult<()> {
        let b = tessera_semantics::bind::Binder::new(self.shared, self.state, &[]);
        let (db, schema, object) = b.qualify_new(name)?;
        if object.starts_with('#') || !self.shared.engine.exists(&db) {
            return Ok(());
        }
        let (security, token) = self.shared.access(self.state, &db)?;
        if security.schema(&schema).is_none() {
            return Err(msg::SCHEMA_NOT_FOUND.with(&[&schema]));
        }
        if !allowed(&security, &token, permission, On::Database) {
            return Err(database_denied(permission, &db));
        }
        if !allowed(&security, &token, "ALTER", On::Schema(&schema)) {
            return Err(msg::SCHEMA_NOT_FOUND.with(&[&schema]));
        }
        Ok(())
    }

    /// CREATE (or, for an existing module, ALTER) of a procedure, function or view.
    pub(super) fn check_define(&mut self, permission: &str, name: &ast::ObjectName, alter: bool) -> SqlResult<()> {
        let b = tessera_semantics::bind::Binder::new(self.shared, self.state, &[]);
        let (db, schema, object) = b.qualify(name)?;
        let exists = self.shared.engine.exists(&db)
            && self.shared.catalog_named(&db)?.catalog.lookup(&schema, &object).is_some();
        if alter && exists {
            let shown = name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
            return self.check_alter(name, || msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"alter", &"object", &shown]));
        }
        self.check_create(permission, name)
    }

    /// REFERENCES on the table each FOREIGN KEY among `constraints` and `columns`' names
    /// (229 without it), as CREATE TABLE and ALTER TABLE … ADD need.
    pub(super) fn check_references(
        &mut self,
        columns: &[ast::ColumnDef],
        constraints: &[ast::TableConstraint],
    ) -> SqlResult<()> {
        let foreign_keys =
            columns.iter().flat_map(|c| &c.constraints).chain(constraints).filter_map(|c| match &c.kind {
                ast::ConstraintKind::ForeignKey { ref_table, .. } => Some(ref_table.clone()),
                _ => None,
            });
        for table in foreign_keys.collect::<Vec<_>>() {
            let b = tessera_semantics::bind::Binder::new(self.shared, self.state, &[]);
            let (db, schema, object) = b.qualify(&table)?;
            if !self.shared.engine.exists(&db) {
                continue;
            }
            let (security, token) = self.shared.access(self.state, &db)?;
            let of = self.shared.catalog_named(&db)?;
            let Some(found) = of.catalog.lookup(&schema, &object) else { continue };
            if !allowed(&security, &token, "REFERENCES", On::Object { schema: &schema, id: found.id() }) {
                return Err(object_denied("REFERENCES", found.name(), &of.database, found.schema()));
            }
        }
        Ok(())
    }

    /// DROP / ALTER / TRUNCATE / CREATE INDEX on the object `name`: ALTER on it (or
    /// CONTROL); without it, `refused` — the statement's "does not exist or you do not
    /// have permission" error, so that nothing is revealed.
    pub(super) fn check_alter(&mut self, name: &ast::ObjectName, refused: impl FnOnce() -> SqlError) -> SqlResult<()> {
        let b = tessera_semantics::bind::Binder::new(self.shared, self.state, &[]);
        let (db, schema, object) = b.qualify(name)?;
        if object.starts_with('#') || !self.shared.engine.exists(&db) {
            return Ok(());
        }
        let (security, token) = self.shared.access(self.state, &db)?;
        if token.unrestricted {
            return Ok(());
        }
        let of = self.shared.catalog_named(&db)?;
        let Some(found) = of.catalog.lookup(&schema, &object) else { return Ok(()) };
        if allowed(&security, &token, "ALTER", On::Object { schema: &schema, id: found.id() }) {
            Ok(())
        } else {
            Err(refused())
        }
    }

    /// Whether the session may change or drop the database `name` (its owner, db_owner,
    /// sysadmin, or ALTER ANY DATABASE at server level — dbcreator).
    pub(super) fn may_control_database(&mut self, name: &str) -> SqlResult<bool> {
        if self.shared.session_in_role(self.state, "sysadmin")
            || self.shared.holds_server(self.state, "ALTER ANY DATABASE")
        {
            return Ok(true);
        }
        if !self.shared.engine.exists(name) {
            return Ok(true);
        }
        match self.shared.access(self.state, name) {
            Ok((security, token)) => Ok(allowed(&security, &token, "CONTROL", On::Database)),
            Err(e) if e.number == 916 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// CREATE/ALTER/DROP USER and ROLE, CREATE/DROP SCHEMA (with the schema's elements),
    /// ALTER AUTHORIZATION and GRANT/DENY/REVOKE.
    pub(super) fn database_security(&mut self, kind: &StatementKind) -> SqlResult<()> {
        let mut ctx = ExecCtx::new(self.shared, self.state);
        match kind {
            StatementKind::CreateUser { name, login, options } => ddl::create_user(&mut ctx, name, login, options),
            StatementKind::AlterUser { name, options } => ddl::alter_user(&mut ctx, name, options),
            StatementKind::DropUser { name, if_exists } => ddl::drop_user(&mut ctx, name, *if_exists),
            StatementKind::CreateRole { name, owner } => ddl::create_role(&mut ctx, name, owner.as_ref()),
            StatementKind::AlterRole { role, action } => ddl::alter_role(&mut ctx, role, action),
            StatementKind::DropRole { name, if_exists } => ddl::drop_role(&mut ctx, name, *if_exists),
            StatementKind::CreateApplicationRole { name, options } => {
                tessera_execution::ddl::application_roles::create(&mut ctx, name, options)
            }
            StatementKind::AlterApplicationRole { name, options } => {
                tessera_execution::ddl::application_roles::alter(&mut ctx, name, options)
            }
            StatementKind::DropApplicationRole { name } => {
                tessera_execution::ddl::application_roles::drop(&mut ctx, name)
            }
            StatementKind::CreateSchema { name, owner, .. } => ddl::create_schema(&mut ctx, name, owner.as_ref()),
            StatementKind::DropSchema { name, if_exists } => ddl::drop_schema(&mut ctx, name, *if_exists),
            StatementKind::AlterAuthorization { on, owner } => ddl::alter_authorization(&mut ctx, on, owner.as_ref()),
            StatementKind::Permission(p) => ddl::permission(&mut ctx, p),
            _ => unreachable!("not a database security statement"),
        }
    }
}

impl Runner<'_> {
    /// `EXECUTE AS LOGIN = 'x'` (a sysadmin's), `EXECUTE AS USER = 'x'` (needs IMPERSONATE
    /// on the user: db_owner holds it; in the current database only) or `EXECUTE AS
    /// CALLER`; the context lasts
    /// until REVERT or the end of the module or dynamic batch it began in.
    pub(super) fn execute_as(&mut self, target: &ast::ExecuteAsTarget, no_revert: bool) -> SqlResult<()> {
        let previous_login = self.state.login.clone();
        let nest_level = self.state.nest_level;
        let mut database_only = false;
        let user = match target {
            ast::ExecuteAsTarget::Login(name) => {
                let refused = || msg::EXECUTE_AS_LOGIN_FAILED.with(&[&name]);
                let login = self.shared.logins.get(name).filter(|l| !l.disabled).ok_or_else(refused)?;
                // sysadmin, or IMPERSONATE on the login (IMPERSONATE ANY LOGIN, CONTROL
                // SERVER); never from inside a user's context.
                let may = self.shared.session_login(self.state).is_some_and(|me| {
                    self.shared.server_permissions.holds_on_login(&me, "IMPERSONATE", login.principal_id)
                });
                if !may || self.impersonating_user() {
                    return Err(refused());
                }
                self.state.login = login.name;
                None
            }
            ast::ExecuteAsTarget::User(name) => {
                let db = self.state.database.clone();
                let refused = || msg::EXECUTE_AS_USER_FAILED.with(&[&name]);
                let (security, token) = self.shared.access(self.state, &db)?;
                let user = security.principal(name).filter(|p| !p.kind.is_role()).ok_or_else(refused)?;
                // db_owner, or IMPERSONATE (or CONTROL) on the user.
                if !allowed(&security, &token, "IMPERSONATE", On::Principal(user.id)) {
                    return Err(refused());
                }
                // The session acts as the user's login (SUSER_NAME, server permissions).
                database_only = true;
                self.state.login = self.login_of(user).unwrap_or_else(|| user.name.clone());
                Some((db, user.id))
            }
            ast::ExecuteAsTarget::Caller => {
                database_only = self.state.impersonation.last().is_some_and(|c| c.database_only);
                self.state.impersonation.last().and_then(|c| c.user.clone())
            }
        };
        self.state.impersonation.push(tessera_execution::runtime::Impersonation {
            previous_login,
            user,
            no_revert,
            database_only,
            nest_level,
            origin: tessera_execution::runtime::ContextOrigin::ExecuteAs,
        });
        self.shared.refresh_default_schema(self.state);
        Ok(())
    }

    fn impersonating_user(&self) -> bool {
        self.state.impersonation.last().is_some_and(|c| c.user.is_some())
    }

    /// `REVERT`: ends the innermost EXECUTE AS begun at this nesting level (nothing when
    /// there is none); error 15196 for one begun WITH NO REVERT.
    pub(super) fn revert(&mut self) -> SqlResult<()> {
        let Some(context) = self.state.impersonation.last() else { return Ok(()) };
        if context.nest_level != self.state.nest_level {
            return Ok(());
        }
        if matches!(context.origin, tessera_execution::runtime::ContextOrigin::ApplicationRole { .. }) {
            return Err(msg::REVERT_CONTEXT_MISMATCH.with(&[&"sp_setapprole", &"Revert"]));
        }
        if context.no_revert {
            return Err(msg::CONTEXT_NOT_REVERTIBLE.err());
        }
        let context = self.state.impersonation.pop().expect("a context");
        self.state.login = context.previous_login;
        self.shared.refresh_default_schema(self.state);
        Ok(())
    }
}

impl Runner<'_> {
    /// A procedure's `WITH EXECUTE AS OWNER | 'user'`: the context its body runs in, one
    /// nesting level down (ended with it; REVERT inside cannot end it).
    pub(super) fn enter_module_context(
        &mut self,
        module: &ModuleContext,
        execute_as: &ast::ModuleExecuteAs,
    ) -> SqlResult<()> {
        let (security, _) = self.shared.access(self.state, &module.db)?;
        let user = match execute_as {
            ast::ModuleExecuteAs::Caller => return Ok(()),
            ast::ModuleExecuteAs::Owner => security.principal_by_id(module.owner).cloned(),
            ast::ModuleExecuteAs::User(name) => security.principal(name).filter(|p| !p.kind.is_role()).cloned(),
            // A definition kept before its author was (none then): its owner.
            ast::ModuleExecuteAs::SelfUser => {
                security.principal_by_id(module.altered_by.unwrap_or(module.owner)).cloned()
            }
        };
        let Some(user) = user else {
            let name = match execute_as {
                ast::ModuleExecuteAs::User(name) => name.clone(),
                _ => module.owner.to_string(),
            };
            return Err(msg::EXECUTE_AS_USER_FAILED.with(&[&name]));
        };
        let previous_login = self.state.login.clone();
        self.state.login = self.login_of(&user).unwrap_or_else(|| user.name.clone());
        self.state.impersonation.push(tessera_execution::runtime::Impersonation {
            previous_login,
            user: Some((module.db.clone(), user.id)),
            no_revert: true,
            database_only: true,
            nest_level: self.state.nest_level + 1,
            origin: tessera_execution::runtime::ContextOrigin::ExecuteAs,
        });
        Ok(())
    }

    /// The login a database user maps to, the name the session shows while it acts as the
    /// user (SUSER_NAME); none for a user without a login (the user's name is shown). The
    /// context holds no server permission either way (`Impersonation::database_only`).
    fn login_of(&self, user: &tessera_security::principals::Principal) -> Option<String> {
        user.sid.as_deref().and_then(|sid| self.shared.logins.all().into_iter().find(|l| l.sid == sid).map(|l| l.name))
    }

    /// CREATE PROCEDURE … WITH EXECUTE AS: the user must exist, and naming one takes
    /// IMPERSONATE on it (db_owner holds it).
    pub(super) fn check_module_execute_as(&mut self, execute_as: &ast::ModuleExecuteAs) -> SqlResult<()> {
        let name = match execute_as {
            ast::ModuleExecuteAs::Caller | ast::ModuleExecuteAs::Owner | ast::ModuleExecuteAs::SelfUser => {
                return Ok(())
            }
            ast::ModuleExecuteAs::User(name) => name,
        };
        let db = self.state.database.clone();
        let (security, token) = self.shared.access(self.state, &db)?;
        let user = security.principal(name).filter(|p| !p.kind.is_role());
        if !user.is_some_and(|u| allowed(&security, &token, "IMPERSONATE", On::Principal(u.id))) {
            return Err(msg::EXECUTE_AS_USER_FAILED.with(&[&name]));
        }
        Ok(())
    }
}

impl Runner<'_> {
    /// `KILL spid`: ends another session's connection (ALTER ANY CONNECTION: processadmin
    /// or sysadmin), its running request cancelled and its transaction rolled back.
    pub(super) fn kill(&mut self, spid: i64) -> SqlResult<()> {
        if !self.shared.holds_server(self.state, "ALTER ANY CONNECTION") {
            return Err(msg::KILL_PERMISSION_DENIED.err());
        }
        let Ok(spid) = i32::try_from(spid) else {
            return Err(msg::PROCESS_NOT_ACTIVE.with(&[&spid]));
        };
        if spid == self.state.spid {
            return Err(msg::KILL_OWN_PROCESS.err());
        }
        if spid < 51 {
            return Err(msg::KILL_SYSTEM_PROCESS.err());
        }
        if !self.shared.sessions.lock().contains_key(&spid) || !self.shared.kill(spid) {
            return Err(msg::PROCESS_NOT_ACTIVE.with(&[&spid]));
        }
        Ok(())
    }
}

/// Ends the EXECUTE AS contexts begun deeper than `nest_level` (a module or dynamic batch
/// returned).
pub(super) fn end_contexts_below(state: &mut tessera_execution::runtime::SessionState, nest_level: i32) {
    while let Some(context) = state.impersonation.last() {
        if context.nest_level <= nest_level {
            break;
        }
        let context = state.impersonation.pop().expect("a context");
        state.login = context.previous_login;
    }
}

/// A schema element's name in the schema being created: a one-part name gets the schema.
pub(super) fn in_schema(name: &ast::ObjectName, schema: &ast::Ident) -> ast::ObjectName {
    if name.0.len() == 1 {
        ast::ObjectName(vec![schema.clone(), name.0[0].clone()])
    } else {
        name.clone()
    }
}
