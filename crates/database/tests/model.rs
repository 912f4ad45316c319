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

/// Runs `ops` against the engine and the model. With `quiescent`, the pool must also hold
/// no pin at the end (see `a_pin_outlives_its_transactions`).
fn run(ops: Vec<Op>, quiescent: bool) {
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
                engine.pool().check_invariants(false);
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
    engine.pool().check_invariants(quiescent);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, max_shrink_iters: 500, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_model(ops in proptest::collection::vec(op(), 1..600)) {
        run(ops, false);
    }
}

/// Found by the pool's invariant checker (2026-11-28): after this sequence — bulk loads,
/// a rollback, reopens — a frame of the table's file (frame 17, file 1, page 21) is still
/// pinned when every transaction has ended, nothing runs in the background and the
/// model matches. A pin that outlives its transaction keeps that page from ever being
/// evicted. Not fixed yet: run with `--ignored` to reproduce.
#[test]
#[ignore = "a pin outlives its transactions: not fixed yet (see the stop note of 2026-11-28)"]
fn a_pin_outlives_its_transactions() {
    run(
        vec![
            Op::Reopen,
            Op::Insert(10, 6109),
            Op::Reopen,
            Op::Update(170, 381),
            Op::Delete(66),
            Op::Insert(290, 152),
            Op::Commit,
            Op::Reopen,
            Op::Insert(77, 261),
            Op::Insert(56, 118),
            Op::BulkLoad { first: 164, step: 1, count: 75, len: 1073 },
            Op::Rollback,
            Op::Clear,
            Op::BulkLoad { first: 185, step: 3, count: 41, len: 1119 },
            Op::Delete(19),
            Op::Delete(158),
            Op::Update(29, 2570),
            Op::Insert(243, 2143),
            Op::Update(46, 41),
            Op::Append(39),
            Op::Append(140),
            Op::Delete(280),
            Op::Insert(282, 97),
            Op::Delete(34),
            Op::Insert(162, 1),
            Op::Append(145),
            Op::Append(329),
            Op::Commit,
            Op::Delete(189),
            Op::Rollback,
            Op::BulkLoad { first: 9, step: 3, count: 117, len: 909 },
            Op::Commit,
            Op::Insert(286, 652),
            Op::Commit,
            Op::Update(131, 52),
            Op::Rollback,
            Op::Insert(6, 1555),
            Op::Commit,
            Op::Reopen,
            Op::Update(116, 438),
            Op::Insert(117, 16),
            Op::Update(136, 72),
            Op::Insert(19, 2874),
            Op::Insert(133, 155),
            Op::Checkpoint,
            Op::Delete(108),
            Op::Update(63, 24),
            Op::Append(284),
            Op::Append(288),
            Op::Insert(52, 130),
            Op::Delete(122),
            Op::Delete(149),
            Op::Delete(12),
            Op::Delete(136),
            Op::Update(293, 100),
            Op::Insert(229, 70),
            Op::Append(164),
            Op::Update(125, 247),
            Op::Update(134, 23),
            Op::Insert(24, 148),
            Op::Clear,
            Op::Delete(21),
            Op::Insert(23, 7907),
            Op::Update(247, 284),
            Op::Checkpoint,
            Op::Reopen,
            Op::Delete(286),
            Op::Update(110, 7359),
            Op::Append(2934),
            Op::Insert(278, 105),
            Op::Commit,
            Op::Append(151),
            Op::BulkLoad { first: 43, step: 3, count: 1, len: 1962 },
            Op::Delete(3),
            Op::Rollback,
            Op::Append(6390),
            Op::Delete(191),
            Op::Insert(235, 8),
            Op::Insert(49, 7821),
            Op::BulkLoad { first: 231, step: 3, count: 113, len: 1829 },
            Op::Insert(134, 223),
            Op::Commit,
            Op::BulkLoad { first: 140, step: 3, count: 122, len: 1359 },
            Op::Insert(5, 46),
            Op::Append(1),
            Op::Checkpoint,
            Op::Delete(277),
            Op::Update(102, 221),
            Op::Append(6468),
            Op::Append(71),
            Op::Insert(88, 37),
            Op::Clear,
            Op::BulkLoad { first: 222, step: 1, count: 220, len: 1675 },
            Op::Append(106),
            Op::Update(201, 1845),
            Op::Insert(245, 118),
            Op::Insert(41, 210),
            Op::Commit,
            Op::Delete(56),
            Op::Insert(275, 6374),
            Op::Delete(157),
            Op::Insert(68, 327),
            Op::Append(50),
            Op::Insert(175, 87),
            Op::Update(279, 1981),
            Op::Append(358),
            Op::Clear,
            Op::Delete(176),
            Op::Insert(23, 288),
            Op::Delete(119),
            Op::Delete(133),
            Op::Update(191, 512),
            Op::Reopen,
            Op::Delete(93),
            Op::Insert(66, 2909),
            Op::Insert(248, 170),
            Op::Update(189, 124),
            Op::Reopen,
            Op::Append(7064),
            Op::Update(41, 309),
            Op::BulkLoad { first: 252, step: 1, count: 93, len: 24 },
            Op::Insert(198, 344),
            Op::Insert(235, 880),
            Op::Checkpoint,
            Op::Clear,
            Op::Commit,
            Op::Commit,
            Op::Commit,
            Op::BulkLoad { first: 229, step: 1, count: 218, len: 1360 },
            Op::BulkLoad { first: 276, step: 3, count: 173, len: 518 },
            Op::Insert(227, 104),
            Op::Update(274, 364),
            Op::Insert(96, 671),
            Op::Insert(172, 7103),
            Op::BulkLoad { first: 175, step: 1, count: 6, len: 756 },
            Op::Insert(51, 366),
            Op::Insert(37, 2014),
            Op::Delete(291),
            Op::Append(1182),
            Op::Insert(172, 252),
            Op::BulkLoad { first: 257, step: 3, count: 110, len: 1320 },
            Op::Delete(179),
            Op::Insert(277, 116),
            Op::Insert(133, 1662),
            Op::BulkLoad { first: 270, step: 1, count: 142, len: 1056 },
            Op::Update(156, 235),
        ],
        true,
    );
}
