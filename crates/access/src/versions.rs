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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use smallvec::SmallVec;
use tessera_errors::{msg, Error, Result};
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
    /// Read by every versioned read of a key with versions, changed by writers, rollbacks
    /// and cleanup: readers share it.
    chains: RwLock<BTreeMap<Vec<u8>, Chain>>,
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
        match self.chains.read().get(key) {
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
        let chains = self.chains.read();
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
        self.chains.read().get(key).is_some_and(|chain| {
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
    /// Where its snapshot is registered (None: in the overflow map).
    slot: Option<usize>,
}

/// Snapshot slots: enough for the usual number of readers of one database at a time.
const SNAPSHOT_SLOTS: usize = 64;
/// The mark of a slot whose snapshot was given up to shrink the store.
const VICTIM: u64 = 1 << 63;

/// One registered snapshot: its CSN + 1 (0: a free slot; `VICTIM` set once it was given
/// up), who holds it (the session, for the ERRORLOG and the DMV; the transaction; whether
/// it lasts one statement) and when it was taken.
#[derive(Default)]
struct Slot {
    value: AtomicU64,
    owner: AtomicU32,
    txn: AtomicU64,
    statement: AtomicBool,
    taken_at_ms: AtomicU64,
}

/// A snapshot held now (`sys.dm_tran_active_snapshot_database_transactions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldSnapshot {
    pub owner: u32,
    pub txn: u64,
    pub csn: u64,
    /// READ COMMITTED SNAPSHOT's (one statement) rather than SNAPSHOT isolation's.
    pub statement: bool,
    pub held_ms: u64,
}

/// The active snapshots of a database: one per slot, registered and let go without a
/// lock; past the slots, in maps under a mutex.
///
/// Why the oldest is never missed: a snapshot stores the clock's value in its slot, reads
/// the clock again, and repeats until the two agree; the horizon reads the clock, then the
/// slots (all sequentially consistent). If the horizon's read of a slot came before the
/// snapshot's last store, the snapshot's last read of the clock — equal to what it stored
/// — came after the horizon's read of the clock, so the snapshot is at or past the horizon
/// and nothing it needs is removed.
struct Snapshots {
    slots: [Slot; SNAPSHOT_SLOTS],
    /// Where the next registration starts looking (spreads them over the slots).
    next: AtomicUsize,
    overflow: Mutex<Overflow>,
}

/// Snapshots past the slots, by CSN: how many, and how many were given up.
#[derive(Default)]
struct Overflow {
    active: BTreeMap<u64, usize>,
    victims: BTreeMap<u64, usize>,
}

/// A snapshot given up to shrink the version store: its owner, its CSN, how long it was
/// held (for the ERRORLOG line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub owner: u32,
    pub csn: u64,
    pub held_ms: u64,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn count(map: &mut BTreeMap<u64, usize>, csn: u64, by: isize) {
    let n = map.entry(csn).or_default();
    *n = n.checked_add_signed(by).expect("a snapshot is counted until released");
    if *n == 0 {
        map.remove(&csn);
    }
}

impl Default for Snapshots {
    fn default() -> Self {
        Snapshots {
            slots: std::array::from_fn(|_| Slot::default()),
            next: AtomicUsize::new(0),
            overflow: Mutex::new(Overflow::default()),
        }
    }
}

impl Snapshots {
    /// Registers a snapshot of `holder` at the clock's value: its CSN and its slot.
    fn register(&self, clock: &AtomicU64, holder: (u32, TxnId, bool)) -> (u64, Option<usize>) {
        let mut csn = clock.load(Ordering::SeqCst);
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = (0..SNAPSHOT_SLOTS)
            .map(|i| (start + i) % SNAPSHOT_SLOTS)
            .find(|&i| self.slots[i].value.compare_exchange(0, csn + 1, Ordering::SeqCst, Ordering::Relaxed).is_ok());
        match slot {
            Some(i) => {
                let (owner, txn, statement) = holder;
                self.slots[i].owner.store(owner, Ordering::Relaxed);
                self.slots[i].txn.store(txn.raw(), Ordering::Relaxed);
                self.slots[i].statement.store(statement, Ordering::Relaxed);
                self.slots[i].taken_at_ms.store(now_ms(), Ordering::Relaxed);
                loop {
                    let now = clock.load(Ordering::SeqCst);
                    if now == csn {
                        return (csn, Some(i));
                    }
                    csn = now;
                    self.slots[i].value.store(csn + 1, Ordering::SeqCst);
                }
            }
            None => {
                // The map's mutex orders this against the horizon's read of it.
                let mut overflow = self.overflow.lock();
                let csn = clock.load(Ordering::SeqCst);
                count(&mut overflow.active, csn, 1);
                (csn, None)
            }
        }
    }

    fn unregister(&self, csn: u64, slot: Option<usize>) {
        match slot {
            Some(i) => {
                debug_assert_eq!(
                    self.slots[i].value.load(Ordering::Relaxed) & !VICTIM,
                    csn + 1,
                    "a snapshot's slot holds its CSN"
                );
                self.slots[i].value.store(0, Ordering::SeqCst);
            }
            None => {
                let mut overflow = self.overflow.lock();
                if overflow.active.contains_key(&csn) {
                    count(&mut overflow.active, csn, -1);
                } else {
                    count(&mut overflow.victims, csn, -1);
                }
            }
        }
    }

    /// Whether the snapshot `csn` registered in `slot` was given up.
    fn is_victim(&self, csn: u64, slot: Option<usize>) -> bool {
        match slot {
            Some(i) => self.slots[i].value.load(Ordering::SeqCst) & VICTIM != 0,
            None => self.overflow.lock().victims.contains_key(&csn),
        }
    }

    /// The oldest snapshot's CSN (of those not given up), or the clock's value when there
    /// is none.
    fn oldest(&self, clock: &AtomicU64) -> u64 {
        let overflow = self.overflow.lock();
        let mut oldest = clock.load(Ordering::SeqCst);
        for slot in &self.slots {
            match slot.value.load(Ordering::SeqCst) {
                0 => {}
                v if v & VICTIM != 0 => {}
                v => oldest = oldest.min(v - 1),
            }
        }
        overflow.active.keys().next().map_or(oldest, |&o| oldest.min(o))
    }

    /// Gives up the oldest snapshots (all of the oldest CSN): the horizon may then move
    /// past them. None when there is no snapshot left to give up.
    fn give_up_oldest(&self, clock: &AtomicU64) -> Vec<Victim> {
        let mut overflow = self.overflow.lock();
        let oldest = {
            let in_slots =
                self.slots.iter().map(|s| s.value.load(Ordering::SeqCst)).filter(|&v| v != 0 && v & VICTIM == 0);
            in_slots.map(|v| v - 1).chain(overflow.active.keys().next().copied()).min()
        };
        let Some(oldest) = oldest else { return Vec::new() };
        debug_assert!(oldest <= clock.load(Ordering::SeqCst));
        let now = now_ms();
        let mut victims = Vec::new();
        for slot in &self.slots {
            let marked =
                slot.value.compare_exchange(oldest + 1, (oldest + 1) | VICTIM, Ordering::SeqCst, Ordering::SeqCst);
            if marked.is_ok() {
                let held_ms = now.saturating_sub(slot.taken_at_ms.load(Ordering::Relaxed));
                victims.push(Victim { owner: slot.owner.load(Ordering::Relaxed), csn: oldest, held_ms });
            }
        }
        if let Some(n) = overflow.active.remove(&oldest) {
            count(&mut overflow.victims, oldest, n as isize);
            victims.extend((0..n).map(|_| Victim { owner: 0, csn: oldest, held_ms: 0 }));
        }
        victims
    }

    /// The snapshots held in slots now (those past the slots are counted, not listed).
    fn held(&self) -> Vec<HeldSnapshot> {
        let now = now_ms();
        self.slots
            .iter()
            .filter_map(|s| {
                let v = s.value.load(Ordering::SeqCst) & !VICTIM;
                (v != 0).then(|| HeldSnapshot {
                    owner: s.owner.load(Ordering::Relaxed),
                    txn: s.txn.load(Ordering::Relaxed),
                    csn: v - 1,
                    statement: s.statement.load(Ordering::Relaxed),
                    held_ms: now.saturating_sub(s.taken_at_ms.load(Ordering::Relaxed)),
                })
            })
            .collect()
    }

    fn count(&self) -> usize {
        let in_slots = self.slots.iter().filter(|s| s.value.load(Ordering::SeqCst) != 0).count();
        let overflow = self.overflow.lock();
        in_slots + overflow.active.values().sum::<usize>() + overflow.victims.values().sum::<usize>()
    }
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
    /// The active snapshots: made when versioning first starts, so that a database that
    /// never reads versions spends nothing on them.
    snapshots: OnceLock<Box<Snapshots>>,
    /// Committed transactions whose versions wait for older snapshots, oldest first, and
    /// how many there are (read without the mutex: a snapshot's end collects only then).
    committed: Mutex<VecDeque<Committed>>,
    waiting: AtomicUsize,
    versions: AtomicU64,
    bytes: AtomicU64,
    /// The most the versions may hold (0: no limit): past it, the oldest snapshots are
    /// given up (their next versioned read fails with 3966) so that what only they need
    /// can go.
    max_bytes: AtomicU64,
    /// Snapshots given up and not yet reported (`Versions::take_victims`), and whether
    /// there are any (read without the mutex).
    victims: Mutex<Vec<Victim>>,
    victims_pending: AtomicBool,
}

impl Versions {
    /// Sets the most the versions may hold (0: no limit).
    pub fn set_max_bytes(&self, max_bytes: u64) {
        self.max_bytes.store(max_bytes, Ordering::Relaxed);
    }

    /// The snapshots given up to shrink the store since the last call, for the ERRORLOG.
    pub fn take_victims(&self) -> Vec<Victim> {
        if !self.victims_pending.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.victims.lock())
    }

    /// The most the versions may hold (0: no limit).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes.load(Ordering::Relaxed)
    }

    /// Past the limit: removes what no snapshot needs, then gives up the oldest snapshots
    /// one CSN at a time until the versions fit or none is left (what uncommitted changes
    /// keep cannot go).
    fn shrink(&self) {
        let max = self.max_bytes.load(Ordering::Relaxed);
        let Some(snapshots) = self.snapshots.get() else { return };
        while max != 0 && self.bytes.load(Ordering::Relaxed) > max {
            let victims = snapshots.give_up_oldest(&self.clock);
            if victims.is_empty() {
                return;
            }
            self.victims.lock().extend(victims);
            self.victims_pending.store(true, Ordering::Release);
            self.collect();
        }
    }

    /// Error 3966 when `tv`'s snapshot was given up (checked after a versioned read: a
    /// version removed for the shrink was then removed after the mark, which this sees).
    pub(crate) fn check_not_given_up(&self, tv: &TxnVersions) -> Result<()> {
        match (tv.snapshot, self.snapshots.get()) {
            (Some(s), Some(snapshots)) if snapshots.is_victim(s.csn, tv.slot) => {
                Err(msg::VERSION_STORE_SHRUNK.engine(&[]))
            }
            _ => Ok(()),
        }
    }
    pub fn state(&self) -> Versioning {
        Versioning::from_u8(self.state.load(Ordering::SeqCst))
    }

    fn set_state(&self, state: Versioning) {
        self.state.store(state as u8, Ordering::SeqCst);
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
        self.snapshots.get_or_init(Box::default);
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
        self.snapshots.get_or_init(Box::default);
        self.set_state(Versioning::On);
    }

    /// Stops taking snapshots, waits (polling, unless cancelled) for those left to end,
    /// and stops keeping versions.
    pub(crate) fn stop(&self, cancel: Option<&AtomicBool>) -> Result<()> {
        if self.state() == Versioning::Off {
            return Ok(());
        }
        // A snapshot registers, then checks that it may be taken: once this state is
        // stored, every snapshot that counted is seen below (both sequentially consistent).
        self.set_state(Versioning::Stopping);
        loop {
            if self.snapshots.get().is_none_or(|s| s.count() == 0) {
                let _ = self.state.compare_exchange(
                    Versioning::Stopping as u8,
                    Versioning::Off as u8,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
                return Ok(());
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
        let mut chains = meta.versions.chains.write();
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
        let total = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let max = self.max_bytes.load(Ordering::Relaxed);
        if max != 0 && total > max {
            self.collect();
            self.shrink();
        }
    }

    /// The change of `key` by `txn` was undone: its version goes (under the tree latch
    /// held exclusively).
    pub(crate) fn undone(&self, meta: &TreeMeta, key: &[u8], txn: TxnId) {
        if !meta.versions.any() {
            return;
        }
        let mut chains = meta.versions.chains.write();
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
        let csn = self.clock.fetch_add(1, Ordering::SeqCst) + 1;
        writer.csn.store(csn, Ordering::Release);
        let keys = std::mem::take(&mut tv.changed);
        self.committed.lock().push_back(Committed { csn, keys });
        self.waiting.fetch_add(1, Ordering::AcqRel);
        self.collect();
    }

    /// The transaction ended without committing (its changes undone): it holds nothing.
    pub(crate) fn rolled_back(&self, tv: &mut TxnVersions) {
        tv.writer = None;
        tv.changed.clear();
    }

    /// Takes a snapshot for `tv` (kept until [`Versions::release`]); false when snapshots
    /// are not allowed now.
    pub(crate) fn take(&self, tv: &mut TxnVersions, statement: bool, holder: (u32, TxnId)) -> bool {
        if tv.snapshot.is_some() {
            return true;
        }
        if self.state() != Versioning::On {
            return false;
        }
        let snapshots = self.snapshots.get().expect("snapshots are made before versioning is on");
        let (csn, slot) = snapshots.register(&self.clock, (holder.0, holder.1, statement));
        // Turned off meanwhile: `stop` may not have seen this snapshot.
        if self.state() != Versioning::On {
            snapshots.unregister(csn, slot);
            return false;
        }
        tv.snapshot = Some(Snapshot { csn, statement });
        tv.slot = slot;
        true
    }

    /// Lets go of `tv`'s snapshot, if it has one.
    pub(crate) fn release(&self, tv: &mut TxnVersions) {
        let Some(s) = tv.snapshot.take() else { return };
        self.snapshots.get().expect("a snapshot was registered").unregister(s.csn, tv.slot);
        if self.waiting.load(Ordering::Acquire) != 0 {
            self.collect();
        }
    }

    /// The clock: the CSN of the newest commit that kept versions.
    pub fn clock(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    /// The oldest CSN a snapshot may still read at: the oldest active snapshot's (of those
    /// not given up), or the clock when there is none.
    pub(crate) fn horizon(&self) -> u64 {
        match self.snapshots.get() {
            Some(s) => s.oldest(&self.clock),
            None => self.clock.load(Ordering::SeqCst),
        }
    }

    /// Removes the versions no snapshot needs any more.
    fn collect(&self) {
        let horizon = self.horizon();
        loop {
            let done = {
                let mut queue = self.committed.lock();
                match queue.front() {
                    Some(c) if c.csn <= horizon => {
                        self.waiting.fetch_sub(1, Ordering::AcqRel);
                        queue.pop_front()
                    }
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
        let mut chains = meta.versions.chains.write();
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

    /// The snapshots held now.
    pub fn held(&self) -> Vec<HeldSnapshot> {
        self.snapshots.get().map_or_else(Vec::new, |s| s.held())
    }

    pub fn usage(&self) -> VersionUsage {
        let snapshots = self.snapshots.get().map_or(0, |s| s.count()) as u64;
        let oldest_snapshot = if snapshots == 0 { 0 } else { self.horizon() };
        VersionUsage {
            versions: self.versions.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            snapshots,
            oldest_snapshot,
        }
    }
}
