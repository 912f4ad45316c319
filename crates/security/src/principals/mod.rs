//! Database principals and permissions: users, roles, schemas and their owners, and the
//! GRANT/DENY rows of one database, as SQL Server keeps them in `sys.database_principals`,
//! `sys.database_role_members`, `sys.schemas` and `sys.database_permissions`.
//!
//! Invariants:
//! - A database's security lives in its own storage tree `sys$principals` (see `store`),
//!   so it travels with the database (detach/attach, BACKUP/RESTORE). A database whose
//!   tree does not exist yet has the defaults: `dbo` mapped to `sa`, `guest` without
//!   CONNECT (with CONNECT in master, tempdb and msdb), the fixed roles (dbo in
//!   db_owner), and the schemas
//!   dbo, guest, INFORMATION_SCHEMA, sys and one per fixed role.
//! - [`Security`] is an immutable snapshot loaded with the database's catalog and dropped
//!   with it when the database closes; a change builds the next snapshot, writes the rows
//!   that changed in one transaction, and swaps the snapshot in only when that committed.
//! - Principal ids below [`FIRST_PRINCIPAL_ID`] and the fixed roles' ids are SQL Server's;
//!   principals and schemas created later get ids from [`FIRST_PRINCIPAL_ID`] up.
//! - An object belongs to its schema's owner (tessera keeps no per-object owner).
//! - Names compare case-insensitively.

pub mod check;
mod shared;
mod store;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tessera_errors::{SqlError, SqlResult};

pub use shared::shared;
pub use store::{load, save, save_in};

pub const PUBLIC_ID: i32 = 0;
pub const DBO_ID: i32 = 1;
pub const GUEST_ID: i32 = 2;
pub const INFORMATION_SCHEMA_ID: i32 = 3;
pub const SYS_ID: i32 = 4;
/// The first id given to a created user, role or schema.
pub const FIRST_PRINCIPAL_ID: i32 = 5;
pub const DB_OWNER_ID: i32 = 16384;

/// At most this many principals, schemas or permission rows per database (a bound on
/// what a loaded database keeps in memory).
pub const MAX_ENTRIES: usize = 65_536;

/// The fixed database roles: (principal id, name).
pub const FIXED_ROLES: &[(i32, &str)] = &[
    (16384, "db_owner"),
    (16385, "db_accessadmin"),
    (16386, "db_securityadmin"),
    (16387, "db_ddladmin"),
    (16389, "db_backupoperator"),
    (16390, "db_datareader"),
    (16391, "db_datawriter"),
    (16392, "db_denydatareader"),
    (16393, "db_denydatawriter"),
];

/// What kind of principal a row is (`sys.database_principals.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PrincipalKind {
    /// A user mapped to a SQL login (`S`, SQL_USER).
    SqlUser,
    /// A user without a login, or a contained user with a password (`S`).
    UserWithoutLogin,
    /// A contained database user with a password (`S`; authentication_type DATABASE).
    ContainedUser,
    /// A database role (`R`, DATABASE_ROLE).
    Role,
    /// An application role (`A`, APPLICATION_ROLE): it has no members; a session becomes
    /// it with `sp_setapprole` and its password (kept as an Argon2id hash).
    ApplicationRole,
}

impl PrincipalKind {
    pub fn is_role(self) -> bool {
        self == PrincipalKind::Role
    }

    /// A database user: a login's, one without a login, or a contained one.
    pub fn is_user(self) -> bool {
        matches!(self, PrincipalKind::SqlUser | PrincipalKind::UserWithoutLogin | PrincipalKind::ContainedUser)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    pub id: i32,
    pub name: String,
    pub kind: PrincipalKind,
    /// The login's security id (SQL users, and dbo: the database owner's login).
    pub sid: Option<Vec<u8>>,
    /// A contained user's or an application role's Argon2id hash.
    pub password_hash: Option<String>,
    pub default_schema: Option<String>,
    /// A role's owner.
    pub owner: Option<i32>,
    /// Seconds since the Unix epoch.
    pub create_date: i64,
    pub modify_date: i64,
}

impl Principal {
    /// A principal made at `created` (seconds since the Unix epoch), with the defaults: a
    /// user's default schema is dbo, a role's owner dbo, no login.
    pub fn new(id: i32, name: &str, kind: PrincipalKind, created: i64) -> Principal {
        Principal {
            id,
            name: name.to_string(),
            kind,
            sid: None,
            password_hash: None,
            default_schema: (!kind.is_role()).then(|| "dbo".to_string()),
            owner: kind.is_role().then_some(DBO_ID),
            create_date: created,
            modify_date: created,
        }
    }

    fn fixed(id: i32, name: &str, kind: PrincipalKind) -> Principal {
        Principal::new(id, name, kind, 0)
    }

    /// Principals that exist in every database and cannot be dropped.
    pub fn is_fixed(&self) -> bool {
        self.id < FIRST_PRINCIPAL_ID || is_fixed_role(self.id)
    }
}

pub fn is_fixed_role(id: i32) -> bool {
    FIXED_ROLES.iter().any(|(r, _)| *r == id)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schema {
    pub id: i32,
    pub name: String,
    pub owner: i32,
}

/// What a permission row is on (`sys.database_permissions.class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Class {
    Database,
    /// An object or a column of it (major id: the object id).
    Object,
    Schema,
    /// A database principal (user or role).
    Principal,
}

impl Class {
    /// `sys.database_permissions.class` and `class_desc`.
    pub fn number_and_desc(self) -> (i64, &'static str) {
        match self {
            Class::Database => (0, "DATABASE"),
            Class::Object => (1, "OBJECT_OR_COLUMN"),
            Class::Schema => (3, "SCHEMA"),
            Class::Principal => (4, "DATABASE_PRINCIPAL"),
        }
    }
}

/// `G` (grant), `W` (grant with grant option) or `D` (deny).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GrantState {
    Grant,
    GrantWithGrantOption,
    Deny,
}

impl GrantState {
    pub fn code_and_desc(self) -> (&'static str, &'static str) {
        match self {
            GrantState::Grant => ("G", "GRANT"),
            GrantState::GrantWithGrantOption => ("W", "GRANT_WITH_GRANT_OPTION"),
            GrantState::Deny => ("D", "DENY"),
        }
    }
}

/// One row of `sys.database_permissions`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PermissionRow {
    pub class: Class,
    pub major_id: i32,
    /// A column's id (its ordinal, from 1) for a column permission; 0 for the object.
    #[serde(default)]
    pub minor_id: i32,
    pub grantee: i32,
    /// The permission's name (`SELECT`, `CREATE TABLE`, …; see `check::PERMISSIONS`).
    pub permission: String,
    pub grantor: i32,
    pub state: GrantState,
}

impl PermissionRow {
    /// Rows with the same key replace each other (a DENY replaces a GRANT).
    fn same_key(&self, other: &PermissionRow) -> bool {
        self.grantee == other.grantee && self.same_securable(other)
    }

    /// The same permission on the same securable (or column), to any grantee.
    fn same_securable(&self, other: &PermissionRow) -> bool {
        self.class == other.class
            && self.major_id == other.major_id
            && self.minor_id == other.minor_id
            && self.permission == other.permission
    }
}

/// An extended property of the database itself (class Database, major id 0) or of one of
/// its schemas (class Schema, major id the schema's): an object's properties live in its
/// catalog definition.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DatabaseProperty {
    pub class: Class,
    pub major_id: i32,
    pub name: String,
    /// The value as text; None for NULL.
    pub value: Option<String>,
}

impl DatabaseProperty {
    fn same_key(&self, class: Class, major_id: i32, name: &str) -> bool {
        self.class == class && self.major_id == major_id && self.name.eq_ignore_ascii_case(name)
    }
}

/// One database's principals, memberships, schemas and permissions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Security {
    /// Lower-cased name → principal (users and roles share one namespace).
    principals: BTreeMap<String, Principal>,
    /// (role id, member id).
    members: Vec<(i32, i32)>,
    /// Lower-cased name → schema.
    schemas: BTreeMap<String, Schema>,
    permissions: Vec<PermissionRow>,
    /// The extended properties of the database and of its schemas.
    properties: Vec<DatabaseProperty>,
    /// `CONTAINMENT = PARTIAL`: its contained users log in with their own passwords.
    contained: bool,
    next_principal_id: i32,
    next_schema_id: i32,
}

impl Security {
    /// The security of a database that has never changed it, owned by the login `owner_sid`.
    pub fn defaults(database: &str, owner_sid: Vec<u8>) -> Security {
        let mut s = Security::empty();
        let mut dbo = Principal::fixed(DBO_ID, "dbo", PrincipalKind::SqlUser);
        dbo.sid = Some(owner_sid);
        let fixed = [
            Principal::fixed(PUBLIC_ID, "public", PrincipalKind::Role),
            dbo,
            Principal::fixed(GUEST_ID, "guest", PrincipalKind::UserWithoutLogin),
            Principal::fixed(INFORMATION_SCHEMA_ID, "INFORMATION_SCHEMA", PrincipalKind::UserWithoutLogin),
            Principal::fixed(SYS_ID, "sys", PrincipalKind::UserWithoutLogin),
        ];
        for p in fixed {
            s.insert_principal(p);
        }
        for (id, name) in FIXED_ROLES {
            s.insert_principal(Principal::fixed(*id, name, PrincipalKind::Role));
        }
        for (id, name) in
            [(DBO_ID, "dbo"), (GUEST_ID, "guest"), (INFORMATION_SCHEMA_ID, "INFORMATION_SCHEMA"), (SYS_ID, "sys")]
        {
            s.insert_schema(Schema { id, name: name.to_string(), owner: id });
        }
        for (id, name) in FIXED_ROLES {
            s.insert_schema(Schema { id: *id, name: name.to_string(), owner: *id });
        }
        s.members.push((DB_OWNER_ID, DBO_ID));
        if ["master", "tempdb", "msdb"].iter().any(|d| d.eq_ignore_ascii_case(database)) {
            s.permissions.push(PermissionRow {
                class: Class::Database,
                major_id: 0,
                minor_id: 0,
                grantee: GUEST_ID,
                permission: "CONNECT".to_string(),
                grantor: DBO_ID,
                state: GrantState::Grant,
            });
        }
        s
    }

    pub fn principal(&self, name: &str) -> Option<&Principal> {
        self.principals.get(&name.to_lowercase())
    }

    pub fn principal_by_id(&self, id: i32) -> Option<&Principal> {
        self.principals.values().find(|p| p.id == id)
    }

    pub fn principals(&self) -> impl Iterator<Item = &Principal> {
        self.principals.values()
    }

    /// The user mapped to the login with security id `sid`.
    pub fn user_for_sid(&self, sid: &[u8]) -> Option<&Principal> {
        self.principals.values().find(|p| p.kind.is_user() && p.sid.as_deref() == Some(sid))
    }

    pub fn schema(&self, name: &str) -> Option<&Schema> {
        self.schemas.get(&name.to_lowercase())
    }

    pub fn schema_by_id(&self, id: i32) -> Option<&Schema> {
        self.schemas.values().find(|s| s.id == id)
    }

    pub fn schemas(&self) -> impl Iterator<Item = &Schema> {
        self.schemas.values()
    }

    /// (role id, member id) pairs.
    pub fn members(&self) -> &[(i32, i32)] {
        &self.members
    }

    pub fn permissions(&self) -> &[PermissionRow] {
        &self.permissions
    }

    /// The owner of the schema `name` (an object's owner); `None` when there is no such
    /// schema.
    pub fn schema_owner(&self, name: &str) -> Option<i32> {
        self.schema(name).map(|s| s.owner)
    }

    /// The database owner's login security id.
    pub fn owner_sid(&self) -> &[u8] {
        self.principal_by_id(DBO_ID).and_then(|p| p.sid.as_deref()).unwrap_or(&[1])
    }

    /// The id the next created user or role gets.
    pub fn new_principal_id(&self) -> i32 {
        self.next_principal_id
    }

    /// The id the next created schema gets.
    pub fn new_schema_id(&self) -> i32 {
        self.next_schema_id
    }

    /// Adds a principal, or replaces the one with its id (a rename drops the old name).
    pub fn put_principal(&mut self, p: Principal) -> SqlResult<()> {
        match self.principals.values().find(|old| old.id == p.id).map(|old| old.name.to_lowercase()) {
            Some(old) => {
                self.principals.remove(&old);
            }
            None => self.check_room()?,
        }
        self.insert_principal(p);
        Ok(())
    }

    /// Removes a principal with its memberships and the permissions granted to it.
    pub fn remove_principal(&mut self, id: i32) {
        self.principals.retain(|_, p| p.id != id);
        self.members.retain(|&(role, member)| role != id && member != id);
        self.permissions.retain(|g| g.grantee != id && !(g.class == Class::Principal && g.major_id == id));
    }

    /// Adds a schema, or replaces the one with its id.
    pub fn put_schema(&mut self, s: Schema) -> SqlResult<()> {
        match self.schemas.values().find(|old| old.id == s.id).map(|old| old.name.to_lowercase()) {
            Some(old) => {
                self.schemas.remove(&old);
            }
            None => self.check_room()?,
        }
        self.insert_schema(s);
        Ok(())
    }

    /// Removes a schema with the permissions on it and its extended properties.
    pub fn remove_schema(&mut self, id: i32) {
        self.schemas.retain(|_, s| s.id != id);
        self.permissions.retain(|g| !(g.class == Class::Schema && g.major_id == id));
        self.properties.retain(|p| !(p.class == Class::Schema && p.major_id == id));
    }

    /// The extended properties of the database and its schemas.
    pub fn properties(&self) -> &[DatabaseProperty] {
        &self.properties
    }

    /// The property `name` of the database (`class` Database, `major_id` 0) or of a schema.
    pub fn property(&self, class: Class, major_id: i32, name: &str) -> Option<&DatabaseProperty> {
        self.properties.iter().find(|p| p.same_key(class, major_id, name))
    }

    /// Adds a property, or replaces the one with its key.
    pub fn put_property(&mut self, property: DatabaseProperty) -> SqlResult<()> {
        match self.properties.iter().position(|p| p.same_key(property.class, property.major_id, &property.name)) {
            Some(i) => self.properties[i] = property,
            None => {
                self.check_room()?;
                self.properties.push(property);
            }
        }
        Ok(())
    }

    pub fn remove_property(&mut self, class: Class, major_id: i32, name: &str) {
        self.properties.retain(|p| !p.same_key(class, major_id, name));
    }

    /// Makes `member` a member of `role` (nothing when it is one already).
    pub fn add_member(&mut self, role: i32, member: i32) -> SqlResult<()> {
        if !self.members.contains(&(role, member)) {
            self.check_room()?;
            self.members.push((role, member));
        }
        Ok(())
    }

    pub fn remove_member(&mut self, role: i32, member: i32) {
        self.members.retain(|&m| m != (role, member));
    }

    /// Sets a GRANT or DENY, replacing the row with the same key.
    pub fn set_permission(&mut self, row: PermissionRow) -> SqlResult<()> {
        match self.permissions.iter().position(|g| g.same_key(&row)) {
            Some(i) => self.permissions[i] = row,
            None => {
                self.check_room()?;
                self.permissions.push(row);
            }
        }
        Ok(())
    }

    /// REVOKE of the row with `row`'s key: all of it, or only its grant option. A REVOKE
    /// on the object takes the permission's column rows with it, as in SQL Server.
    pub fn revoke(&mut self, row: &PermissionRow, grant_option_only: bool) {
        if row.minor_id == 0 && !grant_option_only {
            self.permissions.retain(|g| {
                !(g.minor_id != 0
                    && g.class == row.class
                    && g.major_id == row.major_id
                    && g.grantee == row.grantee
                    && g.permission == row.permission)
            });
        }
        let Some(i) = self.permissions.iter().position(|g| g.same_key(row)) else { return };
        if !grant_option_only {
            self.permissions.remove(i);
        } else if self.permissions[i].state == GrantState::GrantWithGrantOption {
            self.permissions[i].state = GrantState::Grant;
        }
    }

    /// Whether `grantee` has passed `row`'s permission on (rows of the same securable and
    /// permission whose grantor it is).
    pub fn granted_onward(&self, row: &PermissionRow) -> bool {
        self.permissions.iter().any(|g| g.grantor == row.grantee && g.grantee != row.grantee && g.same_securable(row))
    }

    /// REVOKE … CASCADE: takes away every grant of `row`'s permission on its securable
    /// that `row`'s grantee made, and those their grantees made in turn (a grant chain
    /// ends where its grantor's grant option went).
    pub fn revoke_onward(&mut self, row: &PermissionRow) {
        let mut grantors = vec![row.grantee];
        while let Some(grantor) = grantors.pop() {
            let (gone, kept): (Vec<PermissionRow>, Vec<PermissionRow>) =
                std::mem::take(&mut self.permissions).into_iter().partition(|g| {
                    g.grantor == grantor && g.grantee != grantor && g.same_securable(row) && g.state != GrantState::Deny
                });
            self.permissions = kept;
            grantors.extend(gone.iter().map(|g| g.grantee).filter(|g| *g != row.grantee));
        }
    }

    fn check_room(&self) -> SqlResult<()> {
        let entries = self.principals.len()
            + self.schemas.len()
            + self.members.len()
            + self.permissions.len()
            + self.properties.len();
        if entries >= MAX_ENTRIES {
            return Err(SqlError::new(
                50000,
                format!("A database holds at most {MAX_ENTRIES} principals, schemas and permissions."),
            ));
        }
        Ok(())
    }

    fn insert_principal(&mut self, p: Principal) {
        if !is_fixed_role(p.id) {
            self.next_principal_id = self.next_principal_id.max(p.id.saturating_add(1));
        }
        self.principals.insert(p.name.to_lowercase(), p);
    }

    fn insert_schema(&mut self, s: Schema) {
        if !is_fixed_role(s.id) {
            self.next_schema_id = self.next_schema_id.max(s.id.saturating_add(1));
        }
        self.schemas.insert(s.name.to_lowercase(), s);
    }

    /// An empty set, filled by the store from a database's rows.
    fn empty() -> Security {
        Security {
            principals: BTreeMap::new(),
            members: Vec::new(),
            schemas: BTreeMap::new(),
            permissions: Vec::new(),
            properties: Vec::new(),
            contained: false,
            next_principal_id: FIRST_PRINCIPAL_ID,
            next_schema_id: FIRST_PRINCIPAL_ID,
        }
    }

    /// `CONTAINMENT = PARTIAL`.
    pub fn is_contained(&self) -> bool {
        self.contained
    }

    pub fn set_contained(&mut self, contained: bool) {
        self.contained = contained;
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
