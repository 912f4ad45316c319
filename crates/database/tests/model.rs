//! Model-based property test: random transactions against the engine and against a
//! BTreeMap, compared after every step; structure checked at every transaction end. The
//! database is BULK_LOGGED, so bulk loads into the table when it is empty are minimally
//! logged (and then updated, deleted, rolled back, checkpointed and reopened like any rows).

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use tessera_database::{DatabaseOptions, Direction, Engine, EngineConfig, RecoveryModel};

#[derive(Clone, Debug)]
enum Op {
    Insert(u16, u16),
    /// Insert above the largest key (the append fast path), of this length.
    Append(u16),
    Update(u16, u16),
    Delete(u16),
    /// Delete every row.
    Clear,
    /// Bulk-load `count` rows with keys `first, first + step, …` (values of about `len`
    /// bytes): minimally logged when the table is empty, else refused.
    BulkLoad {
        first: u16,
        step: u16,
        count: u16,
        len: u16,
    },
    Commit,
    Rollback,
    Checkpoint,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u16..300;
    let len = prop_oneof![8 => 0u16..400, 3 => 400u16..3000, 1 => 6000u16..8000];
    prop_oneof![
        10 => (key.clone(), len.clone()).prop_map(|(k, l)| Op::Insert(k, l)),
        4 => len.clone().prop_map(Op::Append),
        4 => (key.clone(), len).prop_map(|(k, l)| Op::Update(k, l)),
        5 => key.clone().prop_map(Op::Delete),
        1 => Just(Op::Clear),
        2 => (key, 1u16..4, 1u16..250, 0u16..2000)
            .prop_map(|(first, step, count, len)| Op::BulkLoad { first, step, count, len }),
        2 => Just(Op::Commit),
        1 => Just(Op::Rollback),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
    ]
}

/// Keys sort by their first two bytes; the padding (up to 880 bytes) makes internal pages
/// hold few entries, so small trees grow several levels and split internal pages.
fn key_of(k: u16) -> Vec<u8> {
    let mut key = k.to_be_bytes().to_vec();
    key.resize(2 + (k as usize * 37) % 880, b'k');
    key
}

/// A value of about `len` bytes, capped so key and value fit the largest leaf record.
fn value(k: u16, len: u16, version: usize) -> Vec<u8> {
    let len = (len as usize).min(8137 - key_of(k).len());
    (0..len).map(|i| (i as u16 ^ k).wrapping_add(version as u16) as u8).collect()
}

fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.pool_bytes = 1 << 20;
    c.background = false;
    c
}

/// Runs `ops` against the engine and the model. Between transactions the pool must hold no
/// pin once its own threads are idle (see `a_read_ahead_pin_is_not_a_leak`).
fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = Engine::open(config(dir.path())).unwrap();
    let options = DatabaseOptions { recovery_model: RecoveryModel::BulkLogged, ..Default::default() };
    engine.create_database("m", options).unwrap();
    let mut db = engine.database("m").unwrap();
    let table = db.create_table("t").unwrap();
    let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut view = committed.clone();
    let mut tx = Some(db.begin());
    let verify_all = |db: &std::sync::Arc<tessera_database::Database>, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
        let stats = db.check().unwrap();
        if std::env::var("MODEL_STATS").is_ok() {
            eprintln!("{:?}", stats);
        }
        let t = db.begin();
        let fwd: Vec<(Vec<u8>, Vec<u8>)> =
            t.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward).map(|r| r.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(fwd.len(), want.len());
        assert!(fwd == want, "forward scan differs from the model");
        let mut back: Vec<(Vec<u8>, Vec<u8>)> =
            t.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Backward).map(|r| r.unwrap()).collect();
        back.reverse();
        assert!(back == want, "backward scan differs from the model");
        // A bounded range in both directions.
        let lo = key_of(50);
        let hi = key_of(150);
        let part: Vec<Vec<u8>> = t
            .scan(table, Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), Direction::Backward)
            .map(|r| r.unwrap().0)
            .collect();
        let want_part: Vec<Vec<u8>> = model.range(lo.to_vec()..hi.to_vec()).rev().map(|(k, _)| k.clone()).collect();
        assert_eq!(part, want_part);
        t.commit().unwrap();
    };
    for (step, op) in ops.into_iter().enumerate() {
        let t = tx.as_mut().unwrap();
        match op {
            Op::Insert(k, l) => {
                let key = key_of(k);
                let v = value(k, l, step);
                let r = t.insert(table, &key, &v);
                if view.contains_key(&key) {
                    assert_eq!(r.unwrap_err().number(), 2627);
                } else {
                    r.unwrap();
                    view.insert(key.clone(), v);
                }
                assert_eq!(t.get(table, &key).unwrap().as_ref(), view.get(&key));
            }
            Op::Append(l) => {
                let k = view.keys().next_back().map_or(0, |key| u16::from_be_bytes([key[0], key[1]]) + 1);
                if k < 1000 {
                    let key = key_of(k);
                    let v = value(k, l, step);
                    t.insert(table, &key, &v).unwrap();
                    view.insert(key.clone(), v);
                    assert_eq!(t.get(table, &key).unwrap().as_ref(), view.get(&key));
                }
            }
            Op::Update(k, l) => {
                let key = key_of(k);
                let v = value(k, l, step);
                let found = t.update(table, &key, &v).unwrap();
                assert_eq!(found, view.contains_key(&key));
                if found {
                    view.insert(key.clone(), v);
                }
                assert_eq!(t.get(table, &key).unwrap().as_ref(), view.get(&key));
            }
            Op::Delete(k) => {
                let key = key_of(k);
                assert_eq!(t.delete(table, &key).unwrap(), view.remove(&key).is_some());
                assert_eq!(t.get(table, &key).unwrap(), None);
            }
            Op::Clear => {
                for key in std::mem::take(&mut view).into_keys() {
                    assert!(t.delete(table, &key).unwrap());
                }
            }
            Op::BulkLoad { first, step: stride, count, len } => {
                let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..count)
                    .map(|i| first + i * stride)
                    .filter(|&k| k < 1000)
                    .map(|k| (key_of(k), value(k, len, step)))
                    .collect();
                // `None`: refused, the table has rows (or ghosts of rows deleted but not
                // yet committed).
                if let Some(out) = t.bulk_load(table, rows.iter().map(|(k, v)| (&k[..], &v[..]))).unwrap() {
                    assert!(view.is_empty(), "a bulk load into a table with rows");
                    assert_eq!(out.rows as usize, rows.len());
                    view.extend(rows);
                }
                let all: Vec<(Vec<u8>, Vec<u8>)> =
                    t.scan(table, Bound::Unbounded, Bound::Unbounded, Direction::Forward).map(|r| r.unwrap()).collect();
                assert!(all.iter().map(|(k, v)| (k, v)).eq(view.iter()), "the transaction sees the model");
            }
            Op::Commit | Op::Rollback | Op::Checkpoint | Op::Reopen => {
                let t = tx.take().unwrap();
                if matches!(op, Op::Rollback) {
                    t.rollback().unwrap();
                    view = committed.clone();
                } else {
                    t.commit().unwrap();
                    committed = view.clone();
                }
                verify_all(&db, &committed);
                engine.pool().check_invariants(true);
                if matches!(op, Op::Checkpoint) {
                    db.checkpoint().unwrap();
                }
                if matches!(op, Op::Reopen) {
                    drop(db);
                    drop(engine);
                    engine = Engine::open(config(dir.path())).unwrap();
                    db = engine.database("m").unwrap();
                    verify_all(&db, &committed);
                }
                tx = Some(db.begin());
            }
        }
    }
    tx.take().unwrap().rollback().unwrap();
    verify_all(&db, &committed);
    engine.pool().check_invariants(true);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, max_shrink_iters: 500, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_model(ops in proptest::collection::vec(op(), 1..600)) {
        run(ops);
    }
}

/// Once taken for a leak (2026-11-28; delta-debugged from a 146-step proptest case): after
/// a bulk load, an insert that splits the leftmost leaf and a rollback, the quiescent check
/// found a frame of the table's file pinned. The pin was a read-ahead worker's, still
/// finishing the read the final scan had asked for; it went away a millisecond later. A
/// quiescent check now waits for the pool's own threads, and this case stays as the
/// regression test of that.
#[test]
fn a_read_ahead_pin_is_not_a_leak() {
    run(vec![Op::BulkLoad { first: 229, step: 1, count: 218, len: 1360 }, Op::Insert(227, 104)]);
}
