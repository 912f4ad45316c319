//! `CREATE / ALTER / DROP APPLICATION ROLE`: database principals of type `A` with a
//! password, no members and no login. A session becomes one with `sp_setapprole` (the
//! session layer keeps that context; [`activate`] checks the password). Creating or
//! dropping one needs ALTER ANY APPLICATION ROLE (db_securityadmin and db_owner hold it);
//! altering one, ALTER on it (which ALTER ANY APPLICATION ROLE covers). A failed statement
//! changes nothing.

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{Ident, UserOption};

use super::principals::{caller, exists, not_found, without_principal};
use crate::runtime::ExecCtx;
use tessera_security::principals::check::On;
use tessera_security::principals::{now, Principal, PrincipalKind, Security};

/// An option that does not belong to an application role: SQL Server's parser refuses it.
fn misplaced(option: &str) -> SqlError {
    msg::SYNTAX_ERROR_NEAR.with(&[&option])
}

/// The role named `name`, if it is an application role.
fn find<'a>(s: &'a Security, name: &str) -> Option<&'a Principal> {
    s.principal(name).filter(|p| p.kind == PrincipalKind::ApplicationRole)
}

/// `CREATE APPLICATION ROLE name WITH PASSWORD = 'p' [, DEFAULT_SCHEMA = s]`.
pub fn create(ctx: &mut ExecCtx, name: &Ident, options: &[UserOption]) -> SqlResult<()> {
    let c = caller(ctx)?;
    c.require("ALTER ANY APPLICATION ROLE")?;
    let mut password = None;
    let mut default_schema = None;
    for o in options {
        match o {
            UserOption::Password { value, old: None } => password = Some(value),
            UserOption::DefaultSchema(s) => default_schema = Some(s.value.clone()),
            UserOption::Password { .. } => return Err(misplaced("OLD_PASSWORD")),
            UserOption::Name(_) => return Err(misplaced("NAME")),
            UserOption::Login(_) => return Err(misplaced("LOGIN")),
            UserOption::DefaultLanguage(_) => return Err(misplaced("DEFAULT_LANGUAGE")),
        }
    }
    let Some(password) = password else {
        return Err(misplaced(&name.value));
    };
    tessera_security::logins::check_policy(password)?;
    let hash = tessera_security::logins::hash_password(password)?;
    ctx.alter_security(&c.db, |s| {
        if s.principal(&name.value).is_some() {
            return Err(exists(&name.value));
        }
        let mut next = s.clone();
        let made = Principal::new(next.new_principal_id(), &name.value, PrincipalKind::ApplicationRole, now());
        next.put_principal(Principal {
            password_hash: Some(hash.clone()),
            default_schema: default_schema.clone().or(made.default_schema.clone()),
            ..made
        })?;
        Ok((next, ()))
    })
}

/// `ALTER APPLICATION ROLE name WITH NAME = n | PASSWORD = 'p' | DEFAULT_SCHEMA = s, …`.
pub fn alter(ctx: &mut ExecCtx, name: &Ident, options: &[UserOption]) -> SqlResult<()> {
    let c = caller(ctx)?;
    let refused = || not_found("alter", "application role", &name.value);
    let mut hash = None;
    for o in options {
        match o {
            UserOption::Password { value, old: None } => {
                tessera_security::logins::check_policy(value)?;
                hash = Some(tessera_security::logins::hash_password(value)?);
            }
            UserOption::Password { .. } => return Err(misplaced("OLD_PASSWORD")),
            UserOption::Login(_) => return Err(misplaced("LOGIN")),
            UserOption::DefaultLanguage(_) => return Err(misplaced("DEFAULT_LANGUAGE")),
            UserOption::Name(_) | UserOption::DefaultSchema(_) => {}
        }
    }
    ctx.alter_security(&c.db, |s| {
        let mut role = find(s, &name.value).cloned().ok_or_else(refused)?;
        if !c.may("ALTER", On::Principal(role.id)) {
            return Err(refused());
        }
        for o in options {
            match o {
                UserOption::Name(new) => {
                    if s.principal(&new.value).is_some_and(|p| p.id != role.id) {
                        return Err(exists(&new.value));
                    }
                    role.name = new.value.clone();
                }
                UserOption::DefaultSchema(schema) => role.default_schema = Some(schema.value.clone()),
                _ => {}
            }
        }
        if let Some(hash) = &hash {
            role.password_hash = Some(hash.clone());
        }
        role.modify_date = now();
        let mut next = s.clone();
        next.put_principal(role)?;
        Ok((next, ()))
    })
}

/// `DROP APPLICATION ROLE name`: error 15138 while it owns a schema.
pub fn drop(ctx: &mut ExecCtx, name: &Ident) -> SqlResult<()> {
    let c = caller(ctx)?;
    ctx.alter_security(&c.db, |s| {
        let refused = || not_found("drop", "application role", &name.value);
        let role = find(s, &name.value).cloned().ok_or_else(refused)?;
        if !c.may("ALTER ANY APPLICATION ROLE", On::Database) && !c.may("CONTROL", On::Principal(role.id)) {
            return Err(refused());
        }
        Ok((without_principal(s, &role)?, ()))
    })
}

/// `sp_setapprole`'s check: the principal id of the application role `name` when
/// `password` is its password. Error 15161 otherwise, the same whether the role is missing
/// or the password wrong, so that it reveals neither.
pub fn activate(security: &Security, name: &str, password: &str) -> SqlResult<i32> {
    match find(security, name) {
        Some(role)
            if tessera_security::logins::verify_password(
                password,
                role.password_hash.as_deref().unwrap_or_default(),
            ) =>
        {
            Ok(role.id)
        }
        _ => Err(msg::APP_ROLE_SET_FAILED.with(&[&name])),
    }
}
