//! Model-based property test: random writes interleaved with full, differential and log
//! backups (the database in FULL recovery); the restore sequence — last full, the latest
//! differential after it, every later log backup — must give exactly the model's state
//! as of the last backup applied, and a clean DBCC check.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tessera_backup::{backup, restore, BackupOptions, BackupType, RestoreOptions};
use tessera_database::{DatabaseOptions, Direction, Engine, EngineConfig, RecoveryModel};

#[derive(Clone)]
enum Op {
    Put(Vec<(u16, u8)>),
    Delete(Vec<u16>),
    Backup(BackupType),
}

/// One short line per operation (`put 82=31 25=30`, `delete 7 9`, `backup Log`): a failing
/// case's whole input then fits in the part of a CI log anyone gets to read.
impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Put(rows) => {
                f.write_str("put")?;
                rows.iter().try_for_each(|(k, v)| write!(f, " {k}={v}"))
            }
            Op::Delete(keys) => {
                f.write_str("delete")?;
                keys.iter().try_for_each(|k| write!(f, " {k}"))
            }
            Op::Backup(kind) => write!(f, "backup {kind:?}"),
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec((0u16..400, any::<u8>()), 1..60).prop_map(Op::Put),
        2 => prop::collection::vec(0u16..400, 1..20).prop_map(Op::Delete),
        1 => Just(Op::Backup(BackupType::Database)),
        1 => Just(Op::Backup(BackupType::Differential)),
        2 => Just(Op::Backup(BackupType::Log)),
    ]
}

fn value(k: u16, v: u8) -> Vec<u8> {
    vec![v; 20 + (k as usize % 300)]
}

fn contents(engine: &Engine, name: &str) -> BTreeMap<u16, Vec<u8>> {
    let db = engine.database(name).unwrap();
    db.check().unwrap();
    let t = db.table("t").unwrap();
    let tx = db.begin();
    let out = tx
        .scan(t, Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .map(|r| {
            let (k, v) = r.unwrap();
            (u16::from_be_bytes([k[0], k[1]]), v)
        })
        .collect();
    tx.commit().unwrap();
    out
}

fn run(ops: &[Op], dir: &Path) {
    let mut config = EngineConfig::new(dir.join("data"));
    config.pool_bytes = 16 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    engine.create_database("m", DatabaseOptions { recovery_model: RecoveryModel::Full, ..Default::default() }).unwrap();
    engine.database("m").unwrap().create_table("t").unwrap();
    let mut model: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
    // (kind, media, model state when it was taken)
    let mut taken: Vec<(BackupType, PathBuf, BTreeMap<u16, Vec<u8>>)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Put(rows) => {
                let db = engine.database("m").unwrap();
                let t = db.table("t").unwrap();
                let mut tx = db.begin();
                for &(k, v) in rows {
                    let key = k.to_be_bytes();
                    if !tx.update(t, &key, &value(k, v)).unwrap() {
                        tx.insert(t, &key, &value(k, v)).unwrap();
                    }
                    model.insert(k, value(k, v));
                }
                tx.commit().unwrap();
            }
            Op::Delete(keys) => {
                let db = engine.database("m").unwrap();
                let t = db.table("t").unwrap();
                let mut tx = db.begin();
                for k in keys {
                    tx.delete(t, &k.to_be_bytes()).unwrap();
                    model.remove(k);
                }
                tx.commit().unwrap();
            }
            Op::Backup(kind) => {
                let has_full = taken.iter().any(|(k, _, _)| *k == BackupType::Database);
                let media = dir.join(format!("b{i}.bak"));
                let o = BackupOptions { devices: vec![media.clone()], kind: Some(*kind), ..Default::default() };
                let r = backup(&engine, "m", &o, &mut |_| {});
                if *kind != BackupType::Database && !has_full {
                    assert!(r.is_err(), "a {kind:?} backup without a full one must fail");
                    continue;
                }
                r.unwrap();
                taken.push((*kind, media, model.clone()));
            }
        }
    }
    let Some(full) = taken.iter().rposition(|(k, _, _)| *k == BackupType::Database) else { return };
    let diff = taken[full..].iter().rposition(|(k, _, _)| *k == BackupType::Differential).map(|i| i + full);
    let start = diff.unwrap_or(full);
    let logs: Vec<usize> = (start..taken.len()).filter(|&i| taken[i].0 == BackupType::Log).collect();
    let mut sequence = vec![full];
    sequence.extend(diff);
    sequence.extend(&logs);
    for (n, &i) in sequence.iter().enumerate() {
        let last = n + 1 == sequence.len();
        let o = RestoreOptions {
            devices: vec![taken[i].1.clone()],
            log: taken[i].0 == BackupType::Log,
            recovery: last,
            moves: vec![("m".into(), dir.join("r.mdf")), ("m_log".into(), dir.join("r.ldf"))],
            ..Default::default()
        };
        restore(&engine, "r", &o, &mut |_| {})
            .unwrap_or_else(|e| panic!("restoring backup {i} ({:?}): {e}", taken[i].0));
    }
    let expected = &taken[*sequence.last().unwrap()].2;
    let restored = contents(&engine, "r");
    if &restored != expected {
        let differing: Vec<u16> = expected
            .keys()
            .chain(restored.keys())
            .filter(|k| expected.get(k) != restored.get(k))
            .copied()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let kinds: Vec<_> = sequence.iter().map(|&i| (i, taken[i].0)).collect();
        panic!(
            "restoring {kinds:?} gave {} rows, the model {}; {} keys differ: {differing:?}",
            restored.len(),
            expected.len(),
            differing.len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn restore_sequences_match_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        run(&ops, dir.path());
    }
}
