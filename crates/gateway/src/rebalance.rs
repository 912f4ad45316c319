//! Keeping a fleet's servers within a load band (`tessera rebalance`): a server's load is
//! the number of tenant databases it holds, as it publishes in the directory. A round
//! reads the directory, and while the most loaded server is above the band around the
//! mean (or the least loaded below it) and moving one tenant narrows the spread, moves
//! one of the busiest server's smallest tenants to the least loaded server
//! ([`crate::mover`]) — at most `max_moves` a round, one at a time. The controller
//! (`--watch`) runs a round every interval, and holds `/tessera/rebalancer` in etcd under
//! a lease it renews every [`SYNC_INTERVAL`] (through its rounds and the waits between
//! them), so that of several controllers started side by side one acts. Asked to stop
//! ([`Stop`]), a round finishes the move in progress and starts no other; the controller
//! then gives the key up at once.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use tessera_semantics::types::Value;

use crate::directory::{Directory, ServerEntry, LEASE_TTL, SYNC_INTERVAL};
use crate::etcd::Etcd;
use crate::mover::{move_database, Move, MoveError, Moved};

/// The key a controller holds while it rebalances.
const CONTROLLER_KEY: &[u8] = b"/tessera/rebalancer";

/// A request to stop (a signal): the move in progress finishes, no other starts.
#[derive(Debug, Default)]
pub struct Stop {
    asked: AtomicBool,
    notify: Notify,
}

impl Stop {
    pub fn ask(&self) {
        self.asked.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn asked(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }

    /// Returns once [`Stop::ask`] has been called.
    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so an ask between the two wakes it.
            notified.as_mut().enable();
            if self.asked() {
                return;
            }
            notified.await;
        }
    }
}

/// How the moves are made: the directory the backups go through and the login.
pub struct Mover<'a> {
    pub through: &'a std::path::Path,
    pub user: &'a str,
    pub password: &'a str,
}

/// How a round decides and how fast it moves.
pub struct Band {
    /// How far (a fraction of the mean) a server's load may be from the mean.
    pub tolerance: f64,
    /// The most tenants one round moves.
    pub max_moves: usize,
}

/// The next move that brings the servers' loads toward the band: (from, to) by index
/// into `loads`, or None when every load is within it (or one move would not narrow
/// the spread).
pub fn next_move(loads: &[usize], band: &Band) -> Option<(usize, usize)> {
    let total: usize = loads.iter().sum();
    if loads.len() < 2 || total == 0 {
        return None;
    }
    let mean = total as f64 / loads.len() as f64;
    let (high, &most) = loads.iter().enumerate().max_by_key(|&(i, l)| (*l, std::cmp::Reverse(i)))?;
    let (low, &least) = loads.iter().enumerate().min_by_key(|&(i, l)| (*l, i))?;
    let outside = most as f64 > mean * (1.0 + band.tolerance) || (least as f64) < mean * (1.0 - band.tolerance);
    // A move changes the two loads by one each: it narrows the spread only if they are
    // at least two apart.
    (outside && most >= least + 2).then_some((high, low))
}

/// One round: the moves it made, in order. Stops at the first failed move (the tenant
/// stays where it was) and returns the error with the moves made before it; once `stop`
/// is asked, starts no further move.
pub async fn round(
    directory: &Directory,
    band: &Band,
    mover: &Mover<'_>,
    stop: &Stop,
    log: &dyn Fn(&str),
) -> Result<Vec<Moved>, (Vec<Moved>, MoveError)> {
    let mut moved = Vec::new();
    let mut servers: Vec<ServerEntry> = match directory.servers().await {
        Ok(s) => s,
        Err(e) => return Err((moved, MoveError(e.to_string()))),
    };
    let loads: Vec<String> = servers.iter().map(|s| format!("{} {}", s.name, s.databases)).collect();
    log(&format!("Databases per server: {}.", loads.join(", ")));
    while moved.len() < band.max_moves && !stop.asked() {
        let loads: Vec<usize> = servers.iter().map(|s| s.databases).collect();
        let Some((from, to)) = next_move(&loads, band) else { break };
        let tenant = match smallest_tenant(&servers[from], mover).await {
            Ok(Some(t)) => t,
            Ok(None) => break,
            Err(e) => return Err((moved, e)),
        };
        log(&format!(
            "Moving '{tenant}' from server '{}' ({} databases) to '{}' ({}).",
            servers[from].name, servers[from].databases, servers[to].name, servers[to].databases
        ));
        let m = Move {
            database: &tenant,
            to: &servers[to].name,
            through: mover.through,
            user: mover.user,
            password: mover.password,
        };
        match move_database(directory, &m, log).await {
            Ok(done) => moved.push(done),
            Err(e) => return Err((moved, e)),
        }
        servers[from].databases -= 1;
        servers[to].databases += 1;
    }
    Ok(moved)
}

/// The server's smallest online tenant database (the cheapest to move).
async fn smallest_tenant(server: &ServerEntry, mover: &Mover<'_>) -> Result<Option<String>, MoveError> {
    let rows = crate::mover::query(
        server,
        mover.user,
        mover.password,
        "select top 1 d.name from sys.databases d join sys.master_files f on f.database_id = d.database_id \
         where d.name not in ('master', 'tempdb', 'model', 'msdb') and d.state_desc = 'ONLINE' group by d.name order by sum(f.size), d.name",
    )
    .await?;
    Ok(rows.into_iter().next().and_then(|r| match r.into_iter().next() {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    }))
}

/// The controller: a round every `interval` while it holds the controller key, until
/// `stop` is asked (a round in progress finishes its move first); then it gives the key
/// up. `who` names this controller in etcd.
pub async fn control(
    etcd: Etcd,
    who: &str,
    band: &Band,
    interval: Duration,
    mover: &Mover<'_>,
    stop: &Stop,
    log: &dyn Fn(&str),
) {
    let directory = Directory::new(etcd.clone());
    let mut lease = 0;
    while !stop.asked() {
        match hold(&etcd, who, &mut lease).await {
            Ok(true) => {
                // A move may outlast the lease: renewed while the round runs.
                if let Err((_, e)) = renewing(&etcd, lease, round(&directory, band, mover, stop, log)).await {
                    log(&format!("A rebalancing move failed: {e}"));
                }
            }
            Ok(false) => {}
            Err(e) => log(&format!("The tenant directory cannot be reached: {e}")),
        }
        // Held across the wait too, so that no other controller acts between rounds.
        renewing(&etcd, lease, async {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stop.wait() => {}
            }
        })
        .await;
    }
    if lease != 0 {
        // The key goes with its lease: another controller may take over at once.
        if let Err(e) = etcd.revoke(lease).await {
            log(&format!("The controller's lease could not be revoked (it lapses by itself): {e}"));
        }
    }
    log("Stopped.");
}

/// Runs `work`, renewing `lease` (if any) every [`SYNC_INTERVAL`] until it is done. A
/// renewal that fails is retried at the next tick; [`hold`] finds a lapsed lease.
async fn renewing<T>(etcd: &Etcd, lease: i64, work: impl Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(SYNC_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick(), if lease != 0 => {
                let _ = etcd.keep_alive(lease).await;
            }
        }
    }
}

/// Whether this controller holds the controller key (taking it if free), under a lease
/// it renews.
async fn hold(etcd: &Etcd, who: &str, lease: &mut i64) -> crate::etcd::Result<bool> {
    if *lease == 0 || !etcd.keep_alive(*lease).await? {
        *lease = etcd.grant(LEASE_TTL).await?;
    }
    Ok(etcd.put_if_absent_or_same(CONTROLLER_KEY, who.as_bytes(), *lease).await? == who.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(loads: &mut [usize], band: &Band) -> usize {
        let mut moves = 0;
        while let Some((from, to)) = next_move(loads, band) {
            loads[from] -= 1;
            loads[to] += 1;
            moves += 1;
            assert!(moves < 1000, "rebalancing must end");
        }
        moves
    }

    #[test]
    fn moves_go_from_the_most_to_the_least_loaded_until_all_are_in_the_band() {
        let band = Band { tolerance: 0.25, max_moves: usize::MAX };
        let mut loads = [6, 0, 0];
        assert_eq!(settle(&mut loads, &band), 4);
        assert_eq!(loads, [2, 2, 2]);
        let mut loads = [100, 90, 95];
        assert_eq!(settle(&mut loads, &band), 0, "already within 25 % of the mean");
        let mut loads = [3, 1];
        assert_eq!(settle(&mut loads, &band), 1);
        assert_eq!(loads, [2, 2]);
        // Two apart at least, or a move only swaps which one is over.
        assert_eq!(next_move(&[1, 0], &band), None);
        assert_eq!(next_move(&[5], &band), None);
        assert_eq!(next_move(&[0, 0], &band), None);
    }
}
