//! Server logins and fixed server roles: `CREATE/ALTER/DROP LOGIN`, `ALTER SERVER ROLE`,
//! password checks at connection time, `sys.server_principals` / `sys.sql_logins`.
//!
//! Invariants:
//! - Passwords are never stored: only salted Argon2id hashes (PHC strings). Checking one
//!   is slow by design (tens of milliseconds), so callers run [`Logins::check`] on a
//!   blocking thread, and a failure always hashes — an unknown login costs the same as a
//!   known one with a wrong password, so timing reveals nothing. A password that matched
//!   once is matched again without the hash ([`crate::verified`]).
//! - Logins live in master's storage tree `sys$logins` (key: the lower-cased name, value:
//!   the login as JSON) and in memory behind one lock; every change writes master first
//!   and updates memory only when that committed.
//! - `sa` (principal 1) always exists and is always a sysadmin. Its password is the one
//!   the server is started with (`TESSERA_SA_PASSWORD` or the config file), applied at
//!   every start; `ALTER LOGIN sa WITH PASSWORD` lasts until the next restart.
//! - Names compare case-insensitively (the server collation is case-insensitive).
//! - Lockout ([`LockoutPolicy`]): a CHECK_POLICY = ON login other than `sa` is locked after
//!   `threshold` failed passwords in a row; while locked every attempt is refused (18486)
//!   before its password is hashed. The lock ends after `duration`, at `ALTER LOGIN … WITH
//!   PASSWORD = '…' UNLOCK` or at `CHECK_POLICY = OFF`; a correct password resets the
//!   count, and so does `duration` without a failure. The counts live in memory only,
//!   keyed by principal id: a restart unlocks every login, a rename keeps its count.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use parking_lot::{Mutex, RwLock};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use tessera_database::Database;
use tessera_errors::catalog::Message;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};

use crate::principals::now;
use crate::verified::Verified;

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

/// Why a connection's credentials were refused. `error` is what the client gets:
/// LOGIN_FAILED (18456) for every reason but a locked login (LOGIN_LOCKED_OUT, 18486), so
/// that it reveals nothing about whether the login exists; `state` and `reason` are
/// written to ERRORLOG only.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub error: &'static Message,
    pub state: i32,
    pub reason: &'static str,
}

impl Refusal {
    /// A refusal with LOGIN_FAILED (18456) in SQL Server's `state`.
    pub fn failed(state: i32, reason: &'static str) -> Refusal {
        Refusal { error: &msg::LOGIN_FAILED, state, reason }
    }

    /// The error number the client gets.
    pub fn number(&self) -> i32 {
        self.error.number
    }
}

/// The account lockout policy of the instance (tessera's `sp_configure` options 'login
/// lockout threshold' and 'login lockout duration (min)': `Shared::lockout_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockoutPolicy {
    /// Failed passwords in a row that lock a login; 0: never locked.
    pub threshold: u32,
    /// How long a lock lasts, and how long a failure counts toward one; None: a lock lasts
    /// until an administrator unlocks the login, and failures count until a success.
    pub duration: Option<Duration>,
}

/// One login's failed passwords (memory only).
#[derive(Clone, Copy, Debug, Default)]
struct Strikes {
    /// Failed passwords since the last success, unlock or expiry.
    count: u32,
    /// The last failed password (kept after the count resets, for LOGINPROPERTY).
    last_failure: Option<(Instant, SystemTime)>,
    /// When the login was locked.
    locked: Option<(Instant, SystemTime)>,
}

impl Strikes {
    /// These strikes as they stand at `now` under `policy`: a lock or a count older than
    /// the policy's duration has lapsed.
    fn at(mut self, policy: &LockoutPolicy, now: Instant) -> Strikes {
        let lapsed = |since: Instant| policy.duration.is_some_and(|d| now.saturating_duration_since(since) >= d);
        match self.locked {
            Some((at, _)) if lapsed(at) => {
                self.locked = None;
                self.count = 0;
            }
            None if self.last_failure.is_some_and(|(at, _)| lapsed(at)) => self.count = 0,
            _ => {}
        }
        self
    }
}

/// What LOGINPROPERTY tells of a login's lockout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockoutStatus {
    pub locked: bool,
    pub bad_password_count: u32,
    pub bad_password_time: Option<SystemTime>,
    pub lockout_time: Option<SystemTime>,
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
    /// Failed passwords by principal id, for the logins the lockout applies to (at most
    /// one entry per login: bounded by [`MAX_LOGINS`]).
    strikes: Mutex<HashMap<i32, Strikes>>,
    verified: Verified,
}

/// Whether the lockout applies to `login`: CHECK_POLICY = ON and not `sa` (so that an
/// operator can never be locked out of their own server).
fn lockable(login: &Login, policy: &LockoutPolicy) -> bool {
    policy.threshold > 0 && login.check_policy && login.principal_id != 1
}

/// A salted Argon2id hash of `password` in PHC string form.
pub fn hash_password(password: &str) -> SqlResult<String> {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    // Neither step fails for 16 random bytes and a password of a SQL string's length: a
    // failure is tessera's, reported as SQL Server reports its own (8630).
    let salt = SaltString::encode_b64(&bytes).map_err(|_| msg::INTERNAL_QUERY_PROCESSOR_ERROR.err())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|_| msg::INTERNAL_QUERY_PROCESSOR_ERROR.err())
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
        return Err(msg::PASSWORD_TOO_SHORT.err());
    }
    let classes = [
        password.chars().any(|c| c.is_uppercase()),
        password.chars().any(|c| c.is_lowercase()),
        password.chars().any(|c| c.is_ascii_digit()),
        password.chars().any(|c| !c.is_alphanumeric()),
    ];
    if classes.iter().filter(|&&b| b).count() < 3 {
        return Err(msg::PASSWORD_NOT_COMPLEX.err());
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
                let login: Login = serde_json::from_slice(&v).map_err(|_| msg::SCHEMA_CORRUPTION.err())?;
                logins.insert(login.name.to_lowercase(), login);
            }
            tx.commit()?;
        }
        logins.entry("sa".to_string()).or_insert_with(sa_login);
        Ok(Logins {
            master: Some(master),
            logins: RwLock::new(logins),
            strikes: Mutex::new(HashMap::new()),
            verified: Verified::default(),
        })
    }

    /// Logins that are not persisted (tests).
    pub fn in_memory() -> Logins {
        Logins {
            master: None,
            logins: RwLock::new(BTreeMap::from([("sa".to_string(), sa_login())])),
            strikes: Mutex::new(HashMap::new()),
            verified: Verified::default(),
        }
    }

    /// Sets `sa`'s password for this run of the server (not persisted).
    pub fn set_sa_password(&self, password: &str) -> SqlResult<()> {
        let hash = hash_password(password)?;
        if let Some(sa) = self.logins.write().values_mut().find(|l| l.principal_id == 1) {
            sa.password_hash = hash;
        }
        Ok(())
    }

    /// Checks a connection's SQL credentials under the lockout `policy` (slow: run on a
    /// blocking thread).
    pub fn check(&self, user: &str, password: &str, policy: &LockoutPolicy) -> Result<Accepted, Refusal> {
        self.check_at(user, password, policy, Instant::now())
    }

    /// [`Logins::check`] at the instant `now`.
    fn check_at(&self, user: &str, password: &str, policy: &LockoutPolicy, now: Instant) -> Result<Accepted, Refusal> {
        let found = self.get(user);
        let lockable = found.as_ref().filter(|l| lockable(l, policy)).map(|l| l.principal_id);
        // A locked login is refused before its hash runs: its attempts cost nothing.
        if lockable.is_some_and(|id| self.strikes_at(id, policy, now).locked.is_some()) {
            return Err(Refusal {
                error: &msg::LOGIN_LOCKED_OUT,
                state: 1,
                reason: "The account is currently locked out. The system administrator can unlock it.",
            });
        }
        let matches = match &found {
            Some(l) if self.verified.holds(&l.name, &l.password_hash, password) => true,
            Some(l) => {
                let matches = verify_password(password, &l.password_hash);
                if matches {
                    self.verified.remember(&l.name, &l.password_hash, password);
                }
                matches
            }
            None => verify_password(password, decoy_hash()),
        };
        let Some(login) = found else {
            return Err(Refusal::failed(5, "Could not find a login matching the name provided."));
        };
        if !matches {
            let locked = lockable.is_some_and(|id| self.strike(id, policy, now));
            return Err(Refusal::failed(
                8,
                if locked {
                    "Password did not match that for the login provided. The login is now locked out."
                } else {
                    "Password did not match that for the login provided."
                },
            ));
        }
        if lockable.is_some() {
            // The count starts over; the last failure's time stays for LOGINPROPERTY.
            if let Some(entry) = self.strikes.lock().get_mut(&login.principal_id) {
                entry.count = 0;
                entry.locked = None;
            }
        }
        if login.disabled {
            return Err(Refusal::failed(7, "Login is disabled."));
        }
        Ok(Accepted { name: login.name, default_database: login.default_database })
    }

    /// The strikes of principal `id` as they stand at `now` (a lapsed lock or count is
    /// reset in the table too).
    fn strikes_at(&self, id: i32, policy: &LockoutPolicy, now: Instant) -> Strikes {
        let mut strikes = self.strikes.lock();
        let Some(entry) = strikes.get_mut(&id) else { return Strikes::default() };
        *entry = entry.at(policy, now);
        *entry
    }

    /// Records a failed password of principal `id`; true when it locked the login.
    fn strike(&self, id: i32, policy: &LockoutPolicy, now: Instant) -> bool {
        let mut strikes = self.strikes.lock();
        let entry = strikes.entry(id).or_default();
        *entry = entry.at(policy, now);
        let wall = (now, SystemTime::now());
        entry.count = entry.count.saturating_add(1);
        entry.last_failure = Some(wall);
        if entry.locked.is_none() && entry.count >= policy.threshold {
            entry.locked = Some(wall);
            return true;
        }
        false
    }

    /// Forgets a login's failed passwords and ends its lock (`ALTER LOGIN … UNLOCK`,
    /// `CHECK_POLICY = OFF`).
    pub fn unlock(&self, principal_id: i32) {
        self.strikes.lock().remove(&principal_id);
    }

    /// A login's lockout as LOGINPROPERTY reports it (None: no such login).
    pub fn lockout(&self, name: &str, policy: &LockoutPolicy) -> Option<LockoutStatus> {
        self.lockout_at(name, policy, Instant::now())
    }

    fn lockout_at(&self, name: &str, policy: &LockoutPolicy, now: Instant) -> Option<LockoutStatus> {
        let login = self.get(name)?;
        if !lockable(&login, policy) {
            return Some(LockoutStatus::default());
        }
        let s = self.strikes_at(login.principal_id, policy, now);
        Some(LockoutStatus {
            locked: s.locked.is_some(),
            bad_password_count: s.count,
            bad_password_time: s.last_failure.map(|(_, t)| t),
            lockout_time: s.locked.map(|(_, t)| t),
        })
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
            return Err(msg::SERVER_PRINCIPAL_EXISTS.with(&[&new.name]));
        }
        if logins.len() >= MAX_LOGINS {
            return Err(msg::TOO_MANY_LOGINS.with(&[&MAX_LOGINS]));
        }
        let principal_id = logins.values().map(|l| l.principal_id + 1).max().unwrap_or(0).max(FIRST_LOGIN_ID);
        let sid = match new.sid {
            Some(sid) => {
                if sid.is_empty() || sid.len() > 85 || logins.values().any(|l| l.sid == sid) {
                    return Err(msg::INVALID_SID.err());
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
            return Err(msg::SERVER_PRINCIPAL_EXISTS.with(&[&next.name]));
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
            _ => return Err(msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"drop", &"login", &name])),
        }
        self.persist(Some(&key), None)?;
        if let Some(gone) = logins.remove(&key) {
            // A later login may be given the same principal id.
            self.strikes.lock().remove(&gone.principal_id);
        }
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
            let bytes = serde_json::to_vec(l).map_err(|_| msg::INTERNAL_QUERY_PROCESSOR_ERROR.err())?;
            tx.insert(tree, l.name.to_lowercase().as_bytes(), &bytes)?;
        }
        tx.commit()?;
        Ok(())
    }
}

pub fn cannot_alter(name: &str) -> SqlError {
    msg::PRINCIPAL_NOT_FOUND_OR_DENIED.with(&[&"alter", &"login", &name])
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
        let p = LockoutPolicy { threshold: 5, duration: Some(30 * MINUTE) };
        assert_eq!(l.check("SA", "Secret1!", &p).unwrap().name, "sa");
        assert_eq!(l.check("sa", "secret1!", &p).unwrap_err().state, 8);
        assert_eq!(l.check("bob", "Secret1!", &p).unwrap_err().state, 5);
        assert_eq!(l.create(new("bob", "short")).unwrap_err().number, 15116);
        assert_eq!(l.create(new("bob", "alllowercase")).unwrap_err().number, 15118);
        l.create(new("Bob", "Bob-Pass-1")).unwrap();
        assert_eq!(l.create(new("BOB", "Bob-Pass-1")).unwrap_err().number, 15025);
        assert_eq!(l.create(new("sysadmin", "Bob-Pass-1")).unwrap_err().number, 15025);
        assert_eq!(l.check("bob", "Bob-Pass-1", &p).unwrap().name, "Bob");
        assert!(!l.is_sysadmin("bob"));
        l.alter("bob", |x| {
            x.disabled = true;
            Ok(())
        })
        .unwrap();
        assert_eq!(l.check("bob", "Bob-Pass-1", &p).unwrap_err().state, 7);
        assert_eq!(l.drop_login("sa").unwrap_err().number, 15151);
        l.drop_login("BOB").unwrap();
        assert_eq!(l.drop_login("bob").unwrap_err().number, 15151);
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn a_remembered_password_stops_matching_when_it_changes_or_its_login_goes() {
        let l = Logins::in_memory();
        let p = LockoutPolicy { threshold: 5, duration: Some(30 * MINUTE) };
        l.create(new("app", "App-Pass-1")).unwrap();
        assert!(l.check("app", "App-Pass-1", &p).is_ok());
        assert!(l.check("APP", "App-Pass-1", &p).is_ok(), "remembered, under any case of the name");
        l.alter("app", |x| {
            x.password_hash = hash_password("App-Pass-2")?;
            Ok(())
        })
        .unwrap();
        assert_eq!(l.check("app", "App-Pass-1", &p).unwrap_err().state, 8, "the old password");
        assert!(l.check("app", "App-Pass-2", &p).is_ok());
        l.drop_login("app").unwrap();
        assert_eq!(l.check("app", "App-Pass-2", &p).unwrap_err().state, 5, "a dropped login");
        l.create(new("app", "App-Pass-3")).unwrap();
        assert_eq!(l.check("app", "App-Pass-2", &p).unwrap_err().state, 8, "a new login of the same name");
    }

    const MINUTE: Duration = Duration::from_secs(60);

    /// Three failures lock; a lock and a count last a minute.
    fn policy() -> LockoutPolicy {
        LockoutPolicy { threshold: 3, duration: Some(MINUTE) }
    }

    fn fail(l: &Logins, name: &str, now: Instant) -> Refusal {
        l.check_at(name, "Wrong-Pass-1", &policy(), now).unwrap_err()
    }

    fn count(l: &Logins, name: &str, now: Instant) -> u32 {
        l.lockout_at(name, &policy(), now).unwrap().bad_password_count
    }

    fn locked(l: &Logins, name: &str, now: Instant) -> bool {
        l.lockout_at(name, &policy(), now).unwrap().locked
    }

    #[test]
    fn failures_lock_a_login_until_the_lock_lapses() {
        let l = Logins::in_memory();
        l.create(new("bob", "Bob-Pass-1")).unwrap();
        let t0 = Instant::now();
        // Failures short of the threshold, then a success: the count starts over.
        assert_eq!(fail(&l, "bob", t0), Refusal::failed(8, "Password did not match that for the login provided."));
        fail(&l, "bob", t0);
        assert_eq!(count(&l, "bob", t0), 2);
        l.check_at("bob", "Bob-Pass-1", &policy(), t0).unwrap();
        assert_eq!(count(&l, "bob", t0), 0);
        assert!(l.lockout_at("bob", &policy(), t0).unwrap().bad_password_time.is_some());
        // The third failure in a row locks (and says so in ERRORLOG's reason).
        fail(&l, "bob", t0);
        fail(&l, "bob", t0);
        let third = fail(&l, "bob", t0);
        assert_eq!((third.number(), third.state), (18456, 8));
        assert!(third.reason.ends_with("The login is now locked out."), "{}", third.reason);
        let status = l.lockout_at("BOB", &policy(), t0).unwrap();
        assert!(status.locked && status.lockout_time.is_some() && status.bad_password_time.is_some());
        assert_eq!(status.bad_password_count, 3);
        // Locked: even the right password is refused, with 18486, and counts nothing.
        let refused = l.check_at("bob", "Bob-Pass-1", &policy(), t0 + MINUTE / 2).unwrap_err();
        assert_eq!((refused.number(), refused.state), (18486, 1));
        assert_eq!(count(&l, "bob", t0 + MINUTE / 2), 3);
        // The lock lapses after its duration.
        assert!(!locked(&l, "bob", t0 + MINUTE));
        assert_eq!(count(&l, "bob", t0 + MINUTE), 0);
        assert_eq!(l.check_at("bob", "Bob-Pass-1", &policy(), t0 + MINUTE).unwrap().name, "bob");
    }

    #[test]
    fn old_failures_do_not_count() {
        let l = Logins::in_memory();
        l.create(new("bob", "Bob-Pass-1")).unwrap();
        let t0 = Instant::now();
        fail(&l, "bob", t0);
        fail(&l, "bob", t0);
        fail(&l, "bob", t0 + MINUTE);
        assert!(!locked(&l, "bob", t0 + MINUTE));
        assert_eq!(count(&l, "bob", t0 + MINUTE), 1);
    }

    #[test]
    fn sa_policy_off_logins_and_threshold_zero_are_never_locked() {
        let l = Logins::in_memory();
        l.set_sa_password("Secret1!").unwrap();
        let mut weak = new("weak", "weak");
        weak.check_policy = false;
        l.create(weak).unwrap();
        l.create(new("bob", "Bob-Pass-1")).unwrap();
        let t0 = Instant::now();
        for _ in 0..4 {
            fail(&l, "sa", t0);
            fail(&l, "weak", t0);
        }
        assert_eq!(l.check_at("sa", "Secret1!", &policy(), t0).unwrap().name, "sa");
        assert_eq!(l.check_at("weak", "weak", &policy(), t0).unwrap().name, "weak");
        assert_eq!(l.lockout_at("sa", &policy(), t0), Some(LockoutStatus::default()));
        assert_eq!(l.lockout_at("nobody", &policy(), t0), None);
        let never = LockoutPolicy { threshold: 0, duration: None };
        for _ in 0..4 {
            l.check_at("bob", "Wrong-Pass-1", &never, t0).unwrap_err();
        }
        l.check_at("bob", "Bob-Pass-1", &never, t0).unwrap();
    }

    #[test]
    fn unlock_drop_and_locks_without_a_duration() {
        let l = Logins::in_memory();
        l.create(new("bob", "Bob-Pass-1")).unwrap();
        let until_unlocked = LockoutPolicy { threshold: 2, duration: None };
        let t0 = Instant::now();
        let year = t0 + 365 * 24 * 60 * MINUTE;
        for _ in 0..2 {
            l.check_at("bob", "Wrong-Pass-1", &until_unlocked, t0).unwrap_err();
        }
        assert_eq!(l.check_at("bob", "Bob-Pass-1", &until_unlocked, year).unwrap_err().number(), 18486);
        l.unlock(l.get("BOB").unwrap().principal_id);
        assert_eq!(l.lockout_at("bob", &until_unlocked, year), Some(LockoutStatus::default()));
        l.check_at("bob", "Bob-Pass-1", &until_unlocked, year).unwrap();
        // A dropped login's lock is not inherited by a login given its principal id.
        for _ in 0..2 {
            l.check_at("bob", "Wrong-Pass-1", &until_unlocked, t0).unwrap_err();
        }
        let id = l.get("bob").unwrap().principal_id;
        l.drop_login("bob").unwrap();
        l.create(new("carl", "Carl-Pass-1")).unwrap();
        assert_eq!(l.get("carl").unwrap().principal_id, id);
        l.check_at("carl", "Carl-Pass-1", &until_unlocked, t0).unwrap();
    }
}
