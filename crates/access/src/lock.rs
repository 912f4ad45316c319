//! Transaction locks with deadlock detection.
//!
//! Resources are tables (IS/IX/S/X) and keys (S/U/X), identified by the tree's root page
//! and a 64-bit hash of the key: two keys with the same hash share a lock, which can
//! only cause extra waiting, never a missed conflict. Writers hold X key locks and an
//! IX table lock until their transaction ends (strict two-phase locking). READ COMMITTED
//! readers take instant S locks: they wait for a writer of the row to finish and keep
//! nothing. A read-modify-write (UPDATE, DELETE, `UPDLOCK`) takes an update (U) lock
//! before it reads the row: U admits readers (S) but no second U or X, so two writers
//! of one row are serialised before either reads it, and the U lock converts to X when
//! the row is written (SQL Server's protocol, which avoids the conversion deadlock two
//! S holders would meet).
//!
//! Every request carries its own timeout (the session's `SET LOCK_TIMEOUT`): `None`
//! waits until granted or chosen as a deadlock victim, `Some(0)` never waits.
//!
//! A request that must wait records "waiter → holders" edges in a wait-for graph and
//! searches it for a cycle through itself; if one exists the requester is the victim
//! and gets error 1205. Waiters re-check every few milliseconds, so a cycle formed by
//! later requests is found by the request that closes it.
//!
//! ## Schema stability without the lock table
//!
//! Every statement takes Sch-S on each object it uses, and Sch-S conflicts only with
//! Sch-M (DDL), which is rare. So Sch-S is first tried as a *fast* hold: a count of
//! holders per stripe of object ids ([`SchemaStripes`]), beside a count of Sch-M
//! requests pending or granted per stripe. A statement increments its stripe's holders
//! and then reads the stripe's modifiers; a DDL increments its stripe's modifiers and
//! then reads the holders (both sequentially consistent), so at least one sees the
//! other: either the statement falls back to the lock table, or the DDL waits for the
//! fast holders to drain before it asks the lock table for Sch-M.
//!
//! Fast holds are invisible to the wait-for graph, which is safe only while their
//! holders never wait for anyone. So a transaction that holds fast Sch-S and must wait
//! in the lock table first *transfers* them: enters each as a granted Sch-S in the lock
//! table (granted without a compatibility check: no Sch-M on the object can be granted
//! while its fast holders are counted), then stops counting it. A DDL waiting for fast
//! holders to drain therefore waits only for statements that are running, and any
//! cycle through it passes through a lock-table wait, where detection sees it.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use tessera_errors::{Error, Result};
use tessera_log::TxnId;
use tessera_waits::WaitType;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Table(u32),
    Key(u32, u64),
    /// An object's definition (schema locks: Sch-S by every statement that uses it,
    /// Sch-M by DDL that changes it), named by the object's id in its database.
    Schema(u32),
    /// An application lock (`sp_getapplock`), named by a hash of its resource name.
    App(u64),
    /// The keys of a tree between one key and the key before it (SQL Server's key-range
    /// locks, `crate::txn::locks::lock_range`), named by the hash of the key above the
    /// range; the range above the tree's last key is the empty key's.
    Range(u32, u64),
}

impl Resource {
    pub fn key(tree: u32, key: &[u8]) -> Resource {
        Resource::Key(tree, key_hash(key))
    }

    /// The range of keys just below `above` (None: above the tree's last key).
    pub fn range(tree: u32, above: Option<&[u8]>) -> Resource {
        Resource::Range(tree, key_hash(above.unwrap_or(&[])))
    }

    fn mix(&self) -> u64 {
        let (a, b) = match *self {
            Resource::Table(t) => (u64::from(t), 0x5851_F42D_4C95_7F2D),
            Resource::Key(t, h) => (u64::from(t), h),
            Resource::Schema(o) => (u64::from(o), 0x2545_F491_4F6C_DD1D),
            Resource::App(h) => (0x27BB_2EE6, h),
            Resource::Range(t, h) => (u64::from(t) ^ 0x6A09_E667_F3BC_C908, h),
        };
        let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b;
        x ^= x >> 32;
        x = x.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        x ^ (x >> 32)
    }
}

/// A key's 64-bit hash: two independent CRC-32C streams (hardware-accelerated).
fn key_hash(key: &[u8]) -> u64 {
    let lo = crc32c::crc32c(key);
    let hi = crc32c::crc32c_append(0x9E37_79B9, key);
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Hashes a [`Resource`] with one multiply-xorshift (its key part is already a hash).
#[derive(Default)]
struct ResourceHasher(u64);

impl Hasher for ResourceHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

impl Hash for Resource {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.mix());
    }
}

type Table = HashMap<Resource, Entry, BuildHasherDefault<ResourceHasher>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    IntentShared,
    IntentExclusive,
    Shared,
    /// Read now, maybe written later: compatible with S (and IS), not with U, IX or X.
    Update,
    Exclusive,
    /// Sch-S: the object's definition must not change while held (every statement).
    SchemaStability,
    /// Sch-M: the object's definition is changing (DDL); compatible with nothing.
    SchemaModification,
}

impl LockMode {
    pub fn compatible(self, other: LockMode) -> bool {
        use LockMode::*;
        matches!(
            (self, other),
            (IntentShared, IntentShared | IntentExclusive | Shared | Update)
                | (IntentExclusive, IntentShared | IntentExclusive)
                | (Shared, IntentShared | Shared | Update)
                | (Update, IntentShared | Shared)
                | (SchemaStability, SchemaStability)
        )
    }

    /// The weakest mode at least as strong as both.
    fn combine(self, other: LockMode) -> LockMode {
        use LockMode::*;
        match (self.max(other), self.min(other)) {
            (Shared | Update, IntentExclusive) => Exclusive,
            (m, _) => m,
        }
    }
}

/// A locked resource: who holds it, and who waits for it in arrival order. A request
/// is granted only when it is compatible with the holders and with every request queued
/// before it (so a stream of readers cannot starve a waiting writer, nor statements a
/// waiting DDL); a conversion (the requester already holds the resource) skips the queue.
///
/// Each waiter sleeps on its own thread's park token; whoever changes an entry (a
/// release, a grant, a waiter giving up) wakes exactly the waiters that could now be
/// granted, so handing a hot row from one transaction to the next wakes one thread, not
/// every waiter of the lock table's shard.
#[derive(Default)]
struct Entry {
    /// Inline for the usual one or two holders: a statement's Sch-S on a table no one
    /// else holds creates and drops its entry without allocating.
    holders: smallvec::SmallVec<[Holder; 2]>,
    queue: Vec<Waiter>,
}

/// A transaction holding a resource, and the session it works for (0: none), which
/// sys.dm_tran_locks and a blocked request's `blocking_session_id` name.
#[derive(Clone, Copy, Debug)]
struct Holder {
    txn: TxnId,
    mode: LockMode,
    session: i32,
}

impl Holder {
    /// `txn` holding `mode` for the session the calling thread works for.
    fn new(txn: TxnId, mode: LockMode) -> Holder {
        Holder { txn, mode, session: tessera_waits::current_session() }
    }
}

/// A request waiting for a resource (conversions by holders included).
struct Waiter {
    txn: TxnId,
    mode: LockMode,
    session: i32,
    thread: std::thread::Thread,
}

impl Entry {
    fn is_unused(&self) -> bool {
        self.holders.is_empty() && self.queue.is_empty()
    }

    /// The transactions a request by `txn` for `wanted` must wait for, with their
    /// sessions: incompatible holders and, unless it converts a lock it holds,
    /// incompatible requests queued ahead.
    fn blockers(&self, txn: TxnId, wanted: LockMode, converting: bool) -> impl Iterator<Item = (TxnId, i32)> + '_ {
        let ahead =
            if converting { 0 } else { self.queue.iter().position(|w| w.txn == txn).unwrap_or(self.queue.len()) };
        self.holders
            .iter()
            .copied()
            .chain(self.queue[..ahead].iter().map(|w| Holder { txn: w.txn, mode: w.mode, session: w.session }))
            .filter(move |h| h.txn != txn && !h.mode.compatible(wanted))
            .map(|h| (h.txn, h.session))
    }

    fn leave_queue(&mut self, txn: TxnId) {
        self.queue.retain(|w| w.txn != txn);
    }

    /// Wakes every waiter whose request could be granted now.
    fn wake_grantable(&self) {
        for w in &self.queue {
            let converting = self.holders.iter().any(|h| h.txn == w.txn);
            if self.blockers(w.txn, w.mode, converting).next().is_none() {
                w.thread.unpark();
            }
        }
    }
}

/// The lock table's shards (by a resource's hash): 16 keep a database's many connections
/// apart on the machines tessera runs on, at 40 bytes each in every open database that
/// has taken a lock in the table (they are made by its first such lock).
const SHARD_BITS: u32 = 4;
const SHARDS: usize = 1 << SHARD_BITS;

/// The shard that holds `r`'s entry: the top bits of its mixed hash.
fn shard_of(r: &Resource) -> usize {
    (r.mix() >> (64 - SHARD_BITS)) as usize
}

/// How long a request may wait, and what else ends the wait.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wait<'a> {
    /// None: until granted or chosen as a deadlock victim; beyond it, error 1222.
    pub timeout: Option<Duration>,
    /// Set when the request is cancelled (attention, shutdown): the wait ends with 3617.
    pub cancel: Option<&'a AtomicBool>,
    /// The requester's fast schema-stability holds, transferred to the lock table before
    /// it waits (see the module's notes).
    pub fast: Option<&'a FastSchemaHolds>,
}

impl Wait<'_> {
    pub const FOREVER: Wait<'static> = Wait { timeout: None, cancel: None, fast: None };

    pub fn timeout(limit: Duration) -> Wait<'static> {
        Wait { timeout: Some(limit), cancel: None, fast: None }
    }

    /// The error that ends a wait begun at `started` now, if any: a cancel, or the timeout.
    fn ended(&self, started: Instant) -> Option<Error> {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            Some(Error::Cancelled)
        } else {
            self.timeout.filter(|&limit| started.elapsed() >= limit).map(|_| Error::LockTimeout)
        }
    }
}

/// Stripes of object ids for fast schema-stability holds (a power of two): two counters of
/// four bytes each per stripe in every open database; objects sharing a stripe only make
/// a schema change wait for the other's readers too.
const SCHEMA_STRIPES: usize = 64;

/// Per stripe of object ids: fast Sch-S holders, and Sch-M requests pending or granted.
struct SchemaStripes {
    holders: [AtomicU32; SCHEMA_STRIPES],
    modifiers: [AtomicU32; SCHEMA_STRIPES],
}

impl Default for SchemaStripes {
    fn default() -> Self {
        SchemaStripes {
            holders: std::array::from_fn(|_| AtomicU32::new(0)),
            modifiers: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

fn schema_stripe(object: u32) -> usize {
    (object.wrapping_mul(0x9E37_79B9) >> 24) as usize % SCHEMA_STRIPES
}

/// A transaction's schema-stability locks taken as fast holds: (object, transferred),
/// where a transferred one is a Sch-S in the lock table now; all released when its
/// statement ends. Behind a mutex only so that a wait, which sees the transaction shared,
/// can transfer them; the owner reaches them with `&mut`.
#[derive(Debug, Default)]
pub struct FastSchemaHolds(Mutex<smallvec::SmallVec<[(u32, bool); 2]>>);

impl FastSchemaHolds {
    fn has_held(&self) -> bool {
        self.0.lock().iter().any(|&(_, transferred)| !transferred)
    }
}

/// Bounds the lock table: a transaction may hold at most this many locks.
pub const MAX_LOCKS_PER_TXN: usize = 5_000_000;

pub struct LockManager {
    /// The database whose locks these are (named in waits' resources).
    database: u32,
    /// Made by the first request that needs the table: a database that is only opened
    /// and read (fast Sch-S holds, reads that need no key lock) never pays for them.
    shards: OnceLock<Box<[Mutex<Table>; SHARDS]>>,
    waits_for: Mutex<HashMap<TxnId, Vec<TxnId>>>,
    schema: SchemaStripes,
}

impl Default for LockManager {
    fn default() -> Self {
        LockManager::for_database(0)
    }
}

/// Whether a lock request is granted, waits, or waits to convert a lock its transaction
/// holds (sys.dm_tran_locks' `request_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockStatus {
    Grant,
    Wait,
    Convert,
}

/// One lock request as sys.dm_tran_locks shows it: granted, or waiting.
#[derive(Clone, Copy, Debug)]
pub struct LockRequest {
    pub resource: Resource,
    pub mode: LockMode,
    pub status: LockStatus,
    pub txn: TxnId,
    /// The session the transaction works for (0: none).
    pub session: i32,
}

/// The wait type of a request for `mode` on `r`, as SQL Server names it.
fn wait_type(r: Resource, mode: LockMode) -> WaitType {
    use LockMode::*;
    match (r, mode) {
        (Resource::Range(..), Shared | IntentShared) => WaitType::LockRangeShared,
        (Resource::Range(..), IntentExclusive) => WaitType::LockRangeInsert,
        (Resource::Range(..), _) => WaitType::LockRangeExclusive,
        (_, IntentShared) => WaitType::LockIntentShared,
        (_, IntentExclusive) => WaitType::LockIntentExclusive,
        (_, Shared) => WaitType::LockShared,
        (_, Update) => WaitType::LockUpdate,
        (_, Exclusive) => WaitType::LockExclusive,
        (_, SchemaStability) => WaitType::LockSchemaStability,
        (_, SchemaModification) => WaitType::LockSchemaModification,
    }
}

impl LockManager {
    /// The lock table of database `database` (its id, which waits' resources name).
    pub fn for_database(database: u32) -> LockManager {
        LockManager {
            database,
            shards: OnceLock::new(),
            waits_for: Mutex::new(HashMap::new()),
            schema: SchemaStripes::default(),
        }
    }

    /// `r` as a wait's resource.
    fn wait_resource(&self, r: Resource) -> tessera_waits::Resource {
        use tessera_waits::Resource as W;
        let database = self.database;
        match r {
            Resource::Table(tree) => W::Table { database, tree },
            Resource::Key(tree, hash) | Resource::Range(tree, hash) => W::Key { database, tree, hash },
            Resource::Schema(object) => W::Object { database, object },
            Resource::App(hash) => W::Application { database, hash },
        }
    }

    /// Every lock request now, granted or waiting, shard by shard (each shard's requests
    /// as of one moment; fast schema-stability holds, which only running statements have,
    /// are not in the table and not listed).
    pub fn requests(&self) -> Vec<LockRequest> {
        let mut out = Vec::new();
        for shard in self.made_shards() {
            let map = shard.lock();
            for (&resource, entry) in map.iter() {
                for h in &entry.holders {
                    let status = LockStatus::Grant;
                    out.push(LockRequest { resource, mode: h.mode, status, txn: h.txn, session: h.session });
                }
                for w in &entry.queue {
                    let converting = entry.holders.iter().any(|h| h.txn == w.txn);
                    let status = if converting { LockStatus::Convert } else { LockStatus::Wait };
                    out.push(LockRequest { resource, mode: w.mode, status, txn: w.txn, session: w.session });
                }
            }
        }
        out
    }
}

/// Schema locks: the fast Sch-S path and what Sch-M does about it (see the module's notes).
impl LockManager {
    /// Takes Sch-S on `object` as a fast hold in `holds` when no Sch-M on its stripe is
    /// pending or granted; false otherwise (take it in the lock table then).
    pub fn try_fast_schema_stability(&self, object: u32, holds: &mut FastSchemaHolds) -> bool {
        let s = schema_stripe(object);
        if self.schema.modifiers[s].load(Ordering::SeqCst) != 0 {
            return false;
        }
        self.schema.holders[s].fetch_add(1, Ordering::SeqCst);
        if self.schema.modifiers[s].load(Ordering::SeqCst) != 0 {
            self.schema.holders[s].fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        holds.0.get_mut().push((object, false));
        true
    }

    /// Releases every schema lock in `holds`, fast or transferred.
    pub fn release_schema_holds(&self, txn: TxnId, holds: &mut FastSchemaHolds) {
        for (object, transferred) in holds.0.get_mut().drain(..) {
            if transferred {
                self.release_all(txn, &[Resource::Schema(object)]);
            } else {
                let before = self.schema.holders[schema_stripe(object)].fetch_sub(1, Ordering::SeqCst);
                assert!(before > 0, "a fast schema hold released twice");
            }
        }
    }

    /// Moves `txn`'s fast holds into the lock table as granted Sch-S (before it waits, or
    /// before it asks for Sch-M). Takes one shard at a time: call it holding none.
    fn transfer(&self, txn: TxnId, holds: &FastSchemaHolds) {
        let mut holds = holds.0.lock();
        for i in 0..holds.len() {
            let (object, transferred) = holds[i];
            if transferred {
                continue;
            }
            let r = Resource::Schema(object);
            // An object held twice (a self-join) is one lock-table hold, released once.
            let again = holds[..i].iter().any(|&(o, _)| o == object);
            if !again {
                let mut map = self.shard(&r).lock();
                let entry = map.entry(r).or_default();
                assert!(
                    entry.holders.iter().all(|h| h.txn == txn || h.mode != LockMode::SchemaModification),
                    "Sch-M granted on {object} beside a fast Sch-S hold"
                );
                match entry.holders.iter_mut().find(|h| h.txn == txn) {
                    Some(h) => h.mode = h.mode.combine(LockMode::SchemaStability),
                    None => entry.holders.push(Holder::new(txn, LockMode::SchemaStability)),
                }
            }
            holds[i].1 = !again;
            self.schema.holders[schema_stripe(object)].fetch_sub(1, Ordering::SeqCst);
        }
        holds.retain(|&mut (_, transferred)| transferred);
    }

    /// Sch-M on `object` for `txn` (what [`LockManager::lock`] does for it): announced on
    /// its stripe (so new statements take Sch-S in the lock table), `txn`'s own fast
    /// holds transferred, the stripe's fast holders drained, then granted in the lock
    /// table, where it waits for every Sch-S holder with deadlock detection.
    fn lock_schema_modification(&self, txn: TxnId, object: u32, wait: Wait) -> Result<bool> {
        let r = Resource::Schema(object);
        if self.held(txn, r) == Some(LockMode::SchemaModification) {
            return Ok(false);
        }
        let s = schema_stripe(object);
        self.schema.modifiers[s].fetch_add(1, Ordering::SeqCst);
        if let Some(holds) = wait.fast {
            self.transfer(txn, holds);
        }
        let granted = self
            .drain_fast_holders(object, s, wait)
            .and_then(|()| self.acquire(txn, r, LockMode::SchemaModification, true, wait));
        if granted.is_err() {
            self.schema.modifiers[s].fetch_sub(1, Ordering::SeqCst);
        }
        granted
    }

    /// Waits until stripe `s` has no fast holders. They are running statements that do
    /// not wait for anyone (a waiter transfers its holds first), so this ends.
    fn drain_fast_holders(&self, object: u32, s: usize, wait: Wait) -> Result<()> {
        let mut started: Option<Instant> = None;
        let mut waiting = None;
        let mut nap = Duration::from_micros(20);
        while self.schema.holders[s].load(Ordering::SeqCst) != 0 {
            waiting.get_or_insert_with(|| {
                tessera_waits::begin(WaitType::LockSchemaModification, self.wait_resource(Resource::Schema(object)))
            });
            if let Some(e) = wait.ended(*started.get_or_insert_with(Instant::now)) {
                return Err(e);
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(2));
        }
        Ok(())
    }

    /// A holder of `r` in `mode` has been removed: a Sch-M no longer counts on its stripe.
    fn released(&self, r: &Resource, mode: LockMode) {
        if let (Resource::Schema(object), LockMode::SchemaModification) = (r, mode) {
            let before = self.schema.modifiers[schema_stripe(*object)].fetch_sub(1, Ordering::SeqCst);
            assert!(before > 0, "a Sch-M released that was never announced");
        }
    }
}

impl LockManager {
    /// The shard of `r`, made with the others if none is yet (for a request).
    fn shard(&self, r: &Resource) -> &Mutex<Table> {
        let shards = self.shards.get_or_init(|| Box::new(std::array::from_fn(|_| Mutex::new(Table::default()))));
        &shards[shard_of(r)]
    }

    /// The shard of `r` if the shards are made (none made: nothing is locked).
    fn made_shard(&self, r: &Resource) -> Option<&Mutex<Table>> {
        self.shards.get().map(|shards| &shards[shard_of(r)])
    }

    /// The shards, if any request has made them yet (walkers need not make them).
    fn made_shards(&self) -> &[Mutex<Table>] {
        self.shards.get().map_or(&[], |shards| &shards[..])
    }

    /// Gives back the memory of the tables that hold no lock now (their maps keep the
    /// capacity of their busiest moment): for a database gone idle. A map with entries
    /// is left as it is.
    pub fn release_idle_memory(&self) {
        for shard in self.made_shards() {
            let mut map = shard.lock();
            if map.is_empty() {
                map.shrink_to_fit();
                assert_eq!(map.capacity(), 0, "an empty lock table shard keeps its memory");
            }
        }
        let mut graph = self.waits_for.lock();
        if graph.is_empty() {
            graph.shrink_to_fit();
        }
    }

    /// Acquires `mode` on `r` for `txn`, waiting for conflicting holders. Returns true if
    /// this is a new lock the transaction must release later (false when it already
    /// held the resource; the mode may have been upgraded in place), waiting as `wait` allows.
    pub fn lock(&self, txn: TxnId, r: Resource, mode: LockMode, wait: Wait) -> Result<bool> {
        match (r, mode) {
            (Resource::Schema(object), LockMode::SchemaModification) => {
                self.lock_schema_modification(txn, object, wait)
            }
            _ => self.acquire(txn, r, mode, true, wait),
        }
    }

    /// Acquires `mode` on `r` only if no other transaction holds a conflicting lock;
    /// never waits. `None`: not granted; `Some(new)`: held now, `new` as for [`lock`](Self::lock).
    pub fn try_lock(&self, txn: TxnId, r: Resource, mode: LockMode) -> Option<bool> {
        assert!(mode != LockMode::SchemaModification, "Sch-M is announced first: take it with lock");
        let mut map = self.shard(&r).lock();
        let entry = map.entry(r).or_default();
        let converting = entry.holders.iter().any(|h| h.txn == txn);
        if entry.blockers(txn, mode, converting).next().is_some() {
            if entry.is_unused() {
                map.remove(&r);
            }
            return None;
        }
        match entry.holders.iter_mut().find(|h| h.txn == txn) {
            Some(h) => {
                h.mode = h.mode.combine(mode);
                Some(false)
            }
            None => {
                entry.holders.push(Holder::new(txn, mode));
                Some(true)
            }
        }
    }

    /// [`lock`](Self::lock), also saying whether the request had to wait: (new, waited).
    pub fn lock_noting_wait(&self, txn: TxnId, r: Resource, mode: LockMode, wait: Wait) -> Result<(bool, bool)> {
        match self.try_lock(txn, r, mode) {
            Some(new) => Ok((new, false)),
            None => self.lock(txn, r, mode, wait).map(|new| (new, true)),
        }
    }

    /// Waits until `mode` on `r` would be granted to `txn`, without keeping a lock
    /// (READ COMMITTED reads).
    pub fn wait_compatible(&self, txn: TxnId, r: Resource, mode: LockMode, wait: Wait) -> Result<()> {
        self.acquire(txn, r, mode, false, wait).map(|_| ())
    }

    fn acquire(&self, txn: TxnId, r: Resource, mode: LockMode, keep: bool, wait: Wait) -> Result<bool> {
        let timeout = wait.timeout;
        let mut map = self.shard(&r).lock();
        // Read when the request first has to wait (a granted one never reads the clock).
        let mut started: Option<Instant> = None;
        // Only a request that waited has edges in the wait-for graph (or a queue entry).
        let mut waited = false;
        // The wait as the session's views show it, from the request's first wait to its end.
        let mut waiting: Option<tessera_waits::Waiting> = None;
        loop {
            let entry = map.entry(r).or_default();
            let mine = entry.holders.iter().position(|h| h.txn == txn);
            let wanted = mine.map_or(mode, |i| entry.holders[i].mode.combine(mode));
            if entry.blockers(txn, wanted, mine.is_some()).next().is_none() {
                if waited {
                    entry.leave_queue(txn);
                    self.waits_for.lock().remove(&txn);
                }
                // The grant rule, checked where it is enforced: every other holder's mode
                // is compatible with the one granted.
                assert!(
                    entry.holders.iter().all(|h| h.txn == txn || h.mode.compatible(wanted)),
                    "{wanted:?} granted to {txn:?} beside an incompatible holder"
                );
                let granted = if !keep {
                    false
                } else if let Some(i) = mine {
                    entry.holders[i].mode = wanted;
                    false
                } else {
                    entry.holders.push(Holder::new(txn, wanted));
                    true
                };
                if entry.is_unused() {
                    map.remove(&r);
                } else {
                    // Leaving the queue may let the requests behind go.
                    entry.wake_grantable();
                }
                return Ok(granted);
            }
            // Fast schema holds are invisible to deadlock detection: into the table
            // with them before waiting (with no shard held, then look again).
            if let Some(fast) = wait.fast.filter(|f| !waited && f.has_held()) {
                MutexGuard::unlocked(&mut map, || self.transfer(txn, fast));
                continue;
            }
            match entry.queue.iter_mut().find(|w| w.txn == txn) {
                Some(w) => w.mode = wanted,
                None => entry.queue.push(Waiter {
                    txn,
                    mode: wanted,
                    session: tessera_waits::current_session(),
                    thread: std::thread::current(),
                }),
            }
            let blockers: Vec<(TxnId, i32)> = entry.blockers(txn, wanted, mine.is_some()).collect();
            let waiting =
                waiting.get_or_insert_with(|| tessera_waits::begin(wait_type(r, wanted), self.wait_resource(r)));
            waiting.blocked_by(blockers.first().map_or(0, |b| b.1));
            let blockers: Vec<TxnId> = blockers.into_iter().map(|b| b.0).collect();
            let started = *started.get_or_insert_with(Instant::now);
            let failure = {
                let mut graph = self.waits_for.lock();
                graph.insert(txn, blockers);
                if reaches(&graph, txn) {
                    Some(Error::Deadlock)
                } else {
                    wait.ended(started)
                }
            };
            if let Some(e) = failure {
                self.waits_for.lock().remove(&txn);
                entry.leave_queue(txn);
                if entry.is_unused() {
                    map.remove(&r);
                } else {
                    entry.wake_grantable();
                }
                return Err(e);
            }
            // Woken when the request may be grantable; every few milliseconds regardless,
            // to look for deadlocks formed since, the timeout and a cancel.
            waited = true;
            let nap = Duration::from_millis(5);
            let nap = timeout.map_or(nap, |limit| nap.min(limit.saturating_sub(started.elapsed())));
            MutexGuard::unlocked(&mut map, || std::thread::park_timeout(nap));
        }
    }

    /// Releases every lock in `held` for `txn`.
    pub fn release_all(&self, txn: TxnId, held: &[Resource]) {
        for r in held {
            let Some(shard) = self.made_shard(r) else { continue };
            let mut map = shard.lock();
            if let Some(entry) = map.get_mut(r) {
                if let Some(i) = entry.holders.iter().position(|h| h.txn == txn) {
                    let held = entry.holders.swap_remove(i);
                    self.released(r, held.mode);
                }
                if entry.is_unused() {
                    map.remove(r);
                } else {
                    entry.wake_grantable();
                }
            }
        }
        // A request leaves the wait-for graph when it is granted or fails, so a
        // transaction that ends has no edges (and ending takes no instance-wide lock).
        debug_assert!(!self.waits_for.lock().contains_key(&txn), "{txn:?} ends with wait-for edges");
    }

    /// The mode `txn` holds on `r`, if any.
    pub fn held(&self, txn: TxnId, r: Resource) -> Option<LockMode> {
        let map = self.made_shard(&r)?.lock();
        map.get(&r).and_then(|e| e.holders.iter().find(|h| h.txn == txn).map(|h| h.mode))
    }

    /// Releases `txn`'s lock on `r` unless `keep` says otherwise of the mode it holds;
    /// returns the mode it held when the lock is kept.
    pub fn release_unless(&self, txn: TxnId, r: Resource, keep: impl Fn(LockMode) -> bool) -> Option<LockMode> {
        let mut map = self.made_shard(&r)?.lock();
        let entry = map.get_mut(&r)?;
        let i = entry.holders.iter().position(|h| h.txn == txn)?;
        let mode = entry.holders[i].mode;
        if keep(mode) {
            return Some(mode);
        }
        entry.holders.swap_remove(i);
        self.released(&r, mode);
        if entry.is_unused() {
            map.remove(&r);
        } else {
            entry.wake_grantable();
        }
        None
    }

    /// Releases `txn`'s lock on `r`; false if it held none.
    pub fn release(&self, txn: TxnId, r: Resource) -> bool {
        self.held(txn, r).is_some() && self.release_unless(txn, r, |_| false).is_none()
    }

    /// True if a transaction other than `txn` holds a lock on `r` that conflicts with `mode`.
    pub fn conflicts(&self, txn: TxnId, r: Resource, mode: LockMode) -> bool {
        let Some(shard) = self.made_shard(&r) else { return false };
        let map = shard.lock();
        map.get(&r).is_some_and(|e| e.holders.iter().any(|h| h.txn != txn && !h.mode.compatible(mode)))
    }

    /// Number of resources with at least one holder (for tests and DMVs).
    pub fn locked_resources(&self) -> usize {
        self.made_shards().iter().map(|m| m.lock().len()).sum()
    }
}

/// Does a path of wait-for edges lead from `start` back to `start`?
fn reaches(graph: &HashMap<TxnId, Vec<TxnId>>, start: TxnId) -> bool {
    let mut seen = HashSet::new();
    let mut stack: Vec<TxnId> = graph.get(&start).cloned().unwrap_or_default();
    while let Some(t) = stack.pop() {
        if t == start {
            return true;
        }
        if seen.insert(t) {
            if let Some(next) = graph.get(&t) {
                stack.extend(next.iter().copied());
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn compatibility_matrix() {
        use LockMode::*;
        assert!(Shared.compatible(Shared));
        assert!(!Shared.compatible(Exclusive));
        assert!(IntentExclusive.compatible(IntentExclusive));
        assert!(!IntentExclusive.compatible(Shared));
        assert!(!Exclusive.compatible(IntentShared));
        assert_eq!(Shared.combine(IntentExclusive), Exclusive);
        assert!(Update.compatible(Shared) && Shared.compatible(Update));
        assert!(!Update.compatible(Update) && !Update.compatible(Exclusive) && !Exclusive.compatible(Update));
        assert!(!Update.compatible(IntentExclusive));
        assert_eq!(Shared.combine(Update), Update);
        assert_eq!(Update.combine(Exclusive), Exclusive);
    }

    #[test]
    fn the_table_is_made_by_its_first_lock_and_gives_its_memory_back_when_empty() {
        let lm = LockManager::default();
        let (t1, t2) = (TxnId::from_raw(1), TxnId::from_raw(2));
        let keys: Vec<Resource> = (0..64u32).map(|i| Resource::key(1, &i.to_le_bytes())).collect();
        // Asking what is held makes nothing.
        assert!(!lm.conflicts(t1, keys[0], LockMode::Shared) && lm.held(t1, keys[0]).is_none());
        lm.release_all(t1, &keys);
        assert!(lm.shards.get().is_none() && lm.requests().is_empty());
        let capacity = |lm: &LockManager| lm.made_shards().iter().map(|s| s.lock().capacity()).sum::<usize>();
        for &r in &keys {
            assert!(lm.lock(t1, r, LockMode::Exclusive, Wait::FOREVER).unwrap());
        }
        assert!(lm.lock(t2, Resource::Table(2), LockMode::IntentShared, Wait::FOREVER).unwrap());
        lm.release_all(t1, &keys);
        // A shard holding a lock keeps its map; the empty ones give theirs back.
        lm.release_idle_memory();
        assert_eq!(lm.locked_resources(), 1);
        assert!(capacity(&lm) > 0);
        lm.release_all(t2, &[Resource::Table(2)]);
        lm.release_idle_memory();
        assert_eq!(capacity(&lm), 0);
        // And the table works on as before.
        assert!(lm.lock(t1, keys[0], LockMode::Exclusive, Wait::FOREVER).unwrap());
        assert!(lm.conflicts(t2, keys[0], LockMode::Shared));
        lm.release_all(t1, &keys[..1]);
        assert_eq!(lm.locked_resources(), 0);
    }

    #[test]
    fn update_lock_admits_readers_and_serialises_writers() {
        let lm = Arc::new(LockManager::default());
        let r = Resource::key(1, b"k");
        assert!(lm.lock(TxnId::from_raw(1), r, LockMode::Update, Wait::FOREVER).unwrap());
        lm.wait_compatible(TxnId::from_raw(2), r, LockMode::Shared, Wait::timeout(Duration::ZERO)).unwrap();
        assert!(matches!(
            lm.lock(TxnId::from_raw(2), r, LockMode::Update, Wait::timeout(Duration::from_millis(10))),
            Err(Error::LockTimeout)
        ));
        assert!(
            !lm.lock(TxnId::from_raw(1), r, LockMode::Exclusive, Wait::FOREVER).unwrap(),
            "conversion is not a new lock"
        );
        assert_eq!(lm.held(TxnId::from_raw(1), r), Some(LockMode::Exclusive));
        assert_eq!(lm.release_unless(TxnId::from_raw(1), r, |m| m == LockMode::Exclusive), Some(LockMode::Exclusive));
        lm.release_all(TxnId::from_raw(1), &[r]);
        assert!(lm.lock(TxnId::from_raw(2), r, LockMode::Update, Wait::timeout(Duration::ZERO)).unwrap());
        assert_eq!(lm.release_unless(TxnId::from_raw(2), r, |m| m == LockMode::Exclusive), None);
        assert_eq!(lm.locked_resources(), 0);
    }

    #[test]
    fn writer_blocks_reader_until_release() {
        let lm = Arc::new(LockManager::default());
        let r = Resource::key(1, b"k");
        assert!(lm.lock(TxnId::from_raw(1), r, LockMode::Exclusive, Wait::FOREVER).unwrap());
        assert!(
            !lm.lock(TxnId::from_raw(1), r, LockMode::Exclusive, Wait::FOREVER).unwrap(),
            "re-lock is not a new lock"
        );
        let lm2 = lm.clone();
        let reader =
            std::thread::spawn(move || lm2.wait_compatible(TxnId::from_raw(2), r, LockMode::Shared, Wait::FOREVER));
        std::thread::sleep(Duration::from_millis(30));
        assert!(!reader.is_finished());
        lm.release_all(TxnId::from_raw(1), &[r]);
        reader.join().unwrap().unwrap();
        assert_eq!(lm.locked_resources(), 0);
    }

    #[test]
    fn a_waiting_request_is_not_overtaken() {
        let lm = Arc::new(LockManager::default());
        let r = Resource::Schema(7);
        lm.lock(TxnId::from_raw(1), r, LockMode::SchemaStability, Wait::FOREVER).unwrap();
        let lm2 = lm.clone();
        let ddl =
            std::thread::spawn(move || lm2.lock(TxnId::from_raw(2), r, LockMode::SchemaModification, Wait::FOREVER));
        std::thread::sleep(Duration::from_millis(30));
        // Sch-S is compatible with the holder, but a Sch-M request waits ahead of it.
        assert!(matches!(
            lm.lock(TxnId::from_raw(3), r, LockMode::SchemaStability, Wait::timeout(Duration::from_millis(20))),
            Err(Error::LockTimeout)
        ));
        // A conversion by a holder skips the queue.
        assert!(!lm.lock(TxnId::from_raw(1), r, LockMode::SchemaStability, Wait::timeout(Duration::ZERO)).unwrap());
        lm.release_all(TxnId::from_raw(1), &[r]);
        assert!(ddl.join().unwrap().unwrap());
        assert_eq!(lm.held(TxnId::from_raw(2), r), Some(LockMode::SchemaModification));
        assert!(lm.try_lock(TxnId::from_raw(3), r, LockMode::SchemaStability).is_none());
        lm.release_all(TxnId::from_raw(2), &[r]);
        assert_eq!(lm.try_lock(TxnId::from_raw(3), r, LockMode::SchemaStability), Some(true));
        lm.release_all(TxnId::from_raw(3), &[r]);
        assert_eq!(lm.locked_resources(), 0);
    }

    fn wait_with(holds: &FastSchemaHolds) -> Wait<'_> {
        Wait { timeout: None, cancel: None, fast: Some(holds) }
    }

    #[test]
    fn a_fast_schema_hold_keeps_ddl_waiting_until_released() {
        let lm = Arc::new(LockManager::default());
        let mut holds = FastSchemaHolds::default();
        assert!(lm.try_fast_schema_stability(7, &mut holds));
        assert_eq!(lm.locked_resources(), 0, "a fast hold is not in the lock table");
        let lm2 = lm.clone();
        let ddl = std::thread::spawn(move || {
            lm2.lock(TxnId::from_raw(2), Resource::Schema(7), LockMode::SchemaModification, Wait::FOREVER)
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!ddl.is_finished(), "Sch-M waits for the fast holder");
        // With Sch-M announced, a new statement takes Sch-S in the lock table, behind it.
        let mut later = FastSchemaHolds::default();
        assert!(!lm.try_fast_schema_stability(7, &mut later));
        lm.release_schema_holds(TxnId::from_raw(1), &mut holds);
        assert!(ddl.join().unwrap().unwrap());
        assert_eq!(lm.held(TxnId::from_raw(2), Resource::Schema(7)), Some(LockMode::SchemaModification));
        lm.release_all(TxnId::from_raw(2), &[Resource::Schema(7)]);
        assert!(lm.try_fast_schema_stability(7, &mut later), "the stripe is fast again once Sch-M is released");
        lm.release_schema_holds(TxnId::from_raw(3), &mut later);
        assert_eq!(lm.locked_resources(), 0);
    }

    #[test]
    fn ddl_over_its_own_fast_hold_converts_it() {
        let lm = LockManager::default();
        let mut holds = FastSchemaHolds::default();
        assert!(lm.try_fast_schema_stability(9, &mut holds));
        let schema = Resource::Schema(9);
        let new = lm.lock(TxnId::from_raw(1), schema, LockMode::SchemaModification, wait_with(&holds)).unwrap();
        assert!(!new, "the transferred Sch-S became Sch-M");
        assert_eq!(lm.held(TxnId::from_raw(1), schema), Some(LockMode::SchemaModification));
        assert!(!lm.lock(TxnId::from_raw(1), schema, LockMode::SchemaModification, wait_with(&holds)).unwrap());
        lm.release_schema_holds(TxnId::from_raw(1), &mut holds);
        assert_eq!(lm.locked_resources(), 0);
        assert!(lm.try_fast_schema_stability(9, &mut holds), "the Sch-M was counted off once");
        lm.release_schema_holds(TxnId::from_raw(1), &mut holds);
    }

    #[test]
    fn a_deadlock_through_a_fast_schema_hold_is_detected() {
        // Transaction 1 reads table 5 (fast Sch-S), transaction 2 holds X on a row and
        // asks for Sch-M on table 5; then 1 waits for that row. 2 waits for 1 outside the
        // lock table until 1 transfers its hold: the cycle must then be found.
        let lm = Arc::new(LockManager::default());
        let row = Resource::key(1, b"row");
        lm.lock(TxnId::from_raw(2), row, LockMode::Exclusive, Wait::FOREVER).unwrap();
        let mut holds = FastSchemaHolds::default();
        assert!(lm.try_fast_schema_stability(5, &mut holds));
        let lm2 = lm.clone();
        let ddl = std::thread::spawn(move || {
            let own = FastSchemaHolds::default();
            let r = lm2.lock(TxnId::from_raw(2), Resource::Schema(5), LockMode::SchemaModification, wait_with(&own));
            lm2.release_all(TxnId::from_raw(2), &[row, Resource::Schema(5)]);
            r
        });
        std::thread::sleep(Duration::from_millis(20));
        let read = lm.wait_compatible(TxnId::from_raw(1), row, LockMode::Shared, wait_with(&holds));
        lm.release_schema_holds(TxnId::from_raw(1), &mut holds);
        let ddl = ddl.join().unwrap();
        let victims = [read.is_err(), ddl.is_err()].iter().filter(|&&e| e).count();
        assert_eq!(victims, 1, "{read:?} {ddl:?}");
        assert!(matches!(read, Err(Error::Deadlock)) || matches!(ddl, Err(Error::Deadlock)));
        assert_eq!(lm.locked_resources(), 0);
    }

    #[test]
    fn an_object_held_twice_transfers_and_releases_once() {
        let lm = LockManager::default();
        let mut holds = FastSchemaHolds::default();
        assert!(lm.try_fast_schema_stability(4, &mut holds));
        assert!(lm.try_fast_schema_stability(4, &mut holds));
        lm.transfer(TxnId::from_raw(1), &holds);
        assert_eq!(lm.held(TxnId::from_raw(1), Resource::Schema(4)), Some(LockMode::SchemaStability));
        assert!(lm.try_fast_schema_stability(4, &mut holds), "held fast again after the transfer");
        lm.transfer(TxnId::from_raw(1), &holds);
        lm.release_schema_holds(TxnId::from_raw(1), &mut holds);
        assert_eq!(lm.locked_resources(), 0);
        let ddl = lm.lock(
            TxnId::from_raw(2),
            Resource::Schema(4),
            LockMode::SchemaModification,
            Wait::timeout(Duration::ZERO),
        );
        assert!(ddl.unwrap(), "no fast holder is left counted");
        lm.release_all(TxnId::from_raw(2), &[Resource::Schema(4)]);
    }

    #[test]
    fn a_ddl_waiting_for_fast_holders_honours_its_timeout() {
        let lm = LockManager::default();
        let mut holds = FastSchemaHolds::default();
        assert!(lm.try_fast_schema_stability(3, &mut holds));
        let r = lm.lock(
            TxnId::from_raw(2),
            Resource::Schema(3),
            LockMode::SchemaModification,
            Wait::timeout(Duration::from_millis(20)),
        );
        assert!(matches!(r, Err(Error::LockTimeout)));
        let mut again = FastSchemaHolds::default();
        assert!(lm.try_fast_schema_stability(3, &mut again), "a failed Sch-M is counted off");
        lm.release_schema_holds(TxnId::from_raw(1), &mut holds);
        lm.release_schema_holds(TxnId::from_raw(4), &mut again);
    }

    #[test]
    fn deadlock_is_detected_and_one_victim_chosen() {
        let lm = Arc::new(LockManager::default());
        let (a, b) = (Resource::key(1, b"a"), Resource::key(1, b"b"));
        lm.lock(TxnId::from_raw(1), a, LockMode::Exclusive, Wait::FOREVER).unwrap();
        lm.lock(TxnId::from_raw(2), b, LockMode::Exclusive, Wait::FOREVER).unwrap();
        let lm2 = lm.clone();
        let t2 = std::thread::spawn(move || {
            let r = lm2.lock(TxnId::from_raw(2), a, LockMode::Exclusive, Wait::FOREVER);
            if r.is_err() {
                lm2.release_all(TxnId::from_raw(2), &[b]);
            }
            r
        });
        std::thread::sleep(Duration::from_millis(20));
        let r1 = lm.lock(TxnId::from_raw(1), b, LockMode::Exclusive, Wait::FOREVER);
        if r1.is_err() {
            lm.release_all(TxnId::from_raw(1), &[a]);
        }
        let r2 = t2.join().unwrap();
        let victims = [&r1, &r2].iter().filter(|r| matches!(r, Err(Error::Deadlock))).count();
        assert_eq!(victims, 1, "{r1:?} {r2:?}");
        assert_eq!(Error::Deadlock.number(), 1205);
    }

    #[test]
    fn a_cancelled_wait_ends_with_3617() {
        let lm = LockManager::default();
        let r = Resource::key(1, b"k");
        lm.lock(TxnId::from_raw(1), r, LockMode::Exclusive, Wait::FOREVER).unwrap();
        let cancel = AtomicBool::new(true);
        let wait = Wait { timeout: None, cancel: Some(&cancel), fast: None };
        assert!(matches!(lm.lock(TxnId::from_raw(2), r, LockMode::Update, wait), Err(Error::Cancelled)));
        assert_eq!(Error::Cancelled.number(), 3617);
        lm.release_all(TxnId::from_raw(1), &[r]);
        assert_eq!(lm.locked_resources(), 0, "the cancelled request left the queue");
    }

    #[test]
    fn timeout_reports_1222() {
        let lm = LockManager::default();
        let r = Resource::Table(5);
        lm.lock(TxnId::from_raw(1), r, LockMode::Exclusive, Wait::FOREVER).unwrap();
        let limit = Wait::timeout(Duration::from_millis(20));
        assert!(matches!(lm.lock(TxnId::from_raw(2), r, LockMode::IntentShared, limit), Err(Error::LockTimeout)));
        assert!(matches!(
            lm.wait_compatible(TxnId::from_raw(2), r, LockMode::Shared, Wait::timeout(Duration::ZERO)),
            Err(Error::LockTimeout)
        ));
    }
}
