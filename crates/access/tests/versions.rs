//! Row versions (`tessera_access::versions`) checked against a model: writers change rows
//! (committing, rolling back, rolling back to savepoints) while readers hold snapshots;
//! each reader, by point lookups and by scans in both directions, sees exactly the rows
//! committed when its snapshot was taken, never waiting for a writer; and once every
//! transaction has ended, no version is left.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use tessera_access::space::{DataConfig, Space};
use tessera_access::{Direction, Durability, OnLocked, Txn};
use tessera_buffer::page::PageNo;
use tessera_buffer::{BufferPool, PoolConfig};
use tessera_log::{LogConfig, Lsn, Wal};

type Rows = BTreeMap<u8, u32>;

fn space(dir: &std::path::Path) -> Arc<Space> {
    let pool =
        BufferPool::new(PoolConfig { max_bytes: 16 << 20, background_writer: false, ..PoolConfig::default() }).unwrap();
    let wal = Wal::create(&dir.join("d.ldf"), "d", LogConfig::default()).unwrap();
    let space = Space::create(&dir.join("d.mdf"), pool, wal, &DataConfig::default()).unwrap();
    space.start_versioning(None).unwrap();
    space
}

fn new_tree(space: &Space) -> PageNo {
    let mut txn = space.begin(Durability::Full);
    let root = space.create_tree(&mut txn).unwrap();
    space.commit(txn).unwrap();
    root
}

/// A key's bytes: one byte, wide enough to spread rows over several leaves.
fn key(k: u8) -> Vec<u8> {
    let mut v = vec![k];
    v.resize(300, b'k');
    v
}

fn value(v: u32) -> Vec<u8> {
    let mut out = v.to_le_bytes().to_vec();
    out.resize(200, 0);
    out
}

fn decode(k: &[u8], v: &[u8]) -> (u8, u32) {
    (k[0], u32::from_le_bytes(v[..4].try_into().unwrap()))
}

/// Everything `txn` reads: by point lookups, and by scans forward and backward.
fn read_all(space: &Space, txn: &Txn, tree: PageNo) -> [Rows; 3] {
    let mut by_key = Rows::new();
    for k in 0..KEYS {
        if let Some(v) = space.get(txn, tree, &key(k)).unwrap() {
            by_key.insert(k, decode(&key(k), &v).1);
        }
    }
    let scan = |dir| {
        let rows: Vec<(u8, u32)> = space
            .scan(txn, tree, Bound::Unbounded, Bound::Unbounded, dir, OnLocked::Wait)
            .map(|r| r.map(|(k, v)| decode(&k, &v)).unwrap())
            .collect();
        let mut keys: Vec<u8> = rows.iter().map(|r| r.0).collect();
        if dir == Direction::Backward {
            keys.reverse();
        }
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "a scan returns each key once, in order: {keys:?}");
        rows.into_iter().collect::<Rows>()
    };
    [by_key, scan(Direction::Forward), scan(Direction::Backward)]
}

const KEYS: u8 = 40;
const WRITERS: usize = 3;
const READERS: usize = 3;

#[derive(Clone, Debug)]
enum Op {
    /// Writer `w` sets key `k` to `v`, or deletes it (None).
    Write(usize, u8, Option<u32>),
    Savepoint(usize),
    RollbackToSavepoint(usize),
    Commit(usize),
    Rollback(usize),
    /// Reader `r` takes a snapshot (if it has none), reads everything, and checks it.
    Read(usize),
    EndReader(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..WRITERS, 0..KEYS, proptest::option::weighted(0.7, any::<u32>())).prop_map(|(w, k, v)| Op::Write(w, k, v)),
        1 => (0..WRITERS).prop_map(Op::Savepoint),
        1 => (0..WRITERS).prop_map(Op::RollbackToSavepoint),
        2 => (0..WRITERS).prop_map(Op::Commit),
        1 => (0..WRITERS).prop_map(Op::Rollback),
        3 => (0..READERS).prop_map(Op::Read),
        1 => (0..READERS).prop_map(Op::EndReader),
    ]
}

/// A writer's own changes (None: deleted), over the committed rows.
type Changes = BTreeMap<u8, Option<u32>>;

struct Writer {
    txn: Txn,
    /// Its changes, and its changes at each savepoint.
    own: Changes,
    savepoints: Vec<(Lsn, Changes)>,
}

struct Reader {
    txn: Txn,
    /// The committed rows when its snapshot was taken.
    seen: Rows,
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut committed = Rows::new();
    let mut writers: Vec<Option<Writer>> = (0..WRITERS).map(|_| None).collect();
    let mut readers: Vec<Option<Reader>> = (0..READERS).map(|_| None).collect();
    for op in ops {
        match op {
            Op::Write(w, k, v) => {
                // Another writer's lock on the key would make this one wait.
                let locked = writers
                    .iter()
                    .enumerate()
                    .any(|(i, o)| i != w && o.as_ref().is_some_and(|o| space.holds_key(&o.txn, tree, &key(k))));
                if locked {
                    continue;
                }
                let wr = writers[w].get_or_insert_with(|| Writer {
                    txn: space.begin(Durability::Full),
                    own: Changes::new(),
                    savepoints: Vec::new(),
                });
                let exists = wr.own.get(&k).copied().unwrap_or(committed.get(&k).copied()).is_some();
                match (v, exists) {
                    (Some(v), true) => assert!(space.update(&mut wr.txn, tree, &key(k), &value(v)).unwrap()),
                    (Some(v), false) => space.insert(&mut wr.txn, tree, &key(k), &value(v)).unwrap(),
                    (None, true) => assert!(space.delete(&mut wr.txn, tree, &key(k)).unwrap()),
                    (None, false) => assert!(!space.delete(&mut wr.txn, tree, &key(k)).unwrap()),
                }
                wr.own.insert(k, v);
            }
            Op::Savepoint(w) => {
                if let Some(wr) = &mut writers[w] {
                    wr.savepoints.push((space.savepoint(&wr.txn), wr.own.clone()));
                }
            }
            Op::RollbackToSavepoint(w) => {
                if let Some(wr) = &mut writers[w] {
                    if let Some((lsn, own)) = wr.savepoints.pop() {
                        space.rollback_to(&mut wr.txn, lsn).unwrap();
                        wr.own = own;
                    }
                }
            }
            Op::Commit(w) => {
                if let Some(wr) = writers[w].take() {
                    space.commit(wr.txn).unwrap();
                    for (k, v) in wr.own {
                        match v {
                            Some(v) => committed.insert(k, v),
                            None => committed.remove(&k),
                        };
                    }
                }
            }
            Op::Rollback(w) => {
                if let Some(wr) = writers[w].take() {
                    space.rollback(wr.txn).unwrap();
                }
            }
            Op::Read(r) => {
                let rd = readers[r].get_or_insert_with(|| {
                    let mut txn = space.begin(Durability::Full);
                    assert!(space.take_snapshot(&mut txn, false));
                    Reader { txn, seen: committed.clone() }
                });
                for (i, rows) in read_all(&space, &rd.txn, tree).iter().enumerate() {
                    assert_eq!(rows, &rd.seen, "reader {r}, read {i} (lookups, forward, backward)");
                }
            }
            Op::EndReader(r) => {
                if let Some(rd) = readers[r].take() {
                    space.commit(rd.txn).unwrap();
                }
            }
        }
    }
    for wr in writers.into_iter().flatten() {
        space.commit(wr.txn).unwrap();
    }
    for rd in readers.into_iter().flatten() {
        space.commit(rd.txn).unwrap();
    }
    let usage = space.versions.usage();
    assert_eq!((usage.versions, usage.bytes, usage.snapshots), (0, 0, 0), "versions left once every transaction ended");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn snapshots_see_what_was_committed_when_they_began(ops in proptest::collection::vec(op(), 1..200)) {
        run(ops);
    }
}

#[test]
fn a_snapshot_writer_meets_a_later_commit_as_an_update_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut setup = space.begin(Durability::Full);
    space.insert(&mut setup, tree, &key(1), &value(1)).unwrap();
    space.commit(setup).unwrap();

    let mut snap = space.begin(Durability::Full);
    assert!(space.take_snapshot(&mut snap, false));
    let mut other = space.begin(Durability::Full);
    space.update(&mut other, tree, &key(1), &value(2)).unwrap();
    space.commit(other).unwrap();
    // The snapshot still reads the old row, but may not change it.
    assert_eq!(decode(&key(1), &space.get(&snap, tree, &key(1)).unwrap().unwrap()).1, 1);
    let locks = tessera_access::ReadLocks {
        row: tessera_access::RowLock::Keep {
            mode: tessera_access::LockMode::Update,
            hold: tessera_access::Hold::Statement,
        },
        ..Default::default()
    };
    let e = space.get_locked(&mut snap, tree, &key(1), locks, |v| v.to_vec()).unwrap_err();
    assert_eq!(e.number(), 3960);
    space.rollback(snap).unwrap();

    // A statement snapshot (READ COMMITTED SNAPSHOT) changes the row as it is now.
    let mut rcsi = space.begin(Durability::Full);
    assert!(space.take_snapshot(&mut rcsi, true));
    let mut other = space.begin(Durability::Full);
    space.update(&mut other, tree, &key(1), &value(3)).unwrap();
    space.commit(other).unwrap();
    let now = space.get_locked(&mut rcsi, tree, &key(1), locks, |v| decode(&key(1), v).1).unwrap();
    assert_eq!(now, Some(3));
    space.commit(rcsi).unwrap();
}

#[test]
fn readers_with_snapshots_do_not_wait_for_writers() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut setup = space.begin(Durability::Full);
    for k in 0..10 {
        space.insert(&mut setup, tree, &key(k), &value(u32::from(k))).unwrap();
    }
    space.commit(setup).unwrap();
    let mut writer = space.begin(Durability::Full);
    space.update(&mut writer, tree, &key(3), &value(300)).unwrap();
    space.delete(&mut writer, tree, &key(4)).unwrap();
    space.insert(&mut writer, tree, &key(20), &value(20)).unwrap();
    // A locking reader would wait for the writer here (this thread holds it): a snapshot
    // reads the committed rows at once.
    let mut reader = space.begin(Durability::Full);
    reader.lock_timeout = Some(std::time::Duration::ZERO);
    assert!(space.take_snapshot(&mut reader, true));
    let expected: Rows = (0..10).map(|k| (k, u32::from(k))).collect();
    for rows in read_all(&space, &reader, tree) {
        assert_eq!(rows, expected);
    }
    space.commit(writer).unwrap();
    // The statement's snapshot still sees the rows as they were.
    assert_eq!(read_all(&space, &reader, tree)[1], expected);
    space.end_statement(&mut reader);
    assert!(reader.snapshot().is_none(), "a statement's snapshot ends with it");
    assert!(space.take_snapshot(&mut reader, true));
    let mut now = expected.clone();
    now.insert(3, 300);
    now.remove(&4);
    now.insert(20, 20);
    assert_eq!(read_all(&space, &reader, tree)[2], now);
    space.commit(reader).unwrap();
    assert_eq!(space.versions.usage().versions, 0);
}

#[test]
fn a_full_version_store_gives_up_the_oldest_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let tree = new_tree(&space);
    let mut setup = space.begin(Durability::Full);
    for k in 0..KEYS {
        space.insert(&mut setup, tree, &key(k), &value(0)).unwrap();
    }
    space.commit(setup).unwrap();
    // Room for a few versions only.
    space.versions.set_max_bytes(8 << 10);

    let mut old = space.begin(Durability::Full);
    old.owner = 57;
    assert!(space.take_snapshot(&mut old, false));
    assert_eq!(read_all(&space, &old, tree)[0].len(), usize::from(KEYS));
    // Committed changes the old snapshot alone needs pile up past the limit.
    for round in 1..=3 {
        let mut w = space.begin(Durability::Full);
        for k in 0..KEYS {
            space.update(&mut w, tree, &key(k), &value(round)).unwrap();
        }
        space.commit(w).unwrap();
    }
    let victims = space.versions.take_victims();
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert_eq!(victims[0].owner, 57);
    assert!(space.versions.take_victims().is_empty(), "each victim is reported once");
    assert!(space.versions.usage().bytes <= 8 << 10, "{:?}", space.versions.usage());
    // The victim learns it at its next versioned read, lookups and scans alike.
    assert_eq!(space.get(&old, tree, &key(1)).unwrap_err().number(), 3966);
    let scanned = space.scan(&old, tree, Bound::Unbounded, Bound::Unbounded, Direction::Forward, OnLocked::Wait).next();
    assert_eq!(scanned.unwrap().unwrap_err().number(), 3966);
    space.rollback(old).unwrap();
    // A new snapshot reads the newest rows.
    let mut new = space.begin(Durability::Full);
    assert!(space.take_snapshot(&mut new, false));
    assert!(read_all(&space, &new, tree)[1].values().all(|&v| v == 3));
    space.commit(new).unwrap();
    assert_eq!(space.versions.usage().versions, 0);
}

#[test]
fn a_large_value_dropped_after_a_snapshot_stays_until_the_snapshot_ends() {
    let dir = tempfile::tempdir().unwrap();
    let space = space(dir.path());
    let (rows, values) = (new_tree(&space), new_tree(&space));
    let data = vec![7u8; 3 * tessera_access::lob::CHUNK_BYTES + 5];
    let mut w = space.begin(Durability::Full);
    let value = space.lob_write(&mut w, rows, values, &data).unwrap();
    space.insert(&mut w, rows, &key(1), &value.id.to_be_bytes()).unwrap();
    space.commit(w).unwrap();

    let mut reader = space.begin(Durability::Full);
    assert!(space.take_snapshot(&mut reader, true));
    let mut d = space.begin(Durability::Full);
    assert!(space.delete(&mut d, rows, &key(1)).unwrap());
    space.lob_free(&mut d, values, value).unwrap();
    space.commit(d).unwrap();
    // The snapshot still reads the row, and through it the value (it holds no pin).
    assert!(space.get(&reader, rows, &key(1)).unwrap().is_some());
    assert_eq!(tessera_access::lob::Horizon::pending(&space), 1);
    let mut out = vec![0; data.len()];
    space.lob_read(values, value, 0, &mut out).unwrap();
    assert_eq!(out, data);
    // Once it ends, the value goes.
    space.end_statement(&mut reader);
    assert_eq!(tessera_access::lob::Horizon::pending(&space), 0);
    assert_eq!(space.lob_read(values, value, 0, &mut out).unwrap_err().number(), 7105);
    space.commit(reader).unwrap();
}
