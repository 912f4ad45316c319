//! A database's Query Store settings (`ALTER DATABASE … SET QUERY_STORE …`), as SQL
//! Server 2019 and later keep them, with their defaults, their allowed values and the
//! codes `sys.database_query_store_options` shows.

use serde::{Deserialize, Serialize};
use tessera_errors::{msg, SqlResult};

/// `OPERATION_MODE` (and the state Query Store is in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    Off,
    ReadOnly,
    ReadWrite,
}

impl Mode {
    /// `desired_state` / `actual_state`: 0 OFF, 1 READ_ONLY, 2 READ_WRITE.
    pub fn code(self) -> i64 {
        match self {
            Mode::Off => 0,
            Mode::ReadOnly => 1,
            Mode::ReadWrite => 2,
        }
    }

    pub fn desc(self) -> &'static str {
        match self {
            Mode::Off => "OFF",
            Mode::ReadOnly => "READ_ONLY",
            Mode::ReadWrite => "READ_WRITE",
        }
    }
}

/// `QUERY_CAPTURE_MODE`: which queries Query Store starts to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Capture {
    /// Every query.
    All,
    /// Queries that have run often or long enough (SQL Server's thresholds, see
    /// [`Policy::AUTO`]).
    Auto,
    /// No new query (those already kept go on being counted).
    None,
    /// Queries past the thresholds of `QUERY_CAPTURE_POLICY`.
    Custom,
}

impl Capture {
    /// `query_capture_mode`: 1 ALL, 2 AUTO, 3 NONE, 4 CUSTOM.
    pub fn code(self) -> i64 {
        match self {
            Capture::All => 1,
            Capture::Auto => 2,
            Capture::None => 3,
            Capture::Custom => 4,
        }
    }

    pub fn desc(self) -> &'static str {
        match self {
            Capture::All => "ALL",
            Capture::Auto => "AUTO",
            Capture::None => "NONE",
            Capture::Custom => "CUSTOM",
        }
    }
}

/// `QUERY_CAPTURE_POLICY`: a query is kept once, within the last
/// `stale_threshold_hours`, it ran `execution_count` times, or took
/// `total_compile_cpu_ms` to compile or `total_execution_cpu_ms` to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub stale_threshold_hours: i64,
    pub execution_count: i64,
    pub total_compile_cpu_ms: i64,
    pub total_execution_cpu_ms: i64,
}

impl Policy {
    /// What `AUTO` uses, and `CUSTOM`'s defaults.
    pub const AUTO: Policy = Policy {
        stale_threshold_hours: 24,
        execution_count: 30,
        total_compile_cpu_ms: 1000,
        total_execution_cpu_ms: 100,
    };
}

/// A database's Query Store settings, kept in its Query Store tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `QUERY_STORE = ON | OFF` and `OPERATION_MODE`.
    pub desired: Mode,
    /// `CLEANUP_POLICY = (STALE_QUERY_THRESHOLD_DAYS = n)`: 0 keeps everything.
    pub stale_query_threshold_days: i64,
    /// `DATA_FLUSH_INTERVAL_SECONDS`: how long what was counted may stay only in memory.
    pub flush_interval_seconds: i64,
    /// `INTERVAL_LENGTH_MINUTES`: runtime statistics are kept per interval this long.
    pub interval_length_minutes: i64,
    /// `MAX_STORAGE_SIZE_MB`.
    pub max_storage_size_mb: i64,
    /// `SIZE_BASED_CLEANUP_MODE = AUTO`: past 90 % of the size limit the oldest queries
    /// go until 80 % is used; `OFF`: Query Store turns READ_ONLY at the limit.
    pub size_based_cleanup: bool,
    pub capture: Capture,
    pub policy: Policy,
    /// `MAX_PLANS_PER_QUERY`.
    pub max_plans_per_query: i64,
    /// `WAIT_STATS_CAPTURE_MODE`: whether each plan's waits are kept by category.
    pub wait_stats: bool,
}

impl Default for Options {
    /// SQL Server 2019's defaults for a database that turns Query Store on.
    fn default() -> Self {
        Options {
            desired: Mode::ReadWrite,
            stale_query_threshold_days: 30,
            flush_interval_seconds: 900,
            interval_length_minutes: 60,
            max_storage_size_mb: 1000,
            size_based_cleanup: true,
            capture: Capture::Auto,
            policy: Policy::AUTO,
            max_plans_per_query: 200,
            wait_stats: true,
        }
    }
}

/// The interval lengths SQL Server allows, in minutes.
pub const INTERVAL_LENGTHS: [i64; 7] = [1, 5, 10, 15, 30, 60, 1440];

impl Options {
    /// Applies one setting from `ALTER DATABASE … SET QUERY_STORE (name = value)`
    /// (`name` upper case, as the parser gives it).
    pub fn set(&mut self, name: &str, value: &str) -> SqlResult<()> {
        let number = || -> SqlResult<i64> {
            value.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| msg::SYNTAX_ERROR_NEAR.with(&[&value]))
        };
        let positive = |what: &str, n: i64| -> SqlResult<i64> {
            if n > 0 && n <= i64::from(i32::MAX) {
                Ok(n)
            } else {
                Err(msg::QUERY_STORE_INVALID_VALUE.with(&[&n, &"QUERY_STORE", &what, &1, &i32::MAX]))
            }
        };
        match name {
            "OPERATION_MODE" => {
                self.desired = match value {
                    "READ_WRITE" => Mode::ReadWrite,
                    "READ_ONLY" => Mode::ReadOnly,
                    _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
                }
            }
            "STALE_QUERY_THRESHOLD_DAYS" => self.stale_query_threshold_days = number()?,
            "DATA_FLUSH_INTERVAL_SECONDS" => self.flush_interval_seconds = positive(name, number()?)?,
            "INTERVAL_LENGTH_MINUTES" => {
                let n = number()?;
                if !INTERVAL_LENGTHS.contains(&n) {
                    return Err(msg::QUERY_STORE_INTERVAL_LENGTH.err());
                }
                self.interval_length_minutes = n;
            }
            "MAX_STORAGE_SIZE_MB" => self.max_storage_size_mb = positive(name, number()?)?,
            "SIZE_BASED_CLEANUP_MODE" => {
                self.size_based_cleanup = match value {
                    "AUTO" => true,
                    "OFF" => false,
                    _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
                }
            }
            "QUERY_CAPTURE_MODE" => {
                self.capture = match value {
                    "ALL" => Capture::All,
                    "AUTO" => Capture::Auto,
                    "NONE" => Capture::None,
                    "CUSTOM" => Capture::Custom,
                    _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
                }
            }
            "MAX_PLANS_PER_QUERY" => self.max_plans_per_query = positive(name, number()?)?,
            "WAIT_STATS_CAPTURE_MODE" => {
                self.wait_stats = match value {
                    "ON" => true,
                    "OFF" => false,
                    _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
                }
            }
            "STALE_CAPTURE_POLICY_THRESHOLD" => {
                // `24 HOURS` or `1 DAYS` arrive as the number and its unit.
                let (n, unit) = value.split_once(' ').unwrap_or((value, "HOURS"));
                let n: i64 = n.parse().map_err(|_| msg::SYNTAX_ERROR_NEAR.with(&[&value]))?;
                let hours = match unit {
                    "HOURS" => n,
                    "DAYS" => n * 24,
                    _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
                };
                if !(1..=7 * 24).contains(&hours) {
                    return Err(msg::QUERY_STORE_INVALID_VALUE.with(&[
                        &hours,
                        &"QUERY_CAPTURE_POLICY",
                        &name,
                        &1,
                        &168,
                    ]));
                }
                self.policy.stale_threshold_hours = hours;
            }
            "EXECUTION_COUNT" => self.policy.execution_count = positive(name, number()?)?,
            "TOTAL_COMPILE_CPU_TIME_MS" => self.policy.total_compile_cpu_ms = positive(name, number()?)?,
            "TOTAL_EXECUTION_CPU_TIME_MS" => self.policy.total_execution_cpu_ms = positive(name, number()?)?,
            _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&name])),
        }
        Ok(())
    }

    /// The length of an interval, in milliseconds.
    pub fn interval_ms(&self) -> i64 {
        self.interval_length_minutes * 60_000
    }

    /// The most bytes Query Store may keep.
    pub fn max_bytes(&self) -> u64 {
        u64::try_from(self.max_storage_size_mb).unwrap_or(0) << 20
    }

    /// The thresholds a query must pass to be kept (None: every query is, or none is).
    pub fn capture_policy(&self) -> Option<Policy> {
        match self.capture {
            Capture::Auto => Some(Policy::AUTO),
            Capture::Custom => Some(self.policy),
            Capture::All | Capture::None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_as_sql_server_checks_them() {
        let mut o = Options::default();
        o.set("INTERVAL_LENGTH_MINUTES", "15").unwrap();
        assert_eq!(o.interval_ms(), 15 * 60_000);
        assert!(o.set("INTERVAL_LENGTH_MINUTES", "7").is_err());
        o.set("QUERY_CAPTURE_MODE", "ALL").unwrap();
        assert_eq!(o.capture_policy(), None);
        o.set("QUERY_CAPTURE_MODE", "CUSTOM").unwrap();
        o.set("EXECUTION_COUNT", "5").unwrap();
        o.set("STALE_CAPTURE_POLICY_THRESHOLD", "2 DAYS").unwrap();
        assert_eq!(o.capture_policy().map(|p| (p.execution_count, p.stale_threshold_hours)), Some((5, 48)));
        assert!(o.set("MAX_STORAGE_SIZE_MB", "0").is_err());
        o.set("OPERATION_MODE", "READ_ONLY").unwrap();
        assert_eq!(o.desired, Mode::ReadOnly);
    }
}
