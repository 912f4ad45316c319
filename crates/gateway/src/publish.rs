//! A server's side of the tenant directory: it publishes itself and its databases under
//! a lease, and keeps its fence ([`tessera_server::fence::Fence`]) in step with what the
//! directory grants it — its tenants are served while its lease is known to live and only
//! those the directory names it the owner of.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Instant;

use tessera_server::ServerState;

use crate::directory::{database_key, server_key, ServerEntry, CLAIM_INTERVAL, LEASE_TTL, SYNC_INTERVAL};
use crate::etcd::{Etcd, EtcdError, Result};

/// What one server publishes about itself.
pub struct Publication {
    /// Its name in the directory (unique in the fleet).
    pub server: String,
    /// Where clients and gateways reach it.
    pub address: String,
}

/// Every server has these; the directory routes them to none in particular.
const SYSTEM: [&str; 4] = ["master", "tempdb", "model", "msdb"];

/// Publishes the server and its databases, renewing its lease, until the process ends.
/// `log` gets what went wrong (etcd unreachable, a database another server owns) — the
/// loop goes on and tries again.
pub async fn publish(etcd: Etcd, me: Publication, server: Arc<ServerState>, log: impl Fn(&str)) {
    server.fence.governed();
    let mut sync = Sync { etcd, me, lease: 0, published: BTreeSet::new(), others: BTreeSet::new() };
    let mut last: Option<Instant> = None;
    loop {
        let result = if last.is_none_or(|t| t.elapsed() >= SYNC_INTERVAL) {
            last = Some(Instant::now());
            sync.once(&server, &log).await
        } else {
            sync.claim_others(&server).await
        };
        if let Err(e) = result {
            log(&format!("The tenant directory could not be updated: {e}"));
        }
        // Whatever the directory said (or if it could not be reached and the lease ran
        // out), no session stays in a database the fence refuses.
        let cut = server.fence.cut_off(&server.shared);
        if !cut.is_empty() {
            log(&format!("Ended {} sessions in databases this server may not serve now.", cut.len()));
        }
        tokio::time::sleep(CLAIM_INTERVAL).await;
    }
}

struct Sync {
    etcd: Etcd,
    me: Publication,
    lease: i64,
    /// The databases (lower-cased) whose keys name this server.
    published: BTreeSet<String>,
    /// Databases here whose keys name another server.
    others: BTreeSet<String>,
}

impl Sync {
    async fn once(&mut self, server: &ServerState, log: &impl Fn(&str)) -> Result<()> {
        // The lease lives at least LEASE_TTL past the moment the renewal was sent.
        let sent = Instant::now();
        if self.lease == 0 || !self.etcd.keep_alive(self.lease).await? {
            // A new lease: every database is claimed again under it, and until then
            // none is served (another server may hold it now).
            self.lease = self.etcd.grant(LEASE_TTL).await?;
            self.published.clear();
            self.others.clear();
            server.fence.set_others(HashSet::new());
            server.fence.lease_until(sent);
        }
        self.find_taken(log).await?;
        let now: BTreeSet<String> =
            server.shared.engine.database_names().into_iter().map(|d| d.to_lowercase()).collect();
        for gone in self.published.difference(&now).cloned().collect::<Vec<_>>() {
            // Only if still this server's: a tenant moved away is the new owner's key.
            self.etcd.delete_if(&database_key(&gone), self.me.server.as_bytes()).await?;
            self.published.remove(&gone);
        }
        self.others.retain(|d| now.contains(d));
        for new in now.difference(&self.published).cloned().collect::<Vec<_>>() {
            if SYSTEM.contains(&new.as_str()) {
                self.published.insert(new);
                continue;
            }
            if !self.claim(&new).await? && self.others.insert(new.clone()) {
                log(&format!("Database '{new}' is not served here: the tenant directory gives it to another server."));
            }
        }
        self.claim_others(server).await?;
        // The claims are made: the fence serves under the lease from now on, and once the
        // server's key is in the directory its fence is live.
        server.fence.lease_until(sent + LEASE_TTL);
        let entry =
            ServerEntry { name: String::new(), address: self.me.address.clone(), databases: 0, lease: self.lease };
        let value = serde_json::to_vec(&entry).map_err(|e| EtcdError(e.to_string()))?;
        self.etcd.put(&server_key(&self.me.server), &value, self.lease).await?;
        Ok(())
    }

    /// Finds the published databases whose keys are no longer under this server's lease
    /// (a move flipped them to another server, whose lease they now carry, or someone
    /// deleted them) and counts them among the others: the fence refuses them from now
    /// on, and [`Sync::claim_others`] claims back any whose key is simply gone.
    async fn find_taken(&mut self, log: &impl Fn(&str)) -> Result<()> {
        let Some(keys) = self.etcd.lease_keys(self.lease).await? else {
            // Expired since the renewal: the next round starts over with a new lease.
            return Ok(());
        };
        let keys: HashSet<Vec<u8>> = keys.into_iter().collect();
        let taken: Vec<String> = self
            .published
            .iter()
            .filter(|d| !SYSTEM.contains(&d.as_str()) && !keys.contains(&database_key(d)))
            .cloned()
            .collect();
        for database in taken {
            log(&format!(
                "Database '{database}' is no longer served here: the tenant directory no longer names this server."
            ));
            self.published.remove(&database);
            self.others.insert(database);
        }
        Ok(())
    }

    /// Claims `database` for this server if the directory has no owner for it or names
    /// this server: whether it is this server's now.
    async fn claim(&mut self, database: &str) -> Result<bool> {
        let owner =
            self.etcd.put_if_absent_or_same(&database_key(database), self.me.server.as_bytes(), self.lease).await?;
        if owner != self.me.server.as_bytes() {
            return Ok(false);
        }
        self.others.remove(database);
        self.published.insert(database.to_string());
        Ok(true)
    }

    /// Tries again to claim the databases here that the directory gave to other servers
    /// (every [`CLAIM_INTERVAL`]: a tenant moved here is served as soon as the directory
    /// names this server), and tells the fence which are still not this server's.
    async fn claim_others(&mut self, server: &ServerState) -> Result<()> {
        if self.lease != 0 {
            for database in self.others.clone() {
                self.claim(&database).await?;
            }
        }
        server.fence.set_others(self.others.iter().cloned().collect());
        Ok(())
    }
}
