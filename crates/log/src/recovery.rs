//! Crash recovery in three passes, after ARIES:
//!
//! 1. **Analysis** reads from the oldest LSN the last checkpoint still needs (its redo
//!    LSN or the first record of the oldest transaction then active) to the end of the
//!    log and rebuilds the table of transactions active at the crash ("losers").
//! 2. **Redo** replays every page change (Update, Compensation and System records)
//!    from the checkpoint's redo LSN. The handler skips a change whose page already
//!    carries an LSN at or past the record's ("repeating history").
//! 3. **Undo** rolls the losers back together, newest record first. Each undone
//!    Update produces a Compensation record, so a crash during undo never undoes twice;
//!    when a loser is fully undone an End record closes it. A loser whose last word is
//!    a Prepare record (one part of a transaction across databases) is in doubt: the
//!    handler says whether the instance decided to commit it, and then it gets a Commit
//!    record instead of its undo (presumed abort: no decision found, it is undone).
//!
//! The page formats are not known here: a [`RecoveryHandler`] from the access layer
//! applies and reverses the record bodies.

use std::collections::HashMap;

use tessera_errors::{Error, Result};

use crate::reader::WalReader;
use crate::record::{LogRecord, RecordKind, TxnId};
use crate::wal::{Master, Wal};
use crate::Lsn;

/// Applies record bodies to pages. Implemented by the access layer.
pub trait RecoveryHandler {
    /// Re-applies the page changes of `rec` where the page does not have them yet.
    fn redo(&mut self, lsn: Lsn, rec: &LogRecord) -> Result<()>;
    /// Reverses the Update record `rec` of transaction `rec.txn`: applies the inverse
    /// change and appends a Compensation record (prev_lsn = `last_lsn`). Returns the
    /// Compensation record's LSN and its undo_next, where undo goes on: `rec.prev_lsn`,
    /// or an earlier record when this inverse also covered the records in between.
    fn undo(&mut self, lsn: Lsn, rec: &LogRecord, last_lsn: Lsn) -> Result<(Lsn, Lsn)>;
    /// Whether the instance decided to commit the transaction across databases whose
    /// decision is `decision` (a Prepare record's).
    fn decided_to_commit(&mut self, decision: u128) -> Result<bool>;
}

/// A transaction active at checkpoint time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActiveTxn {
    pub txn: TxnId,
    pub first_lsn: Lsn,
    pub last_lsn: Lsn,
}

/// Body of a Checkpoint record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Every page change below this LSN was on disk when the checkpoint completed.
    pub redo_lsn: Lsn,
    pub next_txn: TxnId,
    pub active: Vec<ActiveTxn>,
}

impl Checkpoint {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(20 + self.active.len() * 24);
        b.extend_from_slice(&self.redo_lsn.raw().to_le_bytes());
        b.extend_from_slice(&self.next_txn.raw().to_le_bytes());
        b.extend_from_slice(&(self.active.len() as u32).to_le_bytes());
        for a in &self.active {
            b.extend_from_slice(&a.txn.raw().to_le_bytes());
            b.extend_from_slice(&a.first_lsn.raw().to_le_bytes());
            b.extend_from_slice(&a.last_lsn.raw().to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Result<Checkpoint> {
        let bad = || Error::Invalid("damaged checkpoint record".into());
        let u64_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap())).ok_or_else(bad);
        let n = b.get(16..20).map(|s| u32::from_le_bytes(s.try_into().unwrap())).ok_or_else(bad)? as usize;
        if b.len() != 20 + n * 24 {
            return Err(bad());
        }
        let mut active = Vec::with_capacity(n);
        for i in 0..n {
            let o = 20 + i * 24;
            active.push(ActiveTxn {
                txn: TxnId::from_raw(u64_at(o)?),
                first_lsn: Lsn::from_raw(u64_at(o + 8)?),
                last_lsn: Lsn::from_raw(u64_at(o + 16)?),
            });
        }
        Ok(Checkpoint { redo_lsn: Lsn::from_raw(u64_at(0)?), next_txn: TxnId::from_raw(u64_at(8)?), active })
    }
}

/// What recovery found and did.
#[derive(Clone, Debug, Default)]
pub struct RecoveryOutcome {
    pub redo_lsn: Lsn,
    pub end_lsn: Lsn,
    pub next_txn: TxnId,
    pub records_redone: u64,
    pub losers: usize,
    pub records_undone: u64,
    /// Prepared transactions found in doubt and committed by the instance's decision.
    pub prepared_committed: usize,
}

struct TxnEntry {
    last_lsn: Lsn,
    /// Seen commit or end: not a loser.
    finished: bool,
    /// The decision its Prepare record names.
    prepared: Option<u128>,
}

/// Runs analysis, redo and undo. On return every committed transaction's changes are
/// in the pages (via the buffer pool) and every other transaction is rolled back and
/// closed with an End record; the log is flushed.
pub fn recover(wal: &Wal, master: Master, handler: &mut dyn RecoveryHandler) -> Result<RecoveryOutcome> {
    let mut txns: HashMap<TxnId, TxnEntry> = HashMap::new();
    let mut next_txn: TxnId = TxnId::from_raw(1);
    let (analysis_from, redo_lsn) = if !master.checkpoint_lsn.is_none() {
        let rec = wal.read(master.checkpoint_lsn)?;
        if rec.kind != RecordKind::Checkpoint {
            return Err(Error::Invalid("the log master record does not point at a checkpoint".into()));
        }
        let ckpt = Checkpoint::decode(&rec.body)?;
        next_txn = ckpt.next_txn;
        // Analysis starts at the oldest LSN still needed (the first record of the
        // oldest transaction active at the checkpoint, or the redo LSN), so it sees
        // every record of every transaction that may have to be undone.
        (master.begin_lsn.min(ckpt.redo_lsn), ckpt.redo_lsn)
    } else {
        (master.begin_lsn, master.begin_lsn)
    };

    // A start the log does not hold would read as an empty log: nothing redone.
    for lsn in [analysis_from, redo_lsn] {
        if !lsn.is_none() && wal.vlf_for_seq(lsn.seq()).is_none() {
            return Err(wal.corrupt(format!("recovery starts at LSN {}, which the log file does not hold", lsn)));
        }
    }

    // Analysis.
    let mut reader = WalReader::new(wal, analysis_from);
    while let Some(item) = reader.next_record() {
        let (lsn, rec) = item?;
        if rec.txn == TxnId::SYSTEM {
            continue;
        }
        next_txn = next_txn.max(rec.txn.next());
        let entry = txns.entry(rec.txn).or_insert(TxnEntry { last_lsn: Lsn::NONE, finished: false, prepared: None });
        entry.last_lsn = entry.last_lsn.max(lsn);
        match rec.kind {
            RecordKind::Commit | RecordKind::End => entry.finished = true,
            RecordKind::Prepare => entry.prepared = rec.prepared_decision(),
            _ => {}
        }
    }
    let end_lsn = reader.position();

    // Redo.
    let mut outcome = RecoveryOutcome { redo_lsn, end_lsn, ..Default::default() };
    let mut reader = WalReader::new(wal, redo_lsn);
    while let Some(item) = reader.next_record() {
        let (lsn, rec) = item?;
        if matches!(rec.kind, RecordKind::Update | RecordKind::Compensation | RecordKind::System) {
            handler.redo(lsn, &rec)?;
            outcome.records_redone += 1;
        }
    }

    // In doubt: a prepared transaction the instance decided to commit is committed.
    for (&txn, entry) in txns.iter_mut().filter(|(_, e)| !e.finished) {
        if let Some(decision) = entry.prepared {
            if handler.decided_to_commit(decision)? {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                let micros = now.map_or(0, |d| d.as_micros() as i64);
                wal.append(&LogRecord::commit(txn, entry.last_lsn, micros))?;
                entry.finished = true;
                outcome.prepared_committed += 1;
            }
        }
    }

    // Undo: losers together, newest record first.
    let mut losers: HashMap<TxnId, (Lsn, Lsn)> =
        txns.iter().filter(|(_, e)| !e.finished).map(|(&t, e)| (t, (e.last_lsn, e.last_lsn))).collect();
    outcome.losers = losers.len();
    // (txn -> (next lsn to undo, last lsn written for the txn))
    while let Some((&txn, &(to_undo, last))) = losers.iter().filter(|(_, v)| !v.0.is_none()).max_by_key(|(_, v)| v.0) {
        let rec = wal.read(to_undo)?;
        assert_eq!(rec.txn, txn, "undo chain crossed into another transaction");
        let (next, last) = match rec.kind {
            RecordKind::Update => {
                let (clr, undo_next) = handler.undo(to_undo, &rec, last)?;
                assert!(undo_next <= rec.prev_lsn, "undo only moves back");
                outcome.records_undone += 1;
                (undo_next, clr)
            }
            RecordKind::Compensation => (rec.undo_next, last),
            _ => (rec.prev_lsn, last),
        };
        losers.insert(txn, (next, last));
    }
    for (&txn, &(_, last)) in &losers {
        wal.append(&LogRecord::new(RecordKind::End, txn, last, Vec::new()))?;
    }
    wal.flush_all()?;
    outcome.next_txn = next_txn;
    Ok(outcome)
}
