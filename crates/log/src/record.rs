//! The log record envelope.
//!
//! ```text
//! kind u8 | txn u64 | prev_lsn u64 | [undo_next u64: compensation records only] | body ...
//! ```
//! The body is opaque here: the access layer encodes page operations and undo
//! information in it. `prev_lsn` chains a transaction's records backwards (for undo);
//! `undo_next` exists only in compensation records (CLRs): the next record of the
//! transaction still to be undone. Other records leave it out (8 of a row insert's ~150
//! bytes) and decode with 0.

use tessera_errors::{Error, Result};

use crate::Lsn;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct TxnId(u64);

impl TxnId {
    /// The id of no user transaction: what system records (page allocations, structure
    /// changes that are never undone) carry.
    pub const SYSTEM: TxnId = TxnId(0);

    /// The id stored as `raw` (a log record, a checkpoint).
    pub const fn from_raw(raw: u64) -> TxnId {
        TxnId(raw)
    }

    /// The form it is stored (and shown, as `transaction_id`) in.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The id allocated after this one.
    pub fn next(self) -> TxnId {
        TxnId(self.0 + 1)
    }
}

impl std::fmt::Display for TxnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// A change made by a transaction: redo and undo information.
    Update = 1,
    /// A compensation record written while undoing: redo only, never undone.
    Compensation = 2,
    /// A redo-only change that is never undone (structure modifications, allocation).
    /// Applied atomically: all its page operations or none.
    System = 3,
    Commit = 4,
    /// Reserved: no build writes it (a rollback is its compensation records and End).
    Abort = 5,
    /// The transaction's rollback completed (at run time, or recovery's undo of a loser);
    /// a committed transaction ends with its Commit record, with no End after it.
    End = 6,
    /// Written after a checkpoint's page flush; the body lists active transactions.
    Checkpoint = 7,
    /// The transaction is ready to commit as part of a transaction across databases;
    /// the body is the 16-byte id of the instance's decision on it. Made durable before
    /// the decision: recovery finds it without a Commit or End and asks whether that
    /// decision was to commit.
    Prepare = 8,
}

impl RecordKind {
    fn from_u8(v: u8) -> Option<RecordKind> {
        Some(match v {
            1 => RecordKind::Update,
            2 => RecordKind::Compensation,
            3 => RecordKind::System,
            4 => RecordKind::Commit,
            5 => RecordKind::Abort,
            6 => RecordKind::End,
            7 => RecordKind::Checkpoint,
            8 => RecordKind::Prepare,
            _ => return None,
        })
    }
}

/// Envelope bytes of a record other than a compensation record.
pub const ENVELOPE_SIZE: usize = 17;
/// Envelope bytes of a compensation record (with `undo_next`).
pub const CLR_ENVELOPE_SIZE: usize = ENVELOPE_SIZE + 8;

/// Envelope bytes of a record of `kind`.
fn envelope_size(kind: RecordKind) -> usize {
    if kind == RecordKind::Compensation {
        CLR_ENVELOPE_SIZE
    } else {
        ENVELOPE_SIZE
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub kind: RecordKind,
    pub txn: TxnId,
    pub prev_lsn: Lsn,
    pub undo_next: Lsn,
    pub body: Vec<u8>,
}

impl LogRecord {
    pub fn new(kind: RecordKind, txn: TxnId, prev_lsn: Lsn, body: Vec<u8>) -> LogRecord {
        LogRecord { kind, txn, prev_lsn, undo_next: Lsn::NONE, body }
    }

    pub fn encoded_len(&self) -> usize {
        envelope_size(self.kind) + self.body.len()
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        assert!(
            self.undo_next.is_none() || self.kind == RecordKind::Compensation,
            "only a compensation record has an undo-next LSN"
        );
        out.push(self.kind as u8);
        out.extend_from_slice(&self.txn.raw().to_le_bytes());
        out.extend_from_slice(&self.prev_lsn.raw().to_le_bytes());
        if self.kind == RecordKind::Compensation {
            out.extend_from_slice(&self.undo_next.raw().to_le_bytes());
        }
        out.extend_from_slice(&self.body);
    }

    /// A Commit record stamped with the wall-clock time of the commit (microseconds since
    /// the Unix epoch, the clock `GETDATE()` reads), which point-in-time restore
    /// (`RESTORE LOG … WITH STOPAT`) compares against.
    pub fn commit(txn: TxnId, prev_lsn: Lsn, unix_micros: i64) -> LogRecord {
        LogRecord::new(RecordKind::Commit, txn, prev_lsn, unix_micros.to_le_bytes().to_vec())
    }

    /// A Prepare record naming the decision `decision` of a transaction across databases.
    pub fn prepare(txn: TxnId, prev_lsn: Lsn, decision: u128) -> LogRecord {
        LogRecord::new(RecordKind::Prepare, txn, prev_lsn, decision.to_le_bytes().to_vec())
    }

    /// The decision a Prepare record names.
    pub fn prepared_decision(&self) -> Option<u128> {
        match (self.kind, self.body.get(..16)) {
            (RecordKind::Prepare, Some(b)) => Some(u128::from_le_bytes(b.try_into().unwrap())),
            _ => None,
        }
    }

    /// The time stamped in a Commit record.
    pub fn commit_time(&self) -> Option<i64> {
        match (self.kind, self.body.get(..8)) {
            (RecordKind::Commit, Some(b)) => Some(i64::from_le_bytes(b.try_into().unwrap())),
            _ => None,
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<LogRecord> {
        if bytes.len() < ENVELOPE_SIZE {
            return Err(Error::Invalid(format!("log record of {} bytes is truncated", bytes.len())));
        }
        let kind = RecordKind::from_u8(bytes[0])
            .ok_or_else(|| Error::Invalid(format!("unknown log record kind {}", bytes[0])))?;
        let envelope = envelope_size(kind);
        if bytes.len() < envelope {
            return Err(Error::Invalid(format!("compensation log record of {} bytes is truncated", bytes.len())));
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
        Ok(LogRecord {
            kind,
            txn: TxnId::from_raw(u64_at(1)),
            prev_lsn: Lsn::from_raw(u64_at(9)),
            undo_next: if kind == RecordKind::Compensation { Lsn::from_raw(u64_at(17)) } else { Lsn::NONE },
            body: bytes[envelope..].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut r = LogRecord::new(RecordKind::Compensation, TxnId::from_raw(42), Lsn::from_raw(7), vec![1, 2, 3]);
        r.undo_next = Lsn::from_raw(99);
        let mut buf = Vec::new();
        r.encode_into(&mut buf);
        assert_eq!(buf.len(), r.encoded_len());
        assert_eq!(LogRecord::decode(&buf).unwrap(), r);
        assert!(LogRecord::decode(&buf[..10]).is_err());
        assert!(LogRecord::decode(&buf[..20]).is_err(), "a CLR's envelope carries undo-next");
        let u = LogRecord::new(RecordKind::Update, TxnId::from_raw(42), Lsn::from_raw(7), vec![1, 2, 3]);
        let mut ubuf = Vec::new();
        u.encode_into(&mut ubuf);
        assert_eq!(ubuf.len(), ENVELOPE_SIZE + 3, "other records leave undo-next out");
        assert_eq!(LogRecord::decode(&ubuf).unwrap(), u);
        buf[0] = 200;
        assert!(LogRecord::decode(&buf).is_err());
    }
}
