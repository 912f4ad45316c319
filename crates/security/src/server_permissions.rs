//! Server-level permissions: GRANT/DENY/REVOKE of VIEW SERVER STATE, VIEW ANY DATABASE,
//! CREATE ANY DATABASE and the others to logins and server roles, and of IMPERSONATE,
//! ALTER, CONTROL and VIEW DEFINITION on one login (`LOGIN::name`), as SQL Server keeps
//! them in `sys.server_permissions`, and whether a login holds one.
//!
//! Invariants:
//! - The rows live in master's storage tree `sys$server_permissions` (key `grantee:name`,
//!   value JSON) and in memory behind one lock; a change writes master first and updates
//!   memory only when that committed. Before the first change the rows are the defaults:
//!   `public` holds VIEW ANY DATABASE.
//! - A sysadmin holds every permission and no DENY applies to it (CONTROL SERVER).
//! - A permission is held through a grant of itself, of CONTROL SERVER or of one that
//!   implies it, to the login, `public` or a server role the login is in, or through the
//!   fixed server role's own permissions; a DENY of any of those wins.
//! - A permission on a login is held through a grant of itself or CONTROL on that login,
//!   or of the server permission that covers it on every login (IMPERSONATE ANY LOGIN,
//!   ALTER ANY LOGIN, VIEW ANY DEFINITION, CONTROL SERVER); a DENY at either level wins.
//! - At most [`MAX_ROWS`] rows (a bound on what the server keeps in memory).

use std::ops::Bound;
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use tessera_database::{Database, Direction};
use tessera_errors::{SqlError, SqlResult};

use crate::logins::{Login, SERVER_ROLES};
use crate::principals::GrantState;

const TREE: &str = "sys$server_permissions";

/// At most this many server permission rows.
pub const MAX_ROWS: usize = 65_536;

/// The server role `public`'s principal id (every login is in it).
pub const PUBLIC_ROLE_ID: i32 = 2;

/// Every server permission with its type code (`sys.server_permissions.type`).
pub const SERVER_PERMISSIONS: &[(&str, &str)] = &[
    ("ADMINISTER BULK OPERATIONS", "ADBO"),
    ("ALTER ANY CONNECTION", "ALCO"),
    ("ALTER ANY DATABASE", "ALDB"),
    ("ALTER ANY LOGIN", "ALLG"),
    ("ALTER SERVER STATE", "ALSS"),
    ("ALTER SETTINGS", "ALST"),
    ("ALTER TRACE", "ALTR"),
    ("CONNECT SQL", "COSQ"),
    ("CONTROL SERVER", "CL"),
    ("CREATE ANY DATABASE", "CRDB"),
    ("IMPERSONATE ANY LOGIN", "IAL"),
    ("SHUTDOWN", "SHDN"),
    ("VIEW ANY DATABASE", "VWDB"),
    ("VIEW ANY DEFINITION", "VWAD"),
    ("VIEW SERVER STATE", "VWSS"),
];

/// Permissions that imply another: (permission, what also covers it).
const IMPLIED_BY: &[(&str, &[&str])] = &[
    ("VIEW SERVER STATE", &["ALTER SERVER STATE"]),
    ("CREATE ANY DATABASE", &["ALTER ANY DATABASE"]),
    ("VIEW ANY DATABASE", &["VIEW ANY DEFINITION"]),
];

/// What each fixed server role holds (sysadmin holds everything).
const ROLE_PERMISSIONS: &[(&str, &[&str])] = &[
    ("securityadmin", &["ALTER ANY LOGIN"]),
    ("serveradmin", &["ALTER SETTINGS", "ALTER SERVER STATE", "SHUTDOWN"]),
    ("dbcreator", &["ALTER ANY DATABASE"]),
    ("processadmin", &["ALTER ANY CONNECTION", "ALTER SERVER STATE"]),
    ("bulkadmin", &["ADMINISTER BULK OPERATIONS"]),
];

/// The permissions one may hold on a login (`LOGIN::name`), each with its type code and the
/// server permission that covers it on every login.
pub const LOGIN_PERMISSIONS: &[(&str, &str, &str)] = &[
    ("ALTER", "AL", "ALTER ANY LOGIN"),
    ("CONTROL", "CL", "CONTROL SERVER"),
    ("IMPERSONATE", "IM", "IMPERSONATE ANY LOGIN"),
    ("VIEW DEFINITION", "VW", "VIEW ANY DEFINITION"),
];

pub fn is_server_permission(name: &str) -> bool {
    SERVER_PERMISSIONS.iter().any(|(n, _)| *n == name)
}

/// A row's type code: `on_login` rows use the login permissions' codes.
pub fn type_code(name: &str, on_login: bool) -> &'static str {
    if on_login {
        return LOGIN_PERMISSIONS.iter().find(|(n, ..)| *n == name).map_or("", |(_, c, _)| c);
    }
    SERVER_PERMISSIONS.iter().find(|(n, _)| *n == name).map_or("", |(_, c)| c)
}

/// One row of `sys.server_permissions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPermission {
    /// The login it is on (class 101, SERVER_PRINCIPAL), by principal id; 0 for the
    /// server (class 100).
    #[serde(default)]
    pub on_login: i32,
    /// A login's or server role's principal id.
    pub grantee: i32,
    pub permission: String,
    pub grantor: i32,
    pub state: GrantState,
}

pub struct ServerPermissions {
    master: Option<Arc<Database>>,
    rows: RwLock<Vec<ServerPermission>>,
}

fn defaults() -> Vec<ServerPermission> {
    vec![ServerPermission {
        on_login: 0,
        grantee: PUBLIC_ROLE_ID,
        permission: "VIEW ANY DATABASE".to_string(),
        grantor: 1,
        state: GrantState::Grant,
    }]
}

fn damaged(detail: impl std::fmt::Display) -> SqlError {
    SqlError::new(50000, format!("Damaged server permission in master: {detail}")).with_severity(21)
}

impl ServerPermissions {
    /// The rows kept in master (its defaults before the first change).
    pub fn load(master: Arc<Database>) -> SqlResult<ServerPermissions> {
        let rows = match master.table(TREE) {
            None => defaults(),
            Some(tree) => {
                let tx = master.begin();
                let mut rows = Vec::new();
                for item in tx.scan(tree, Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
                    let (_, v) = item?;
                    rows.push(serde_json::from_slice(&v).map_err(damaged)?);
                }
                tx.commit()?;
                rows
            }
        };
        Ok(ServerPermissions { master: Some(master), rows: RwLock::new(rows) })
    }

    /// Rows that are not persisted (tests).
    pub fn in_memory() -> ServerPermissions {
        ServerPermissions { master: None, rows: RwLock::new(defaults()) }
    }

    pub fn all(&self) -> Vec<ServerPermission> {
        self.rows.read().clone()
    }

    /// Whether `login` holds the server permission `permission`.
    pub fn holds(&self, login: &Login, permission: &str) -> bool {
        if login.is_sysadmin() {
            return true;
        }
        let covering: Vec<&str> = std::iter::once(permission)
            .chain(["CONTROL SERVER"])
            .chain(IMPLIED_BY.iter().filter(|(p, _)| *p == permission).flat_map(|(_, by)| by.iter().copied()))
            .collect();
        // CONNECT SQL is every login's (SQL Server grants it at CREATE LOGIN) until denied.
        let granted = permission == "CONNECT SQL"
            || ROLE_PERMISSIONS
                .iter()
                .any(|(role, held)| login.is_member(role) && held.iter().any(|p| covering.contains(p)));
        self.decide(login, granted, |row| row.on_login == 0 && covering.contains(&row.permission.as_str()))
    }

    /// Whether `login` holds `permission` (one of [`LOGIN_PERMISSIONS`]) on the login
    /// whose principal id is `target`.
    pub fn holds_on_login(&self, login: &Login, permission: &str, target: i32) -> bool {
        if login.is_sysadmin() {
            return true;
        }
        let Some((_, _, any)) = LOGIN_PERMISSIONS.iter().find(|(p, ..)| *p == permission) else {
            return false;
        };
        let on_every = [*any, "CONTROL SERVER"];
        let granted = ROLE_PERMISSIONS
            .iter()
            .any(|(role, held)| login.is_member(role) && held.iter().any(|p| on_every.contains(p)));
        self.decide(login, granted, |row| match row.on_login {
            0 => on_every.contains(&row.permission.as_str()),
            on => on == target && (row.permission == permission || row.permission == "CONTROL"),
        })
    }

    /// `granted` unless a row that `covers` it, for the login, `public` or one of its
    /// server roles, denies it; granted as well when such a row grants it.
    fn decide(&self, login: &Login, mut granted: bool, covers: impl Fn(&ServerPermission) -> bool) -> bool {
        let mut grantees = vec![login.principal_id, PUBLIC_ROLE_ID];
        grantees.extend(SERVER_ROLES.iter().filter(|(_, name)| login.is_member(name)).map(|(id, _)| *id));
        for row in self.rows.read().iter() {
            if grantees.contains(&row.grantee) && covers(row) {
                if row.state == GrantState::Deny {
                    return false;
                }
                granted = true;
            }
        }
        granted
    }

    /// Replaces the rows with what `change` makes of them, writing master first.
    pub fn change(&self, change: impl FnOnce(&mut Vec<ServerPermission>)) -> SqlResult<()> {
        let mut rows = self.rows.write();
        let mut next = rows.clone();
        change(&mut next);
        if next.len() > MAX_ROWS {
            return Err(SqlError::new(50000, format!("The server holds at most {MAX_ROWS} server permissions.")));
        }
        self.persist(&next)?;
        *rows = next;
        Ok(())
    }

    fn persist(&self, rows: &[ServerPermission]) -> SqlResult<()> {
        let Some(master) = &self.master else { return Ok(()) };
        let tree = match master.table(TREE) {
            Some(t) => t,
            None => master.create_table(TREE)?,
        };
        let mut tx = master.begin();
        let old: Vec<Vec<u8>> = tx
            .scan(tree, Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .map(|item| item.map(|(k, _)| k.to_vec()))
            .collect::<Result<_, _>>()?;
        for key in old {
            tx.delete(tree, &key)?;
        }
        for row in rows {
            let key = format!("{}:{}:{}", row.on_login, row.grantee, row.permission);
            let value = serde_json::to_vec(row).map_err(|e| SqlError::new(50000, e.to_string()))?;
            tx.insert(tree, key.as_bytes(), &value)?;
        }
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(id: i32, roles: &[&str]) -> Login {
        Login {
            name: format!("l{id}"),
            principal_id: id,
            sid: vec![id as u8],
            password_hash: String::new(),
            disabled: false,
            default_database: "master".into(),
            default_language: "us_english".into(),
            check_policy: false,
            check_expiration: false,
            roles: roles.iter().map(|r| r.to_string()).collect(),
            create_date: 0,
            modify_date: 0,
        }
    }

    fn row(grantee: i32, permission: &str, state: GrantState) -> ServerPermission {
        ServerPermission { on_login: 0, grantee, permission: permission.into(), grantor: 1, state }
    }

    #[test]
    fn public_sees_databases_until_denied_and_roles_hold_theirs() {
        let p = ServerPermissions::in_memory();
        let plain = login(300, &[]);
        assert!(p.holds(&plain, "VIEW ANY DATABASE"));
        assert!(!p.holds(&plain, "VIEW SERVER STATE"));
        assert!(p.holds(&login(301, &["serveradmin"]), "VIEW SERVER STATE"), "implied by ALTER SERVER STATE");
        assert!(p.holds(&login(302, &["dbcreator"]), "CREATE ANY DATABASE"));
        p.change(|rows| rows.push(row(PUBLIC_ROLE_ID, "VIEW ANY DATABASE", GrantState::Deny))).unwrap();
        assert!(!p.holds(&plain, "VIEW ANY DATABASE"));
        assert!(p.holds(&login(303, &["sysadmin"]), "VIEW ANY DATABASE"), "no DENY applies to sysadmin");
        p.change(|rows| rows.push(row(300, "CONTROL SERVER", GrantState::Grant))).unwrap();
        assert!(p.holds(&plain, "VIEW SERVER STATE"));
        assert!(!p.holds(&plain, "VIEW ANY DATABASE"), "the DENY to public still wins");
    }

    #[test]
    fn a_permission_on_a_login_is_held_on_that_login_only() {
        let p = ServerPermissions::in_memory();
        let (ivy, target, other) = (login(300, &[]), 310, 311);
        assert!(!p.holds_on_login(&ivy, "IMPERSONATE", target));
        let on = |permission: &str, state| ServerPermission { on_login: target, ..row(300, permission, state) };
        p.change(|rows| rows.push(on("IMPERSONATE", GrantState::Grant))).unwrap();
        assert!(p.holds_on_login(&ivy, "IMPERSONATE", target));
        assert!(!p.holds_on_login(&ivy, "IMPERSONATE", other));
        assert!(!p.holds_on_login(&ivy, "ALTER", target));
        assert!(!p.holds(&ivy, "IMPERSONATE ANY LOGIN"), "a grant on a login is no server permission");
        p.change(|rows| rows.push(on("CONTROL", GrantState::Grant))).unwrap();
        assert!(p.holds_on_login(&ivy, "ALTER", target), "CONTROL on the login covers ALTER");
        p.change(|rows| rows.push(row(PUBLIC_ROLE_ID, "IMPERSONATE ANY LOGIN", GrantState::Deny))).unwrap();
        assert!(!p.holds_on_login(&ivy, "IMPERSONATE", target), "a DENY on every login wins");
        assert!(p.holds_on_login(&login(301, &["sysadmin"]), "IMPERSONATE", other));
        assert!(p.holds_on_login(&login(302, &["securityadmin"]), "ALTER", other), "ALTER ANY LOGIN");
    }
}
