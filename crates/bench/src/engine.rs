//! `tessera bench engine`: the storage engine against SQLite and LMDB, in the same process and
//! run, on files in one directory.
//!
//! Scenarios and the goals the storage-engine issue sets:
//! - point lookups by primary key on 1 KB rows: ≥ 1.5× SQLite (WAL), ≥ 1.0× LMDB;
//! - bulk insert of 100-byte rows in one transaction: ≥ 1.5× SQLite;
//! - durable single-row commits, one thread: ≥ 1.0× SQLite (same fsync policy);
//! - durable commits with many threads: ≥ 4× tessera's own one-thread figure (group commit);
//! - releasing a buffer pool holding 8 GiB (1 GiB with `--quick`): ≤ 0.5 s.
//!
//! Each scenario runs tessera's side first, then the peers', each in a fresh subdirectory that
//! is removed afterwards. A side that fails is reported as a failure and its rows are left out;
//! the other sides still run.

use std::fs;
use std::path::Path;

use crate::error::Result;
use crate::machine::Machine;
use crate::peers::{lmdb, sqlite};
use crate::report::{fmt_value, Report, ResultRow};
use crate::tessera_side;
use crate::workload::{expected_lookup_checksum, lookup_ids, EngineParams, Figures};

/// The benchmark's name, as in `tessera bench engine`.
pub const NAME: &str = "engine";

pub const GOAL_LOOKUP_VS_SQLITE: f64 = 1.5;
pub const GOAL_LOOKUP_VS_LMDB: f64 = 1.0;
pub const GOAL_BULK_VS_SQLITE: f64 = 1.5;
pub const GOAL_COMMIT_VS_SQLITE: f64 = 1.0;
pub const GOAL_COMMIT_SCALING: f64 = 4.0;
pub const GOAL_POOL_RELEASE_SECONDS: f64 = 0.5;

/// A finished run: the report, and what could not be measured (empty when everything ran).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// Runs the scenarios, one side at a time, with files under `dir` (created if missing; the
/// subdirectories made there are removed). `progress` receives one line per step, for a
/// person watching (the caller sends it to stderr, so stdout keeps only the report).
pub fn run(dir: &Path, params: &EngineParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut r = Runner { dir, progress, failures: Vec::new(), notes: Vec::new() };
    let p = params;

    // Buffer pool release. It runs first on purpose: filling the pool touches as much
    // memory as the later scenarios use, so no side of them pays the virtual machine's
    // cost of a first touch of guest memory (measured here at ~10× an ordinary page fault).
    let gib = p.pool_release_bytes as f64 / (1u64 << 30) as f64;
    let what = format!("buffer pool release, {} GiB", fmt_value(gib));
    progress(&format!("{what}: tessera"));
    match tessera_side::pool_release(p.pool_release_bytes) {
        Ok(seconds) => {
            progress(&format!("{what}: tessera {seconds:.3} s"));
            report.push(ResultRow::own(what, "s", seconds, GOAL_POOL_RELEASE_SECONDS));
        }
        Err(e) => r.fail(&what, "tessera", &e.to_string()),
    }

    // Point lookups.
    let ids = lookup_ids(p.lookup_rows, p.lookups, p.seed);
    let checksum = expected_lookup_checksum(&ids);
    drop(ids);
    let what = "point lookups";
    let ours = r.side(what, "tessera", "lookups-tessera", Some(checksum), |d| tessera_side::point_lookups(d, p));
    let vs_sqlite = r.side(what, "sqlite", "lookups-sqlite", Some(checksum), |d| sqlite::point_lookups(d, p));
    let vs_lmdb = r.side(what, "lmdb", "lookups-lmdb", Some(checksum), |d| lmdb::point_lookups(d, p));
    r.summarise(what, "lookups/s", &[("tessera", &ours), ("sqlite", &vs_sqlite), ("lmdb", &vs_lmdb)]);
    if let Some(ours) = &ours {
        if let Some(peer) = &vs_sqlite {
            report.push(ResultRow::rate(
                what,
                "lookups/s",
                ours.per_second(),
                "sqlite",
                peer.per_second(),
                GOAL_LOOKUP_VS_SQLITE,
            ));
        }
        if let Some(peer) = &vs_lmdb {
            report.push(ResultRow::rate(
                what,
                "lookups/s",
                ours.per_second(),
                "lmdb",
                peer.per_second(),
                GOAL_LOOKUP_VS_LMDB,
            ));
        }
    }

    // Bulk insert.
    let what = "bulk insert, one transaction";
    let ours = r.side(what, "tessera", "bulk-tessera", None, |d| tessera_side::bulk_insert(d, p));
    let vs_sqlite = r.side(what, "sqlite", "bulk-sqlite", None, |d| sqlite::bulk_insert(d, p));
    let lmdb_bulk =
        if p.lmdb_bulk { r.side(what, "lmdb", "bulk-lmdb", None, |d| lmdb::bulk_insert(d, p)) } else { None };
    r.summarise(
        what,
        "rows/s",
        &[("tessera", &ours), ("sqlite", &vs_sqlite), ("lmdb (MDB_APPEND, information only)", &lmdb_bulk)],
    );
    if let (Some(ours), Some(peer)) = (&ours, &vs_sqlite) {
        report.push(ResultRow::rate(
            what,
            "rows/s",
            ours.per_second(),
            "sqlite",
            peer.per_second(),
            GOAL_BULK_VS_SQLITE,
        ));
    }

    // The same rows through the minimally logged bulk load (SQLite has no such path: its
    // figure is the same prepared inserts in one transaction).
    let what = "bulk load, one transaction, minimally logged";
    let loaded = r.side(what, "tessera", "bulkload-tessera", None, |d| tessera_side::bulk_load(d, p));
    r.summarise(what, "rows/s", &[("tessera", &loaded), ("sqlite (inserts, as above)", &vs_sqlite)]);
    if let (Some(ours), Some(peer)) = (&loaded, &vs_sqlite) {
        report.push(ResultRow::rate(
            what,
            "rows/s",
            ours.per_second(),
            "sqlite",
            peer.per_second(),
            GOAL_BULK_VS_SQLITE,
        ));
    }

    // Durable commits, one thread and many.
    let n = p.commit_threads.max(1);
    let what = "durable commits, 1 thread";
    let ours_1 = r.side(what, "tessera", "commits1-tessera", None, |d| tessera_side::durable_commits(d, 1, p));
    let sqlite_1 = r.side(what, "sqlite", "commits1-sqlite", None, |d| sqlite::durable_commits(d, 1, p));
    r.summarise(what, "commits/s", &[("tessera", &ours_1), ("sqlite", &sqlite_1)]);
    if let (Some(ours), Some(peer)) = (&ours_1, &sqlite_1) {
        report.push(ResultRow::rate(
            what,
            "commits/s",
            ours.per_second(),
            "sqlite",
            peer.per_second(),
            GOAL_COMMIT_VS_SQLITE,
        ));
    }
    let what_n = format!("durable commits, {n} threads");
    let ours_n = r.side(&what_n, "tessera", "commitsN-tessera", None, |d| tessera_side::durable_commits(d, n, p));
    let sqlite_n = r.side(&what_n, "sqlite", "commitsN-sqlite", None, |d| sqlite::durable_commits(d, n, p));
    r.summarise(&what_n, "commits/s", &[("tessera", &ours_n), ("sqlite (information only)", &sqlite_n)]);
    if let (Some(one), Some(many)) = (&sqlite_1, &sqlite_n) {
        r.notes.push(format!(
            "sqlite commits/s {n} threads ÷ 1 thread: {:.2} (information only)",
            ratio(many.per_second(), one.per_second())
        ));
    }
    if let (Some(one), Some(many)) = (&ours_1, &ours_n) {
        report.push(ResultRow::own(
            format!("commits/s {n} threads ÷ 1 thread"),
            "×",
            ratio(many.per_second(), one.per_second()),
            GOAL_COMMIT_SCALING,
        ));
    }

    report
        .note("ratio > 1 means tessera did better than the peer; rows without a peer carry the goal in their own unit");
    report.note(
        "sqlite: bundled, in-process, prepared statements, WAL, synchronous=FULL, page cache sized to hold the table; \
         commits are BEGIN IMMEDIATE + INSERT + COMMIT on one connection per thread",
    );
    report
        .note("lmdb: heed, big-endian integer keys, loads with MDB_APPEND, all timed lookups in one read transaction");
    report.note("each side of each scenario starts after sync(2) and a 300 ms pause, in a fresh directory");
    for note in r.notes {
        report.note(note);
    }
    for failure in &r.failures {
        report.note(format!("not measured: {failure}"));
    }
    Ok(Outcome { report, failures: r.failures })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

struct Runner<'a> {
    dir: &'a Path,
    progress: &'a dyn Fn(&str),
    failures: Vec<String>,
    notes: Vec<String>,
}

impl Runner<'_> {
    fn fail(&mut self, what: &str, side: &str, message: &str) {
        (self.progress)(&format!("{what}: {side} failed: {message}"));
        self.failures.push(format!("{what} ({side}): {message}"));
    }

    /// Runs one side of one scenario in the fresh subdirectory `sub`, removed afterwards.
    /// A side whose checksum differs from `expect` read wrong data: its figures are dropped.
    fn side(
        &mut self,
        what: &str,
        side: &str,
        sub: &str,
        expect: Option<u64>,
        run: impl FnOnce(&Path) -> Result<Figures>,
    ) -> Option<Figures> {
        (self.progress)(&format!("{what}: {side}"));
        let path = self.dir.join(sub);
        let _ = fs::remove_dir_all(&path);
        crate::machine::settle_disk();
        let outcome = fs::create_dir_all(&path).map_err(Into::into).and_then(|()| run(&path));
        let _ = fs::remove_dir_all(&path);
        match outcome {
            Ok(figures) => match expect {
                Some(sum) if figures.checksum != sum => {
                    let message = format!("read wrong data (checksum {} instead of {sum})", figures.checksum);
                    self.fail(what, side, &message);
                    None
                }
                _ => {
                    (self.progress)(&format!(
                        "{what}: {side} {} per second ({} in {:.2} s)",
                        fmt_value(figures.per_second()),
                        figures.count,
                        figures.seconds
                    ));
                    Some(figures)
                }
            },
            Err(e) => {
                self.fail(what, side, &e.to_string());
                None
            }
        }
    }

    /// A note with every side's figure, so the peers' figures are in the report even when a
    /// row could not be formed.
    fn summarise(&mut self, what: &str, unit: &str, sides: &[(&str, &Option<Figures>)]) {
        let parts: Vec<String> = sides
            .iter()
            .map(|(side, figures)| match figures {
                Some(f) => format!(
                    "{side} {} {unit} ({} in {:.2} s, setup {:.2} s)",
                    fmt_value(f.per_second()),
                    f.count,
                    f.seconds,
                    f.setup_seconds
                ),
                None => format!("{side} not measured"),
            })
            .collect();
        self.notes.push(format!("{what}: {}", parts.join("; ")));
    }
}
