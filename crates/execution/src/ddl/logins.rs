//! Executing `CREATE/ALTER/DROP LOGIN` and `ALTER SERVER ROLE`: permission checks and
//! SQL Server's messages; the logins themselves are kept by [`tessera_security::logins`].
//!
//! Permissions (fixed server roles): sysadmin may do everything; securityadmin may manage
//! logins that are not sysadmins and the membership of roles other than sysadmin; any
//! login may change its own password (with OLD_PASSWORD), default database and language.
//! `PASSWORD = '…' UNLOCK` and `CHECK_POLICY = OFF` end a login's lockout; UNLOCK needs
//! the right to manage the login.

use crate::runtime::Shared;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_security::logins::{self, cannot_alter, Login, NewLogin, SERVER_ROLES};
use tessera_syntax::ast::{AlterLoginAction, Ident, LoginOption};

pub fn no_permission() -> SqlError {
    msg::ADMIN_ACTION_DENIED.err()
}

/// `caller` is the session's server login (`SessionState::server_login`): none for a
/// database principal without a login, which manages no login.
fn can_manage_logins(shared: &Shared, caller: Option<&str>) -> bool {
    caller.is_some_and(|l| shared.logins.is_sysadmin(l) || shared.logins.is_member(l, "securityadmin"))
}

/// Whether `caller` holds `permission` (ALTER, CONTROL, …) on the login `target`: granted
/// on `LOGIN::target`, or covered on every login (ALTER ANY LOGIN, CONTROL SERVER).
fn holds_on_login(shared: &Shared, caller: Option<&str>, permission: &str, target: &Login) -> bool {
    caller
        .and_then(|name| shared.logins.get(name))
        .is_some_and(|l| shared.server_permissions.holds_on_login(&l, permission, target.principal_id))
}

fn check_database(shared: &Shared, name: &Ident) -> SqlResult<()> {
    if shared.engine.exists(&name.value) {
        Ok(())
    } else {
        Err(msg::NO_SUCH_DATABASE.with(&[&name.value]))
    }
}

fn check_language(name: &Ident) -> SqlResult<()> {
    if name.value.eq_ignore_ascii_case("us_english") || name.value.eq_ignore_ascii_case("english") {
        Ok(())
    } else {
        Err(msg::INVALID_LANGUAGE_NAME.with(&[&name.value]))
    }
}

fn unsupported(what: &str) -> SqlError {
    msg::LOGIN_OPTION_NOT_SUPPORTED.with(&[&what])
}

/// `CREATE LOGIN name WITH PASSWORD = '…' [, …]`.
pub fn create_login(
    shared: &Shared,
    caller: Option<&str>,
    name: &Ident,
    options: &[LoginOption],
    external_source: Option<&str>,
) -> SqlResult<()> {
    if !can_manage_logins(shared, caller) {
        return Err(no_permission());
    }
    if let Some(source) = external_source {
        return Err(msg::EXTERNAL_LOGIN_UNSUPPORTED.with(&[&source, &name.value]));
    }
    let mut new = NewLogin {
        name: name.value.clone(),
        password: String::new(),
        sid: None,
        default_database: "master".to_string(),
        default_language: "us_english".to_string(),
        check_policy: true,
        check_expiration: false,
    };
    let mut password = false;
    for option in options {
        match option {
            LoginOption::Password { value, hashed, must_change, old, .. } => {
                if *hashed {
                    return Err(unsupported("PASSWORD … HASHED"));
                }
                if *must_change {
                    return Err(unsupported("MUST_CHANGE"));
                }
                if old.is_some() {
                    return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"OLD_PASSWORD"]));
                }
                new.password = value.clone();
                password = true;
            }
            LoginOption::Sid(sid) => new.sid = Some(sid.clone()),
            LoginOption::DefaultDatabase(db) => {
                check_database(shared, db)?;
                new.default_database = db.value.clone();
            }
            LoginOption::DefaultLanguage(l) => {
                check_language(l)?;
                new.default_language = "us_english".to_string();
            }
            LoginOption::CheckPolicy(on) => new.check_policy = *on,
            LoginOption::CheckExpiration(on) => new.check_expiration = *on,
            LoginOption::Credential(_) | LoginOption::NoCredential => return Err(unsupported("CREDENTIAL")),
            LoginOption::Name(_) => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"NAME"])),
        }
    }
    if !password {
        return Err(msg::INVALID_PASSWORD_PARAMETER.err());
    }
    if new.check_expiration && !new.check_policy {
        return Err(msg::CHECK_EXPIRATION_WITHOUT_POLICY.err());
    }
    shared.logins.create(new)
}

/// `ALTER LOGIN name ENABLE | DISABLE | WITH option [, …]`.
pub fn alter_login(shared: &Shared, caller: Option<&str>, name: &Ident, action: &AlterLoginAction) -> SqlResult<()> {
    let target = shared.logins.get(&name.value).ok_or_else(|| cannot_alter(&name.value))?;
    let manager = can_manage_logins(shared, caller) || holds_on_login(shared, caller, "ALTER", &target);
    let sysadmin = caller.is_some_and(|l| shared.logins.is_sysadmin(l));
    let own = caller.is_some_and(|l| target.name.eq_ignore_ascii_case(l));
    // Only a sysadmin may change another sysadmin.
    let may_manage = manager && (sysadmin || !target.is_sysadmin());
    let options: &[LoginOption] = match action {
        AlterLoginAction::Enable | AlterLoginAction::Disable => {
            if !may_manage {
                return Err(cannot_alter(&name.value));
            }
            let disable = matches!(action, AlterLoginAction::Disable);
            return shared.logins.alter(&name.value, |l| {
                l.disabled = disable;
                Ok(())
            });
        }
        AlterLoginAction::Set(options) => options,
    };
    for option in options {
        // UNLOCK needs the right to manage the login, even on one's own password.
        let allowed = may_manage
            || (own
                && matches!(
                    option,
                    LoginOption::Password { old: Some(_), unlock: false, .. }
                        | LoginOption::DefaultDatabase(_)
                        | LoginOption::DefaultLanguage(_)
                ));
        if !allowed {
            return Err(cannot_alter(&name.value));
        }
        match option {
            LoginOption::Password { hashed: true, .. } => return Err(unsupported("PASSWORD … HASHED")),
            LoginOption::Password { must_change: true, .. } => return Err(unsupported("MUST_CHANGE")),
            LoginOption::Password { old: Some(old), .. } if !logins::verify_password(old, &target.password_hash) => {
                return Err(cannot_alter(&name.value));
            }
            LoginOption::DefaultDatabase(db) => check_database(shared, db)?,
            LoginOption::DefaultLanguage(l) => check_language(l)?,
            LoginOption::Sid(_) => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"SID"])),
            LoginOption::Credential(_) | LoginOption::NoCredential => return Err(unsupported("CREDENTIAL")),
            _ => {}
        }
    }
    // Hash outside the logins' lock: it is slow.
    let mut check_policy = target.check_policy;
    let mut new_hash = None;
    for option in options {
        if let LoginOption::CheckPolicy(on) = option {
            check_policy = *on;
        }
    }
    for option in options {
        if let LoginOption::Password { value, .. } = option {
            if check_policy {
                logins::check_policy(value)?;
            }
            new_hash = Some(logins::hash_password(value)?);
        }
    }
    // Unlocking ends the lock (and forgets the failed passwords) once the change is stored.
    let unlock = options
        .iter()
        .any(|o| matches!(o, LoginOption::Password { unlock: true, .. } | LoginOption::CheckPolicy(false)));
    shared.logins.alter(&name.value, |l| {
        for option in options {
            match option {
                LoginOption::DefaultDatabase(db) => l.default_database = db.value.clone(),
                LoginOption::Name(n) => {
                    if SERVER_ROLES.iter().any(|(_, r)| r.eq_ignore_ascii_case(&n.value)) {
                        return Err(msg::SERVER_PRINCIPAL_EXISTS.with(&[&n.value]));
                    }
                    l.name = n.value.clone();
                }
                LoginOption::CheckPolicy(on) => l.check_policy = *on,
                LoginOption::CheckExpiration(on) => l.check_expiration = *on,
                _ => {}
            }
        }
        if let Some(h) = new_hash {
            l.password_hash = h;
        }
        if l.check_expiration && !l.check_policy {
            return Err(msg::CHECK_EXPIRATION_WITHOUT_POLICY.err());
        }
        Ok(())
    })?;
    if unlock {
        shared.logins.unlock(target.principal_id);
    }
    Ok(())
}

/// `DROP LOGIN name`.
pub fn drop_login(shared: &Shared, caller: Option<&str>, name: &Ident) -> SqlResult<()> {
    let denied = || msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"drop", &"login", &name.value]);
    let target = shared.logins.get(&name.value).ok_or_else(denied)?;
    if target.principal_id == 1
        || !(can_manage_logins(shared, caller) || holds_on_login(shared, caller, "CONTROL", &target))
        || (target.is_sysadmin() && !caller.is_some_and(|l| shared.logins.is_sysadmin(l)))
    {
        return Err(denied());
    }
    // A contained user's session shows its own name, not a login's.
    if shared.sessions.lock().values().any(|s| !s.contained && s.login.eq_ignore_ascii_case(&target.name)) {
        return Err(msg::DROP_LOGGED_IN_LOGIN.with(&[&name.value]));
    }
    shared.logins.drop_login(&name.value)?;
    // Its server permissions, and those on it, go with it (a new login never inherits them
    // by id).
    let id = target.principal_id;
    shared.server_permissions.change(|rows| rows.retain(|r| r.grantee != id && r.on_login != id))
}

/// `ALTER SERVER ROLE role ADD|DROP MEMBER login`.
pub fn alter_server_role(
    shared: &Shared,
    caller: Option<&str>,
    role: &Ident,
    member: &Ident,
    add: bool,
) -> SqlResult<()> {
    let role_name = SERVER_ROLES
        .iter()
        .map(|(_, r)| *r)
        .find(|r| r.eq_ignore_ascii_case(&role.value) && *r != "public")
        .filter(|r| {
            caller.is_some_and(|l| {
                shared.logins.is_sysadmin(l) || (*r != "sysadmin" && shared.logins.is_member(l, "securityadmin"))
            })
        })
        .ok_or_else(|| msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"alter", &"server role", &role.value]))?;
    let verb = if add { "add" } else { "drop" };
    let missing = || msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&verb, &"principal", &member.value]);
    let target = shared.logins.get(&member.value).ok_or_else(missing)?;
    if target.principal_id == 1 {
        return Err(msg::SPECIAL_PRINCIPAL_NOT_USABLE.with(&[&"sa"]));
    }
    shared.logins.alter(&target.name, |l| {
        l.roles.retain(|r| r != role_name);
        if add {
            l.roles.push(role_name.to_string());
        }
        Ok(())
    })
}
