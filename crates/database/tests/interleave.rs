//! Deterministic interleavings of read-modify-write transactions, checked against the
//! serial outcomes.
//!
//! Two or three transactions each add amounts to one or two counters, every step a locking
//! read (`get_locked` with an update lock) followed by a write of the value read plus the
//! amount — what UPDATE `v = v + x` does; read and write are separate scheduling points.
//! (With READ COMMITTED reads in place of the update lock, proptest finds a lost update at
//! once.) One thread runs them, in an order proptest
//! chooses: a step that would wait (lock timeout 0 makes it fail at once with 1222) leaves
//! its transaction blocked at that step until it is chosen again; when every unfinished
//! transaction is blocked, the deadlock is broken by rolling one back (it starts over
//! later, as a client would retry a 1205). Transactions commit or roll back as chosen.
//! Afterwards every counter must equal its start plus the amounts of the committed
//! transactions — the outcome of running them one after another in any order — and every
//! value a committed transaction read must be one a serial order could have shown it.

use std::time::Duration;

use proptest::prelude::*;
use tessera_database::{Database, DatabaseOptions, Engine, EngineConfig, Hold, LockMode, ReadLocks, RowLock, TableId};

const START: i64 = 100;

/// One transaction's plan: (counter, amount) steps, then commit or roll back.
#[derive(Clone, Debug)]
struct Plan {
    steps: Vec<(u8, i64)>,
    commit: bool,
}

fn plan() -> impl Strategy<Value = Plan> {
    (prop::collection::vec((0u8..2, -5i64..=5), 1..4), prop::bool::weighted(0.8))
        .prop_map(|(steps, commit)| Plan { steps, commit })
}

fn key(c: u8) -> Vec<u8> {
    vec![b'c', c]
}

fn value(bytes: &[u8]) -> i64 {
    i64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

const UPDATE_LOCK: ReadLocks = ReadLocks {
    row: RowLock::Keep { mode: LockMode::Update, hold: Hold::Statement },
    table: None,
    skip_locked: false,
    ranges: false,
};

/// A transaction as the scheduler runs it.
struct Running {
    plan: Plan,
    tx: Option<tessera_database::Transaction>,
    next: usize,
    /// Values read by the current attempt: (counter, value read, amount added).
    reads: Vec<(u8, i64, i64)>,
    /// The value the current step read, while its write waits.
    pending: Option<i64>,
    done: bool,
}

impl Running {
    /// Runs the next step; false if it would have to wait.
    fn step(&mut self, db: &std::sync::Arc<Database>, table: TableId) -> bool {
        let tx = self.tx.get_or_insert_with(|| {
            let mut t = db.begin();
            t.set_lock_timeout(Some(Duration::ZERO));
            t
        });
        if self.next == self.plan.steps.len() {
            let tx = self.tx.take().expect("open");
            if self.plan.commit {
                tx.commit().expect("commit");
            } else {
                tx.rollback().expect("rollback");
            }
            self.done = true;
            return true;
        }
        let (c, amount) = self.plan.steps[self.next];
        // A step is two scheduling points, as a statement's read and write are for
        // other sessions: the locking read, then the write of the value read.
        let Some(v) = self.pending else {
            return match tx.get_locked(table, &key(c), UPDATE_LOCK, value) {
                Ok(Some(v)) => {
                    self.pending = Some(v);
                    true
                }
                Ok(None) => panic!("counter {c} vanished"),
                Err(e) => {
                    assert_eq!(e.number(), 1222, "{e}");
                    false
                }
            };
        };
        // The write may wait too (it never does after an update lock: U admits no other
        // writer); it then uses the value already read, as an UPDATE would.
        match tx.update(table, &key(c), &(v + amount).to_le_bytes()) {
            Ok(updated) => assert!(updated),
            Err(e) => {
                assert_eq!(e.number(), 1222, "{e}");
                return false;
            }
        }
        tx.end_statement();
        self.pending = None;
        self.reads.push((c, v, amount));
        self.next += 1;
        true
    }

    /// Rolls the current attempt back (a deadlock victim); it starts over when next run.
    fn restart(&mut self) {
        if let Some(tx) = self.tx.take() {
            tx.rollback().expect("rollback");
        }
        self.next = 0;
        self.reads.clear();
        self.pending = None;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn interleaved_read_modify_writes_match_a_serial_order(
        plans in prop::collection::vec(plan(), 2..=3),
        schedule in prop::collection::vec(0usize..3, 1..200),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = EngineConfig::new(dir.path());
        config.pool_bytes = 16 << 20;
        config.background = false;
        let engine = Engine::open(config).unwrap();
        engine.create_database("d", DatabaseOptions::default()).unwrap();
        let db = engine.database("d").unwrap();
        let table = db.create_table("counters").unwrap();
        let mut setup = db.begin();
        for c in 0..2 {
            setup.insert(table, &key(c), &START.to_le_bytes()).unwrap();
        }
        setup.commit().unwrap();

        let mut txns: Vec<Running> =
            plans.iter().map(|p| Running { plan: p.clone(), tx: None, next: 0, reads: Vec::new(), pending: None, done: false }).collect();
        let mut choices = schedule.into_iter().cycle();
        let mut stuck = 0;
        let mut victims = 0usize;
        let mut rounds = 0;
        while txns.iter().any(|t| !t.done) {
            rounds += 1;
            let pick = choices.next().unwrap() % txns.len();
            let Some(mut i) = (0..txns.len()).map(|d| (pick + d) % txns.len()).find(|&i| !txns[i].done) else { break };
            if rounds > 10_000 {
                // The schedule keeps re-creating the same deadlock: finish one alone.
                for (j, t) in txns.iter_mut().enumerate() {
                    if j != i && !t.done {
                        t.restart();
                    }
                }
                while !txns[i].done {
                    assert!(txns[i].step(&db, table), "a transaction running alone never waits");
                }
                i = txns.iter().position(|t| !t.done).unwrap_or(i);
                rounds = 0;
                if txns[i].done {
                    continue;
                }
            }
            if txns[i].step(&db, table) {
                stuck = 0;
                continue;
            }
            stuck += 1;
            // Every unfinished transaction has failed to move since the last progress:
            // a deadlock (or a wait for a transaction the schedule does not pick soon).
            // The victims take turns, so the same one is not rolled back for ever.
            if stuck > 2 * txns.len() {
                let holding: Vec<usize> =
                    (0..txns.len()).filter(|&j| !txns[j].done && (txns[j].next > 0 || txns[j].pending.is_some())).collect();
                let victim = if holding.is_empty() { i } else { holding[victims % holding.len()] };
                victims += 1;
                txns[victim].restart();
                stuck = 0;
            }
        }

        // The final state is the serial outcome of the committed transactions.
        let check = db.begin();
        for c in 0..2u8 {
            let now = value(&check.get(table, &key(c)).unwrap().unwrap());
            let expected: i64 = START
                + txns.iter().filter(|t| t.plan.commit).flat_map(|t| &t.plan.steps).filter(|s| s.0 == c).map(|s| s.1).sum::<i64>();
            prop_assert_eq!(now, expected, "counter {}", c);
        }
        check.commit().unwrap();
        // Each committed transaction read, per counter, a value that the committed
        // transactions before it in some serial order leave: start plus a sum of some of
        // the others' amounts, then its own earlier steps.
        for (i, t) in txns.iter().enumerate().filter(|(_, t)| t.plan.commit) {
            for c in 0..2u8 {
                let mine: Vec<&(u8, i64, i64)> = t.reads.iter().filter(|r| r.0 == c).collect();
                let Some(first) = mine.first() else { continue };
                let others: Vec<i64> = txns
                    .iter()
                    .enumerate()
                    .filter(|(j, o)| *j != i && o.plan.commit)
                    .map(|(_, o)| o.plan.steps.iter().filter(|s| s.0 == c).map(|s| s.1).sum())
                    .collect();
                let possible = (0..1u32 << others.len())
                    .any(|set| START + (0..others.len()).filter(|b| set >> b & 1 == 1).map(|b| others[b]).sum::<i64>() == first.1);
                prop_assert!(possible, "txn {} read {} from counter {}", i, first.1, c);
                for pair in mine.windows(2) {
                    prop_assert_eq!(pair[1].1, pair[0].1 + pair[0].2, "txn {} saw another's change of counter {}", i, c);
                }
            }
        }
        drop(db);
        engine.shutdown().unwrap();
    }
}
