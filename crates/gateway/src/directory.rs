//! The tenant directory in etcd: which servers are up and which server holds each
//! database. Keys (values UTF-8):
//!
//! - `/tessera/servers/<server>` → `{"address": "host:port", "databases": N}`, attached
//!   to the server's lease: the key goes when the server stops renewing it.
//! - `/tessera/databases/<database, lower-cased>` → `<server>`, attached to the same
//!   lease, set only if absent (an etcd transaction), so one database has one owner.
//!
//! A server publishes itself with [`publish`]: a lease of [`LEASE_TTL`], renewed every
//! [`SYNC_INTERVAL`], and its list of databases compared with what it published, so that
//! a CREATE or DROP DATABASE reaches the directory within a second. A gateway reads the
//! directory with [`Directory::locate`]; it keeps nothing that etcd lacks, so several
//! gateways agree with each other as soon as they read.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::etcd::{Etcd, Result};

const SERVERS: &str = "/tessera/servers/";
const DATABASES: &str = "/tessera/databases/";

/// How long a server's keys outlive its last renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often a server renews its lease and publishes changes to its databases.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// A server as the directory has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerEntry {
    #[serde(skip)]
    pub name: String,
    /// Where clients (or gateways) reach it.
    pub address: String,
    /// How many databases it holds.
    pub databases: usize,
}

fn database_key(database: &str) -> Vec<u8> {
    format!("{DATABASES}{}", database.to_lowercase()).into_bytes()
}

fn server_key(server: &str) -> Vec<u8> {
    format!("{SERVERS}{server}").into_bytes()
}

/// The directory as a gateway reads it.
#[derive(Debug, Clone)]
pub struct Directory {
    etcd: Etcd,
}

impl Directory {
    pub fn new(etcd: Etcd) -> Directory {
        Directory { etcd }
    }

    /// The live servers, by name.
    pub async fn servers(&self) -> Result<Vec<ServerEntry>> {
        let mut out = Vec::new();
        for kv in self.etcd.get_prefix(SERVERS.as_bytes()).await? {
            let name = String::from_utf8_lossy(&kv.key[SERVERS.len()..]).into_owned();
            if let Ok(mut entry) = serde_json::from_slice::<ServerEntry>(&kv.value) {
                entry.name = name;
                out.push(entry);
            }
        }
        Ok(out)
    }

    async fn server(&self, name: &str) -> Result<Option<ServerEntry>> {
        Ok(self.etcd.get(&server_key(name)).await?.and_then(|v| serde_json::from_slice::<ServerEntry>(&v).ok()).map(
            |mut entry| {
                entry.name = name.to_string();
                entry
            },
        ))
    }

    /// The server that holds `database`, if a live one does. A login that names no
    /// database goes to its server's default database: the first live server by name
    /// (every server has a `master`).
    pub async fn locate(&self, database: &str) -> Result<Option<ServerEntry>> {
        if database.is_empty() {
            return Ok(self.servers().await?.into_iter().next());
        }
        let Some(owner) = self.etcd.get(&database_key(database)).await? else { return Ok(None) };
        self.server(&String::from_utf8_lossy(&owner)).await
    }
}

/// What one server publishes about itself.
pub struct Publication {
    /// Its name in the directory (unique in the fleet).
    pub server: String,
    /// Where clients and gateways reach it.
    pub address: String,
}

/// Publishes the server and its databases, renewing its lease, until the process ends.
/// `databases` lists the server's databases now; `log` gets what went wrong (etcd
/// unreachable, a database another server owns) — the loop goes on and tries again.
pub async fn publish(etcd: Etcd, me: Publication, databases: impl Fn() -> Vec<String>, log: impl Fn(&str)) {
    let mut lease = 0;
    let mut published: BTreeSet<String> = BTreeSet::new();
    let mut reported: BTreeSet<String> = BTreeSet::new();
    loop {
        if let Err(e) = sync(&etcd, &me, &databases, &mut lease, &mut published, &mut reported, &log).await {
            log(&format!("The tenant directory could not be updated: {e}"));
        }
        tokio::time::sleep(SYNC_INTERVAL).await;
    }
}

async fn sync(
    etcd: &Etcd,
    me: &Publication,
    databases: &impl Fn() -> Vec<String>,
    lease: &mut i64,
    published: &mut BTreeSet<String>,
    reported: &mut BTreeSet<String>,
    log: &impl Fn(&str),
) -> Result<()> {
    if *lease == 0 || !etcd.keep_alive(*lease).await? {
        // A new lease: everything is published again under it.
        *lease = etcd.grant(LEASE_TTL).await?;
        published.clear();
    }
    let now: BTreeSet<String> = databases().into_iter().map(|d| d.to_lowercase()).collect();
    for gone in published.difference(&now).cloned().collect::<Vec<_>>() {
        etcd.delete(&database_key(&gone)).await?;
        published.remove(&gone);
    }
    for new in now.difference(published).cloned().collect::<Vec<_>>() {
        // Every server has these; the directory routes them to none in particular.
        if ["master", "tempdb", "model", "msdb"].contains(&new.as_str()) {
            published.insert(new);
            continue;
        }
        let owner = etcd.put_if_absent_or_same(&database_key(&new), me.server.as_bytes(), *lease).await?;
        if owner == me.server.as_bytes() {
            published.insert(new);
        } else if reported.insert(new.clone()) {
            log(&format!(
                "Database '{new}' is not published: server '{}' holds a database of that name.",
                String::from_utf8_lossy(&owner)
            ));
        }
    }
    let entry = ServerEntry { name: String::new(), address: me.address.clone(), databases: now.len() };
    let value = serde_json::to_vec(&entry).map_err(|e| crate::etcd::EtcdError(e.to_string()))?;
    etcd.put(&server_key(&me.server), &value, *lease).await
}
