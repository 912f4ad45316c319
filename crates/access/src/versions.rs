//! Row versions: what SNAPSHOT isolation and READ COMMITTED SNAPSHOT read.
//!
//! While a database keeps versions (`ALLOW_SNAPSHOT_ISOLATION` or `READ_COMMITTED_SNAPSHOT`
//! on), every row change made through a transaction keeps the row as it was before — its
//! value, or "absent" for an insert — in the version chain of its key, in memory beside
//! the tree (`TreeMeta::versions`). The chain is changed under the tree latch held
//! exclusively, together with the record, so a reader holding it shared sees a record and
//! its chain that agree. Versions are not logged and not kept across a restart: after
//! recovery no transaction is active and no snapshot older than the restart exists, which
//! is why SQL Server can keep its version store in tempdb.
//!
//! **Commit order.** A committing transaction that kept versions gets a commit sequence
//! number (CSN) from the database's clock after its commit record is durable and before
//! its locks are released. It first marks itself `COMMITTING`, then advances the clock,
//! then stores its CSN: a reader that read the clock at or past that CSN sees the
//! transaction as committing or committed (and waits the few instructions until the CSN
//! is stored), never as active.
//!
//! **Reading.** A snapshot is the clock's value when it was taken. A reader with snapshot
//! `s` reads the record and walks the key's chain from its newest version: a change made
//! by the reader's own transaction, or committed at a CSN ≤ `s`, is visible and ends the
//! walk; otherwise the reader goes back to the row as it was before that change. A key
//! whose record is gone (a committed delete whose ghost was removed) is still found in
//! the chains, so scans merge the chains' keys of the range they read with the tree's.
//! Versioned readers take no locks and never wait for writers.
//!
//! **Update conflicts.** A SNAPSHOT transaction locates the rows it changes with the usual
//! update locks; a row whose chain holds a change by another transaction committed after
//! its snapshot is an update conflict (3960), as in SQL Server.
//!
//! **Cleanup.** A committed change is needed only by snapshots older than its CSN. Each
//! committing transaction queues the keys it changed; whenever the oldest snapshot moves
//! (a snapshot ends, a transaction commits) the queue is drained up to the oldest
//! snapshot still active (the clock, if none is), and each key's chain loses every
//! version at or before the newest change that all snapshots see. A rollback removes its
//! versions as it undoes each change (`undone`).
//!
//! **Turning it on and off.** Versions must exist for every uncommitted change a snapshot
//! could meet, so keeping starts (`Starting`) before snapshots are allowed (`On`), once
//! every transaction that was active when keeping started has ended; and keeping stops
//! (`Stopping`, then `Off`) only once no snapshot is left.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use smallvec::SmallVec;
use tessera_errors::{Error, Result};
use tessera_log::TxnId;

use crate::txn::TreeMeta;

/// A writer's CSN while it is active.
const ACTIVE: u64 = 0;
/// A writer's CSN while it takes its number from the clock.
const COMMITTING: u64 = u64::MAX;
/// Bytes a version costs beyond its value and key (its chain slot, its entry in the
/// committed queue).
const VERSION_OVERHEAD: u64 = 64;

/// A transaction that changed rows while versions were kept: its id and its CSN once it
/// committed.
pub(crate) struct Writer {
    txn: TxnId,
    csn: AtomicU64,
}

impl Writer {
    /// The writer's CSN (`ACTIVE` while it has not committed).
    fn committed_at(&self) -> u64 {
        loop {
            let csn = self.csn.load(Ordering::Acquire);
            if csn != COMMITTING {
                return csn;
            }
            std::hint::spin_loop();
        }
    }
}

/// One change of a row: who made it, and the row before it (None: absent).
struct Version {
    writer: Arc<Writer>,
    before: Option<Arc<[u8]>>,
}

impl Version {
    fn bytes(&self, key: &[u8]) -> u64 {
        VERSION_OVERHEAD + key.len() as u64 + self.before.as_ref().map_or(0, |b| b.len() as u64)
    }
}

type Chain = SmallVec<[Version; 1]>;

/// The version chains of one tree's rows, by key, each oldest first.
#[derive(Default)]
pub(crate) struct TreeVersions {
    chains: Mutex<BTreeMap<Vec<u8>, Chain>>,
    /// Keys with a chain: readers skip the mutex while it is zero.
    keys: AtomicUsize,
}

/// What a snapshot sees of a key.
pub(crate) enum Seen {
    /// The record as it is in the tree (absent if there is none, or a ghost).
    Current,
    /// The row as it was before a change the snapshot does not see.
    Before(Option<Arc<[u8]>>),
}

/// The version of a row `reader`'s snapshot `csn` sees, given the row's chain.
fn resolve(chain: &[Version], reader: TxnId, csn: u64) -> Seen {
    let mut seen = Seen::Current;
    for v in chain.iter().rev() {
        if v.writer.txn == reader || matches!(v.writer.committed_at(), c if c != ACTIVE && c <= csn) {
            return seen;
        }
        seen = Seen::Before(v.before.clone());
    }
    seen
}

impl TreeVersions {
    /// Whether some key of the tree has versions.
    pub(crate) fn any(&self) -> bool {
        self.keys.load(Ordering::Acquire) != 0
    }

    /// What the snapshot `csn` of `reader` sees of `key` (under the tree latch).
    pub(crate) fn seen(&self, key: &[u8], reader: TxnId, csn: u64) -> Seen {
        if !self.any() {
            return Seen::Current;
        }
        match self.chains.lock().get(key) {
            Some(chain) => resolve(chain, reader, csn),
            None => Seen::Current,
        }
    }

    /// Calls `f` with each key in the range that has versions and what the snapshot sees
    /// of it, in `forward` order or the reverse (under the tree latch).
    pub(crate) fn seen_in(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        reader: TxnId,
        csn: u64,
        mut f: impl FnMut(&[u8], Seen),
    ) {
        if !self.any() {
            return;
        }
        if matches!((lo, hi), (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) if l > h)
        {
            return;
        }
        let chains = self.chains.lock();
        let range = chains.range::<[u8], _>((lo, hi));
        let mut each = |(k, chain): (&Vec<u8>, &Chain)| f(k, resolve(chain, reader, csn));
        if forward {
            range.for_each(&mut each);
        } else {
            range.rev().for_each(&mut each);
        }
    }

    /// Whether another transaction than `reader` changed `key` and committed after the
    /// snapshot `csn` (an update conflict for a SNAPSHOT transaction).
    pub(crate) fn changed_since(&self, key: &[u8], reader: TxnId, csn: u64) -> bool {
        if !self.any() {
            return false;
        }
        self.chains.lock().get(key).is_some_and(|chain| {
            chain
                .iter()
                .any(|v| v.writer.txn != reader && matches!(v.writer.committed_at(), c if c != ACTIVE && c > csn))
        })
    }
}

/// Whether a database keeps versions and lets snapshots be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versioning {
    Off,
    /// Versions are kept; snapshots wait for the transactions that were active before.
    Starting,
    On,
    /// Versions are still kept for the snapshots left; no new one is taken.
    Stopping,
}

impl Versioning {
    fn from_u8(v: u8) -> Versioning {
        match v {
            1 => Versioning::Starting,
            2 => Versioning::On,
            3 => Versioning::Stopping,
            _ => Versioning::Off,
        }
    }
}

/// A transaction's snapshot: the clock's value when it was taken, and whether it lasts for
/// the running statement only (READ COMMITTED SNAPSHOT) or to the transaction's end
/// (SNAPSHOT isolation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub csn: u64,
    pub statement: bool,
}

/// What a transaction holds of the version store: its writer (once it kept a version), the
/// keys it changed, its snapshot.
#[derive(Default)]
pub(crate) struct TxnVersions {
    writer: Option<Arc<Writer>>,
    changed: Vec<(Arc<TreeMeta>, Vec<u8>)>,
    pub(crate) snapshot: Option<Snapshot>,
}

/// The keys one committed transaction changed, waiting for the snapshots older than it.
struct Committed {
    csn: u64,
    keys: Vec<(Arc<TreeMeta>, Vec<u8>)>,
}

/// How much the version store holds (`sys.dm_tran_version_store_space_usage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VersionUsage {
    pub versions: u64,
    pub bytes: u64,
    /// Snapshots active, and the oldest one's CSN (0: none).
    pub snapshots: u64,
    pub oldest_snapshot: u64,
}

/// A database's version store.
#[derive(Default)]
pub struct Versions {
    state: AtomicU8,
    /// The CSN of the newest commit that kept versions.
    clock: AtomicU64,
    /// Active snapshots: CSN → how many.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Committed transactions whose versions wait for older snapshots, oldest first.
    committed: Mutex<VecDeque<Committed>>,
    versions: AtomicU64,
    bytes: AtomicU64,
}

impl Versions {
    pub fn state(&self) -> Versioning {
        Versioning::from_u8(self.state.load(Ordering::Acquire))
    }

    fn set_state(&self, state: Versioning) {
        self.state.store(state as u8, Ordering::Release);
    }

    /// Whether row changes keep versions now.
    pub(crate) fn keeping(&self) -> bool {
        self.state() != Versioning::Off
    }

    /// Starts keeping versions and allows snapshots once every transaction in `active`
    /// (those active when keeping started, which may have changed rows without versions)
    /// has ended (`still_active` says which are). Waits, polling, unless cancelled.
    pub(crate) fn start(&self, still_active: impl Fn() -> Vec<TxnId>, cancel: Option<&AtomicBool>) -> Result<()> {
        match self.state() {
            Versioning::On => return Ok(()),
            Versioning::Stopping => {
                self.set_state(Versioning::On);
                return Ok(());
            }
            Versioning::Off | Versioning::Starting => self.set_state(Versioning::Starting),
        }
        let before = still_active();
        while still_active().iter().any(|t| before.contains(t)) {
            if cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
                return Err(Error::Cancelled);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.set_state(Versioning::On);
        Ok(())
    }

    /// Turns versioning on at once (a database being opened: nothing is active).
    pub(crate) fn start_idle(&self) {
        self.set_state(Versioning::On);
    }

    /// Stops taking snapshots, waits (polling, unless cancelled) for those left to end,
    /// and stops keeping versions.
    pub(crate) fn stop(&self, cancel: Option<&AtomicBool>) -> Result<()> {
        if self.state() == Versioning::Off {
            return Ok(());
        }
        {
            let _s = self.snapshots.lock();
            self.set_state(Versioning::Stopping);
        }
        loop {
            {
                let snapshots = self.snapshots.lock();
                if snapshots.is_empty() {
                    if self.state() == Versioning::Stopping {
                        self.set_state(Versioning::Off);
                    }
                    return Ok(());
                }
            }
            if cancel.is_some_and(|c| c.load(Ordering::Acquire)) {
                return Err(Error::Cancelled);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Keeps the version a change of `key` in `meta`'s tree replaces (under the tree
    /// latch held exclusively, with the change made).
    pub(crate) fn keep(
        &self,
        tv: &mut TxnVersions,
        txn: TxnId,
        meta: &Arc<TreeMeta>,
        key: &[u8],
        before: Option<&[u8]>,
    ) {
        let writer = tv.writer.get_or_insert_with(|| Arc::new(Writer { txn, csn: AtomicU64::new(ACTIVE) })).clone();
        let version = Version { writer, before: before.map(Arc::from) };
        let bytes = version.bytes(key);
        let mut chains = meta.versions.chains.lock();
        if !chains.contains_key(key) {
            chains.insert(key.to_vec(), Chain::new());
            meta.versions.keys.fetch_add(1, Ordering::AcqRel);
        }
        let chain = chains.get_mut(key).expect("just made");
        // A key the transaction changed before is in its list already.
        let first = chain.last().is_none_or(|v| v.writer.txn != txn);
        chain.push(version);
        drop(chains);
        if first {
            tv.changed.push((meta.clone(), key.to_vec()));
        }
        self.versions.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The change of `key` by `txn` was undone: its version goes (under the tree latch
    /// held exclusively).
    pub(crate) fn undone(&self, meta: &TreeMeta, key: &[u8], txn: TxnId) {
        if !meta.versions.any() {
            return;
        }
        let mut chains = meta.versions.chains.lock();
        let Some(chain) = chains.get_mut(key) else { return };
        if chain.last().is_some_and(|v| v.writer.txn == txn) {
            let v = chain.pop().expect("a newest version");
            self.versions.fetch_sub(1, Ordering::Relaxed);
            self.bytes.fetch_sub(v.bytes(key), Ordering::Relaxed);
        }
        if chain.is_empty() {
            chains.remove(key);
            meta.versions.keys.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The transaction committed (its commit is durable, its locks still held): its
    /// versions get their CSN and wait for the snapshots older than it.
    pub(crate) fn committed(&self, tv: &mut TxnVersions) {
        let Some(writer) = tv.writer.take() else { return };
        writer.csn.store(COMMITTING, Ordering::Release);
        let csn = self.clock.fetch_add(1, Ordering::AcqRel) + 1;
        writer.csn.store(csn, Ordering::Release);
        let keys = std::mem::take(&mut tv.changed);
        self.committed.lock().push_back(Committed { csn, keys });
        self.collect();
    }

    /// The transaction ended without committing (its changes undone): it holds nothing.
    pub(crate) fn rolled_back(&self, tv: &mut TxnVersions) {
        tv.writer = None;
        tv.changed.clear();
    }

    /// Takes a snapshot for `tv` (kept until [`Versions::release`]); false when snapshots
    /// are not allowed now.
    pub(crate) fn take(&self, tv: &mut TxnVersions, statement: bool) -> bool {
        if tv.snapshot.is_some() {
            return true;
        }
        let mut snapshots = self.snapshots.lock();
        if self.state() != Versioning::On {
            return false;
        }
        let csn = self.clock.load(Ordering::Acquire);
        *snapshots.entry(csn).or_default() += 1;
        tv.snapshot = Some(Snapshot { csn, statement });
        true
    }

    /// Lets go of `tv`'s snapshot, if it has one.
    pub(crate) fn release(&self, tv: &mut TxnVersions) {
        let Some(s) = tv.snapshot.take() else { return };
        let oldest = {
            let mut snapshots = self.snapshots.lock();
            let oldest = snapshots.keys().next() == Some(&s.csn);
            let n = snapshots.get_mut(&s.csn).expect("a snapshot is counted until released");
            *n -= 1;
            if *n == 0 {
                snapshots.remove(&s.csn);
            }
            oldest
        };
        if oldest {
            self.collect();
        }
    }

    /// The oldest CSN a snapshot may still read at: the oldest active snapshot's, or the
    /// clock when there is none.
    fn horizon(&self) -> u64 {
        let snapshots = self.snapshots.lock();
        snapshots.keys().next().copied().unwrap_or_else(|| self.clock.load(Ordering::Acquire))
    }

    /// Removes the versions no snapshot needs any more.
    fn collect(&self) {
        let horizon = self.horizon();
        loop {
            let done = {
                let mut queue = self.committed.lock();
                match queue.front() {
                    Some(c) if c.csn <= horizon => queue.pop_front(),
                    _ => None,
                }
            };
            let Some(done) = done else { return };
            for (meta, key) in done.keys {
                self.prune(&meta, &key, horizon);
            }
        }
    }

    /// Drops the versions of `key` every snapshot sees past: those at or before the newest
    /// change committed at or before `horizon`.
    fn prune(&self, meta: &TreeMeta, key: &[u8], horizon: u64) {
        let mut chains = meta.versions.chains.lock();
        let Some(chain) = chains.get_mut(key) else { return };
        let seen_by_all =
            chain.iter().rposition(|v| matches!(v.writer.committed_at(), c if c != ACTIVE && c <= horizon));
        if let Some(i) = seen_by_all {
            for v in chain.drain(..=i) {
                self.versions.fetch_sub(1, Ordering::Relaxed);
                self.bytes.fetch_sub(v.bytes(key), Ordering::Relaxed);
            }
        }
        if chain.is_empty() {
            chains.remove(key);
            meta.versions.keys.fetch_sub(1, Ordering::AcqRel);
        }
    }

    pub fn usage(&self) -> VersionUsage {
        let (snapshots, oldest_snapshot) = {
            let s = self.snapshots.lock();
            (s.values().sum::<usize>() as u64, s.keys().next().copied().unwrap_or(0))
        };
        VersionUsage {
            versions: self.versions.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            snapshots,
            oldest_snapshot,
        }
    }
}
