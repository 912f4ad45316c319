//! The statements that change a database's principals and permissions: CREATE/ALTER/DROP
//! USER and ROLE, ALTER ROLE … MEMBER, CREATE/DROP SCHEMA, ALTER AUTHORIZATION and
//! GRANT/DENY/REVOKE. Each checks the caller's permission first and changes nothing when
//! it fails.

use std::sync::Arc;
use tessera_errors::msg;

use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::Object;
use tessera_syntax::ast::{
    AlterRoleAction, Ident, PermissionAction, PermissionStatement, Securable, SecurableClass, UserLogin, UserOption,
};

use crate::runtime::{ExecCtx, SessionState, Shared};
use tessera_security::principals::check::{self, allowed, On, Token, PERMISSIONS};
use tessera_security::principals::{
    is_fixed_role, now, Class, GrantState, PermissionRow, Principal, PrincipalKind, Schema, Security, DBO_ID,
    FIRST_PRINCIPAL_ID, PUBLIC_ID,
};
use tessera_security::server_permissions::{is_server_permission, ServerPermission, LOGIN_PERMISSIONS};

/// The caller's principals and permissions in its current database.
pub(super) struct Caller {
    pub(super) db: Arc<tessera_database::Database>,
    pub(super) security: Arc<Security>,
    pub(super) token: Arc<Token>,
}

pub(super) fn caller(ctx: &ExecCtx) -> SqlResult<Caller> {
    let (security, token) = ctx.shared.access(ctx.session, &ctx.session.database.clone())?;
    let db = ctx.shared.database(&ctx.session.database)?;
    Ok(Caller { db, security, token })
}

impl Caller {
    pub(super) fn may(&self, permission: &str, on: On) -> bool {
        allowed(&self.security, &self.token, permission, on)
    }

    pub(super) fn require(&self, permission: &str) -> SqlResult<()> {
        if self.may(permission, On::Database) {
            Ok(())
        } else {
            Err(crate::ddl::logins::no_permission())
        }
    }
}

pub(super) fn exists(name: &str) -> SqlError {
    msg::USER_OR_ROLE_EXISTS.with(&[&name])
}

pub(super) fn not_found(verb: &str, what: &str, name: &str) -> SqlError {
    msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&verb, &what, &name])
}

/// `CREATE USER`.
pub fn create_user(ctx: &mut ExecCtx, name: &Ident, login: &UserLogin, options: &[UserOption]) -> SqlResult<()> {
    let c = caller(ctx)?;
    c.require("ALTER ANY USER")?;
    let password = options.iter().find_map(|o| match o {
        UserOption::Password { value, .. } => Some(value.clone()),
        _ => None,
    });
    let default_schema = options.iter().find_map(|o| match o {
        UserOption::DefaultSchema(s) => Some(s.value.clone()),
        _ => None,
    });
    let (kind, sid, password_hash) = match (login, &password) {
        (UserLogin::Without, None) => (PrincipalKind::UserWithoutLogin, None, None),
        (UserLogin::SameName, Some(p)) => {
            if !c.security.is_contained() {
                return Err(msg::PASSWORD_USER_NOT_CONTAINED.err());
            }
            tessera_security::logins::check_policy(p)?;
            (PrincipalKind::ContainedUser, None, Some(tessera_security::logins::hash_password(p)?))
        }
        (UserLogin::SameName, None) | (UserLogin::Login(_), None) => {
            let login_name = match login {
                UserLogin::Login(l) => &l.value,
                _ => &name.value,
            };
            let Some(l) = ctx.shared.logins.get(login_name) else {
                return Err(msg::INVALID_LOGIN.with(&[&login_name]));
            };
            (PrincipalKind::SqlUser, Some(l.sid), None)
        }
        _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"PASSWORD"])),
    };
    ctx.alter_security(&c.db, |s| {
        if s.principal(&name.value).is_some() {
            return Err(exists(&name.value));
        }
        if let Some(sid) = &sid {
            if s.user_for_sid(sid).is_some() || s.owner_sid() == sid.as_slice() {
                return Err(msg::LOGIN_ALREADY_HAS_USER.err());
            }
        }
        let mut next = s.clone();
        let id = next.new_principal_id();
        let made = Principal::new(id, &name.value, kind, now());
        next.put_principal(Principal {
            sid: sid.clone(),
            password_hash: password_hash.clone(),
            default_schema: default_schema.clone().or(made.default_schema.clone()),
            ..made
        })?;
        next.set_permission(PermissionRow {
            class: Class::Database,
            major_id: 0,
            minor_id: 0,
            grantee: id,
            permission: "CONNECT".to_string(),
            grantor: c.token.user,
            state: GrantState::Grant,
        })?;
        Ok((next, ()))
    })
}

/// `ALTER USER … WITH …`, each option with the permission SQL Server asks for it: NAME
/// ALTER ANY USER; LOGIN CONTROL on the database; DEFAULT_SCHEMA, DEFAULT_LANGUAGE and
/// PASSWORD ALTER on the user (which ALTER ANY USER covers), or being that user (its own
/// password only with the right OLD_PASSWORD).
pub fn alter_user(ctx: &mut ExecCtx, name: &Ident, options: &[UserOption]) -> SqlResult<()> {
    let c = caller(ctx)?;
    let mut login_sid = None;
    let mut password_hash = None;
    for o in options {
        match o {
            UserOption::Login(l) => match ctx.shared.logins.get(&l.value) {
                Some(found) => login_sid = Some(found.sid),
                None => return Err(msg::INVALID_LOGIN.with(&[&l.value])),
            },
            UserOption::Password { value, .. } => {
                tessera_security::logins::check_policy(value)?;
                password_hash = Some(tessera_security::logins::hash_password(value)?);
            }
            _ => {}
        }
    }
    ctx.alter_security(&c.db, |s| {
        let Some(user) = s.principal(&name.value).filter(|p| p.kind.is_user()).cloned() else {
            return Err(not_found("alter", "user", &name.value));
        };
        let own = c.token.user == user.id;
        for o in options {
            let allowed = match o {
                UserOption::Name(_) => c.may("ALTER ANY USER", On::Database),
                UserOption::Login(_) => c.may("CONTROL", On::Database),
                UserOption::Password { old: Some(old), .. } if own => {
                    tessera_security::logins::verify_password(old, user.password_hash.as_deref().unwrap_or_default())
                }
                UserOption::DefaultSchema(_) | UserOption::DefaultLanguage(_) if own => true,
                _ => c.may("ALTER", On::Principal(user.id)),
            };
            if !allowed {
                return Err(crate::ddl::logins::no_permission());
            }
        }
        let mut next = s.clone();
        let mut user = user;
        for o in options {
            match o {
                UserOption::DefaultSchema(schema) => user.default_schema = Some(schema.value.clone()),
                UserOption::Name(new) => {
                    if user.is_fixed() {
                        return Err(msg::CANNOT_MODIFY_USER.with(&[&"alter", &user.name]));
                    }
                    if next.principal(&new.value).is_some() {
                        return Err(exists(&new.value));
                    }
                    user.name = new.value.clone();
                }
                UserOption::Login(_) => {
                    if let Some(sid) = &login_sid {
                        if next.user_for_sid(sid).is_some() {
                            return Err(msg::LOGIN_ALREADY_HAS_USER.err());
                        }
                    }
                    user.sid = login_sid.clone();
                    user.kind = PrincipalKind::SqlUser;
                }
                UserOption::Password { .. } => {
                    if user.kind != PrincipalKind::ContainedUser {
                        return Err(msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"alter", &"user", &user.name]));
                    }
                    user.password_hash = password_hash.clone();
                }
                UserOption::DefaultLanguage(_) => {}
            }
        }
        user.modify_date = now();
        next.put_principal(user)?;
        Ok((next, ()))
    })
}

/// `DROP USER`.
pub fn drop_user(ctx: &mut ExecCtx, name: &Ident, if_exists: bool) -> SqlResult<()> {
    let c = caller(ctx)?;
    c.require("ALTER ANY USER")?;
    ctx.alter_security(&c.db, |s| {
        let Some(user) = s.principal(&name.value).filter(|p| p.kind.is_user()).cloned() else {
            if if_exists {
                return Ok((s.clone(), ()));
            }
            return Err(not_found("drop", "user", &name.value));
        };
        if user.is_fixed() {
            return Err(msg::CANNOT_MODIFY_USER.with(&[&"drop", &user.name]));
        }
        Ok((without_principal(s, &user)?, ()))
    })
}

/// `s` without `p`, its memberships and the permissions granted to it; error 15138 when
/// it owns a schema or a role.
pub(super) fn without_principal(s: &Security, p: &Principal) -> SqlResult<Security> {
    if s.schemas().any(|sc| sc.owner == p.id) || s.principals().any(|r| r.kind.is_role() && r.owner == Some(p.id)) {
        return Err(msg::PRINCIPAL_OWNS_SCHEMA.err());
    }
    let mut next = s.clone();
    next.remove_principal(p.id);
    Ok(next)
}

/// `CREATE ROLE … [AUTHORIZATION owner]`.
pub fn create_role(ctx: &mut ExecCtx, name: &Ident, owner: Option<&Ident>) -> SqlResult<()> {
    let c = caller(ctx)?;
    if !c.may("CREATE ROLE", On::Database) && !c.may("ALTER ANY ROLE", On::Database) {
        return Err(crate::ddl::logins::no_permission());
    }
    ctx.alter_security(&c.db, |s| {
        if s.principal(&name.value).is_some() {
            return Err(exists(&name.value));
        }
        let owner = match owner {
            Some(o) => s.principal(&o.value).ok_or_else(|| not_found("find", "user", &o.value))?.id,
            None => c.token.user,
        };
        let mut next = s.clone();
        let id = next.new_principal_id();
        let made = Principal::new(id, &name.value, PrincipalKind::Role, now());
        next.put_principal(Principal { owner: Some(owner), ..made })?;
        Ok((next, ()))
    })
}

/// Whether the caller may change `role`: its membership or name (`permission` ALTER), or
/// drop it (CONTROL). A fixed role needs membership of db_owner (db_securityadmin for the
/// others); a user-defined one ownership, the permission on it, or ALTER ANY ROLE (which
/// covers ALTER on every role, CONTROL on none).
fn may_change_role(c: &Caller, role: &Principal, permission: &str) -> bool {
    if c.token.unrestricted || c.token.holds(tessera_security::principals::DB_OWNER_ID) {
        return true;
    }
    if is_fixed_role(role.id) {
        return role.id != tessera_security::principals::DB_OWNER_ID && c.token.holds(16386);
    }
    role.owner.is_some_and(|o| c.token.holds(o))
        || c.may(permission, On::Principal(role.id))
        || c.may("ALTER ANY ROLE", On::Database)
}

/// `ALTER ROLE … ADD MEMBER | DROP MEMBER | WITH NAME =`.
pub fn alter_role(ctx: &mut ExecCtx, role: &Ident, action: &AlterRoleAction) -> SqlResult<()> {
    let c = caller(ctx)?;
    ctx.alter_security(&c.db, |s| {
        let Some(r) = s.principal(&role.value).filter(|p| p.kind.is_role()).cloned() else {
            return Err(not_found("alter", "role", &role.value));
        };
        if !may_change_role(&c, &r, "ALTER") {
            return Err(not_found("alter", "role", &role.value));
        }
        let mut next = s.clone();
        match action {
            AlterRoleAction::AddMember(m) | AlterRoleAction::DropMember(m) => {
                let add = matches!(action, AlterRoleAction::AddMember(_));
                let verb = if add { "add" } else { "drop" };
                let Some(member) = s.principal(&m.value).cloned() else {
                    return Err(not_found(verb, "principal", &m.value));
                };
                if r.id == PUBLIC_ID || member.id == DBO_ID || member.id == PUBLIC_ID {
                    return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&(if r.id == PUBLIC_ID {
                        &r.name
                    } else {
                        &member.name
                    })]));
                }
                if add {
                    if member.id == r.id || s.members().iter().any(|&(role, mem)| role == member.id && mem == r.id) {
                        return Err(msg::CIRCULAR_ROLE_MEMBERSHIP.err());
                    }
                    next.add_member(r.id, member.id)?;
                } else {
                    next.remove_member(r.id, member.id);
                }
            }
            AlterRoleAction::Rename(new) => {
                if r.is_fixed() {
                    return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&r.name]));
                }
                if s.principal(&new.value).is_some() {
                    return Err(exists(&new.value));
                }
                let mut renamed = r.clone();
                renamed.name = new.value.clone();
                renamed.modify_date = now();
                next.put_principal(renamed)?;
            }
        }
        Ok((next, ()))
    })
}

/// `DROP ROLE`.
pub fn drop_role(ctx: &mut ExecCtx, name: &Ident, if_exists: bool) -> SqlResult<()> {
    let c = caller(ctx)?;
    ctx.alter_security(&c.db, |s| {
        let Some(r) = s.principal(&name.value).filter(|p| p.kind.is_role()).cloned() else {
            if if_exists {
                return Ok((s.clone(), ()));
            }
            return Err(not_found("drop", "role", &name.value));
        };
        if !may_change_role(&c, &r, "CONTROL") {
            return Err(not_found("drop", "role", &name.value));
        }
        if r.is_fixed() {
            return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&r.name]));
        }
        if s.members().iter().any(|&(role, _)| role == r.id) {
            return Err(msg::ROLE_HAS_MEMBERS.err());
        }
        Ok((without_principal(s, &r)?, ()))
    })
}

/// `CREATE SCHEMA name [AUTHORIZATION owner]` (its elements run after it, in the session).
pub fn create_schema(ctx: &mut ExecCtx, name: &Ident, owner: Option<&Ident>) -> SqlResult<()> {
    let c = caller(ctx)?;
    if !c.may("CREATE SCHEMA", On::Database) {
        return Err(check::database_denied("CREATE SCHEMA", c.db.name()));
    }
    ctx.alter_security(&c.db, |s| {
        if s.schema(&name.value).is_some() {
            return Err(msg::OBJECT_ALREADY_EXISTS.with(&[&"an object", &name.value]));
        }
        let owner = match owner {
            Some(o) => s.principal(&o.value).ok_or_else(|| not_found("find", "user", &o.value))?.id,
            None => c.token.user,
        };
        let mut next = s.clone();
        let id = next.new_schema_id();
        next.put_schema(Schema { id, name: name.value.clone(), owner })?;
        Ok((next, ()))
    })
}

/// `DROP SCHEMA`: error 3729 while an object is in it.
pub fn drop_schema(ctx: &mut ExecCtx, name: &Ident, if_exists: bool) -> SqlResult<()> {
    let c = caller(ctx)?;
    let catalog = ctx.catalog(&c.db)?;
    ctx.alter_security(&c.db, |s| {
        let Some(schema) = s.schema(&name.value).cloned() else {
            if if_exists {
                return Ok((s.clone(), ()));
            }
            return Err(not_found("drop", "schema", &name.value));
        };
        if !c.may("CONTROL", On::Schema(&schema.name)) || schema.id < FIRST_PRINCIPAL_ID || is_fixed_role(schema.id) {
            return Err(not_found("drop", "schema", &name.value));
        }
        if let Some(o) = catalog.objects().into_iter().find(|o| o.schema().eq_ignore_ascii_case(&schema.name)) {
            return Err(msg::DROP_SCHEMA_REFERENCED.with(&[&schema.name, &o.name()]));
        }
        let mut next = s.clone();
        next.remove_schema(schema.id);
        Ok((next, ()))
    })
}

/// `ALTER AUTHORIZATION ON SCHEMA::s | DATABASE::d TO principal`.
pub fn alter_authorization(ctx: &mut ExecCtx, on: &Securable, owner: Option<&Ident>) -> SqlResult<()> {
    let c = caller(ctx)?;
    let target = &on.name.name().value;
    match on.class {
        SecurableClass::Schema => ctx.alter_security(&c.db, |s| {
            let Some(mut schema) = s.schema(target).cloned() else {
                return Err(not_found("find", "schema", target));
            };
            if !c.may("CONTROL", On::Schema(&schema.name)) {
                return Err(not_found("find", "schema", target));
            }
            schema.owner = match owner {
                Some(o) => s.principal(&o.value).ok_or_else(|| not_found("find", "user", &o.value))?.id,
                None => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"OWNER"])),
            };
            let mut next = s.clone();
            next.put_schema(schema)?;
            Ok((next, ()))
        }),
        SecurableClass::Database => {
            let Some(o) = owner else {
                return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"OWNER"]));
            };
            let Some(login) = ctx.shared.logins.get(&o.value) else {
                return Err(msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"find", &"principal", &o.value]));
            };
            let db = ctx.shared.database(target)?;
            let (security, token) = ctx.shared.access(ctx.session, db.name())?;
            if !allowed(&security, &token, "CONTROL", On::Database) {
                return Err(not_found("find", "database", target));
            }
            ctx.alter_security(&db, |s| {
                if s.user_for_sid(&login.sid).is_some() {
                    return Err(msg::NEW_OWNER_ALREADY_USER.err());
                }
                let mut next = s.clone();
                if let Some(mut dbo) = next.principal("dbo").cloned() {
                    dbo.sid = Some(login.sid.clone());
                    next.put_principal(dbo)?;
                }
                Ok((next, ()))
            })?;
            // The registry's owner, which listings read without opening the database.
            let (_, _, mut options) =
                ctx.shared.engine.database_info(db.name()).ok_or_else(|| not_found("find", "database", target))?;
            options.owner_sid = (login.sid.as_slice() != [1]).then(|| login.sid.clone());
            ctx.shared.engine.alter_database(db.name(), options)?;
            Ok(())
        }
        _ => Err(msg::ADMIN_ACTION_DENIED.err()),
    }
}

/// Makes the login with security id `sid` the owner (`dbo`) of the database `db`, as
/// CREATE DATABASE does for the login that creates it.
pub fn set_owner(shared: &Shared, db: &Arc<tessera_database::Database>, sid: &[u8]) -> SqlResult<()> {
    shared.alter_security(db, |s| {
        let mut next = s.clone();
        if let Some(mut dbo) = next.principal("dbo").cloned() {
            dbo.sid = Some(sid.to_vec());
            next.put_principal(dbo)?;
        }
        Ok((next, ()))
    })
}

/// What a GRANT/DENY/REVOKE is on, resolved: (class, major id, the check's `On`, name).
struct Target {
    class: Class,
    major_id: i32,
    schema: Option<String>,
    /// The permissions `ALL` stands for here.
    all: &'static [&'static str],
}

fn target(ctx: &ExecCtx, c: &Caller, on: Option<&Securable>) -> SqlResult<Target> {
    let database_all: &[&str] =
        &["BACKUP DATABASE", "BACKUP LOG", "CREATE FUNCTION", "CREATE PROCEDURE", "CREATE TABLE", "CREATE VIEW"];
    let Some(on) = on else {
        return Ok(Target { class: Class::Database, major_id: 0, schema: None, all: database_all });
    };
    let shown = on.name.0.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
    match on.class {
        SecurableClass::Database => {
            if !on.name.name().value.eq_ignore_ascii_case(c.db.name()) {
                return Err(msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"find", &"database", &shown]));
            }
            Ok(Target { class: Class::Database, major_id: 0, schema: None, all: database_all })
        }
        SecurableClass::Schema => {
            let schema = c.security.schema(&on.name.name().value).ok_or_else(|| not_found("find", "schema", &shown))?;
            Ok(Target {
                class: Class::Schema,
                major_id: schema.id,
                schema: Some(schema.name.clone()),
                all: &["SELECT", "INSERT", "UPDATE", "DELETE", "EXECUTE", "REFERENCES"],
            })
        }
        SecurableClass::Object => {
            let b = tessera_semantics::bind::Binder::new(ctx.shared, ctx.session, &[]);
            let (db, schema, name) = b.qualify(&on.name)?;
            if !db.eq_ignore_ascii_case(c.db.name()) {
                return Err(msg::TRUNCATE_TABLE_NOT_FOUND.with(&[&shown]));
            }
            let catalog = ctx.catalog(&c.db)?;
            let object = catalog.lookup(&schema, &name).ok_or_else(|| not_found("find", "object", &shown))?;
            let all: &'static [&'static str] = match object {
                Object::Table(_) => &["DELETE", "INSERT", "REFERENCES", "SELECT", "UPDATE"],
                Object::Module(m) => match m.kind {
                    tessera_semantics::catalog::ModuleKind::Procedure => &["EXECUTE"],
                    tessera_semantics::catalog::ModuleKind::ScalarFunction => &["EXECUTE", "REFERENCES"],
                    _ => &["DELETE", "INSERT", "REFERENCES", "SELECT", "UPDATE"],
                },
                Object::Sequence(_) => &["REFERENCES", "UPDATE"],
            };
            Ok(Target { class: Class::Object, major_id: object.id(), schema: Some(object.schema().to_string()), all })
        }
        SecurableClass::User | SecurableClass::Role | SecurableClass::ApplicationRole => {
            let (kind, what) = match on.class {
                SecurableClass::User => (None, "user"),
                SecurableClass::Role => (Some(PrincipalKind::Role), "role"),
                _ => (Some(PrincipalKind::ApplicationRole), "application role"),
            };
            let principal = c
                .security
                .principal(&on.name.name().value)
                .filter(|p| kind.map_or(p.kind.is_user(), |k| p.kind == k))
                .ok_or_else(|| not_found("find", what, &shown))?;
            let all: &'static [&'static str] = if principal.kind.is_user() {
                &["ALTER", "CONTROL", "IMPERSONATE", "VIEW DEFINITION"]
            } else {
                &["ALTER", "CONTROL", "VIEW DEFINITION"]
            };
            Ok(Target { class: Class::Principal, major_id: principal.id, schema: None, all })
        }
        _ => Err(msg::ADMIN_ACTION_DENIED.err()),
    }
}

/// `GRANT`, `DENY` or `REVOKE` on the server, the database, a schema, an object, a user or
/// a role.
pub fn permission(ctx: &mut ExecCtx, p: &PermissionStatement) -> SqlResult<()> {
    let on_login = p.on.as_ref().is_some_and(|on| on.class == SecurableClass::Login);
    if on_login || (p.on.is_none() && p.permissions.iter().all(|perm| is_server_permission(&perm.name))) {
        return server_permission(ctx, p);
    }
    let c = caller(ctx)?;
    let t = target(ctx, &c, p.on.as_ref())?;
    let on = match (&t.class, &t.schema) {
        (Class::Object, Some(schema)) => On::Object { schema, id: t.major_id },
        (Class::Schema, Some(schema)) => On::Schema(schema),
        (Class::Principal, _) => On::Principal(t.major_id),
        _ => On::Database,
    };
    // (permission, column id: 0 for the object itself).
    let mut names: Vec<(String, i32)> = Vec::new();
    for perm in &p.permissions {
        if !perm.columns.is_empty() {
            for id in column_ids(ctx, &t, &perm.name, &perm.columns)? {
                names.push((perm.name.clone(), id));
            }
            continue;
        }
        if perm.name == "ALL" {
            names.extend(t.all.iter().map(|n| (n.to_string(), 0)));
            continue;
        }
        let valid = match t.class {
            Class::Principal => t.all.contains(&perm.name.as_str()),
            _ => PERMISSIONS.iter().find(|(n, ..)| *n == perm.name).is_some_and(|(_, _, db, schema, object)| {
                match t.class {
                    Class::Database => *db,
                    Class::Schema => *schema,
                    _ => *object,
                }
            }),
        };
        if !valid {
            return Err(msg::INCOMPATIBLE_PRIVILEGE.with(&[&perm.name]));
        }
        names.push((perm.name.clone(), 0));
    }
    // The grantor needs CONTROL on the securable (db_securityadmin manages permissions
    // on the database and its schemas), or, to GRANT or REVOKE, each permission WITH
    // GRANT OPTION.
    let securityadmin = c.token.holds(16386) && t.class != Class::Object;
    let grants_on = !matches!(p.action, PermissionAction::Deny { .. })
        && names.iter().all(|(name, _)| check::grantable(&c.security, &c.token, name, on));
    if !securityadmin && !c.may("CONTROL", on) && !grants_on {
        let shown = p.on.as_ref().map_or(c.db.name().to_string(), |s| s.name.name().value.clone());
        return Err(msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"find", &"object", &shown]));
    }
    ctx.alter_security(&c.db, |s| {
        let mut grantees = Vec::new();
        for g in &p.principals {
            let Some(principal) = s.principal(&g.value) else {
                return Err(not_found("find", "user", &g.value));
            };
            if matches!(principal.id, DBO_ID | 3 | 4) {
                return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&principal.name]));
            }
            if is_fixed_role(principal.id) {
                return Err(msg::SPECIAL_ROLE_PERMISSIONS.err());
            }
            grantees.push(principal.id);
        }
        let mut next = s.clone();
        for grantee in grantees {
            for (name, column) in &names {
                let row = PermissionRow {
                    class: t.class,
                    major_id: t.major_id,
                    minor_id: *column,
                    grantee,
                    permission: name.clone(),
                    grantor: c.token.user,
                    state: GrantState::Grant,
                };
                // Taking a permission (or its grant option) from a grantee that passed it on
                // takes the grants it made too, only when asked (CASCADE; 4611 otherwise).
                let takes_away = match p.action {
                    PermissionAction::Grant { .. } => None,
                    PermissionAction::Deny { cascade } | PermissionAction::Revoke { cascade, .. } => Some(cascade),
                };
                if let Some(cascade) = takes_away {
                    if next.granted_onward(&row) {
                        if !cascade {
                            return Err(msg::REVOKE_REQUIRES_CASCADE.err());
                        }
                        next.revoke_onward(&row);
                    }
                }
                match p.action {
                    PermissionAction::Grant { with_grant_option } => {
                        let state =
                            if with_grant_option { GrantState::GrantWithGrantOption } else { GrantState::Grant };
                        next.set_permission(PermissionRow { state, ..row })?;
                    }
                    PermissionAction::Deny { .. } => {
                        next.set_permission(PermissionRow { state: GrantState::Deny, ..row })?
                    }
                    PermissionAction::Revoke { grant_option_for, .. } => next.revoke(&row, grant_option_for),
                }
            }
        }
        Ok((next, ()))
    })
}

/// The column ids a column permission (`GRANT SELECT (a, b) ON t`) names: SELECT, UPDATE
/// and REFERENCES on a table's columns (4606 for another permission or securable, 207
/// for a column the table does not have).
fn column_ids(
    ctx: &ExecCtx,
    t: &Target,
    permission: &str,
    columns: &[tessera_syntax::ast::Ident],
) -> SqlResult<Vec<i32>> {
    let incompatible = || msg::INCOMPATIBLE_PRIVILEGE.with(&[&permission]);
    if t.class != Class::Object || !["SELECT", "UPDATE", "REFERENCES"].contains(&permission) {
        return Err(incompatible());
    }
    let catalog = ctx.shared.catalog_named(&ctx.session.database)?.catalog;
    let Some(table) = catalog.table_by_id(t.major_id) else { return Err(incompatible()) };
    columns
        .iter()
        .map(|c| table.column(&c.value).map(|i| i as i32 + 1).ok_or_else(|| msg::INVALID_COLUMN_NAME.with(&[&c.value])))
        .collect()
}

/// Whether the session's login may use the database `name` (error 916 when not).
pub fn check_access(shared: &Shared, state: &SessionState, name: &str) -> SqlResult<()> {
    shared.access(state, name).map(|_| ())
}

/// `GRANT|DENY|REVOKE <server permission> TO login | server role`, in master only (4621),
/// by a sysadmin, a securityadmin or a holder of CONTROL SERVER.
fn server_permission(ctx: &ExecCtx, p: &PermissionStatement) -> SqlResult<()> {
    if !ctx.session.database.eq_ignore_ascii_case("master") {
        return Err(msg::SERVER_GRANT_OUTSIDE_MASTER.err());
    }
    // `LOGIN::name`: the login the permissions are on, and each must be one a login has.
    let mut on_sysadmin = false;
    let on_login = match &p.on {
        Some(on) => {
            let name = &on.name.name().value;
            let target = ctx.shared.logins.get(name).ok_or_else(|| not_found("find", "login", name))?;
            for perm in &p.permissions {
                if !LOGIN_PERMISSIONS.iter().any(|(n, ..)| *n == perm.name) || !perm.columns.is_empty() {
                    return Err(msg::INCOMPATIBLE_PRIVILEGE.with(&[&perm.name]));
                }
            }
            on_sysadmin = target.is_sysadmin();
            target.principal_id
        }
        None => 0,
    };
    let caller = ctx.shared.session_login(ctx.session);
    // A permission on a sysadmin's login (IMPERSONATE would make its holder one) only
    // from a sysadmin, as only a sysadmin may change a sysadmin's login.
    let may = caller.as_ref().is_some_and(|l| {
        (l.is_member("securityadmin")
            || ctx.shared.server_permissions.holds(l, "CONTROL SERVER")
            || (on_login != 0 && ctx.shared.server_permissions.holds_on_login(l, "CONTROL", on_login)))
            && (!on_sysadmin || l.is_sysadmin())
    });
    if !may {
        return Err(msg::GRANTOR_LACKS_GRANT_OPTION.err());
    }
    let grantor = caller.map_or(1, |l| l.principal_id);
    let mut grantees = Vec::new();
    for g in &p.principals {
        let id = match ctx.shared.logins.get(&g.value) {
            Some(l) if l.principal_id == 1 => return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&l.name])),
            Some(l) => l.principal_id,
            None => match tessera_security::logins::SERVER_ROLES.iter().find(|(_, r)| g.is(r)) {
                Some((3, name)) => return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&name])),
                Some((id, _)) => *id,
                None => return Err(not_found("find", "login", &g.value)),
            },
        };
        grantees.push(id);
    }
    ctx.shared.server_permissions.change(|rows| {
        for grantee in &grantees {
            for perm in &p.permissions {
                let at = rows
                    .iter()
                    .position(|r| r.on_login == on_login && r.grantee == *grantee && r.permission == perm.name);
                let state = match p.action {
                    PermissionAction::Grant { with_grant_option: true } => GrantState::GrantWithGrantOption,
                    PermissionAction::Grant { .. } => GrantState::Grant,
                    PermissionAction::Deny { .. } => GrantState::Deny,
                    PermissionAction::Revoke { grant_option_for, .. } => {
                        match at {
                            Some(i) if grant_option_for && rows[i].state == GrantState::GrantWithGrantOption => {
                                rows[i].state = GrantState::Grant;
                            }
                            Some(i) if !grant_option_for => {
                                rows.remove(i);
                            }
                            _ => {}
                        }
                        continue;
                    }
                };
                let row =
                    ServerPermission { on_login, grantee: *grantee, permission: perm.name.clone(), grantor, state };
                match at {
                    Some(i) => rows[i] = row,
                    None => rows.push(row),
                }
            }
        }
    })
}

/// What a login naming a contained database finds there.
pub enum ContainedLogin {
    /// The database is not contained, or has no contained user of that name: the login
    /// is a server login's.
    NotContained,
    /// A contained user whose password matched: (its name, its principal id).
    Accepted(String, i32),
    /// A contained user whose password did not match.
    Refused,
}

/// Checks a login against the contained users of `database` (slow when it hashes: run it
/// on a blocking thread). As SQL Server does, a contained database's users are tried
/// before the server's logins.
pub fn check_contained_login(shared: &Shared, database: &str, user: &str, password: &str) -> SqlResult<ContainedLogin> {
    if database.is_empty() || !shared.engine.exists(database) {
        return Ok(ContainedLogin::NotContained);
    }
    let security = shared.security(&crate::runtime::CatalogMemo::default(), database)?;
    if !security.is_contained() {
        return Ok(ContainedLogin::NotContained);
    }
    let Some(found) = security.principal(user).filter(|p| p.kind == PrincipalKind::ContainedUser) else {
        return Ok(ContainedLogin::NotContained);
    };
    let hash = found.password_hash.as_deref().unwrap_or_default();
    if tessera_security::logins::verify_password(password, hash) {
        Ok(ContainedLogin::Accepted(found.name.clone(), found.id))
    } else {
        Ok(ContainedLogin::Refused)
    }
}
