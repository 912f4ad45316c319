//! Resource Governor, as SQL Server has it: resource pools (CPU and memory shares of the
//! server), workload groups (request limits inside a pool) and a classifier function in
//! master that puts each new session in a group.
//!
//! - The statements (`tessera_execution::ddl::resource_governor`) change the **stored** configuration, kept in master (tree
//!   `sys$resource_governor`, one JSON row) and shown by `sys.resource_governor_*`.
//! - `ALTER RESOURCE GOVERNOR RECONFIGURE` makes it the **effective** configuration (and
//!   enables the governor), shown by `sys.dm_resource_governor_*`; `DISABLE` puts every
//!   new session in the default group with no limits. A session keeps the group it was
//!   classified into at login for its lifetime, as in SQL Server.
//! - Enforcement reuses the per-database governor's parts (`crate::governor`): each
//!   effective pool has a [`Governor`] whose CPU bucket is its `CAP_CPU_PERCENT`, and each
//!   group one whose gate is its `GROUP_MAX_REQUESTS`; a pool's `MAX_CPU_PERCENT` is its
//!   CPU share, which holds while the CPU is contended. A request is admitted through its
//!   group's gate and charged to its pool. As in SQL Server, a pool's effective share is
//!   its MAX_CPU_PERCENT less what the other pools' MIN_CPU_PERCENT guarantees them
//!   (`min(MAX_CPU_PERCENT, 100 - Σ others' MIN_CPU_PERCENT)`), which is how a minimum
//!   holds under contention.
//! - Query memory: each pool has a [`PoolMemory`] whose effective MAX_MEMORY_PERCENT
//!   (the same rule with MIN_MEMORY_PERCENT) bounds its statements' grants together, and
//!   a group's REQUEST_MAX_MEMORY_GRANT_PERCENT bounds one statement's (`crate::grant`).
//! - `IMPORTANCE`, `MAX_DOP`, the IOPS limits, REQUEST_MAX_CPU_TIME_SEC and
//!   REQUEST_MEMORY_GRANT_TIMEOUT_SEC are kept and shown but do not act.
//!
//! Invariants: pools and groups are at most [`MAX_POOLS`] and [`MAX_GROUPS`]; the
//! predefined `internal` and `default` pool and group always exist; every group's pool
//! exists; the sum of the pools' MIN_CPU_PERCENT is at most 100.

mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use tessera_database::{Database, ResourceLimits};
use tessera_errors::SqlResult;

use crate::governor::Governor;
use crate::grant::{PoolMemory, PoolShare};

pub const INTERNAL_ID: i32 = 1;
pub const DEFAULT_ID: i32 = 2;
/// The first id a user-defined pool or group gets (SQL Server's: 256).
const FIRST_USER_ID: i32 = 256;
/// Pools, the predefined two included (SQL Server's limit: 64).
pub const MAX_POOLS: usize = 64;
/// Workload groups, the predefined two included.
pub const MAX_GROUPS: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    pub id: i32,
    pub name: String,
    pub min_cpu_percent: u32,
    pub max_cpu_percent: u32,
    pub cap_cpu_percent: u32,
    pub min_memory_percent: u32,
    pub max_memory_percent: u32,
    pub min_iops_per_volume: u32,
    pub max_iops_per_volume: u32,
}

impl Pool {
    pub fn new(id: i32, name: &str) -> Pool {
        Pool {
            id,
            name: name.to_string(),
            min_cpu_percent: 0,
            max_cpu_percent: 100,
            cap_cpu_percent: 100,
            min_memory_percent: 0,
            max_memory_percent: 100,
            min_iops_per_volume: 0,
            max_iops_per_volume: 0,
        }
    }

    /// CAP_CPU_PERCENT is a cap; MAX_CPU_PERCENT a share (it holds under contention), less
    /// the minimums the other pools of `config` are guaranteed.
    fn limits(&self, config: &Configuration) -> ResourceLimits {
        let share = self.effective(config, self.max_cpu_percent, |p| p.min_cpu_percent);
        ResourceLimits {
            max_cpu_percent: (self.cap_cpu_percent < 100).then_some(self.cap_cpu_percent),
            cpu_share_percent: (share < 100).then_some(share),
            ..Default::default()
        }
    }

    /// `max` less what the other pools' minimums (`min`) reserve, at least 1.
    fn effective(&self, config: &Configuration, max: u32, min: impl Fn(&Pool) -> u32) -> u32 {
        let reserved: u32 = config.pools.iter().filter(|p| p.id != self.id).map(min).sum();
        max.min(100u32.saturating_sub(reserved)).max(1)
    }

    /// Its effective MAX_MEMORY_PERCENT.
    pub fn memory_percent(&self, config: &Configuration) -> u32 {
        self.effective(config, self.max_memory_percent, |p| p.min_memory_percent)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub id: i32,
    pub name: String,
    pub pool_id: i32,
    /// LOW, MEDIUM or HIGH.
    pub importance: String,
    pub request_max_memory_grant_percent: u32,
    pub request_max_cpu_time_sec: u32,
    pub request_memory_grant_timeout_sec: u32,
    pub max_dop: u32,
    /// 0: no limit.
    pub group_max_requests: u32,
}

impl Group {
    pub fn new(id: i32, name: &str, pool_id: i32) -> Group {
        Group {
            id,
            name: name.to_string(),
            pool_id,
            importance: "MEDIUM".to_string(),
            request_max_memory_grant_percent: 25,
            request_max_cpu_time_sec: 0,
            request_memory_grant_timeout_sec: 0,
            max_dop: 0,
            group_max_requests: 0,
        }
    }

    fn limits(&self) -> ResourceLimits {
        ResourceLimits {
            max_concurrent_requests: (self.group_max_requests > 0).then_some(self.group_max_requests),
            ..Default::default()
        }
    }
}

/// The classifier function: its schema and name in master.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classifier {
    pub schema: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Configuration {
    pub pools: Vec<Pool>,
    pub groups: Vec<Group>,
    pub classifier: Option<Classifier>,
    pub enabled: bool,
}

impl Default for Configuration {
    fn default() -> Configuration {
        Configuration {
            pools: vec![Pool::new(INTERNAL_ID, "internal"), Pool::new(DEFAULT_ID, "default")],
            groups: vec![
                Group::new(INTERNAL_ID, "internal", INTERNAL_ID),
                Group::new(DEFAULT_ID, "default", DEFAULT_ID),
            ],
            classifier: None,
            enabled: false,
        }
    }
}

impl Configuration {
    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name.eq_ignore_ascii_case(name))
    }

    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name.eq_ignore_ascii_case(name))
    }

    /// An id no pool (or group) has.
    pub fn next_id(ids: impl Iterator<Item = i32>) -> i32 {
        ids.max().unwrap_or(0).max(FIRST_USER_ID - 1) + 1
    }
}

/// The configuration in force and the governors that enforce it, by pool and group id.
struct Effective {
    config: Configuration,
    pools: HashMap<i32, Arc<Governor>>,
    groups: HashMap<i32, Arc<Governor>>,
    /// Each pool's query memory.
    memory: HashMap<i32, Arc<PoolMemory>>,
    /// When its statistics began (seconds since the Unix epoch).
    statistics_since: i64,
}

impl Effective {
    /// `config` in force, keeping the governors (and their statistics) of the pools and
    /// groups `previous` had.
    fn of(config: Configuration, previous: Option<&Effective>) -> Effective {
        let keep = |map: Option<&HashMap<i32, Arc<Governor>>>, id: i32, limits: ResourceLimits| match map
            .and_then(|m| m.get(&id))
        {
            Some(g) => {
                g.set(limits);
                g.clone()
            }
            None => Arc::new(Governor::new(limits)),
        };
        let pools =
            config.pools.iter().map(|p| (p.id, keep(previous.map(|e| &e.pools), p.id, p.limits(&config)))).collect();
        let groups =
            config.groups.iter().map(|g| (g.id, keep(previous.map(|e| &e.groups), g.id, g.limits()))).collect();
        let memory = config
            .pools
            .iter()
            .map(|p| {
                let percent = p.memory_percent(&config);
                let memory = match previous.and_then(|e| e.memory.get(&p.id)) {
                    Some(m) => {
                        m.set_percent(percent);
                        m.clone()
                    }
                    None => Arc::new(PoolMemory::new(&p.name, percent)),
                };
                (p.id, memory)
            })
            .collect();
        let statistics_since = previous.map_or_else(tessera_semantics::catalog::now_epoch, |e| e.statistics_since);
        Effective { config, pools, groups, memory, statistics_since }
    }
}

/// A pool's or group's statistics (sys.dm_resource_governor_*).
#[derive(Clone, Debug)]
pub struct Running<T> {
    pub definition: T,
    pub usage: crate::governor::Usage,
}

pub struct ResourceGovernor {
    master: Option<Arc<Database>>,
    stored: RwLock<Configuration>,
    effective: RwLock<Effective>,
    /// The stored configuration changed since it was last put in force (or disabled).
    pending: AtomicBool,
}

impl ResourceGovernor {
    /// The configuration kept in master; in force at once if it was enabled.
    pub fn load(master: Arc<Database>) -> SqlResult<ResourceGovernor> {
        let stored = store::load(&master)?;
        let effective = Effective::of(in_force(&stored), None);
        Ok(ResourceGovernor {
            master: Some(master),
            stored: RwLock::new(stored),
            effective: RwLock::new(effective),
            pending: AtomicBool::new(false),
        })
    }

    /// A configuration that is not persisted (tests).
    pub fn in_memory() -> ResourceGovernor {
        let stored = Configuration::default();
        let effective = Effective::of(stored.clone(), None);
        ResourceGovernor {
            master: None,
            stored: RwLock::new(stored),
            effective: RwLock::new(effective),
            pending: AtomicBool::new(false),
        }
    }

    pub fn stored(&self) -> Configuration {
        self.stored.read().clone()
    }

    pub fn effective(&self) -> Configuration {
        self.effective.read().config.clone()
    }

    /// Replaces the stored configuration with what `change` makes of it, writing master
    /// first.
    pub fn change<T>(&self, change: impl FnOnce(&mut Configuration) -> SqlResult<T>) -> SqlResult<T> {
        let mut stored = self.stored.write();
        let mut next = stored.clone();
        let out = change(&mut next)?;
        if let Some(master) = &self.master {
            store::save(master, &next)?;
        }
        *stored = next;
        self.pending.store(true, Ordering::Release);
        Ok(out)
    }

    /// `ALTER RESOURCE GOVERNOR RECONFIGURE` (`enable`) or `DISABLE`: stores the switch
    /// and puts the configuration in force.
    pub fn apply(&self, enable: bool) -> SqlResult<()> {
        self.change(|c| {
            c.enabled = enable;
            Ok(())
        })?;
        let stored = self.stored();
        let mut effective = self.effective.write();
        *effective = Effective::of(in_force(&stored), Some(&effective));
        self.pending.store(false, Ordering::Release);
        Ok(())
    }

    /// `ALTER RESOURCE GOVERNOR RESET STATISTICS`.
    pub fn reset_statistics(&self) {
        let mut effective = self.effective.write();
        let config = effective.config.clone();
        *effective = Effective::of(config, None);
    }

    /// Whether the stored configuration changed since RECONFIGURE or DISABLE last ran.
    pub fn reconfiguration_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The classifier in force.
    pub fn classifier(&self) -> Option<Classifier> {
        let effective = self.effective.read();
        effective.config.classifier.clone().filter(|_| effective.config.enabled)
    }

    /// The group a classifier's answer names: an unknown group, `internal` or no answer
    /// is the default group.
    pub fn group_for(&self, name: Option<&str>) -> i32 {
        let effective = self.effective.read();
        match name.and_then(|n| effective.config.group(n)) {
            Some(g) if g.id != INTERNAL_ID => g.id,
            _ => DEFAULT_ID,
        }
    }

    /// The governors a request of a session in group `group` goes through: its group's
    /// (request limit) and its pool's (CPU cap); the default group's when `group` was
    /// dropped since the session was classified. None while the governor is disabled.
    pub fn governors(&self, group: i32) -> Vec<Arc<Governor>> {
        let effective = self.effective.read();
        if !effective.config.enabled {
            return Vec::new();
        }
        let groups = &effective.config.groups;
        let Some(g) = groups.iter().find(|g| g.id == group).or_else(|| groups.iter().find(|g| g.id == DEFAULT_ID))
        else {
            return Vec::new();
        };
        [effective.groups.get(&g.id), effective.pools.get(&g.pool_id)].into_iter().flatten().cloned().collect()
    }

    /// The query memory a request of a session in group `group` draws on: its pool's, and
    /// the group's share of it per statement. None while the governor is disabled.
    pub fn memory_share(&self, group: i32) -> Option<PoolShare> {
        let effective = self.effective.read();
        if !effective.config.enabled {
            return None;
        }
        let groups = &effective.config.groups;
        let g = groups.iter().find(|g| g.id == group).or_else(|| groups.iter().find(|g| g.id == DEFAULT_ID))?;
        let pool = effective.memory.get(&g.pool_id)?.clone();
        Some(PoolShare { pool, request_percent: g.request_max_memory_grant_percent })
    }

    /// Each pool in force's query memory, by pool id.
    pub fn pool_memory(&self, pool: i32) -> Option<Arc<PoolMemory>> {
        self.effective.read().memory.get(&pool).cloned()
    }

    /// The pools in force with their use, and when the statistics began.
    pub fn running_pools(&self) -> (Vec<Running<Pool>>, i64) {
        let e = self.effective.read();
        (running(&e.config.pools, |p| p.id, &e.pools), e.statistics_since)
    }

    /// The groups in force with their use, and when the statistics began.
    pub fn running_groups(&self) -> (Vec<Running<Group>>, i64) {
        let e = self.effective.read();
        (running(&e.config.groups, |g| g.id, &e.groups), e.statistics_since)
    }
}

/// Each definition with the use its governor counted.
fn running<T: Clone>(
    definitions: &[T],
    id: impl Fn(&T) -> i32,
    governors: &HashMap<i32, Arc<Governor>>,
) -> Vec<Running<T>> {
    let usage = |d: &T| governors.get(&id(d)).map(|g| g.usage()).unwrap_or_default();
    definitions.iter().map(|d| Running { definition: d.clone(), usage: usage(d) }).collect()
}

/// What a stored configuration puts in force: itself when enabled; otherwise the
/// predefined pools and groups with their defaults (user-defined ones stay, unused).
fn in_force(stored: &Configuration) -> Configuration {
    if stored.enabled {
        return stored.clone();
    }
    let defaults = Configuration::default();
    let mut off = stored.clone();
    for p in off.pools.iter_mut().filter(|p| p.id <= DEFAULT_ID) {
        *p = defaults.pools.iter().find(|d| d.id == p.id).cloned().unwrap_or_else(|| p.clone());
    }
    for g in off.groups.iter_mut().filter(|g| g.id <= DEFAULT_ID) {
        *g = defaults.groups.iter().find(|d| d.id == g.id).cloned().unwrap_or_else(|| g.clone());
    }
    off.classifier = None;
    off
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_pools_minimums_come_off_a_pool_s_share() {
        let mut config = Configuration::default();
        let mut a = Pool::new(300, "a");
        a.min_cpu_percent = 30;
        a.min_memory_percent = 70;
        let mut b = Pool::new(301, "b");
        b.max_cpu_percent = 90;
        b.min_cpu_percent = 20;
        config.pools.extend([a.clone(), b.clone()]);
        // b keeps 100 - 30 = 70 of its 90; a keeps 100 - 20 = 80; the default pool 50.
        assert_eq!(b.limits(&config).cpu_share_percent, Some(70));
        assert_eq!(a.limits(&config).cpu_share_percent, Some(80));
        assert_eq!(config.pools[1].limits(&config).cpu_share_percent, Some(50));
        assert_eq!((a.memory_percent(&config), b.memory_percent(&config)), (100, 30));
        // Without minimums elsewhere nothing changes; a pool's own minimum does not count.
        let alone = Configuration::default();
        assert_eq!(alone.pools[1].limits(&alone), ResourceLimits::default());
        assert_eq!(alone.pools[1].memory_percent(&alone), 100);
    }
}
