//! Who a login is in a database (its [`Token`]) and whether a permission is held.
//!
//! The rules, as SQL Server documents them (simplified where tessera has fewer securables):
//! - A sysadmin, and the database owner's login, are `dbo` and may do everything
//!   (no DENY applies to them).
//! - Otherwise the login is the user mapped to its security id, or `guest` when guest has
//!   CONNECT, or nobody (error 916). A user needs CONNECT.
//! - A token is the user, `public` and every role the user is a member of, directly or
//!   through other roles.
//! - The owner of a schema holds CONTROL on it and on every object in it.
//! - A permission on an object is covered by itself or CONTROL on the object, its schema
//!   or the database; ALTER on an object or schema also by ALTER ANY SCHEMA or ALTER on the
//!   database; a database permission by itself, CONTROL, or (for ALTER ANY … and CREATE …)
//!   ALTER on the database. The fixed roles hold their documented permissions on the
//!   database (db_owner: CONTROL).
//! - A DENY of a covering permission at any level, to any principal of the token, wins
//!   over every GRANT.

use tessera_errors::msg;
use tessera_errors::SqlError;

use super::{Class, GrantState, Security, DBO_ID, GUEST_ID, PUBLIC_ID};

/// A permission, its type code (`sys.database_permissions.type`) and the classes of
/// securable it may be granted on, in one table: (name, code, on the database, on a
/// schema, on an object).
pub const PERMISSIONS: &[(&str, &str, bool, bool, bool)] = &[
    ("SELECT", "SL", true, true, true),
    ("INSERT", "IN", true, true, true),
    ("UPDATE", "UP", true, true, true),
    ("DELETE", "DL", true, true, true),
    ("EXECUTE", "EX", true, true, true),
    ("REFERENCES", "RF", true, true, true),
    ("ALTER", "AL", true, true, true),
    ("CONTROL", "CL", true, true, true),
    ("TAKE OWNERSHIP", "TO", true, true, true),
    ("VIEW DEFINITION", "VW", true, true, true),
    ("IMPERSONATE", "IM", false, false, false),
    ("CREATE TABLE", "CRTB", true, false, false),
    ("CREATE VIEW", "CRVW", true, false, false),
    ("CREATE PROCEDURE", "CRPR", true, false, false),
    ("CREATE FUNCTION", "CRFN", true, false, false),
    ("CREATE SEQUENCE", "CRSO", true, false, false),
    ("CREATE SYNONYM", "CRSN", true, false, false),
    ("CREATE SCHEMA", "CRSM", true, false, false),
    ("CREATE ROLE", "CRRL", true, false, false),
    ("CREATE TYPE", "CRTY", true, false, false),
    ("BACKUP DATABASE", "BADB", true, false, false),
    ("BACKUP LOG", "BALO", true, false, false),
    ("CHECKPOINT", "CP", true, false, false),
    ("CONNECT", "CO", true, false, false),
    ("ALTER ANY USER", "ALUS", true, false, false),
    ("ALTER ANY ROLE", "ALRL", true, false, false),
    ("ALTER ANY APPLICATION ROLE", "ALAR", true, false, false),
    ("ALTER ANY SCHEMA", "ALSM", true, false, false),
    ("VIEW DATABASE STATE", "VWDS", true, false, false),
    ("SHOWPLAN", "SPLN", true, false, false),
];

/// A permission's type code (`SL` for SELECT, …).
pub fn type_code(permission: &str) -> &'static str {
    PERMISSIONS.iter().find(|p| p.0 == permission).map_or("", |p| p.1)
}

/// The permissions each fixed database role holds on its database.
const FIXED_ROLE_PERMISSIONS: &[(i32, GrantState, &[&str])] = &[
    (16384, GrantState::GrantWithGrantOption, &["CONTROL"]),
    (16385, GrantState::Grant, &["ALTER ANY USER", "CONNECT", "CREATE SCHEMA"]),
    (16386, GrantState::Grant, &["ALTER ANY ROLE", "ALTER ANY APPLICATION ROLE", "CREATE SCHEMA", "VIEW DEFINITION"]),
    (
        16387,
        GrantState::Grant,
        &[
            "CREATE TABLE",
            "CREATE VIEW",
            "CREATE PROCEDURE",
            "CREATE FUNCTION",
            "CREATE SEQUENCE",
            "CREATE SYNONYM",
            "CREATE SCHEMA",
            "CREATE TYPE",
            "ALTER ANY SCHEMA",
            "REFERENCES",
        ],
    ),
    (16389, GrantState::Grant, &["BACKUP DATABASE", "BACKUP LOG", "CHECKPOINT"]),
    (16390, GrantState::Grant, &["SELECT"]),
    (16391, GrantState::Grant, &["INSERT", "UPDATE", "DELETE"]),
    (16392, GrantState::Deny, &["SELECT"]),
    (16393, GrantState::Deny, &["INSERT", "UPDATE", "DELETE"]),
];

/// Who a session is in one database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The user's principal id (`dbo` for sysadmins and the owner).
    pub user: i32,
    /// The user, `public` and every role it is in.
    pub principals: Vec<i32>,
    /// sysadmin or the database owner: every check passes.
    pub unrestricted: bool,
}

impl Token {
    /// `dbo` with every permission.
    pub fn dbo() -> Token {
        Token { user: DBO_ID, principals: vec![DBO_ID, PUBLIC_ID, super::DB_OWNER_ID], unrestricted: true }
    }

    pub fn holds(&self, principal: i32) -> bool {
        self.principals.contains(&principal)
    }
}

/// What a permission is checked on.
#[derive(Clone, Copy, Debug)]
pub enum On<'a> {
    Database,
    /// A database principal (user or role), by id: IMPERSONATE, ALTER, CONTROL and VIEW
    /// DEFINITION on it.
    Principal(i32),
    Schema(&'a str),
    /// An object (by id) in a schema (by name).
    Object {
        schema: &'a str,
        id: i32,
    },
}

/// The login with security id `sid` in a database; `None` when it has no access (916).
pub fn token(security: &Security, sid: &[u8], sysadmin: bool) -> Option<Token> {
    if sysadmin || security.owner_sid() == sid {
        return Some(Token::dbo());
    }
    let user = match security.user_for_sid(sid) {
        Some(u) => u.id,
        None => GUEST_ID,
    };
    let token = token_of_user(security, user);
    allowed(security, &token, "CONNECT", On::Database).then_some(token)
}

/// `guest`'s token, when guest has CONNECT (how an application role reaches the other
/// databases).
pub fn guest_token(security: &Security) -> Option<Token> {
    let token = token_of_user(security, GUEST_ID);
    allowed(security, &token, "CONNECT", On::Database).then_some(token)
}

/// The token of a database user (EXECUTE AS USER, contained users) or of an application
/// role.
pub fn token_of_user(security: &Security, user: i32) -> Token {
    if user == DBO_ID {
        return Token::dbo();
    }
    let mut principals = vec![user, PUBLIC_ID];
    let mut i = 0;
    while i < principals.len() {
        let member = principals[i];
        for (role, m) in security.members() {
            if *m == member && !principals.contains(role) {
                principals.push(*role);
            }
        }
        i += 1;
    }
    Token { user, principals, unrestricted: false }
}

/// The permissions that cover `permission` at each level of `on` (innermost first), and
/// the securable of each level.
fn levels(security: &Security, permission: &str, on: On) -> Vec<((Class, i32), Vec<&'static str>)> {
    let own = PERMISSIONS.iter().find(|p| p.0 == permission).map_or("", |p| p.0);
    let alter_any =
        matches!(permission, "ALTER ANY USER" | "ALTER ANY ROLE" | "ALTER ANY APPLICATION ROLE" | "ALTER ANY SCHEMA")
            || permission.starts_with("CREATE ");
    let mut database = vec![own, "CONTROL"];
    if alter_any {
        database.push("ALTER");
    }
    if permission == "ALTER" {
        database.push("ALTER ANY SCHEMA");
    }
    let schema_id = |name: &str| security.schema(name).map_or(-1, |s| s.id);
    match on {
        On::Database => vec![((Class::Database, 0), database)],
        On::Principal(id) => {
            // ALTER ANY USER / ROLE / APPLICATION ROLE cover ALTER on every one of its kind.
            let any = match security.principal_by_id(id).map(|p| p.kind) {
                Some(super::PrincipalKind::Role) => "ALTER ANY ROLE",
                Some(super::PrincipalKind::ApplicationRole) => "ALTER ANY APPLICATION ROLE",
                _ => "ALTER ANY USER",
            };
            if permission == "ALTER" {
                database.push(any);
            }
            vec![((Class::Principal, id), vec![own, "CONTROL"]), ((Class::Database, 0), database)]
        }
        On::Schema(name) => {
            vec![((Class::Schema, schema_id(name)), vec![own, "CONTROL"]), ((Class::Database, 0), database)]
        }
        On::Object { schema, id } => vec![
            ((Class::Object, id), vec![own, "CONTROL"]),
            ((Class::Schema, schema_id(schema)), vec![own, "CONTROL"]),
            ((Class::Database, 0), database),
        ],
    }
}

/// The rows granting or denying one of `covering` on the securable `(class, major)` to a
/// principal of `token`.
fn rows_at<'a>(
    security: &'a Security,
    token: &'a Token,
    (class, major): (Class, i32),
    covering: &'a [&'static str],
) -> impl Iterator<Item = &'a super::PermissionRow> + 'a {
    security.permissions().iter().filter(move |row| {
        row.class == class
            && row.major_id == major
            && row.minor_id == 0
            && token.holds(row.grantee)
            && covering.contains(&row.permission.as_str())
    })
}

/// Whether `token` may grant `permission` on `on` to others: it holds the permission, or
/// one that covers it, WITH GRANT OPTION at some level of `on`, and no DENY of it.
pub fn grantable(security: &Security, token: &Token, permission: &str, on: On) -> bool {
    if token.unrestricted {
        return true;
    }
    let mut grantable = false;
    for (level, covering) in levels(security, permission, on) {
        for row in rows_at(security, token, level, &covering) {
            match row.state {
                GrantState::Deny => return false,
                GrantState::GrantWithGrantOption => grantable = true,
                GrantState::Grant => {}
            }
        }
    }
    grantable
}

/// Whether `token` holds `permission` on `on`.
pub fn allowed(security: &Security, token: &Token, permission: &str, on: On) -> bool {
    if token.unrestricted {
        return true;
    }
    let schema = match on {
        On::Schema(s) | On::Object { schema: s, .. } => Some(s),
        On::Database | On::Principal(_) => None,
    };
    if let Some(owner) = schema.and_then(|s| security.schema_owner(s)) {
        if token.holds(owner) {
            return true;
        }
    }
    let mut granted = false;
    for ((class, major), covering) in levels(security, permission, on) {
        for row in rows_at(security, token, (class, major), &covering) {
            if row.state == GrantState::Deny {
                return false;
            }
            granted = true;
        }
        if class == Class::Database {
            for (role, state, held) in FIXED_ROLE_PERMISSIONS {
                if token.holds(*role) && held.iter().any(|p| covering.contains(p)) {
                    if *state == GrantState::Deny {
                        return false;
                    }
                    granted = true;
                }
            }
        }
    }
    granted
}

/// Whether `token` holds `permission` (SELECT, UPDATE or REFERENCES) on column
/// `column_id` of object `id`: a DENY on the column refuses it; a GRANT on the column
/// allows it, even under a DENY on the table (SQL Server's documented exception, kept
/// for compatibility); otherwise the object's permission decides.
pub fn column_allowed(
    security: &Security,
    token: &Token,
    permission: &str,
    schema: &str,
    id: i32,
    column_id: i32,
) -> bool {
    if token.unrestricted {
        return true;
    }
    let mut granted = false;
    for row in security.permissions() {
        if row.class == Class::Object
            && row.major_id == id
            && row.minor_id == column_id
            && row.permission == permission
            && token.holds(row.grantee)
        {
            if row.state == GrantState::Deny {
                return false;
            }
            granted = true;
        }
    }
    granted || allowed(security, token, permission, On::Object { schema, id })
}

/// Whether `token` holds `permission` on some column of object `id` (a query that reads
/// no column, such as `SELECT COUNT(*)`, needs that much).
pub fn any_column_allowed(security: &Security, token: &Token, permission: &str, id: i32) -> bool {
    security.permissions().iter().any(|row| {
        row.class == Class::Object
            && row.major_id == id
            && row.minor_id != 0
            && row.permission == permission
            && row.state != GrantState::Deny
            && token.holds(row.grantee)
    })
}

/// The permissions any one of which lets a principal see an object in the catalog views
/// (metadata visibility).
const VISIBLE_THROUGH: &[&str] = &[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "EXECUTE",
    "REFERENCES",
    "VIEW DEFINITION",
    "ALTER",
    "TAKE OWNERSHIP",
    "CONTROL",
];

/// Whether `token` may see the object `id` of schema `schema` in catalog views and
/// OBJECT_ID: it holds some permission on it (owning its schema included).
pub fn may_see(security: &Security, token: &Token, schema: &str, id: i32) -> bool {
    token.unrestricted
        || VISIBLE_THROUGH.iter().any(|p| allowed(security, token, p, On::Object { schema, id }))
        || ["SELECT", "UPDATE", "REFERENCES"].iter().any(|p| any_column_allowed(security, token, p, id))
}

/// Error 229: an object permission denied.
pub fn object_denied(permission: &str, object: &str, database: &str, schema: &str) -> SqlError {
    msg::OBJECT_PERMISSION_DENIED.with(&[&permission, &object, &database, &schema]).with_state(5)
}

/// Error 230: a permission denied on a column.
pub fn column_denied(permission: &str, column: &str, object: &str, database: &str, schema: &str) -> SqlError {
    msg::COLUMN_PERMISSION_DENIED.with(&[&permission, &column, &object, &database, &schema]).with_state(1)
}

/// Error 262: a database permission denied.
pub fn database_denied(permission: &str, database: &str) -> SqlError {
    msg::DATABASE_PERMISSION_DENIED.with(&[&permission, &database]).with_state(1)
}

/// Error 916: the login has no user (nor guest) in the database.
pub fn no_access(login: &str, database: &str) -> SqlError {
    msg::DATABASE_ACCESS_DENIED.with(&[&login, &database]).with_state(1)
}

#[cfg(test)]
mod tests {
    use super::super::{PermissionRow, Principal, PrincipalKind, Schema};
    use super::*;

    fn user(s: &mut Security, name: &str, sid: u8) -> i32 {
        let id = s.new_principal_id();
        s.insert_principal(Principal { sid: Some(vec![sid]), ..Principal::new(id, name, PrincipalKind::SqlUser, 0) });
        s.permissions.push(row(Class::Database, 0, id, "CONNECT", GrantState::Grant));
        id
    }

    fn row(class: Class, major_id: i32, grantee: i32, permission: &str, state: GrantState) -> PermissionRow {
        PermissionRow { class, major_id, minor_id: 0, grantee, permission: permission.into(), grantor: DBO_ID, state }
    }

    #[test]
    fn owners_and_sysadmins_are_unrestricted_and_strangers_have_no_access() {
        let s = Security::defaults("shop", vec![9]);
        assert!(token(&s, &[9], false).unwrap().unrestricted);
        assert!(token(&s, &[7], true).unwrap().unrestricted);
        assert_eq!(token(&s, &[7], false), None, "guest has no CONNECT outside master, tempdb and msdb");
        let master = Security::defaults("master", vec![1]);
        assert_eq!(token(&master, &[7], false).unwrap().user, GUEST_ID);
    }

    #[test]
    fn grants_cover_from_above_and_deny_wins() {
        let mut s = Security::defaults("shop", vec![1]);
        let u = user(&mut s, "u", 7);
        let t = token(&s, &[7], false).unwrap();
        let table = On::Object { schema: "dbo", id: 100 };
        assert!(!allowed(&s, &t, "SELECT", table));
        s.permissions.push(row(Class::Schema, DBO_ID, u, "SELECT", GrantState::Grant));
        assert!(allowed(&s, &t, "SELECT", table));
        assert!(!allowed(&s, &t, "INSERT", table));
        s.permissions.push(row(Class::Object, 100, PUBLIC_ID, "SELECT", GrantState::Deny));
        assert!(!allowed(&s, &t, "SELECT", table), "a DENY to public reaches every user");
    }

    #[test]
    fn roles_nest_and_fixed_roles_hold_their_permissions() {
        let mut s = Security::defaults("shop", vec![1]);
        let u = user(&mut s, "u", 7);
        let r = s.new_principal_id();
        s.insert_principal(Principal::new(r, "readers", PrincipalKind::Role, 0));
        s.members.push((r, u));
        s.members.push((16390, r));
        let t = token(&s, &[7], false).unwrap();
        assert!(t.holds(16390));
        assert!(allowed(&s, &t, "SELECT", On::Object { schema: "dbo", id: 5 }));
        assert!(!allowed(&s, &t, "CREATE TABLE", On::Database));
        s.members.push((16392, u));
        let t = token(&s, &[7], false).unwrap();
        assert!(!allowed(&s, &t, "SELECT", On::Object { schema: "dbo", id: 5 }), "db_denydatareader");
    }

    #[test]
    fn a_schema_owner_controls_its_objects() {
        let mut s = Security::defaults("shop", vec![1]);
        let u = user(&mut s, "u", 7);
        s.insert_schema(Schema { id: 5, name: "sales".into(), owner: u });
        let t = token(&s, &[7], false).unwrap();
        assert!(allowed(&s, &t, "DELETE", On::Object { schema: "sales", id: 1 }));
        assert!(!allowed(&s, &t, "DELETE", On::Object { schema: "dbo", id: 1 }));
        s.members.push((16387, u));
        let t = token(&s, &[7], false).unwrap();
        assert!(allowed(&s, &t, "ALTER", On::Object { schema: "dbo", id: 1 }), "db_ddladmin alters any schema");
        assert!(allowed(&s, &t, "CREATE TABLE", On::Database));
    }
}
