//! Table hints and isolation levels as the locks a table read takes.
//!
//! SQL Server's rules, as `tessera_access::read` implements them: a READ COMMITTED read
//! waits for writers and keeps nothing; UPDATE and DELETE take update (U) locks on the
//! rows they locate, released at the end of the statement unless the row was changed
//! (the U lock then converted to X, kept to the end of the transaction); `UPDLOCK` keeps
//! U locks, `XLOCK` X locks and `HOLDLOCK` (`SERIALIZABLE`, `REPEATABLEREAD`, or those
//! isolation levels) S locks to the end of the transaction; `TABLOCK` locks the table
//! shared (exclusive for a data change), `TABLOCKX` exclusive; `READPAST` skips locked
//! rows; `NOLOCK` (`READUNCOMMITTED`, or that isolation level) reads without locks.
//! `ROWLOCK`, `PAGLOCK`, `READCOMMITTED`, `READCOMMITTEDLOCK`, `INDEX(…)`, `FORCESEEK`,
//! `FORCESCAN`, `NOEXPAND`, `NOWAIT` and `FASTFIRSTROW` are accepted (rows are the only
//! lock granularity below the table here).

use tessera_database::{Hold, LockMode, ReadLocks, RowLock};

use tessera_errors::{SqlError, SqlResult};

/// The locking a table reference asks for with its hints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockHints {
    pub nolock: bool,
    pub readcommitted: bool,
    pub holdlock: bool,
    pub updlock: bool,
    pub xlock: bool,
    pub readpast: bool,
    pub tablock: bool,
    pub tablockx: bool,
}

impl LockHints {
    /// Reads a table reference's hints (upper-cased by the parser); an unknown hint is
    /// error 321.
    pub fn parse(hints: &[String]) -> SqlResult<LockHints> {
        let mut h = LockHints::default();
        for hint in hints {
            match hint.as_str() {
                "NOLOCK" | "READUNCOMMITTED" => h.nolock = true,
                "READCOMMITTED" | "READCOMMITTEDLOCK" => h.readcommitted = true,
                "HOLDLOCK" | "SERIALIZABLE" | "REPEATABLEREAD" => h.holdlock = true,
                "UPDLOCK" => h.updlock = true,
                "XLOCK" => h.xlock = true,
                "READPAST" => h.readpast = true,
                "TABLOCK" => h.tablock = true,
                "TABLOCKX" => h.tablockx = true,
                "ROWLOCK" | "PAGLOCK" | "FORCESEEK" | "FORCESCAN" | "NOEXPAND" | "NOWAIT" | "FASTFIRSTROW"
                | "KEEPIDENTITY" | "KEEPDEFAULTS" | "IGNORE_CONSTRAINTS" | "IGNORE_TRIGGERS" => {}
                h if h.starts_with("INDEX(") => {}
                other => return Err(SqlError::new(321, format!("{other} is not a recognized table hints option."))),
            }
        }
        if h.nolock && (h.holdlock || h.updlock || h.xlock || h.readcommitted || h.readpast || h.tablockx) {
            return Err(SqlError::new(1047, "Conflicting locking hints specified.").with_severity(15));
        }
        Ok(h)
    }

    /// The locks a read of the table takes under the session's isolation level.
    /// `target`: the table an UPDATE or DELETE changes (its rows are read with U locks).
    pub fn read_locks(self, target: bool, isolation: &str) -> ReadLocks {
        let repeatable = self.holdlock || matches!(isolation, "REPEATABLE READ" | "SERIALIZABLE");
        let hold = if repeatable { Hold::Transaction } else { Hold::Statement };
        let row = if self.xlock {
            RowLock::Keep { mode: LockMode::Exclusive, hold: Hold::Transaction }
        } else if self.updlock {
            RowLock::Keep { mode: LockMode::Update, hold: Hold::Transaction }
        } else if target {
            RowLock::Keep { mode: LockMode::Update, hold }
        } else if repeatable {
            RowLock::Keep { mode: LockMode::Shared, hold: Hold::Transaction }
        } else if self.nolock || (isolation == "READ UNCOMMITTED" && !self.readcommitted) {
            RowLock::Uncommitted
        } else {
            RowLock::Committed
        };
        let table = if self.tablockx || (self.tablock && (target || self.xlock)) {
            Some(LockMode::Exclusive)
        } else if self.tablock && self.updlock {
            Some(LockMode::Update)
        } else if self.tablock {
            Some(LockMode::Shared)
        } else {
            None
        };
        ReadLocks { row, table, skip_locked: self.readpast }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(h: &[&str]) -> LockHints {
        LockHints::parse(&h.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn hints_become_locks() {
        let rc = "READ COMMITTED";
        assert_eq!(hints(&[]).read_locks(false, rc), ReadLocks::COMMITTED);
        assert_eq!(hints(&["NOLOCK"]).read_locks(false, rc).row, RowLock::Uncommitted);
        assert_eq!(hints(&[]).read_locks(false, "READ UNCOMMITTED").row, RowLock::Uncommitted);
        assert_eq!(hints(&["READCOMMITTEDLOCK"]).read_locks(false, "READ UNCOMMITTED").row, RowLock::Committed);
        let update = RowLock::Keep { mode: LockMode::Update, hold: Hold::Statement };
        assert_eq!(hints(&["ROWLOCK"]).read_locks(true, rc).row, update);
        let updlock = hints(&["UPDLOCK", "READPAST"]).read_locks(false, rc);
        assert_eq!(updlock.row, RowLock::Keep { mode: LockMode::Update, hold: Hold::Transaction });
        assert!(updlock.skip_locked);
        let held = RowLock::Keep { mode: LockMode::Shared, hold: Hold::Transaction };
        assert_eq!(hints(&["HOLDLOCK"]).read_locks(false, rc).row, held);
        assert_eq!(hints(&[]).read_locks(false, "SERIALIZABLE").row, held);
        assert_eq!(hints(&["TABLOCK"]).read_locks(false, rc).table, Some(LockMode::Shared));
        assert_eq!(hints(&["TABLOCK"]).read_locks(true, rc).table, Some(LockMode::Exclusive));
        assert_eq!(hints(&["TABLOCKX"]).read_locks(false, rc).table, Some(LockMode::Exclusive));
    }

    #[test]
    fn bad_hints_are_errors() {
        let parse = |h: &[&str]| LockHints::parse(&h.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(parse(&["FOO"]).unwrap_err().number, 321);
        assert_eq!(parse(&["NOLOCK", "UPDLOCK"]).unwrap_err().number, 1047);
    }
}
