//! `tessera bench bpe`: seed 002's Buffer Pool Extension benchmark, its five scenarios,
//! through the TDS server.
//!
//! One server (in process) holds the seed's table (`id int identity primary key, n
//! char(1000)`, 1,000,000 rows ≈ 1 GB). Each scenario runs the seed's 10,000 random point
//! selects (its exact batch text, one connection) and is timed:
//! 1. all in memory (a pool that holds the table, warmed);
//! 2. cold cache (`DBCC DROPCLEANBUFFERS`), data files on the emulated "hdd" profile;
//! 3. `max server memory` 256 MB, cold, data on "hdd";
//! 4. as 3 plus a 4 GB extension on this machine's disk (no profile: the SSD tier),
//!    warmed by a scan of the table;
//! 5. no extension, no cap, data on this machine's disk (no profile), cold.
//!
//! The "hdd" profile (`tessera_io::profile`) adds ~8 ms per random access and serves one
//! request at a time; "cold" also drops the data files from the OS page cache.
//!
//! Goals (the memory issue): the seed's ordering (1 fastest; 4 and 5 far ahead of 2
//! and 3), scenario 4 at least 10× faster than 3, and 4 within 2× of 5 or better.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use tessera_io::profile::{self, DeviceProfile};

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::pointselect::{batch, connect, load_seed_table, seed_query, Conn, PASSWORD};
use crate::report::{Report, ResultRow};

pub const NAME: &str = "bpe";

/// A cold scan without read-ahead ÷ with it, at least: keeping many large reads in flight
/// (seed 001's lesson) must beat reading one page at a time.
pub const GOAL_READ_AHEAD_SPEEDUP: f64 = 1.5;
/// Scenario 3 ÷ scenario 4 at least.
pub const GOAL_EXTENSION_SPEEDUP: f64 = 10.0;
/// Scenario 5 ÷ scenario 4 at least (4 within 2× of 5).
pub const GOAL_EXTENSION_VS_SSD: f64 = 0.5;

/// The seed's times in seconds (SQL Server 2014 on its own HDD and SSD).
const SEED_SECONDS: [f64; 5] = [1.5, 122.0, 116.0, 4.6, 6.3];
const SCENARIOS: [&str; 5] = [
    "1 all in memory",
    "2 cold cache, data on hdd",
    "3 max server memory capped, data on hdd",
    "4 as 3 plus an extension on the fast disk, warmed by a scan",
    "5 data on the fast disk (no profile), cold",
];

#[derive(Debug, Clone, Serialize)]
pub struct BpeParams {
    pub rows: u64,
    pub selects: u64,
    /// The pool for scenario 1 (holds the whole table).
    pub memory_mb: u64,
    /// max server memory for scenarios 3 and 4.
    pub capped_mb: u64,
    pub extension_mb: u64,
}

impl BpeParams {
    pub fn full() -> BpeParams {
        BpeParams { rows: 1_000_000, selects: 10_000, memory_mb: 2048, capped_mb: 256, extension_mb: 4096 }
    }

    /// 200,000 rows (≈ 230 MB) through a 128 MB cap: about a minute.
    pub fn quick() -> BpeParams {
        BpeParams { rows: 200_000, selects: 1_000, memory_mb: 512, capped_mb: 128, extension_mb: 1024 }
    }
}

pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

async fn selects(c: &mut Conn, p: &BpeParams) -> Result<f64> {
    let query = seed_query(p.rows);
    let start = Instant::now();
    for _ in 0..p.selects {
        if batch(c, &query, "point select").await? != 1 {
            return Err(BenchError::new("a point select did not return one row"));
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Seconds of the best cold full scan (with read-ahead, without) on each device.
struct Scans {
    disk: (f64, f64),
    ssd: (f64, f64),
}

/// What the run measured: the five scenarios' times, the cold scans, and notes.
struct Measured {
    times: Vec<f64>,
    scans: Scans,
    notes: Vec<String>,
}

/// A full scan of the table from a cold cache, in seconds.
async fn cold_scan(c: &mut Conn) -> Result<f64> {
    batch(c, "dbcc dropcleanbuffers", "drop clean buffers").await?;
    let start = Instant::now();
    batch(c, "select count(*) from [dbo].[TestTable] where [n] <> ''", "cold scan").await?;
    Ok(start.elapsed().as_secs_f64())
}

/// Runs the five scenarios in `dir`, then cold scans with and without read-ahead.
fn scenarios(dir: &Path, p: &BpeParams, progress: &dyn Fn(&str)) -> Result<Measured> {
    let data = dir.join("data");
    let fast = dir.join("fast");
    std::fs::create_dir_all(&fast)?;
    let config = tessera_server::Config {
        port: 0,
        data_dir: data.clone(),
        sa_password: Some(PASSWORD.to_string()),
        memory_mb: p.memory_mb as usize,
        errorlog: false,
        log_stderr: false,
        ..tessera_server::Config::default()
    };
    let server = tessera_server::RunningServer::start(config).map_err(BenchError::new)?;
    let port = server.addr.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut notes = Vec::new();
    let result = rt.block_on(async {
        let mut c = connect(port).await?;
        load_seed_table(&mut c, p.rows, progress).await?;
        batch(&mut c, "checkpoint", "checkpoint").await?;
        let mut times = Vec::new();

        progress(&format!("scenario {}", SCENARIOS[0]));
        batch(&mut c, "select count(*) from [dbo].[TestTable] where [n] <> ''", "warm").await?;
        times.push(selects(&mut c, p).await?);

        progress(&format!("scenario {}", SCENARIOS[1]));
        profile::set_profile(&data, Some(DeviceProfile::hdd()));
        batch(&mut c, "dbcc dropcleanbuffers", "drop clean buffers").await?;
        times.push(selects(&mut c, p).await?);

        progress(&format!("scenario {}", SCENARIOS[2]));
        batch(
            &mut c,
            &format!(
                "exec sp_configure 'show advanced options', 1; reconfigure; exec sp_configure 'max server memory (MB)', {}; reconfigure; dbcc dropcleanbuffers;",
                p.capped_mb
            ),
            "cap memory",
        )
        .await?;
        times.push(selects(&mut c, p).await?);

        progress(&format!("scenario {}", SCENARIOS[3]));
        let bpe = fast.join("BufferPoolExtension.bpe");
        batch(
            &mut c,
            &format!(
                "alter server configuration set buffer pool extension on (filename = '{}', size = {} MB)",
                bpe.display(),
                p.extension_mb
            ),
            "extension on",
        )
        .await?;
        let warm = Instant::now();
        batch(&mut c, "select count(*) from [dbo].[TestTable] where [n] <> ''", "warm by a scan").await?;
        notes.push(format!("scenario 4's warming scan took {:.1} s", warm.elapsed().as_secs_f64()));
        times.push(selects(&mut c, p).await?);
        let rows = c
            .simple_query(
                "select rtrim(counter_name), cntr_value from sys.dm_os_performance_counters where counter_name like 'Extension%'",
            )
            .await
            .map_err(|e| BenchError::new(format!("extension counters: {e}")))?
            .into_first_result()
            .await
            .map_err(|e| BenchError::new(format!("extension counters: {e}")))?;
        let counters: Vec<String> = rows
            .iter()
            .map(|r| format!("{} {}", r.get::<&str, _>(0).unwrap_or("?"), r.get::<i64, _>(1).unwrap_or(0)))
            .collect();
        notes.push(format!("extension after scenario 4: {}", counters.join(", ")));

        progress(&format!("scenario {}", SCENARIOS[4]));
        batch(&mut c, "alter server configuration set buffer pool extension off", "extension off").await?;
        profile::set_profile(&data, None);
        batch(
            &mut c,
            "exec sp_configure 'max server memory (MB)', 2147483647; reconfigure; dbcc dropcleanbuffers;",
            "uncap memory",
        )
        .await?;
        times.push(selects(&mut c, p).await?);

        // Cold full scans, alternating without read-ahead (trace flag 652) and with it:
        // on the fast disk (after one unmeasured scan, so that whatever caches sit below
        // the VM's disk are in the same state for all), then on the "ssd" profile.
        progress("cold full scans with and without read-ahead");
        cold_scan(&mut c).await?;
        let mut pairs = Vec::new();
        for device in [None, Some(DeviceProfile::ssd()), None] {
            profile::set_profile(&data, device.clone());
            batch(&mut c, "dbcc traceon (652)", "read-ahead off").await?;
            let plain = cold_scan(&mut c).await?;
            batch(&mut c, "dbcc traceoff (652)", "read-ahead on").await?;
            let ahead = cold_scan(&mut c).await?;
            notes.push(format!(
                "cold full scan on {}: {plain:.2} s without read-ahead, {ahead:.2} s with it",
                device.as_ref().map_or("the fast disk (no profile)", |d| d.name.as_str())
            ));
            pairs.push((device.is_some(), plain, ahead));
        }
        profile::set_profile(&data, None);
        let best = |ssd: bool, pick: fn(&(bool, f64, f64)) -> f64| {
            pairs.iter().filter(|p| p.0 == ssd).map(pick).fold(f64::INFINITY, f64::min)
        };
        let scans = Scans {
            disk: (best(false, |p| p.2), best(false, |p| p.1)),
            ssd: (best(true, |p| p.2), best(true, |p| p.1)),
        };
        Ok::<_, BenchError>((times, scans))
    });
    profile::set_profile(&data, None);
    drop(rt);
    server.stop().map_err(BenchError::new)?;
    let (times, scans) = result?;
    Ok(Measured { times, scans, notes })
}

pub fn run(dir: &Path, params: &BpeParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    match scenarios(dir, params, progress) {
        Ok(Measured { times: t, scans, notes }) => {
            // The seed ran 10,000 selects; scale its times to ours.
            let scale = params.selects as f64 / 10_000.0;
            for (i, name) in SCENARIOS.iter().enumerate() {
                report.push(ResultRow::time(
                    format!("scenario {name}: {} point selects", params.selects),
                    "s",
                    t[i],
                    "seed 002 (SQL Server 2014, real HDD/SSD)",
                    SEED_SECONDS[i] * scale,
                    0.0,
                ));
            }
            let ordered = t[0] < t[3].min(t[4]) && t[3].max(t[4]) < t[1].min(t[2]);
            report.push(ResultRow::own(
                "the seed's ordering (1 < 4, 5 < 2, 3)",
                "yes=1",
                f64::from(u8::from(ordered)),
                1.0,
            ));
            report.push(ResultRow::own(
                "extension speed-up: scenario 3 ÷ scenario 4",
                "×",
                t[2] / t[3].max(1e-9),
                GOAL_EXTENSION_SPEEDUP,
            ));
            report.push(ResultRow::own(
                "extension vs fast disk: scenario 5 ÷ scenario 4",
                "×",
                t[4] / t[3].max(1e-9),
                GOAL_EXTENSION_VS_SSD,
            ));
            for (tier, (with, without), goal) in
                [("'ssd' profile", scans.ssd, GOAL_READ_AHEAD_SPEEDUP), ("fast disk (no profile)", scans.disk, 0.0)]
            {
                report.push(ResultRow::time(
                    format!("cold full scan of the {} rows, {tier}, read-ahead", params.rows),
                    "s",
                    with,
                    "the same scan without read-ahead (trace flag 652)",
                    without,
                    goal,
                ));
            }
            for n in notes {
                report.note(n);
            }
        }
        Err(e) => failures.push(format!("tessera: {e}")),
    }
    report.note(format!(
        "profiles: 'hdd' = {:?} per random access, {} MB/s, one request at a time; the fast tier is this machine's own disk with no profile",
        DeviceProfile::hdd().access,
        DeviceProfile::hdd().bandwidth >> 20
    ));
    report.note("per-scenario rows compare with the seed's times (scaled to the number of selects) for information; their goal is 0; so is the cold scan on the fast disk, whose speed depends on caches below this VM's disk: the 'ssd' profile's scan carries the read-ahead goal");
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}
