//! Server logins and fixed server roles: `CREATE/ALTER/DROP LOGIN`, `ALTER SERVER ROLE`,
//! password checks at connection time, `sys.server_principals` / `sys.sql_logins`.
//!
//! Invariants:
//! - Passwords are never stored: only salted Argon2id hashes (PHC strings). Checking one
//!   is slow by design (tens of milliseconds), so callers run [`Logins::check`] on a
//!   blocking thread, and it always hashes — an unknown login costs the same as a known
//!   one, so timing reveals nothing.
//! - Logins live in master's storage tree `sys$logins` (key: the lower-cased name, value:
//!   the login as JSON) and in memory behind one lock; every change writes master first
//!   and updates memory only when that committed.
//! - `sa` (principal 1) always exists and is always a sysadmin. Its password is the one
//!   the server is started with (`TESSERA_SA_PASSWORD` or the config file), applied at
//!   every start; `ALTER LOGIN sa WITH PASSWORD` lasts until the next restart.
//! - Names compare case-insensitively (the server collation is case-insensitive).

use std::collections::BTreeMap;
use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use parking_lot::RwLock;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use tessera_database::Database;

use tessera_errors::{SqlError, SqlResult};

/// Storage tree in master holding the logins.
const LOGINS_TREE: &str = "sys$logins";

/// At most this many logins (a bound on what the server keeps in memory).
pub const MAX_LOGINS: usize = 65_536;

/// The fixed server roles: (principal id, name). Only `sysadmin` and `securityadmin`
/// grant anything in tessera (see crates/sql/README.md); the others can hold members.
pub const SERVER_ROLES: &[(i32, &str)] = &[
    (2, "public"),
    (3, "sysadmin"),
    (4, "securityadmin"),
    (5, "serveradmin"),
    (6, "setupadmin"),
    (7, "processadmin"),
    (8, "diskadmin"),
    (9, "dbcreator"),
    (10, "bulkadmin"),
];

/// The first principal id given to a created login (SQL Server's are above 256 too).
const FIRST_LOGIN_ID: i32 = 257;

/// One SQL login.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Login {
    pub name: String,
    pub principal_id: i32,
    pub sid: Vec<u8>,
    /// Argon2id PHC string; empty for `sa` before the server set its password.
    pub password_hash: String,
    pub disabled: bool,
    pub default_database: String,
    pub default_language: String,
    pub check_policy: bool,
    pub check_expiration: bool,
    /// Lower-case names of the fixed server roles this login belongs to.
    pub roles: Vec<String>,
    /// Seconds since the Unix epoch.
    pub create_date: i64,
    pub modify_date: i64,
}

impl Login {
    pub fn is_member(&self, role: &str) -> bool {
        role.eq_ignore_ascii_case("public") || self.roles.iter().any(|r| r.eq_ignore_ascii_case(role))
    }

    pub fn is_sysadmin(&self) -> bool {
        self.principal_id == 1 || self.is_member("sysadmin")
    }
}

/// Why a connection's credentials were refused; `state` is SQL Server's state of error
/// 18456 (written to ERRORLOG only; the client sees the same message for every reason).
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub state: i32,
    pub reason: &'static str,
}

/// What the server knows of the connecting login after a successful check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub name: String,
    pub default_database: String,
}

/// The server's logins.
pub struct Logins {
    master: Option<Arc<Database>>,
    logins: RwLock<BTreeMap<String, Login>>,
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// A salted Argon2id hash of `password` in PHC string form.
pub fn hash_password(password: &str) -> SqlResult<String> {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let salt = SaltString::encode_b64(&bytes).map_err(|e| SqlError::new(15118, e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| SqlError::new(15118, format!("Password hashing failed: {e}")))
}

/// Whether `password` matches the PHC hash `hash` (false for a malformed or empty hash).
pub fn verify_password(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(h) => Argon2::default().verify_password(password.as_bytes(), &h).is_ok(),
        Err(_) => false,
    }
}

/// A hash that no password matches, verified for unknown logins so that they take as
/// long as known ones.
fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password("decoy password that is never accepted").unwrap_or_default())
}

/// SQL Server's password policy on Linux (CHECK_POLICY = ON): at least 8 characters from
/// three of: upper-case letters, lower-case letters, digits, other characters.
pub fn check_policy(password: &str) -> SqlResult<()> {
    if password.chars().count() < 8 {
        return Err(SqlError::new(
            15116,
            "Password validation failed. The password does not meet the operating system policy requirements because it is too short.",
        ));
    }
    let classes = [
        password.chars().any(|c| c.is_uppercase()),
        password.chars().any(|c| c.is_lowercase()),
        password.chars().any(|c| c.is_ascii_digit()),
        password.chars().any(|c| !c.is_alphanumeric()),
    ];
    if classes.iter().filter(|&&b| b).count() < 3 {
        return Err(SqlError::new(
            15118,
            "Password validation failed. The password does not meet the operating system policy requirements because it is not complex enough.",
        ));
    }
    Ok(())
}

fn sa_login() -> Login {
    Login {
        name: "sa".to_string(),
        principal_id: 1,
        sid: vec![1],
        password_hash: String::new(),
        disabled: false,
        default_database: "master".to_string(),
        default_language: "us_english".to_string(),
        check_policy: true,
        check_expiration: false,
        roles: vec!["sysadmin".to_string()],
        create_date: 0,
        modify_date: 0,
    }
}

/// The settings of a new login (`CREATE LOGIN`), already validated by the caller.
pub struct NewLogin {
    pub name: String,
    pub password: String,
    pub sid: Option<Vec<u8>>,
    pub default_database: String,
    pub default_language: String,
    pub check_policy: bool,
    pub check_expiration: bool,
}

impl Logins {
    /// Loads the logins from master.
    pub fn load(master: Arc<Database>) -> SqlResult<Logins> {
        let mut logins = BTreeMap::new();
        if let Some(tree) = master.table(LOGINS_TREE) {
            let tx = master.begin();
            for item in tx.scan(
                tree,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                tessera_database::Direction::Forward,
            ) {
                let (_, v) = item?;
                let login: Login = serde_json::from_slice(&v)
                    .map_err(|e| SqlError::new(824, format!("A login in master is unreadable: {e}")))?;
                logins.insert(login.name.to_lowercase(), login);
            }
            tx.commit()?;
        }
        logins.entry("sa".to_string()).or_insert_with(sa_login);
        Ok(Logins { master: Some(master), logins: RwLock::new(logins) })
    }

    /// Logins that are not persisted (tests).
    pub fn in_memory() -> Logins {
        Logins { master: None, logins: RwLock::new(BTreeMap::from([("sa".to_string(), sa_login())])) }
    }

    /// Sets `sa`'s password for this run of the server (not persisted).
    pub fn set_sa_password(&self, password: &str) -> SqlResult<()> {
        let hash = hash_password(password)?;
        if let Some(sa) = self.logins.write().values_mut().find(|l| l.principal_id == 1) {
            sa.password_hash = hash;
        }
        Ok(())
    }

    /// Checks a connection's SQL credentials (slow: run on a blocking thread).
    pub fn check(&self, user: &str, password: &str) -> Result<Accepted, Refusal> {
        let found = self.get(user);
        let hash = found.as_ref().map_or(decoy_hash(), |l| l.password_hash.as_str());
        let matches = verify_password(password, hash);
        let Some(login) = found else {
            return Err(Refusal { state: 5, reason: "Could not find a login matching the name provided." });
        };
        if !matches {
            return Err(Refusal { state: 8, reason: "Password did not match that for the login provided." });
        }
        if login.disabled {
            return Err(Refusal { state: 7, reason: "Login is disabled." });
        }
        Ok(Accepted { name: login.name, default_database: login.default_database })
    }

    pub fn get(&self, name: &str) -> Option<Login> {
        self.logins.read().get(&name.to_lowercase()).cloned()
    }

    /// Every login, by principal id.
    pub fn all(&self) -> Vec<Login> {
        let mut all: Vec<Login> = self.logins.read().values().cloned().collect();
        all.sort_by_key(|l| l.principal_id);
        all
    }

    /// Whether `login` is a member of the fixed server role `role`.
    pub fn is_member(&self, login: &str, role: &str) -> bool {
        self.get(login).is_some_and(|l| {
            if role.eq_ignore_ascii_case("sysadmin") {
                l.is_sysadmin()
            } else {
                l.is_member(role)
            }
        })
    }

    pub fn is_sysadmin(&self, login: &str) -> bool {
        self.get(login).is_some_and(|l| l.is_sysadmin())
    }

    /// `CREATE LOGIN`.
    pub fn create(&self, new: NewLogin) -> SqlResult<()> {
        if new.check_policy {
            check_policy(&new.password)?;
        }
        let hash = hash_password(&new.password)?;
        let mut logins = self.logins.write();
        let key = new.name.to_lowercase();
        if logins.contains_key(&key) || SERVER_ROLES.iter().any(|(_, r)| r.eq_ignore_ascii_case(&new.name)) {
            return Err(SqlError::new(15025, format!("The server principal '{}' already exists.", new.name)));
        }
        if logins.len() >= MAX_LOGINS {
            return Err(SqlError::new(
                15025,
                format!("The server already has the most logins it keeps ({MAX_LOGINS})."),
            ));
        }
        let principal_id = logins.values().map(|l| l.principal_id + 1).max().unwrap_or(0).max(FIRST_LOGIN_ID);
        let sid = match new.sid {
            Some(sid) => {
                if sid.is_empty() || sid.len() > 85 || logins.values().any(|l| l.sid == sid) {
                    return Err(SqlError::new(
                        15433,
                        "Supplied parameter sid is in use or is not a valid security identifier.",
                    ));
                }
                sid
            }
            None => {
                let mut sid = vec![0u8; 16];
                rand::rng().fill_bytes(&mut sid);
                sid
            }
        };
        let t = now();
        let login = Login {
            name: new.name,
            principal_id,
            sid,
            password_hash: hash,
            disabled: false,
            default_database: new.default_database,
            default_language: new.default_language,
            check_policy: new.check_policy,
            check_expiration: new.check_expiration,
            roles: Vec::new(),
            create_date: t,
            modify_date: t,
        };
        self.persist(None, Some(&login))?;
        logins.insert(key, login);
        Ok(())
    }

    /// Applies `change` to a login (ALTER LOGIN, ALTER SERVER ROLE) and stores it.
    pub fn alter(&self, name: &str, change: impl FnOnce(&mut Login) -> SqlResult<()>) -> SqlResult<()> {
        let mut logins = self.logins.write();
        let key = name.to_lowercase();
        let Some(current) = logins.get(&key) else {
            return Err(cannot_alter(name));
        };
        let mut next = current.clone();
        change(&mut next)?;
        next.modify_date = now();
        let new_key = next.name.to_lowercase();
        if new_key != key && logins.contains_key(&new_key) {
            return Err(SqlError::new(15025, format!("The server principal '{}' already exists.", next.name)));
        }
        self.persist(Some(&key), Some(&next))?;
        logins.remove(&key);
        logins.insert(new_key, next);
        Ok(())
    }

    /// `DROP LOGIN`.
    pub fn drop_login(&self, name: &str) -> SqlResult<()> {
        let mut logins = self.logins.write();
        let key = name.to_lowercase();
        match logins.get(&key) {
            Some(l) if l.principal_id != 1 => {}
            _ => {
                return Err(SqlError::new(
                    15151,
                    format!("Cannot drop the login '{name}', because it does not exist or you do not have permission."),
                ))
            }
        }
        self.persist(Some(&key), None)?;
        logins.remove(&key);
        Ok(())
    }

    /// Replaces the stored row `old_key` (if any) by `login` (if any), in one transaction.
    fn persist(&self, old_key: Option<&str>, login: Option<&Login>) -> SqlResult<()> {
        let Some(master) = &self.master else { return Ok(()) };
        let tree = match master.table(LOGINS_TREE) {
            Some(t) => t,
            None => master.create_table(LOGINS_TREE)?,
        };
        let mut tx = master.begin();
        if let Some(k) = old_key {
            tx.delete(tree, k.as_bytes())?;
        }
        if let Some(l) = login {
            let bytes = serde_json::to_vec(l).map_err(|e| SqlError::new(15118, e.to_string()))?;
            tx.insert(tree, l.name.to_lowercase().as_bytes(), &bytes)?;
        }
        tx.commit()?;
        Ok(())
    }
}

pub fn cannot_alter(name: &str) -> SqlError {
    SqlError::new(
        15151,
        format!("Cannot alter the login '{name}', because it does not exist or you do not have permission."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(name: &str, password: &str) -> NewLogin {
        NewLogin {
            name: name.to_string(),
            password: password.to_string(),
            sid: None,
            default_database: "master".to_string(),
            default_language: "us_english".to_string(),
            check_policy: true,
            check_expiration: false,
        }
    }

    #[test]
    fn create_check_disable_and_drop() {
        let l = Logins::in_memory();
        l.set_sa_password("Secret1!").unwrap();
        assert_eq!(l.check("SA", "Secret1!").unwrap().name, "sa");
        assert_eq!(l.check("sa", "secret1!").unwrap_err().state, 8);
        assert_eq!(l.check("bob", "Secret1!").unwrap_err().state, 5);
        assert_eq!(l.create(new("bob", "short")).unwrap_err().number, 15116);
        assert_eq!(l.create(new("bob", "alllowercase")).unwrap_err().number, 15118);
        l.create(new("Bob", "Bob-Pass-1")).unwrap();
        assert_eq!(l.create(new("BOB", "Bob-Pass-1")).unwrap_err().number, 15025);
        assert_eq!(l.create(new("sysadmin", "Bob-Pass-1")).unwrap_err().number, 15025);
        assert_eq!(l.check("bob", "Bob-Pass-1").unwrap().name, "Bob");
        assert!(!l.is_sysadmin("bob"));
        l.alter("bob", |x| {
            x.disabled = true;
            Ok(())
        })
        .unwrap();
        assert_eq!(l.check("bob", "Bob-Pass-1").unwrap_err().state, 7);
        assert_eq!(l.drop_login("sa").unwrap_err().number, 15151);
        l.drop_login("BOB").unwrap();
        assert_eq!(l.drop_login("bob").unwrap_err().number, 15151);
        assert!(!verify_password("x", "not a hash"));
    }
}
