//! Which databases a server in a fleet may serve. A server that publishes itself in a
//! tenant directory (`tessera serve --etcd`, crates/gateway) owns its databases only
//! while its lease there lives and the directory names it as their owner: a tenant moved
//! to another server, or a name another server holds, is not this server's to serve, and
//! a server cut off from the directory for longer than its lease cannot know what it
//! still owns (its keys may have expired and a gateway may already route elsewhere). The
//! directory's loop keeps this up to date; a login into a database the fence refuses
//! gets 40613 (Azure SQL Database's "not currently available", which clients retry),
//! and the sessions already in such a database are killed ([`Fence::cut_off`]).
//!
//! A server without a directory fences nothing. System databases are every server's.

use std::collections::HashSet;
use std::time::Instant;

use parking_lot::Mutex;
use tessera_sql::Shared;

#[derive(Default)]
pub struct Fence {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Some once a directory governs the server: until when its lease is known to live
    /// (None: not yet or no longer known).
    directory: Option<Option<Instant>>,
    /// Databases here that the directory gives to another server.
    others: HashSet<String>,
}

fn is_system(database: &str) -> bool {
    ["master", "tempdb", "model", "msdb"].iter().any(|s| s.eq_ignore_ascii_case(database))
}

impl Fence {
    /// From now on a directory governs the server; until [`Fence::lease_until`] is first
    /// told of a live lease, it serves no tenant database.
    pub fn governed(&self) {
        let mut s = self.state.lock();
        if s.directory.is_none() {
            s.directory = Some(None);
        }
    }

    /// The server's lease is known to live until `until` (renewed just now).
    pub fn lease_until(&self, until: Instant) {
        self.state.lock().directory = Some(Some(until));
    }

    /// The databases (lower-cased) here that the directory gives to other servers.
    pub fn set_others(&self, others: HashSet<String>) {
        self.state.lock().others = others;
    }

    /// Kills the sessions whose current database the fence refuses now — they logged in
    /// before it changed, or `USE`d the database after logging in elsewhere — as `KILL`
    /// does: each one's request is cancelled, its transaction rolled back and its
    /// connection closed, and its client reconnects (through a gateway, to the server
    /// that holds the database). Their spids.
    pub fn cut_off(&self, shared: &Shared) -> Vec<i32> {
        if self.state.lock().directory.is_none() {
            return Vec::new();
        }
        let refused: Vec<i32> = shared
            .sessions
            .lock()
            .values()
            .filter(|s| !self.admits(&s.activity.lock().database))
            .map(|s| s.spid)
            .collect();
        for &spid in &refused {
            shared.kill(spid);
        }
        refused
    }

    /// Whether a login into `database` may be served now.
    pub fn admits(&self, database: &str) -> bool {
        if is_system(database) {
            return true;
        }
        let s = self.state.lock();
        match s.directory {
            None => true,
            Some(None) => false,
            Some(Some(until)) => Instant::now() < until && !s.others.contains(&database.to_lowercase()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_fence_admits_while_the_lease_lives_and_never_another_servers_database() {
        let fence = Fence::default();
        assert!(fence.admits("shop"), "no directory: nothing fenced");
        fence.governed();
        assert!(!fence.admits("shop"), "governed, no lease yet");
        assert!(fence.admits("master"));
        fence.lease_until(Instant::now() + Duration::from_secs(5));
        assert!(fence.admits("shop"));
        fence.set_others(["moved".to_string()].into());
        assert!(!fence.admits("Moved"));
        assert!(fence.admits("shop"));
        fence.lease_until(Instant::now() - Duration::from_millis(1));
        assert!(!fence.admits("shop"), "the lease may have expired");
        assert!(fence.admits("MSDB"));
    }
}
