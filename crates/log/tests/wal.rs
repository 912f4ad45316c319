use std::collections::HashMap;

use tessera_log::recovery::{recover, ActiveTxn, Checkpoint, RecoveryHandler};
use tessera_log::{LogBuffers, LogConfig, LogRecord, Lsn, Master, RecordKind, TxnId, Wal, WalReader, CHUNK_BYTES};

fn small() -> LogConfig {
    LogConfig { initial_size: 256 << 10, growth: None, max_size: 64 << 20, write_buffer: 4096, ..LogConfig::default() }
}

fn rec(txn: u64, body: &[u8]) -> LogRecord {
    LogRecord::new(RecordKind::Update, TxnId::from_raw(txn), Lsn::NONE, body.to_vec())
}

fn read_all(wal: &Wal, from: Lsn) -> Vec<(Lsn, LogRecord)> {
    let mut r = WalReader::new(wal, from);
    let mut out = Vec::new();
    while let Some(x) = r.next_record() {
        out.push(x.unwrap());
    }
    out
}

#[test]
fn append_flush_reopen_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db_log.ldf");
    let wal = Wal::create(&path, "db", small()).unwrap();
    let first = wal.end_lsn();
    let mut lsns = Vec::new();
    for i in 0..5000u32 {
        let body = vec![(i % 251) as u8; (i % 300) as usize];
        lsns.push(wal.append(&rec(u64::from(i) + 1, &body)).unwrap());
    }
    assert!(lsns.windows(2).all(|w| w[0] < w[1]), "LSNs increase");
    wal.flush(*lsns.last().unwrap()).unwrap();
    assert!(wal.stats().vlf_count > 4, "log grew while nothing was truncated");
    drop(wal);
    let (wal, master) = Wal::open(&path, "db", small()).unwrap();
    assert_eq!(master.begin_lsn, first);
    let all = read_all(&wal, first);
    assert_eq!(all.len(), 5000);
    for (i, (lsn, r)) in all.iter().enumerate() {
        assert_eq!(*lsn, lsns[i]);
        assert_eq!(r.txn, TxnId::from_raw(i as u64 + 1));
        assert_eq!(r.body.len(), i % 300);
    }
    assert_eq!(wal.read(lsns[1234]).unwrap().txn, TxnId::from_raw(1235));
    // Appending continues after the old end.
    let next = wal.append(&rec(9, b"after")).unwrap();
    assert!(next > *lsns.last().unwrap());
}

#[test]
fn truncation_lets_vlfs_be_reused_without_growth() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db_log.ldf");
    let wal = Wal::create(&path, "db", small()).unwrap();
    let size0 = wal.stats().file_size;
    for round in 0..40 {
        let mut last = Lsn::NONE;
        for _ in 0..200 {
            last = wal.append(&rec(1, &[round as u8; 100])).unwrap();
        }
        wal.flush(last).unwrap();
        wal.truncate_before(wal.end_lsn(), "NOTHING");
    }
    assert_eq!(wal.stats().file_size, size0, "log cycled through its VLFs instead of growing");
    let end = wal.end_lsn();
    let master = Master { checkpoint_lsn: Lsn::NONE, begin_lsn: end };
    let marker = wal.append(&rec(77, b"marker")).unwrap();
    wal.flush(marker).unwrap();
    wal.write_master(Master { checkpoint_lsn: Lsn::NONE, ..master }).unwrap();
    drop(wal);
    let (wal, m) = Wal::open(&path, "db", small()).unwrap();
    assert_eq!(m.begin_lsn, end);
    let all = read_all(&wal, end);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].1.body, b"marker");
}

#[test]
fn log_full_when_it_cannot_grow() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        initial_size: 256 << 10,
        growth: None,
        max_size: 300 << 10,
        write_buffer: 4096,
        ..LogConfig::default()
    };
    let wal = Wal::create(&dir.path().join("x.ldf"), "full_db", cfg).unwrap();
    wal.truncate_before(wal.end_lsn(), "ACTIVE_TRANSACTION");
    let err = (0..10_000).map(|_| wal.append(&rec(1, &[0; 200]))).find_map(|r| r.err()).expect("log fills");
    assert_eq!(err.number(), 9002);
    assert!(err.to_string().contains("full_db") && err.to_string().contains("ACTIVE_TRANSACTION"), "{err}");
}

#[test]
fn torn_tail_ends_the_log_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db_log.ldf");
    let wal = Wal::create(&path, "db", small()).unwrap();
    let start = wal.end_lsn();
    let mut lsns = Vec::new();
    for i in 0..100u8 {
        lsns.push(wal.append(&rec(1, &[i; 50])).unwrap());
    }
    wal.flush_all().unwrap();
    drop(wal);
    // Damage record 60's payload: the log must end right before it.
    let off = 4096 + 512 + (lsns[60].raw() - lsns[0].raw()) + 20;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[off as usize] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let (wal, _) = Wal::open(&path, "db", small()).unwrap();
    assert_eq!(read_all(&wal, start).len(), 60);
    assert_eq!(wal.end_lsn(), lsns[60], "appending resumes over the damaged record");
}

#[test]
fn group_commit_shares_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(&dir.path().join("g.ldf"), "g", LogConfig::default()).unwrap();
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let lsn = wal.append(&rec(t * 1000 + i + 1, b"commit")).unwrap();
                    wal.flush(lsn).unwrap();
                    assert!(wal.durable_lsn() > lsn);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let stats = wal.stats();
    assert!(stats.flushes <= 800, "{} flushes for 800 commits", stats.flushes);
}

/// A toy "database": one page per key holding (value, page_lsn). Update bodies are
/// `key, new, old`.
#[derive(Default)]
struct Toy {
    pages: HashMap<u8, (u8, Lsn)>,
}

fn upd(key: u8, new: u8, old: u8) -> Vec<u8> {
    vec![key, new, old]
}

impl RecoveryHandler for Toy {
    fn decided_to_commit(&mut self, _: u128) -> tessera_errors::Result<bool> {
        Ok(false)
    }
    fn redo(&mut self, lsn: Lsn, rec: &LogRecord) -> tessera_errors::Result<()> {
        let page = self.pages.entry(rec.body[0]).or_insert((0, Lsn::NONE));
        if page.1 < lsn {
            *page = (rec.body[1], lsn);
        }
        Ok(())
    }
    fn undo(&mut self, _lsn: Lsn, _rec: &LogRecord, _last: Lsn) -> tessera_errors::Result<(Lsn, Lsn)> {
        unreachable!("the wrapper handles undo")
    }
}

struct ToyWithLog<'a> {
    toy: Toy,
    wal: &'a Wal,
}

impl RecoveryHandler for ToyWithLog<'_> {
    fn decided_to_commit(&mut self, _: u128) -> tessera_errors::Result<bool> {
        Ok(false)
    }
    fn redo(&mut self, lsn: Lsn, rec: &LogRecord) -> tessera_errors::Result<()> {
        self.toy.redo(lsn, rec)
    }
    fn undo(&mut self, _lsn: Lsn, rec: &LogRecord, last: Lsn) -> tessera_errors::Result<(Lsn, Lsn)> {
        let (k, _new, old) = (rec.body[0], rec.body[1], rec.body[2]);
        let mut clr = LogRecord::new(RecordKind::Compensation, rec.txn, last, upd(k, old, old));
        clr.undo_next = rec.prev_lsn;
        let lsn = self.wal.append(&clr)?;
        self.toy.pages.insert(k, (old, lsn));
        Ok((lsn, rec.prev_lsn))
    }
}

#[test]
fn recovery_redoes_winners_and_undoes_losers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ldf");
    let wal = Wal::create(&path, "r", small()).unwrap();
    // txn 1 commits key 1 := 10; txn 2 sets key 2 := 20 then key 1 := 11 and never commits;
    // a checkpoint in the middle lists txn 2 as active.
    let a = wal.append(&LogRecord::new(RecordKind::Update, TxnId::from_raw(1), Lsn::NONE, upd(1, 10, 0))).unwrap();
    let c = wal.append(&LogRecord::new(RecordKind::Commit, TxnId::from_raw(1), a, vec![])).unwrap();
    let b1 = wal.append(&LogRecord::new(RecordKind::Update, TxnId::from_raw(2), Lsn::NONE, upd(2, 20, 0))).unwrap();
    let ck = Checkpoint {
        redo_lsn: a,
        next_txn: TxnId::from_raw(3),
        active: vec![ActiveTxn { txn: TxnId::from_raw(2), first_lsn: b1, last_lsn: b1 }],
    };
    let ck_lsn = wal.append(&LogRecord::new(RecordKind::Checkpoint, TxnId::SYSTEM, Lsn::NONE, ck.encode())).unwrap();
    let b2 = wal.append(&LogRecord::new(RecordKind::Update, TxnId::from_raw(2), b1, upd(1, 11, 10))).unwrap();
    wal.flush(b2).unwrap();
    wal.write_master(Master { checkpoint_lsn: ck_lsn, begin_lsn: a }).unwrap();
    assert!(c < ck_lsn);
    drop(wal);

    for round in 0..2 {
        let (wal, master) = Wal::open(&path, "r", small()).unwrap();
        let mut h = ToyWithLog { toy: Toy::default(), wal: &wal };
        let out = recover(&wal, master, &mut h).unwrap();
        assert_eq!(h.toy.pages[&1].0, 10, "round {round}: committed value survives, loser's undone");
        assert_eq!(h.toy.pages[&2].0, 0);
        assert_eq!(out.next_txn, TxnId::from_raw(3));
        if round == 0 {
            assert_eq!((out.losers, out.records_undone), (1, 2));
        } else {
            assert_eq!(out.losers, 0, "the End record closed the loser");
        }
    }
}

#[test]
fn logs_share_one_pool_of_buffers_and_hold_none_once_written() {
    let dir = tempfile::tempdir().unwrap();
    let buffers = LogBuffers::new(4 * CHUNK_BYTES);
    let config = LogConfig { write_buffer: 1 << 20, buffers: buffers.clone(), ..small() };
    let logs: Vec<_> =
        (0..3).map(|i| Wal::create(&dir.path().join(format!("db{i}.ldf")), "db", config.clone()).unwrap()).collect();
    // Records bigger than a chunk, and many small ones: more than the budget in all.
    let mut last = Vec::new();
    let firsts: Vec<Lsn> = logs.iter().map(|w| w.end_lsn()).collect();
    for wal in &logs {
        wal.append(&rec(1, &vec![7u8; CHUNK_BYTES + 100])).unwrap();
        let mut lsn = Lsn::NONE;
        for i in 0..3000u32 {
            lsn = wal.append(&rec(u64::from(i) + 2, &[i as u8; 200])).unwrap();
        }
        last.push(lsn);
    }
    for (wal, lsn) in logs.iter().zip(&last) {
        wal.flush(*lsn).unwrap();
    }
    let s = buffers.stats();
    assert_eq!(s.lent_bytes, 0, "written logs hold no buffers: {s:?}");
    assert!(s.spare_bytes <= s.budget_bytes, "spare buffers stay within the budget: {s:?}");
    assert!(s.overdrafts > 0, "3 logs of ~1 MiB each went over a 512 KiB budget: {s:?}");
    for (wal, first) in logs.iter().zip(firsts) {
        let records = read_all(wal, first);
        assert_eq!(records.len(), 3001, "every record was written whole");
        assert_eq!(records[0].1.body.len(), CHUNK_BYTES + 100);
    }
}

#[test]
fn the_log_file_counts_its_io_and_each_flush_is_timed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db_log.ldf");
    let wal = Wal::create(&path, "db", small()).unwrap();
    let created = wal.io_sample().unwrap();
    assert!(created.figures.writes >= 6, "the header, four VLF headers and the master record");
    assert_eq!(created.size, wal.stats().file_size);
    let flushes = tessera_log::flush_latency().snapshot().count;
    let lsn = wal.append(&rec(1, &[7; 5000])).unwrap();
    wal.flush(lsn).unwrap();
    let after = wal.io_sample().unwrap().figures;
    assert!(after.writes > created.figures.writes);
    assert!(after.bytes_written >= created.figures.bytes_written + 5000);
    assert!(tessera_log::flush_latency().snapshot().count > flushes);
    drop(wal);
    let (wal, _) = Wal::open(&path, "db", small()).unwrap();
    let opened = wal.io_sample().unwrap().figures;
    assert!(opened.reads > 0 && opened.bytes_read >= 4096, "opening reads the header and the log: {opened:?}");
    assert_eq!(opened.bytes_written, 0, "a new open starts its counters again");
}
