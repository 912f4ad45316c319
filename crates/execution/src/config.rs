//! Server configuration options (`sp_configure`, `RECONFIGURE`, `sys.configurations`).
//!
//! Each option has a configured value (set by `sp_configure`) and a run value (what the
//! server uses, copied from the configured value by `RECONFIGURE`). Configured values are
//! persisted in master, as JSON rows of the storage tree `sys$config`, and become the run
//! values when the server starts. Later layers read run values with [`Config::run_value`].

use std::collections::BTreeMap;
use std::sync::Arc;
use tessera_errors::msg;

use parking_lot::RwLock;
use tessera_database::{Database, Engine};

use tessera_errors::{SqlError, SqlResult};

const AFFINITY_MASK: &str = "affinity mask";
const MAX_MEMORY: &str = "max server memory (MB)";
const MIN_MEMORY: &str = "min server memory (MB)";
const PLAN_CACHE_MEMORY: &str = "plan cache memory (MB)";
const MAX_OPEN_DATABASES: &str = "max open databases";
const IDLE_DATABASE_CLOSE: &str = "idle database close (s)";
const LOCKOUT_THRESHOLD: &str = "login lockout threshold";
/// Whether databases may be contained (and their users log in with passwords of their own).
pub const CONTAINED_AUTHENTICATION: &str = "contained database authentication";
/// Whether ownership chains cross between every two databases (otherwise only between
/// two with DB_CHAINING ON).
pub const CROSS_DB_CHAINING: &str = "cross db ownership chaining";
/// Whether a trigger's changes fire AFTER triggers (0: they cascade to none).
pub const NESTED_TRIGGERS: &str = "nested triggers";
const LOCKOUT_DURATION: &str = "login lockout duration (min)";

/// Storage tree in master holding the configured values.
const CONFIG_TREE: &str = "sys$config";

/// One configuration option, as SQL Server defines it.
#[derive(Clone, Copy, Debug)]
pub struct OptionDef {
    pub id: i32,
    pub name: &'static str,
    pub minimum: i64,
    pub maximum: i64,
    pub default: i64,
    pub dynamic: bool,
    pub advanced: bool,
    pub description: &'static str,
}

/// The options tessera has. Their effects belong to the layers that own them (memory, backup).
pub const OPTIONS: &[OptionDef] = &[
    OptionDef {
        id: 1535,
        name: AFFINITY_MASK,
        minimum: -2_147_483_648,
        maximum: 2_147_483_647,
        default: 0,
        dynamic: true,
        advanced: true,
        description: "affinity mask",
    },
    OptionDef {
        id: 1584,
        name: "backup checksum default",
        minimum: 0,
        maximum: 1,
        default: 0,
        dynamic: true,
        advanced: false,
        description: "Enable checksum of backups by default",
    },
    OptionDef {
        id: 1579,
        name: "backup compression default",
        minimum: 0,
        maximum: 1,
        default: 0,
        dynamic: true,
        advanced: false,
        description: "Enable compression of backups by default",
    },
    OptionDef {
        id: 1538,
        name: "cost threshold for parallelism",
        minimum: 0,
        maximum: 32767,
        default: 5,
        dynamic: true,
        advanced: true,
        description: "cost threshold for parallelism",
    },
    OptionDef {
        id: 400,
        name: CROSS_DB_CHAINING,
        minimum: 0,
        maximum: 1,
        default: 0,
        dynamic: true,
        advanced: false,
        description: "Allow cross db ownership chaining",
    },
    OptionDef {
        id: 16386,
        name: IDLE_DATABASE_CLOSE,
        minimum: 1,
        maximum: 2_147_483_647,
        default: 300,
        dynamic: true,
        advanced: true,
        description: "Seconds after which an idle database is closed; tessera's own option",
    },
    OptionDef {
        id: 16387,
        name: LOCKOUT_THRESHOLD,
        minimum: 0,
        maximum: 999,
        default: 5,
        dynamic: true,
        advanced: true,
        description: "Failed passwords in a row that lock a CHECK_POLICY login other than sa (0: never); tessera's own option",
    },
    OptionDef {
        id: 16388,
        name: LOCKOUT_DURATION,
        minimum: 0,
        maximum: 99_999,
        default: 30,
        dynamic: true,
        advanced: true,
        description: "Minutes a login stays locked and a failed password counts (0: until ALTER LOGIN … UNLOCK); tessera's own option",
    },
    OptionDef {
        id: 1539,
        name: "max degree of parallelism",
        minimum: 0,
        maximum: 32767,
        default: 0,
        dynamic: true,
        advanced: true,
        description: "maximum degree of parallelism",
    },
    OptionDef {
        id: 16385,
        name: MAX_OPEN_DATABASES,
        minimum: 0,
        maximum: 2_147_483_647,
        default: 0,
        dynamic: true,
        advanced: true,
        description: "Databases kept open at once (0: as many as the server's descriptors allow); tessera's own option",
    },
    OptionDef {
        id: 1544,
        name: "max server memory (MB)",
        minimum: 128,
        maximum: 2_147_483_647,
        default: 2_147_483_647,
        dynamic: true,
        advanced: true,
        description: "Maximum size of server memory (MB)",
    },
    OptionDef {
        id: 1543,
        name: "min server memory (MB)",
        minimum: 0,
        maximum: 2_147_483_647,
        default: 0,
        dynamic: true,
        advanced: true,
        description: "Minimum size of server memory (MB)",
    },
    OptionDef {
        id: 16384,
        name: PLAN_CACHE_MEMORY,
        minimum: 1,
        maximum: 1_048_576,
        default: (tessera_semantics::cache::DEFAULT_BUDGET_BYTES >> 20) as i64,
        dynamic: true,
        advanced: true,
        description: "Memory budget of the plan cache (MB); tessera's own option",
    },
    OptionDef {
        id: 16386,
        name: CONTAINED_AUTHENTICATION,
        minimum: 0,
        maximum: 1,
        default: 0,
        dynamic: true,
        advanced: false,
        description: "Enables contained databases and contained authentication",
    },
    OptionDef {
        id: 115,
        name: NESTED_TRIGGERS,
        minimum: 0,
        maximum: 1,
        default: 1,
        dynamic: true,
        advanced: false,
        description: "Allow triggers to be invoked within triggers",
    },
    OptionDef {
        id: 518,
        name: "show advanced options",
        minimum: 0,
        maximum: 1,
        default: 0,
        dynamic: true,
        advanced: false,
        description: "show advanced options",
    },
];

/// Configured and run values by option id.
#[derive(Clone, Debug, Default)]
struct Values {
    configured: BTreeMap<i32, i64>,
    running: BTreeMap<i32, i64>,
}

/// The instance's configuration.
pub struct Config {
    master: Option<Arc<Database>>,
    values: RwLock<Values>,
    /// The buffer pool extension as configured (ALTER SERVER CONFIGURATION), remembered
    /// across restarts; the file itself starts cold at every start.
    extension: RwLock<Option<ExtensionSetting>>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExtensionSetting {
    pub file: String,
    pub bytes: u64,
}

/// The extension may be at most this many times max server memory (SQL Server's
/// Enterprise edition limit).
const EXTENSION_MAX_RATIO: u64 = 32;

/// The key of the extension setting in the configuration tree (option ids are 4 bytes).
const EXTENSION_KEY: &[u8] = b"buffer pool extension";

/// What `sp_configure 'name', value` did.
#[derive(Debug)]
pub struct Change {
    pub name: &'static str,
    pub old: i64,
    pub new: i64,
}

impl Config {
    /// Loads the configured values from master (they become the run values).
    pub fn load(master: Arc<Database>) -> SqlResult<Config> {
        let mut values = Values::default();
        let mut extension = None;
        if let Some(tree) = master.table(CONFIG_TREE) {
            let tx = master.begin();
            if let Some(bytes) = tx.get(tree, EXTENSION_KEY)? {
                extension = serde_json::from_slice(&bytes).ok();
            }
            for item in tx.scan(
                tree,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                tessera_database::Direction::Forward,
            ) {
                let (k, v) = item?;
                let (Ok(id), Ok(text)) = (k.as_slice().try_into().map(i32::from_be_bytes), std::str::from_utf8(&v))
                else {
                    continue;
                };
                if let Ok(value) = text.parse::<i64>() {
                    values.configured.insert(id, value);
                }
            }
            tx.commit()?;
        }
        values.running = values.configured.clone();
        Ok(Config { master: Some(master), values: RwLock::new(values), extension: RwLock::new(extension) })
    }

    /// A configuration that is not persisted (tests).
    pub fn in_memory() -> Config {
        Config { master: None, values: RwLock::new(Values::default()), extension: RwLock::new(None) }
    }

    pub fn configured_value(&self, def: &OptionDef) -> i64 {
        self.values.read().configured.get(&def.id).copied().unwrap_or(def.default)
    }

    /// The value in use for an option, by name (exact).
    pub fn run_value(&self, name: &str) -> Option<i64> {
        let def = OPTIONS.iter().find(|o| o.name.eq_ignore_ascii_case(name))?;
        Some(self.values.read().running.get(&def.id).copied().unwrap_or(def.default))
    }

    fn running(&self, def: &OptionDef) -> i64 {
        self.values.read().running.get(&def.id).copied().unwrap_or(def.default)
    }

    /// Whether advanced options are shown (the run value of 'show advanced options').
    pub fn show_advanced(&self) -> bool {
        self.run_value("show advanced options") == Some(1)
    }

    /// The options `sp_configure` may see, matching a name or a unique prefix of one.
    pub fn find(&self, name: &str) -> SqlResult<&'static OptionDef> {
        let visible = |o: &&OptionDef| !o.advanced || self.show_advanced();
        let lower = name.to_lowercase();
        let exact = OPTIONS.iter().filter(visible).find(|o| o.name.to_lowercase() == lower);
        let mut prefixed = OPTIONS.iter().filter(visible).filter(|o| o.name.to_lowercase().starts_with(&lower));
        match (exact, prefixed.next(), prefixed.next()) {
            (Some(o), _, _) => Ok(o),
            (None, Some(o), None) => Ok(o),
            (None, Some(_), Some(_)) => Err(msg::CONFIG_OPTION_AMBIGUOUS.with(&[&name]).with_state(1)),
            _ => Err(msg::CONFIG_OPTION_NOT_FOUND.with(&[&name])),
        }
    }

    /// The rows `sp_configure` lists, all or those whose name starts with `prefix`:
    /// (definition, configured, running).
    pub fn listing(&self, prefix: Option<&str>) -> Vec<(&'static OptionDef, i64, i64)> {
        let prefix = prefix.map(str::to_lowercase);
        let mut rows: Vec<_> = OPTIONS
            .iter()
            .filter(|o| !o.advanced || self.show_advanced())
            .filter(|o| prefix.as_ref().is_none_or(|p| o.name.to_lowercase().starts_with(p.as_str())))
            .map(|o| (o, self.configured_value(o), self.running(o)))
            .collect();
        rows.sort_by_key(|r| r.0.name);
        rows
    }

    /// Every option with its values (sys.configurations).
    pub fn all(&self) -> Vec<(&'static OptionDef, i64, i64)> {
        let mut rows: Vec<_> = OPTIONS.iter().map(|o| (o, self.configured_value(o), self.running(o))).collect();
        rows.sort_by_key(|r| r.0.id);
        rows
    }

    /// `sp_configure 'name', value`: checks the range and stores the configured value.
    pub fn set(&self, name: &str, value: i64) -> SqlResult<Change> {
        let def = self.find(name)?;
        if value < def.minimum || value > def.maximum {
            return Err(msg::INVALID_CONFIG_VALUE.with(&[&value, &def.name, &""]));
        }
        let old = self.configured_value(def);
        // min server memory may not exceed max server memory (nor the other way round).
        let other = match def.name {
            MIN_MEMORY => Some((MAX_MEMORY, true)),
            MAX_MEMORY => Some((MIN_MEMORY, false)),
            _ => None,
        };
        if let Some((other, is_min)) = other {
            let other_value = self.configured_value(self.find_exact(other));
            if (is_min && value > other_value) || (!is_min && value < other_value) {
                return Err(msg::INVALID_CONFIG_VALUE.with(&[
                    &value,
                    &def.name,
                    &": min server memory may not exceed max server memory",
                ]));
            }
        }
        if def.name == AFFINITY_MASK {
            check_affinity(value)?;
        }
        self.persist(def.id, value)?;
        self.values.write().configured.insert(def.id, value);
        Ok(Change { name: def.name, old, new: value })
    }

    /// `RECONFIGURE`: configured values become run values.
    pub fn reconfigure(&self) {
        let mut v = self.values.write();
        v.running = v.configured.clone();
    }

    fn find_exact(&self, name: &str) -> &'static OptionDef {
        OPTIONS.iter().find(|o| o.name == name).expect("a defined option")
    }

    /// The plan cache's budget: the run value of 'plan cache memory (MB)'.
    pub fn plan_cache_bytes(&self) -> usize {
        (self.running(self.find_exact(PLAN_CACHE_MEMORY)) as usize) << 20
    }

    /// The account lockout settings (the ranges and meaning of Windows' account lockout
    /// policy): the run value of 'login lockout threshold' (failed passwords that lock a
    /// login; 0: never) and of 'login lockout duration (min)' (None for 0: until unlocked).
    pub fn lockout(&self) -> (u32, Option<std::time::Duration>) {
        let minutes = self.running(self.find_exact(LOCKOUT_DURATION)).unsigned_abs();
        (
            u32::try_from(self.running(self.find_exact(LOCKOUT_THRESHOLD))).unwrap_or(0),
            (minutes > 0).then(|| std::time::Duration::from_secs(minutes * 60)),
        )
    }

    /// Gives the engine the run values of min and max server memory. The default max
    /// (2147483647: "all") means the pool size the server was started with.
    pub fn apply_memory(&self, engine: &Engine) -> SqlResult<u64> {
        let max_def = self.find_exact(MAX_MEMORY);
        let max_mb = self.running(max_def);
        let min_mb = self.running(self.find_exact(MIN_MEMORY));
        let max = if max_mb == max_def.default { engine.config().pool_bytes as u64 } else { (max_mb as u64) << 20 };
        Ok(engine.set_memory_limits((min_mb as u64) << 20, max)?)
    }

    /// `ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = …` (None: AUTO): sets
    /// 'affinity mask' configured and running, and applies it at once.
    pub fn set_process_affinity(&self, cpus: Option<&std::collections::BTreeSet<usize>>) -> SqlResult<()> {
        let mask = cpus.map_or(Ok(0), affinity_mask)?;
        check_affinity(mask)?;
        let def = self.find_exact(AFFINITY_MASK);
        self.persist(def.id, mask)?;
        {
            let mut v = self.values.write();
            v.configured.insert(def.id, mask);
            v.running.insert(def.id, mask);
        }
        self.apply_affinity()
    }

    /// Runs every thread of the server on the CPUs of the run value of 'affinity mask'
    /// (bit n: CPU n; 0: every CPU the process was given).
    pub fn apply_affinity(&self) -> SqlResult<()> {
        let mask = self.running(self.find_exact(AFFINITY_MASK));
        Ok(tessera_io::affinity::pin_process(affinity_cpus(mask).as_ref())?)
    }

    /// Gives the engine the run values of 'max open databases' (0, or more than the
    /// configuration file's `max_open_databases`: that bound) and 'idle database close (s)'. An
    /// option never configured leaves the engine's value (the server's config file's).
    pub fn apply_open_limits(&self, engine: &Engine) {
        let set = |name: &str| self.values.read().running.get(&self.find_exact(name).id).copied();
        let (mut max_open, mut idle) = engine.open_limits();
        if let Some(n) = set(MAX_OPEN_DATABASES) {
            max_open = if n == 0 { usize::MAX } else { usize::try_from(n).unwrap_or(usize::MAX) };
        }
        if let Some(secs) = set(IDLE_DATABASE_CLOSE) {
            idle = std::time::Duration::from_secs(secs.unsigned_abs());
        }
        engine.set_open_limits(max_open, idle);
    }

    /// The extension as configured (it may have failed to start: see the engine's pool).
    pub fn extension(&self) -> Option<ExtensionSetting> {
        self.extension.read().clone()
    }

    /// `ALTER SERVER CONFIGURATION SET BUFFER POOL EXTENSION ON (…)` / `OFF`: checks
    /// SQL Server's size rules, starts or stops the extension and remembers the setting.
    pub fn set_extension(&self, engine: &Engine, setting: Option<ExtensionSetting>) -> SqlResult<()> {
        if let Some(s) = &setting {
            if engine.pool().extension().is_some() {
                return Err(msg::BUFFER_POOL_EXTENSION_ALREADY_ON.err());
            }
            let max = engine.memory_status().max_bytes;
            if s.bytes <= max {
                return Err(msg::BUFFER_POOL_EXTENSION_TOO_SMALL.with(&[&(max >> 20)]));
            }
            let page = tessera_database::PAGE_SIZE as u64;
            if s.bytes > EXTENSION_MAX_RATIO * max {
                return Err(
                    msg::BUFFER_POOL_EXTENSION_ALLOC.with(&[&(s.bytes / page), &(EXTENSION_MAX_RATIO * max / page)])
                );
            }
            engine
                .set_buffer_pool_extension(Some((std::path::Path::new(&s.file), s.bytes)))
                .map_err(|e| msg::CREATE_FILE_OS_ERROR.with(&[&e, &s.file]))?;
        } else {
            engine.set_buffer_pool_extension(None)?;
        }
        let bytes = setting.as_ref().map(|s| serde_json::to_vec(s).unwrap_or_default());
        self.persist_key(EXTENSION_KEY, bytes.as_deref())?;
        *self.extension.write() = setting;
        Ok(())
    }

    /// Starts the configured extension at server start (a cold file). A failure leaves it
    /// off and is returned for the log.
    pub fn start_extension(&self, engine: &Engine) -> SqlResult<()> {
        let Some(s) = self.extension() else { return Ok(()) };
        engine.set_buffer_pool_extension(Some((std::path::Path::new(&s.file), s.bytes)))?;
        Ok(())
    }

    fn persist_key(&self, key: &[u8], value: Option<&[u8]>) -> SqlResult<()> {
        let Some(master) = &self.master else { return Ok(()) };
        let tree = match master.table(CONFIG_TREE) {
            Some(t) => t,
            None => master.create_table(CONFIG_TREE)?,
        };
        let mut tx = master.begin();
        match value {
            Some(v) => {
                if !tx.update(tree, key, v)? {
                    tx.insert(tree, key, v)?;
                }
            }
            None => {
                tx.delete(tree, key)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn persist(&self, id: i32, value: i64) -> SqlResult<()> {
        self.persist_key(&id.to_be_bytes(), Some(value.to_string().as_bytes()))
    }
}

/// The CPUs an 'affinity mask' names (bit n: CPU n), None for 0 (every CPU).
pub fn affinity_cpus(mask: i64) -> Option<std::collections::BTreeSet<usize>> {
    let bits = mask as u32;
    (bits != 0).then(|| (0..32).filter(|c| bits & (1 << c) != 0).collect())
}

/// The 'affinity mask' a set of CPUs makes (`ALTER SERVER CONFIGURATION SET PROCESS
/// AFFINITY CPU = …`); CPUs past 31 do not fit it (error 5832).
pub fn affinity_mask(cpus: &std::collections::BTreeSet<usize>) -> SqlResult<i64> {
    let mut bits = 0u32;
    for &c in cpus {
        if c >= 32 {
            return Err(affinity_mismatch());
        }
        bits |= 1 << c;
    }
    Ok(i64::from(bits as i32))
}

fn affinity_mismatch() -> SqlError {
    msg::AFFINITY_MASK_MISMATCH.err()
}

/// An 'affinity mask' may name only CPUs the server was given.
fn check_affinity(mask: i64) -> SqlResult<()> {
    match affinity_cpus(mask) {
        Some(cpus) if !cpus.is_subset(tessera_io::affinity::allowed_cpus()) => Err(affinity_mismatch()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_prefixes_advanced_options_and_reconfigure() {
        let c = Config::in_memory();
        assert_eq!(c.find("max server memory (MB)").unwrap_err().number, 15123, "advanced options are hidden");
        assert_eq!(c.set("show adv", 2).unwrap_err().number, 15129);
        let change = c.set("show advanced options", 1).unwrap();
        assert_eq!((change.old, change.new), (0, 1));
        assert!(!c.show_advanced(), "not until RECONFIGURE");
        c.reconfigure();
        assert!(c.show_advanced());
        c.set("max server", 4096).unwrap();
        assert_eq!(c.run_value("max server memory (MB)"), Some(2_147_483_647));
        c.reconfigure();
        assert_eq!(c.run_value("max server memory (MB)"), Some(4096));
        assert_eq!(c.find("m").unwrap_err().number, 15125, "ambiguous prefix");
    }

    #[test]
    fn lockout_settings_follow_the_run_values() {
        let c = Config::in_memory();
        assert_eq!(c.lockout(), (5, Some(std::time::Duration::from_secs(30 * 60))));
        c.set("show advanced options", 1).unwrap();
        c.reconfigure();
        assert_eq!(c.set("login lockout threshold", 1000).unwrap_err().number, 15129);
        c.set("login lockout threshold", 3).unwrap();
        c.set("login lockout duration", 0).unwrap();
        c.reconfigure();
        assert_eq!(c.lockout(), (3, None));
    }
}
