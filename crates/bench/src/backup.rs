//! `tessera bench backup`: seed 004 — BACKUP and RESTORE throughput over a grid of stripe
//! counts, MAXTRANSFERSIZE, BUFFERCOUNT and compression, next to the device's own limit
//! measured in the same run on the same disk.
//!
//! The database (≥ 4 GiB; 512 MiB with --quick) is one table of ~1 KB rows, half random
//! bytes and half text, so compression has something but not everything to win. Every
//! measurement starts cold: the data file, backup files and restored files are dropped
//! from the OS page cache first (posix_fadvise), and every backup and restore ends with
//! its files synced. The device limit ("cp") is a sequential copy of the data file to a
//! new file on the same disk with 1 MiB buffers and an fsync — the same read-then-write
//! traffic a backup or restore makes. MB/s are MiB/s of database pages, as SQL Server's
//! messages count them. Goal (the backup issue): the best backup and the best restore
//! ≥ 90 % of the device limit. Seed 004's figures (311 MB/s on 1 file, 505 MB/s on 4,
//! 63 MB/s at MAXTRANSFERSIZE 64 KB) are printed beside the matching cells.

use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use tessera_backup::{BackupOptions, BackupType, RestoreOptions};
use tessera_database::{DatabaseOptions, Engine, EngineConfig, RecoveryModel};

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::report::{Report, ResultRow};

pub const NAME: &str = "backup";
pub const GOAL_OF_DEVICE: f64 = 0.9;
const ROW_BYTES: usize = 1000;

#[derive(Debug, Clone, Serialize)]
pub struct BackupParams {
    pub database_bytes: u64,
    pub stripes: Vec<usize>,
    pub transfer_sizes: Vec<u32>,
    /// None: SQL Server's default for the stripe count.
    pub buffer_counts: Vec<Option<u32>>,
    /// Runs per cell (the best counts).
    pub repetitions: usize,
}

impl BackupParams {
    pub fn full() -> BackupParams {
        BackupParams {
            database_bytes: 4 << 30,
            stripes: vec![1, 2, 4, 8],
            transfer_sizes: vec![64 << 10, 1 << 20, 4 << 20],
            buffer_counts: vec![None, Some(32)],
            repetitions: 2,
        }
    }

    pub fn quick() -> BackupParams {
        BackupParams {
            database_bytes: 512 << 20,
            stripes: vec![1, 4],
            transfer_sizes: vec![64 << 10, 4 << 20],
            buffer_counts: vec![None],
            repetitions: 2,
        }
    }
}

pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// Runs `f` `reps` times and keeps the best rate (a device's capability, as for the
/// copy baseline).
fn best_of(reps: usize, mut f: impl FnMut() -> Result<f64>) -> Result<f64> {
    let mut best = 0.0f64;
    for _ in 0..reps {
        crate::machine::settle_disk();
        best = best.max(f()?);
    }
    Ok(best)
}

fn drop_cache(path: &Path) {
    if let Ok(f) = std::fs::File::open(path) {
        // SAFETY: plain syscall on an owned descriptor; offset 0, length 0 = whole file.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

/// The device limit: copy `src` to a new file beside it, 1 MiB at a time, then fsync.
fn copy_rate(src: &Path, dir: &Path) -> Result<f64> {
    let dst = dir.join("device-copy.tmp");
    drop_cache(src);
    let start = Instant::now();
    let mut r = std::fs::File::open(src)?;
    let mut w = std::fs::File::create(&dst)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        w.write_all(&buf[..n])?;
        total += n as u64;
    }
    w.sync_all()?;
    let seconds = start.elapsed().as_secs_f64();
    drop(w);
    std::fs::remove_file(&dst)?;
    Ok(total as f64 / 1_048_576.0 / seconds)
}

/// Fills `bench.dbo.t` with ~`bytes` of rows: 500 random bytes and 500 bytes of text.
fn build(engine: &Engine, bytes: u64, progress: &dyn Fn(&str)) -> Result<()> {
    engine.create_database("bench", DatabaseOptions { recovery_model: RecoveryModel::Simple, ..Default::default() })?;
    let db = engine.database("bench")?;
    let t = db.create_table("t")?;
    let rows = bytes / (ROW_BYTES as u64 + 40);
    let mut row = vec![0u8; ROW_BYTES];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut id = 0u64;
    while id < rows {
        let mut tx = db.begin();
        for _ in 0..20_000.min(rows - id) {
            for chunk in row[..ROW_BYTES / 2].chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
            }
            let text = format!("customer {} ordered item {} on day {} ", id % 9973, id % 101, id % 365);
            for (i, b) in row[ROW_BYTES / 2..].iter_mut().enumerate() {
                *b = text.as_bytes()[i % text.len()];
            }
            tx.insert(t, &id.to_be_bytes(), &row)?;
            id += 1;
        }
        tx.commit()?;
        if id % 1_000_000 < 20_000 {
            progress(&format!("  {id} of {rows} rows"));
        }
    }
    db.checkpoint()?;
    Ok(())
}

struct Cell {
    stripes: usize,
    transfer: u32,
    buffers: Option<u32>,
    compression: bool,
}

impl Cell {
    fn label(&self) -> String {
        format!(
            "{} stripe{}, MAXTRANSFERSIZE {} KB, BUFFERCOUNT {}{}",
            self.stripes,
            if self.stripes == 1 { "" } else { "s" },
            self.transfer >> 10,
            self.buffers.map_or("default".to_string(), |b| b.to_string()),
            if self.compression { ", COMPRESSION" } else { "" }
        )
    }

    fn devices(&self, dir: &Path) -> Vec<PathBuf> {
        (0..self.stripes).map(|i| dir.join(format!("bench-{i}.bak"))).collect()
    }
}

fn backup_rate(engine: &Engine, data: &Path, dir: &Path, cell: &Cell) -> Result<f64> {
    let devices = cell.devices(dir);
    for d in &devices {
        let _ = std::fs::remove_file(d);
    }
    engine.drop_clean_buffers();
    drop_cache(data);
    let o = BackupOptions {
        devices,
        kind: Some(BackupType::Database),
        format: true,
        init: true,
        compression: cell.compression,
        max_transfer_size: Some(cell.transfer),
        buffer_count: cell.buffers,
        copy_only: true,
        ..Default::default()
    };
    let r = tessera_backup::backup(engine, "bench", &o, &mut |_| {}).map_err(|e| BenchError::new(e.message))?;
    Ok(r.pages as f64 * 8192.0 / 1_048_576.0 / r.seconds)
}

fn restore_rate(engine: &Engine, dir: &Path, cell: &Cell) -> Result<f64> {
    let devices = cell.devices(dir);
    for d in &devices {
        drop_cache(d);
    }
    let o = RestoreOptions {
        devices: devices.clone(),
        recovery: true,
        max_transfer_size: Some(cell.transfer),
        buffer_count: cell.buffers,
        moves: vec![("bench".into(), dir.join("restored.mdf")), ("bench_log".into(), dir.join("restored.ldf"))],
        ..Default::default()
    };
    let r = tessera_backup::restore(engine, "restored", &o, &mut |_| {}).map_err(|e| BenchError::new(e.message))?;
    let db = engine.database("restored")?;
    let t = db.table("t").ok_or_else(|| BenchError::new("the restored database lost its table"))?;
    let tx = db.begin();
    let found = tx.get(t, &0u64.to_be_bytes())?.is_some();
    tx.commit()?;
    drop(db);
    if !found {
        return Err(BenchError::new("the restored database lost row 0"));
    }
    engine.drop_database("restored")?;
    Ok(r.pages as f64 * 8192.0 / 1_048_576.0 / r.seconds)
}

pub fn run(dir: &Path, params: &BackupParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let mut config = EngineConfig::new(dir.join("data"));
    config.pool_bytes = 1 << 30;
    config.background = false;
    let engine = Engine::open(config)?;
    progress(&format!("building a {} MiB database", params.database_bytes >> 20));
    build(&engine, params.database_bytes, progress)?;
    let (data, _) = engine.database("bench")?.file_paths();
    let size = std::fs::metadata(&data)?.len();
    report.note(format!("database: {} MiB data file (1 KB rows: half random bytes, half text)", size >> 20));

    progress("device limit: sequential copy of the data file on the same disk");
    let device = best_of(params.repetitions + 1, || copy_rate(&data, dir))?;

    let mut best_backup: (f64, String) = (0.0, String::new());
    let mut best_restore: (f64, String) = (0.0, String::new());
    let mut rows = Vec::new();
    for &compression in &[false, true] {
        for &stripes in &params.stripes {
            for &transfer in &params.transfer_sizes {
                for &buffers in &params.buffer_counts {
                    let cell = Cell { stripes, transfer, buffers, compression };
                    let label = cell.label();
                    progress(&format!("BACKUP {label}"));
                    match best_of(params.repetitions, || backup_rate(&engine, &data, dir, &cell)) {
                        Ok(rate) => {
                            if rate > best_backup.0 {
                                best_backup = (rate, label.clone());
                            }
                            rows.push(ResultRow::rate(format!("backup: {label}"), "MB/s", rate, "cp", device, 0.0));
                            // Restore each layout once (default buffers).
                            if buffers.is_none() {
                                progress(&format!("RESTORE {label}"));
                                match best_of(params.repetitions, || restore_rate(&engine, dir, &cell)) {
                                    Ok(r) => {
                                        if r > best_restore.0 {
                                            best_restore = (r, label.clone());
                                        }
                                        rows.push(ResultRow::rate(
                                            format!("restore: {label}"),
                                            "MB/s",
                                            r,
                                            "cp",
                                            device,
                                            0.0,
                                        ));
                                    }
                                    Err(e) => failures.push(format!("restore {label}: {e}")),
                                }
                            }
                        }
                        Err(e) => failures.push(format!("backup {label}: {e}")),
                    }
                    for d in cell.devices(dir) {
                        let _ = std::fs::remove_file(d);
                    }
                }
            }
        }
    }
    report.push(ResultRow::rate(
        format!("best backup ({})", best_backup.1),
        "MB/s",
        best_backup.0,
        "cp",
        device,
        GOAL_OF_DEVICE,
    ));
    report.push(ResultRow::rate(
        format!("best restore ({})", best_restore.1),
        "MB/s",
        best_restore.0,
        "cp",
        device,
        GOAL_OF_DEVICE,
    ));
    // Seed 004 beside the matching cells (another machine: context, not a goal).
    let find = |prefix: &str| rows.iter().find(|r: &&ResultRow| r.metric.starts_with(prefix)).map(|r| r.ours);
    for (what, prefix, seed) in [
        (
            "1 file, 1 MB transfers (seed: 311 MB/s)",
            "backup: 1 stripe, MAXTRANSFERSIZE 1024 KB, BUFFERCOUNT default",
            311.0,
        ),
        (
            "4 files, 1 MB transfers (seed: 505 MB/s)",
            "backup: 4 stripes, MAXTRANSFERSIZE 1024 KB, BUFFERCOUNT default",
            505.0,
        ),
        (
            "1 file, 64 KB transfers (seed: 63 MB/s)",
            "backup: 1 stripe, MAXTRANSFERSIZE 64 KB, BUFFERCOUNT default",
            63.0,
        ),
    ] {
        if let Some(ours) = find(prefix) {
            report.push(ResultRow::rate(format!("seed 004 {what}"), "MB/s", ours, "seed", seed, 0.0));
        }
    }
    for r in rows {
        report.push(r);
    }
    report.note(format!(
        "device limit (cp): {device:.0} MiB/s, a sequential read + write copy of the {} MiB data file on the same disk, cold cache, fsync at the end",
        size >> 20
    ));
    report.note(format!(
        "each cell is the best of {} runs (the device limit of {}), each after sync(2) and a pause",
        params.repetitions,
        params.repetitions + 1
    ));
    report.note("every run starts with the data file and backup files dropped from the OS page cache; MB/s = database pages × 8 KiB / MiB / seconds, as SQL Server's messages; restore times include crash recovery of the restored copy");
    report.note("seed 004 ran SQL Server on AWS EBS: its figures are context for the shape (striping and transfer size), not a goal on this machine");
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    drop(engine);
    Ok(Outcome { report, failures })
}
