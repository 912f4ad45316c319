//! Table hints, as a plan carries them; `tessera_execution::read_locks` turns them and
//! the isolation level into the locks a table read takes.
//!
//! SQL Server's rules, as `tessera_access::read` implements them: a READ COMMITTED read
//! waits for writers and keeps nothing; UPDATE and DELETE take update (U) locks on the
//! rows they locate, released at the end of the statement unless the row was changed
//! (the U lock then converted to X, kept to the end of the transaction); `UPDLOCK` keeps
//! U locks, `XLOCK` X locks and `HOLDLOCK` (`SERIALIZABLE`, `REPEATABLEREAD`, or those
//! isolation levels) S locks to the end of the transaction; `TABLOCK` locks the table
//! shared (exclusive for a data change), `TABLOCKX` exclusive; `READPAST` skips locked
//! rows; `NOLOCK` (`READUNCOMMITTED`, or that isolation level) reads without locks.
//! `READCOMMITTEDLOCK` reads with locks even under READ COMMITTED SNAPSHOT.
//! `ROWLOCK`, `PAGLOCK`, `READCOMMITTED`, `INDEX(…)`, `FORCESEEK`,
//! `FORCESCAN`, `NOEXPAND`, `NOWAIT` and `FASTFIRSTROW` are accepted (rows are the only
//! lock granularity below the table here).

use tessera_errors::msg;
use tessera_errors::SqlResult;

/// The locking a table reference asks for with its hints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockHints {
    pub nolock: bool,
    pub readcommitted: bool,
    /// `READCOMMITTEDLOCK`: READ COMMITTED with locks, even where the database reads
    /// row versions (READ COMMITTED SNAPSHOT).
    pub readcommittedlock: bool,
    pub holdlock: bool,
    /// `HOLDLOCK` or `SERIALIZABLE` (not `REPEATABLEREAD`): the ranges read are locked
    /// too.
    pub serializable: bool,
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
                "READCOMMITTED" => h.readcommitted = true,
                "READCOMMITTEDLOCK" => {
                    h.readcommitted = true;
                    h.readcommittedlock = true;
                }
                "HOLDLOCK" | "SERIALIZABLE" => {
                    h.holdlock = true;
                    h.serializable = true;
                }
                "REPEATABLEREAD" => h.holdlock = true,
                "UPDLOCK" => h.updlock = true,
                "XLOCK" => h.xlock = true,
                "READPAST" => h.readpast = true,
                "TABLOCK" => h.tablock = true,
                "TABLOCKX" => h.tablockx = true,
                "ROWLOCK" | "PAGLOCK" | "FORCESEEK" | "FORCESCAN" | "NOEXPAND" | "NOWAIT" | "FASTFIRSTROW"
                | "KEEPIDENTITY" | "KEEPDEFAULTS" | "IGNORE_CONSTRAINTS" | "IGNORE_TRIGGERS" => {}
                h if h.starts_with("INDEX(") => {}
                other => return Err(msg::UNRECOGNIZED_TABLE_HINT.with(&[&other])),
            }
        }
        if h.nolock && (h.holdlock || h.updlock || h.xlock || h.readcommitted || h.readpast || h.tablockx) {
            return Err(msg::CONFLICTING_LOCK_HINTS.err());
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_hints_are_errors() {
        let parse = |h: &[&str]| LockHints::parse(&h.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(parse(&["FOO"]).unwrap_err().number, 321);
        assert_eq!(parse(&["NOLOCK", "UPDLOCK"]).unwrap_err().number, 1047);
    }
}
