//! The tenant directory in etcd: which servers are up and which server holds each
//! database. Keys (values UTF-8):
//!
//! - `/tessera/servers/<server>` → `{"address": "host:port", "databases": N}`, attached
//!   to the server's lease: the key goes when the server stops renewing it.
//! - `/tessera/databases/<database, lower-cased>` → `<server>`, attached to the same
//!   lease, set only if absent (an etcd transaction), so one database has one owner.
//!
//! A server publishes itself with [`crate::publish::publish`]: a lease of [`LEASE_TTL`],
//! renewed every [`SYNC_INTERVAL`], and its list of databases compared with what it
//! published, so that a CREATE or DROP DATABASE reaches the directory within a second.
//! A gateway reads the directory through [`Directory`]: a copy of the `/tessera/` keys
//! kept by an etcd watch ([`Directory::follow`]), so a login costs no call to etcd, and
//! two gateways disagree for no longer than a watch event takes to reach them. The copy
//! is all a gateway keeps, and etcd has all of it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::etcd::{Etcd, EtcdError, Event, KeyValue, Result};

const ROOT: &str = "/tessera/";
pub(crate) const SERVERS: &str = "/tessera/servers/";
pub(crate) const DATABASES: &str = "/tessera/databases/";

/// How long a server's keys outlive its last renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often a server renews its lease and publishes changes to its databases.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);
/// How often a server asks again for the databases it holds that the directory gives to
/// another server (a tenant moved to it is served this long after the directory flips).
pub const CLAIM_INTERVAL: Duration = Duration::from_millis(100);
/// How long a gateway waits before it reads the directory again after its watch failed.
const REWATCH_DELAY: Duration = Duration::from_millis(500);

/// A server as the directory has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEntry {
    #[serde(skip)]
    pub name: String,
    /// Where clients (or gateways) reach it.
    pub address: String,
    /// How many tenant databases the directory gives it (counted from the database keys
    /// as read, not published: a move or a new database counts at once).
    #[serde(skip)]
    pub databases: usize,
    /// The lease its keys live under: a tenant moved to it is put under this lease.
    #[serde(default)]
    pub lease: i64,
}

pub(crate) fn database_key(database: &str) -> Vec<u8> {
    format!("{DATABASES}{}", database.to_lowercase()).into_bytes()
}

pub(crate) fn server_key(server: &str) -> Vec<u8> {
    format!("{SERVERS}{server}").into_bytes()
}

fn server_entry(name: &str, value: &[u8]) -> Option<ServerEntry> {
    let mut entry = serde_json::from_slice::<ServerEntry>(value).ok()?;
    entry.name = name.to_string();
    Some(entry)
}

/// The `/tessera/` keys as a gateway's watch last saw them.
#[derive(Default)]
struct Copy {
    /// Whether it was read whole at least once (until then, logins ask etcd).
    loaded: bool,
    servers: BTreeMap<String, ServerEntry>,
    /// Database (lower-cased) → its server's name.
    databases: HashMap<String, String>,
    /// Server → how many databases name it.
    held: HashMap<String, usize>,
}

impl Copy {
    fn apply(&mut self, event: Event) {
        let (key, value) = match event {
            Event::Put(KeyValue { key, value, .. }) => (key, Some(value)),
            Event::Delete(key) => (key, None),
        };
        let key = String::from_utf8_lossy(&key);
        if let Some(name) = key.strip_prefix(SERVERS) {
            match value.as_deref().and_then(|v| server_entry(name, v)) {
                Some(entry) => self.servers.insert(name.to_string(), entry),
                None => self.servers.remove(name),
            };
        } else if let Some(database) = key.strip_prefix(DATABASES) {
            let before = match value {
                Some(v) => {
                    let owner = String::from_utf8_lossy(&v).into_owned();
                    *self.held.entry(owner.clone()).or_default() += 1;
                    self.databases.insert(database.to_string(), owner)
                }
                None => self.databases.remove(database),
            };
            if let Some(before) = before {
                let n = self.held.get_mut(&before).expect("a counted owner");
                *n -= 1;
                if *n == 0 {
                    self.held.remove(&before);
                }
            }
        }
    }

    /// The live servers, each with the number of databases the directory gives it.
    fn counted(&self) -> Vec<ServerEntry> {
        let held = |name: &str| self.held.get(name).copied().unwrap_or(0);
        self.servers.values().map(|s| ServerEntry { databases: held(&s.name), ..s.clone() }).collect()
    }

    /// The server a login without a database (or into `master`) goes to — where a
    /// CREATE DATABASE through the gateway lands: the one holding the fewest databases.
    fn least_loaded(&self) -> Option<ServerEntry> {
        least_loaded(self.counted().iter())
    }
}

fn least_loaded<'a>(servers: impl Iterator<Item = &'a ServerEntry>) -> Option<ServerEntry> {
    servers.min_by(|a, b| a.databases.cmp(&b.databases).then_with(|| a.name.cmp(&b.name))).cloned()
}

fn is_master(database: &str) -> bool {
    database.is_empty() || database.eq_ignore_ascii_case("master")
}

/// The directory as a gateway reads it.
#[derive(Clone)]
pub struct Directory {
    etcd: Etcd,
    copy: Arc<RwLock<Copy>>,
    /// Whether the copy is current: read whole and its watch open.
    watching: Arc<AtomicBool>,
}

impl Directory {
    pub fn new(etcd: Etcd) -> Directory {
        Directory { etcd, copy: Arc::default(), watching: Arc::default() }
    }

    /// Keeps this directory's copy of the keys up to date with an etcd watch, until the
    /// process ends; `log` gets what interrupted it (the watch starts again).
    pub async fn follow(self, log: impl Fn(&str)) {
        loop {
            let followed = self.follow_once().await;
            self.watching.store(false, Ordering::Release);
            if let Err(e) = followed {
                log(&format!("The tenant directory's watch stopped: {e}"));
            }
            tokio::time::sleep(REWATCH_DELAY).await;
        }
    }

    async fn follow_once(&self) -> Result<()> {
        let (kvs, revision) = self.etcd.range_prefix(ROOT.as_bytes()).await?;
        {
            let mut copy = Copy::default();
            for kv in kvs {
                copy.apply(Event::Put(kv));
            }
            copy.loaded = true;
            *self.copy.write() = copy;
        }
        self.watching.store(true, Ordering::Release);
        self.etcd.watch_prefix(ROOT.as_bytes(), revision + 1, |event| self.copy.write().apply(event)).await
    }

    /// Whether the copy is current (read whole, its watch open), and how many servers and
    /// databases it holds.
    pub fn status(&self) -> (bool, usize, usize) {
        let copy = self.copy.read();
        (self.watching.load(Ordering::Acquire) && copy.loaded, copy.servers.len(), copy.databases.len())
    }

    /// The live servers by name, each with the number of databases the directory gives
    /// it (read at one revision).
    pub async fn servers(&self) -> Result<Vec<ServerEntry>> {
        let mut copy = Copy::default();
        for kv in self.etcd.get_prefix(ROOT.as_bytes()).await? {
            copy.apply(Event::Put(kv));
        }
        Ok(copy.counted())
    }

    /// The live server named `name`.
    pub async fn server(&self, name: &str) -> Result<Option<ServerEntry>> {
        Ok(self.etcd.get(&server_key(name)).await?.and_then(|v| server_entry(name, &v)))
    }

    /// The server that holds `database`, if a live one does. A login that names no
    /// database, or `master`, goes to the live server that holds the fewest databases:
    /// a CREATE DATABASE through a gateway lands there (every server has a `master`).
    pub async fn locate(&self, database: &str) -> Result<Option<ServerEntry>> {
        {
            let copy = self.copy.read();
            if copy.loaded {
                if is_master(database) {
                    return Ok(copy.least_loaded());
                }
                if let Some(owner) = copy.databases.get(&database.to_lowercase()) {
                    return Ok(copy.servers.get(owner).cloned());
                }
            }
        }
        // Not in the copy (not loaded yet, or a database published a moment ago whose
        // event is on its way): etcd itself.
        if is_master(database) {
            return Ok(least_loaded(self.servers().await?.iter()));
        }
        let Some(owner) = self.etcd.get(&database_key(database)).await? else { return Ok(None) };
        self.server(&String::from_utf8_lossy(&owner)).await
    }

    /// Gives `database` from server `from` to server `to` in one etcd transaction (the
    /// last step of a move): its key then lives under `to`'s lease. Fails if the
    /// directory does not name `from` as its owner, or `to` is not live.
    pub async fn transfer(&self, database: &str, from: &str, to: &str) -> Result<()> {
        let target = self.server(to).await?.ok_or_else(|| EtcdError(format!("server '{to}' is not live")))?;
        let key = database_key(database);
        if self.etcd.replace_if(&key, from.as_bytes(), to.as_bytes(), target.lease).await? {
            return Ok(());
        }
        let owner = self.etcd.get(&key).await?.map(|v| String::from_utf8_lossy(&v).into_owned());
        Err(EtcdError(format!("database '{database}' is not server '{from}''s in the directory (owner: {owner:?})")))
    }
}
