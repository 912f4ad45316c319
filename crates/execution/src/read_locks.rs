//! The locks a table read takes: a plan's table hints (`tessera_semantics::locking`) and
//! the session's isolation level, as the storage layer's [`ReadLocks`].

use tessera_database::{Hold, LockMode, ReadLocks, RowLock};
use tessera_semantics::locking::LockHints;

/// The locks a read of the table takes under the session's isolation level.
/// `target`: the table an UPDATE or DELETE changes (its rows are read with U locks).
pub fn read_locks(hints: LockHints, target: bool, isolation: &str) -> ReadLocks {
    let repeatable = hints.holdlock || matches!(isolation, "REPEATABLE READ" | "SERIALIZABLE");
    let hold = if repeatable { Hold::Transaction } else { Hold::Statement };
    let row = if hints.xlock {
        RowLock::Keep { mode: LockMode::Exclusive, hold: Hold::Transaction }
    } else if hints.updlock {
        RowLock::Keep { mode: LockMode::Update, hold: Hold::Transaction }
    } else if target {
        RowLock::Keep { mode: LockMode::Update, hold }
    } else if repeatable {
        RowLock::Keep { mode: LockMode::Shared, hold: Hold::Transaction }
    } else if hints.nolock || (isolation == "READ UNCOMMITTED" && !hints.readcommitted) {
        RowLock::Uncommitted
    } else if hints.readcommittedlock {
        RowLock::CommittedLocking
    } else {
        RowLock::Committed
    };
    let table = if hints.tablockx || (hints.tablock && (target || hints.xlock)) {
        Some(LockMode::Exclusive)
    } else if hints.tablock && hints.updlock {
        Some(LockMode::Update)
    } else if hints.tablock {
        Some(LockMode::Shared)
    } else {
        None
    };
    // SERIALIZABLE locks the ranges it reads (a data change's too), where it locks rows.
    let serializable = hints.serializable || (isolation == "SERIALIZABLE" && !hints.nolock && !hints.readcommitted);
    let ranges = serializable && matches!(row, RowLock::Keep { .. });
    ReadLocks { row, table, skip_locked: hints.readpast, ranges }
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
        assert_eq!(read_locks(hints(&[]), false, rc), ReadLocks::COMMITTED);
        assert_eq!(read_locks(hints(&["NOLOCK"]), false, rc).row, RowLock::Uncommitted);
        assert_eq!(read_locks(hints(&[]), false, "READ UNCOMMITTED").row, RowLock::Uncommitted);
        assert_eq!(read_locks(hints(&["READCOMMITTED"]), false, "READ UNCOMMITTED").row, RowLock::Committed);
        assert_eq!(read_locks(hints(&["READCOMMITTEDLOCK"]), false, rc).row, RowLock::CommittedLocking);
        let update = RowLock::Keep { mode: LockMode::Update, hold: Hold::Statement };
        assert_eq!(read_locks(hints(&["ROWLOCK"]), true, rc).row, update);
        let updlock = read_locks(hints(&["UPDLOCK", "READPAST"]), false, rc);
        assert_eq!(updlock.row, RowLock::Keep { mode: LockMode::Update, hold: Hold::Transaction });
        assert!(updlock.skip_locked);
        let held = RowLock::Keep { mode: LockMode::Shared, hold: Hold::Transaction };
        assert_eq!(read_locks(hints(&["HOLDLOCK"]), false, rc).row, held);
        assert_eq!(read_locks(hints(&[]), false, "SERIALIZABLE").row, held);
        assert!(read_locks(hints(&[]), false, "SERIALIZABLE").ranges);
        assert!(read_locks(hints(&["HOLDLOCK"]), false, rc).ranges);
        assert!(read_locks(hints(&[]), true, "SERIALIZABLE").ranges, "a data change's ranges too");
        assert!(!read_locks(hints(&[]), false, "REPEATABLE READ").ranges);
        assert!(!read_locks(hints(&["REPEATABLEREAD"]), false, rc).ranges);
        assert!(!read_locks(hints(&["NOLOCK"]), false, "SERIALIZABLE").ranges);
        assert_eq!(read_locks(hints(&["TABLOCK"]), false, rc).table, Some(LockMode::Shared));
        assert_eq!(read_locks(hints(&["TABLOCK"]), true, rc).table, Some(LockMode::Exclusive));
        assert_eq!(read_locks(hints(&["TABLOCKX"]), false, rc).table, Some(LockMode::Exclusive));
    }
}
