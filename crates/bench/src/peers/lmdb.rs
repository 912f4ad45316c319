//! LMDB (through heed, in-process) running the engine workloads: keys are big-endian integers,
//! so their byte order is their numeric order, values the same bytes as every other side's.
//!
//! Each function opens its own environment in a subdirectory of `dir`, closes it before it
//! returns, and leaves its files there (the caller removes the directory).

use std::fs;
use std::path::Path;
use std::time::Instant;

use heed::byteorder::BigEndian;
use heed::types::{Bytes, U32, U64};
use heed::{Database, Env, EnvOpenOptions, PutFlags};

use crate::error::{BenchError, Result};
use crate::workload::{lookup_value, row_payload, time_lookups, EngineParams, Figures, LOOKUP_VALUE_LEN, PAYLOAD_LEN};

/// Opens a fresh environment in `dir/name` with a map big enough for `data_bytes` of data.
fn open_env(dir: &Path, name: &str, data_bytes: u64) -> Result<Env> {
    let path = dir.join(name);
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path)?;
    // Room for page headers, half-full pages after splits, and LMDB's copy-on-write pages.
    let map_size = (data_bytes * 3 + (256 << 20)).next_multiple_of(1 << 20);
    let map_size = usize::try_from(map_size).map_err(|_| BenchError::new("LMDB map size exceeds usize"))?;
    // SAFETY: the environment is opened once, by this process only, and its files are not
    // touched by anything else while it is open.
    let env = unsafe { EnvOpenOptions::new().map_size(map_size).max_dbs(1).open(&path)? };
    Ok(env)
}

/// Closes `env` and waits until LMDB has released it, so its files can be removed and the same
/// path opened again.
fn close_env(env: Env) {
    env.prepare_for_closing().wait();
}

/// Point lookups: loads `lookup_rows` rows (key: id as big-endian u32, value: 1000 bytes) in
/// one write transaction, reads every row once to warm up, then times `lookups` gets on
/// uniform random ids inside one read transaction, summing the first byte of each value.
pub fn point_lookups(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let env = open_env(dir, "lookups.lmdb", p.lookup_data_bytes())?;
    let result = (|| {
        let mut wtxn = env.write_txn()?;
        let db: Database<U32<BigEndian>, Bytes> = env.create_database(&mut wtxn, None)?;
        let mut value = [0u8; LOOKUP_VALUE_LEN];
        for id in 1..=p.lookup_rows {
            lookup_value(id, &mut value);
            db.put_with_flags(&mut wtxn, PutFlags::APPEND, &id, &value)?;
        }
        wtxn.commit()?;

        let rtxn = env.read_txn()?;
        let read = |id: u32| -> Result<u64> {
            match db.get(&rtxn, &id)? {
                Some(v) => Ok(v[0] as u64),
                None => Err(BenchError::new(format!("LMDB lost key {id}"))),
            }
        };
        let figures = time_lookups(p, setup, read)?;
        drop(rtxn);
        Ok(figures)
    })();
    close_env(env);
    result
}

/// Bulk insert: `bulk_rows` rows (key: id as big-endian u64, value: 92-byte payload) in one
/// write transaction with MDB_APPEND, synced on commit; the time includes the commit.
pub fn bulk_insert(dir: &Path, p: &EngineParams) -> Result<Figures> {
    let setup = Instant::now();
    let env = open_env(dir, "bulk.lmdb", p.bulk_data_bytes())?;
    let setup_seconds = setup.elapsed().as_secs_f64();
    let result = (|| {
        let start = Instant::now();
        let mut wtxn = env.write_txn()?;
        let db: Database<U64<BigEndian>, Bytes> = env.create_database(&mut wtxn, None)?;
        let mut payload = [0u8; PAYLOAD_LEN];
        for id in 1..=p.bulk_rows {
            row_payload(id, &mut payload);
            db.put_with_flags(&mut wtxn, PutFlags::APPEND, &id, &payload)?;
        }
        wtxn.commit()?;
        let seconds = start.elapsed().as_secs_f64();

        let rtxn = env.read_txn()?;
        let stored = db.len(&rtxn)?;
        drop(rtxn);
        if stored != p.bulk_rows {
            return Err(BenchError::new(format!("LMDB bulk insert stored {stored} rows of {}", p.bulk_rows)));
        }
        Ok(Figures { count: p.bulk_rows, seconds, setup_seconds, checksum: stored })
    })();
    close_env(env);
    result
}
