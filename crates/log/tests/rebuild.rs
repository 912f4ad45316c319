//! Copying log segments out of a log and laying them out again (backup and restore).

use tessera_log::{LogBuilder, LogConfig, LogRecord, Lsn, Master, RecordKind, Wal, WalReader};

fn small() -> LogConfig {
    LogConfig { initial_size: 256 << 10, growth: None, max_size: 64 << 20, write_buffer: 4096, ..LogConfig::default() }
}

fn read_all(wal: &Wal, from: Lsn) -> Vec<(Lsn, LogRecord)> {
    let mut r = WalReader::new(wal, from);
    std::iter::from_fn(|| r.next_record()).map(|x| x.unwrap()).collect()
}

fn fill(wal: &Wal, n: u32, salt: u8) -> Vec<Lsn> {
    (0..n)
        .map(|i| {
            let body = vec![(i as u8) ^ salt; (i % 700) as usize];
            wal.append(&LogRecord::new(RecordKind::Update, u64::from(i) + 1, 0, body)).unwrap()
        })
        .collect()
}

#[test]
fn segments_rebuild_a_log_with_the_same_lsns_and_extend_it() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(&dir.path().join("src.ldf"), "src", small()).unwrap();
    fill(&wal, 300, 1);
    // Start mid-log, as a backup starts at its checkpoint.
    let from = wal.end_lsn();
    let lsns = fill(&wal, 3000, 2);
    let mid = wal.end_lsn();
    let more = fill(&wal, 2000, 3);
    let end = wal.end_lsn();
    assert!(tessera_log::lsn_seq(end) > tessera_log::lsn_seq(from) + 2, "the copy spans several VLFs");

    let mut first = Vec::new();
    wal.copy_segments(from, mid, 64 << 10, |s| {
        first.push(s);
        Ok(())
    })
    .unwrap();
    assert!(first.iter().all(|s| s.frames.len() <= 64 << 10));
    let path = dir.path().join("dst.ldf");
    let mut b = LogBuilder::create(&path, "dst").unwrap();
    for s in &first {
        b.append(s).unwrap();
    }
    assert_eq!(b.end_lsn(), mid);
    b.finish(Master { checkpoint_lsn: lsns[10], begin_lsn: from }).unwrap();
    {
        let (copy, master) = Wal::open(&path, "dst", small()).unwrap();
        assert_eq!(master.begin_lsn, from);
        assert_eq!(copy.end_lsn(), mid);
        let (a, b) = (read_all(&wal, from), read_all(&copy, from));
        assert_eq!(&a[..b.len()], &b[..]);
        assert_eq!(b.len(), lsns.len());
    }

    // A later copy overlapping the first extends the rebuilt log; a gap is refused.
    let mut second = Vec::new();
    wal.copy_segments(lsns[2000], end, 1 << 20, |s| {
        second.push(s);
        Ok(())
    })
    .unwrap();
    let mut b = LogBuilder::open(&path, "dst").unwrap();
    assert_eq!(b.end_lsn(), mid);
    let mut tail = Vec::new();
    wal.copy_segments(more[100], end, 1 << 20, |s| {
        tail.push(s);
        Ok(())
    })
    .unwrap();
    assert!(b.append(&tail[0]).is_err(), "a gap in the log is refused");
    for s in &second {
        b.append(s).unwrap();
    }
    assert_eq!(b.end_lsn(), end);
    b.finish(Master { checkpoint_lsn: lsns[10], begin_lsn: from }).unwrap();
    let (copy, _) = Wal::open(&path, "dst", small()).unwrap();
    assert_eq!(read_all(&copy, from), read_all(&wal, from));
    // The rebuilt log takes new records after the copied ones.
    let next = copy.append(&LogRecord::commit(9, 0, 42)).unwrap();
    assert_eq!(next, end);
    assert_eq!(copy.read(next).unwrap().commit_time(), Some(42));
}
