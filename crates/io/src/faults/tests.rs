use super::power::{self, Loss};
use super::*;
use crate::{DataFile, OpenMode};

fn file(dir: &Path, name: &str) -> DataFile {
    DataFile::open(&dir.join(name), OpenMode::CreateNew, false).unwrap()
}

#[test]
fn an_armed_sync_fails_as_often_as_asked_and_only_under_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let log = file(dir.path(), "d_log.ldf");
    let data = file(dir.path(), "d.mdf");
    let elsewhere = file(other.path(), "e_log.ldf");
    arm(Fault { times: 2, ..Fault::new(Op::Sync, dir.path(), ".ldf", libc::EIO) });
    data.sync_data().unwrap();
    elsewhere.sync_data().unwrap();
    log.write_all_at(b"x", 0).unwrap();
    for _ in 0..2 {
        let e = log.sync_data().unwrap_err();
        assert_eq!(e.number(), 823);
        assert!(e.to_string().contains("d_log.ldf"), "{e}");
    }
    log.sync_data().unwrap();
    arm(Fault { times: 5, ..Fault::new(Op::Write, dir.path(), ".mdf", libc::ENOSPC) });
    assert!(data.write_all_at(b"y", 0).unwrap_err().is_disk_full());
    disarm(dir.path());
    data.write_all_at(b"y", 0).unwrap();
}

#[test]
fn the_nth_operation_fails_and_a_partial_transfer_moves_whole_sectors_first() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "a.mdf");
    arm(Fault { skip: 2, partial: true, ..Fault::new(Op::Write, dir.path(), ".mdf", libc::EIO) });
    f.write_all_at(&[1; 4096], 0).unwrap();
    f.write_all_at(&[2; 4096], 0).unwrap();
    let e = f.write_all_at(&[3; 4096], 0).unwrap_err();
    assert_eq!(e.number(), 823, "{e}");
    let mut back = vec![0; 4096];
    f.read_exact_at(&mut back, 0).unwrap();
    assert_eq!((back[2047], back[2048]), (3, 2), "the first half written, whole sectors");
    arm(Fault { partial: true, ..Fault::new(Op::Read, dir.path(), ".mdf", libc::EIO) });
    let mut back = vec![0; 4096];
    assert!(f.read_exact_at(&mut back, 0).is_err());
    assert_eq!((back[0], back[2048]), (3, 0), "a short read filled the first half");
}

#[test]
fn a_disk_fills_at_the_chosen_byte() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "b.mdf");
    disk_full_after(dir.path(), 10_000);
    f.write_all_at(&[1; 8192], 0).unwrap();
    f.write_all_at(&[2; 8192], 0).unwrap(); // overwriting takes no space
    let e = f.write_all_at(&[3; 4096], 8192).unwrap_err();
    assert!(e.is_disk_full(), "{e}");
    assert_eq!(f.len().unwrap(), 8192 + 1536, "what fits, in whole sectors");
    assert!(f.allocate(1 << 20).unwrap_err().is_disk_full());
    disarm(dir.path());
    f.allocate(1 << 20).unwrap();
}

/// The file's bytes.
fn contents(f: &DataFile) -> Vec<u8> {
    let mut buf = vec![0; f.len().unwrap() as usize];
    f.read_exact_at(&mut buf, 0).unwrap();
    buf
}

#[test]
fn a_power_loss_keeps_synced_writes_and_some_of_the_rest_in_whole_sectors() {
    let mut seen = Loss::default();
    for seed in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let f = file(dir.path(), "c.ldf");
        f.write_all_at(&[1; 2048], 0).unwrap();
        power::record(dir.path());
        f.write_all_at(&[2; 1024], 0).unwrap();
        f.sync_data().unwrap();
        f.write_all_at(&[3; 1024], 512).unwrap();
        f.write_all_at(&[4; 2048], 2048).unwrap();
        f.allocate(8192).unwrap();
        assert_eq!(power::operations(dir.path()), 5);
        let loss = power::power_loss(dir.path(), seed).unwrap();
        assert_eq!((loss.files, loss.unsynced_writes), (1, 2));
        seen.applied_whole += loss.applied_whole;
        seen.torn += loss.torn;
        seen.dropped += loss.dropped;
        let after = contents(&f);
        assert!(
            (2048..=4096).contains(&after.len()) && after.len().is_multiple_of(SECTOR_BYTES),
            "the synced length, or longer by sectors of the last write"
        );
        assert_eq!(&after[..512], &[2; 512], "synced");
        for (i, sector) in after.chunks(SECTOR_BYTES).enumerate() {
            let allowed: &[u8] = match i {
                0 => &[2],
                1 => &[2, 3],
                2 => &[1, 3],
                3 => &[1],
                _ => &[0, 4],
            };
            assert!(sector.iter().all(|b| *b == sector[0]) && allowed.contains(&sector[0]), "seed {seed} sector {i}");
        }
        // Not recorded any more: nothing is kept.
        f.write_all_at(&[5; 512], 0).unwrap();
        assert!(!active() || !power::recording(&dir.path().join("c.ldf")));
    }
    assert!(seen.applied_whole > 0 && seen.torn > 0 && seen.dropped > 0, "{seen:?}");
}

#[test]
fn after_the_cut_nothing_changes_and_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "d.mdf");
    power::record(dir.path());
    power::cut_at(dir.path(), 2);
    f.write_all_at(&[1; 512], 0).unwrap();
    assert!(!power::is_cut(dir.path()));
    f.sync_data().unwrap();
    assert!(power::is_cut(dir.path()), "off before operation 2");
    assert_eq!(f.write_all_at(&[2; 512], 0).unwrap_err().number(), 823);
    assert!(f.sync_data().is_err() && f.set_len(0).is_err());
    assert!(crate::durable::remove_file(&dir.path().join("d.mdf")).is_err());
    assert_eq!(contents(&f), vec![1; 512]);
    assert_eq!(power::power_loss(dir.path(), 7).unwrap(), Loss::default());
    f.write_all_at(&[2; 512], 0).unwrap();
}

#[test]
fn a_failed_sync_loses_the_unsynced_writes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "e.ldf");
    power::record(dir.path());
    f.write_all_at(&[1; 1024], 0).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(&[2; 512], 0).unwrap();
    f.write_all_at(&[3; 512], 1024).unwrap();
    arm(Fault::new(Op::Sync, dir.path(), ".ldf", libc::EIO));
    assert!(f.sync_data().is_err());
    assert_eq!(contents(&f), vec![1; 1024], "the page cache dropped them, as Linux does");
    f.sync_data().unwrap();
    power::forget(dir.path());
}
