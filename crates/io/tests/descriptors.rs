//! The descriptor cache under many more files than descriptors: every byte written is
//! read back, an fsync owed to a closed file is made before it closes (a power loss
//! keeps the write), a failed one is reported at the file's next sync, and a file
//! replaced under its name is never read as the old one. The tests share the process's
//! cache, each setting it to its smallest size.

use std::sync::Arc;

use tessera_io::faults::{self, power, Fault, Op};
use tessera_io::{descriptors, DataFile, OpenMode};

const FILES: usize = 40;

fn small_cache() {
    descriptors::set_capacity(descriptors::MIN_CAPACITY);
}

fn block(file: usize, round: usize) -> Vec<u8> {
    (0..512).map(|i| (file * 31 + round * 7 + i) as u8).collect()
}

/// Uses every file in `files` once, so the cache has to close the older ones.
fn touch_all(files: &[DataFile]) {
    for f in files {
        f.len().unwrap();
    }
}

#[test]
fn many_more_files_than_descriptors_keep_every_byte() {
    small_cache();
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<DataFile> = (0..FILES)
        .map(|i| DataFile::open(&dir.path().join(format!("f{i}.dat")), OpenMode::CreateNew, false).unwrap())
        .collect();
    let before = descriptors::figures();
    for round in 0..3 {
        for (i, f) in files.iter().enumerate() {
            f.write_all_at(&block(i, round), (round * 512) as u64).unwrap();
        }
    }
    for (i, f) in files.iter().enumerate() {
        f.sync_data().unwrap();
        for round in 0..3 {
            let mut back = vec![0u8; 512];
            f.read_exact_at(&mut back, (round * 512) as u64).unwrap();
            assert_eq!(back, block(i, round), "file {i}, round {round}");
        }
    }
    let after = descriptors::figures();
    assert!(after.evictions - before.evictions >= (3 * FILES - descriptors::MIN_CAPACITY) as u64, "{after:?}");
    assert!(after.eviction_syncs > before.eviction_syncs, "closed with writes owed a sync: {after:?}");
    assert!(after.misses - before.misses >= 3 * FILES as u64);
    assert!(after.hits > before.hits);
}

#[test]
fn a_write_to_a_closed_file_survives_a_power_loss() {
    small_cache();
    let dir = tempfile::tempdir().unwrap();
    let a = DataFile::open(&dir.path().join("a.dat"), OpenMode::CreateNew, false).unwrap();
    a.write_all_at(&[0u8; 4096], 0).unwrap();
    a.sync_all().unwrap();
    let others: Vec<DataFile> = (0..FILES)
        .map(|i| DataFile::open(&dir.path().join(format!("o{i}.dat")), OpenMode::CreateNew, false).unwrap())
        .collect();
    power::record(dir.path());
    a.write_all_at(&[7u8; 4096], 0).unwrap();
    // Its descriptor is closed to make room for the others: the write must be synced first.
    touch_all(&others);
    touch_all(&others);
    drop(others);
    drop(a);
    power::power_loss(dir.path(), 1).unwrap();
    assert_eq!(std::fs::read(dir.path().join("a.dat")).unwrap(), vec![7u8; 4096]);
}

#[test]
fn a_sync_that_fails_as_its_descriptor_closes_fails_the_next_sync() {
    small_cache();
    let dir = tempfile::tempdir().unwrap();
    let a = DataFile::open(&dir.path().join("b.dat"), OpenMode::CreateNew, false).unwrap();
    let others: Vec<DataFile> = (0..FILES)
        .map(|i| DataFile::open(&dir.path().join(format!("o{i}.dat")), OpenMode::CreateNew, false).unwrap())
        .collect();
    a.write_all_at(&[1u8; 512], 0).unwrap();
    faults::arm(Fault::new(Op::Sync, dir.path(), "b.dat", libc::EIO));
    touch_all(&others);
    touch_all(&others);
    assert_eq!(faults::unfired(dir.path()), 0, "the sync at closing met the fault");
    faults::disarm(dir.path());
    for _ in 0..2 {
        let e = a.sync_data().unwrap_err();
        assert!(e.to_string().contains("b.dat"), "{e}");
    }
}

#[test]
fn a_file_replaced_under_its_name_is_an_error_not_the_new_file() {
    small_cache();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.dat");
    let c = DataFile::open(&path, OpenMode::CreateNew, false).unwrap();
    c.write_all_at(b"old", 0).unwrap();
    c.sync_data().unwrap();
    let others: Vec<DataFile> = (0..FILES)
        .map(|i| DataFile::open(&dir.path().join(format!("o{i}.dat")), OpenMode::CreateNew, false).unwrap())
        .collect();
    touch_all(&others);
    touch_all(&others);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"new").unwrap();
    let mut buf = [0u8; 3];
    let e = c.read_exact_at(&mut buf, 0).unwrap_err();
    assert!(e.to_string().contains("c.dat"), "{e}");
}

#[test]
fn threads_sharing_few_descriptors_read_what_they_wrote() {
    small_cache();
    let dir = tempfile::tempdir().unwrap();
    let files: Arc<Vec<DataFile>> = Arc::new(
        (0..FILES)
            .map(|i| DataFile::open(&dir.path().join(format!("t{i}.dat")), OpenMode::CreateNew, false).unwrap())
            .collect(),
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let files = files.clone();
            std::thread::spawn(move || {
                // Each thread owns its 512-byte region of every file.
                for round in 0..20 {
                    for (i, f) in files.iter().enumerate() {
                        let at = (t * 512) as u64;
                        f.write_all_at(&block(i + t, round), at).unwrap();
                        let mut back = vec![0u8; 512];
                        f.read_exact_at(&mut back, at).unwrap();
                        assert_eq!(back, block(i + t, round));
                        if (i + round) % 7 == 0 {
                            f.sync_data().unwrap();
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let f = descriptors::figures();
    // Over only by files in use at that moment: a few per thread of this process's tests.
    assert!(f.open <= f.capacity + 16, "{f:?}");
}
