//! Moves under a writer: `tessera move` run while one client inserts into the tenant
//! through a gateway, reconnecting after any error. Each move yields the mover's own write
//! pause and the longest gap the writer saw between two acknowledged inserts; afterwards
//! the tenant on its new server must hold exactly the rows the writer was told were
//! committed, or the benchmark fails.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::consolidation::tessera::Instance;
use crate::error::{BenchError, Result};
use crate::pointselect::PASSWORD;
use crate::tdsstream::StreamConn;

/// How long the writer waits for a login or a reply before it counts an error and
/// reconnects.
const WRITER_TIMEOUT: Duration = Duration::from_secs(5);
/// The writer's pause after an error, before it reconnects.
const RETRY_PAUSE: Duration = Duration::from_millis(5);
/// The writer runs this long before the move starts and after its first acknowledged
/// insert past the move's end.
const SETTLE: Duration = Duration::from_millis(300);
/// How long the writer may take to get an insert acknowledged after the move ended.
const RESUME_TIMEOUT: Duration = Duration::from_secs(30);

/// What one writer did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Writes {
    pub acknowledged: u64,
    /// The longest time between two acknowledged inserts.
    pub longest_gap: Duration,
    /// When it began (the acknowledgement before it).
    pub gap_from: Option<Instant>,
    /// Failed logins and statements (each followed by a reconnect).
    pub errors: u64,
}

/// Inserts `base + 1`, `base + 2`, … into `t` of `database` through the gateway at `port`
/// until `stop`; `acked` counts the acknowledged inserts as they come. After any error it
/// reconnects and inserts the same value again: a duplicate key then means the insert had
/// committed before its answer was lost, and counts as acknowledged.
fn write(port: u16, database: &str, base: u64, stop: &AtomicBool, acked: &AtomicU64) -> Writes {
    let mut out = Writes::default();
    let mut conn: Option<StreamConn> = None;
    let mut last: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match StreamConn::connect_within(port, "sa", PASSWORD, database, Some(WRITER_TIMEOUT)) {
                Ok(c) => conn.insert(c),
                Err(_) => {
                    out.errors += 1;
                    std::thread::sleep(RETRY_PAUSE);
                    continue;
                }
            },
        };
        let value = base + out.acknowledged + 1;
        let done = match c.query(&format!("insert t (id, v, note) values ({value}, 0, 'written')")) {
            Ok(run) => match run.error {
                None => true,
                Some(e) => e.starts_with("Msg 2627:"),
            },
            Err(_) => false,
        };
        if done {
            let now = Instant::now();
            if let Some(before) = last {
                if now - before > out.longest_gap {
                    (out.longest_gap, out.gap_from) = (now - before, Some(before));
                }
            }
            last = Some(now);
            out.acknowledged += 1;
            acked.store(out.acknowledged, Ordering::Relaxed);
        } else {
            out.errors += 1;
            conn = None;
            std::thread::sleep(RETRY_PAUSE);
        }
    }
    out
}

/// One move's figures.
#[derive(Debug, Clone)]
pub(crate) struct MoveRun {
    pub database: String,
    pub from: String,
    pub to: String,
    /// What `tessera move` reported: from the tail until the target admitted a login.
    pub pause: Duration,
    /// The move's whole time, as it reported it.
    pub total: Duration,
    pub writes: Writes,
    /// When the writer's longest gap began, counted from the mover's start (ms; negative:
    /// before it), and how long the mover ran as this process saw it.
    pub gap_offset_ms: Option<i64>,
    pub mover_ms: u64,
}

/// (write pause, in all) from `tessera move`'s line "Moved 'D' from s1 to s2: … write
/// pause N ms, M ms in all."
pub(crate) fn reported(line: &str) -> Option<(Duration, Duration)> {
    let rest = &line[line.find("write pause ")? + "write pause ".len()..];
    let (pause, rest) = rest.split_once(" ms, ")?;
    let total = rest.split_once(" ms in all")?.0;
    Some((Duration::from_millis(pause.trim().parse().ok()?), Duration::from_millis(total.trim().parse().ok()?)))
}

/// Where a move goes and how to run it.
pub(crate) struct MoveSpec<'a> {
    pub binary: &'a Path,
    pub etcd: &'a str,
    pub through: &'a Path,
    pub database: &'a str,
    /// Rows the tenant's table held before the writer (its values are above these).
    pub base: u64,
    pub from: (&'a str, &'a Instance),
    pub to: (&'a str, &'a Instance),
    /// The gateway the writer goes through.
    pub gateway: u16,
}

/// Moves `m.database` from `m.from` to `m.to` while a writer inserts into it through
/// the gateway, then checks that the target holds every acknowledged insert and nothing
/// more, that the source holds the tenant no more, and that the gateway routes to it.
pub(crate) fn move_under_writer(m: &MoveSpec<'_>) -> Result<MoveRun> {
    let stop = AtomicBool::new(false);
    let acked = AtomicU64::new(0);
    let (outcome, writes) = std::thread::scope(|scope| {
        let writer = std::thread::Builder::new()
            .name("bench-writer".to_string())
            .spawn_scoped(scope, || write(m.gateway, m.database, m.base, &stop, &acked))?;
        let outcome = (|| {
            let started = Instant::now();
            while acked.load(Ordering::Relaxed) == 0 || started.elapsed() < SETTLE {
                if started.elapsed() > RESUME_TIMEOUT {
                    return Err(BenchError::new(format!("the writer could not insert into {}", m.database)));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let launched = Instant::now();
            let out = Command::new(m.binary)
                .args(["move", "--etcd", m.etcd, "--database", m.database, "--to", m.to.0, "--through"])
                .arg(m.through)
                .args(["-P", PASSWORD])
                .output()
                .map_err(|e| BenchError::new(format!("{} move: {e}", m.binary.display())))?;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            if !out.status.success() {
                return Err(BenchError::new(format!(
                    "tessera move {} to {} failed: {}{stdout}",
                    m.database,
                    m.to.0,
                    String::from_utf8_lossy(&out.stderr)
                )));
            }
            let (pause, total) = reported(&stdout)
                .ok_or_else(|| BenchError::new(format!("tessera move printed no write pause: {stdout}")))?;
            // The writer goes on until it has written on the target, and a little more.
            let after = acked.load(Ordering::Relaxed);
            let ended = Instant::now();
            while acked.load(Ordering::Relaxed) == after {
                if ended.elapsed() > RESUME_TIMEOUT {
                    return Err(BenchError::new(format!(
                        "the writer got no insert into {} acknowledged for {} s after the move",
                        m.database,
                        RESUME_TIMEOUT.as_secs()
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let mover = ended - launched;
            std::thread::sleep(SETTLE);
            Ok((pause, total, launched, mover))
        })();
        stop.store(true, Ordering::Relaxed);
        let writes = writer.join().map_err(|_| BenchError::new("the writer panicked"))?;
        Ok::<_, BenchError>((outcome, writes))
    })?;
    let (pause, total, launched, mover) = outcome?;
    check_rows(m, writes.acknowledged)?;
    let offset = |at: Instant| match at.checked_duration_since(launched) {
        Some(after) => after.as_millis() as i64,
        None => -(launched.duration_since(at).as_millis() as i64),
    };
    Ok(MoveRun {
        database: m.database.to_string(),
        from: m.from.0.to_string(),
        to: m.to.0.to_string(),
        pause,
        total,
        writes,
        gap_offset_ms: writes.gap_from.map(offset),
        mover_ms: mover.as_millis() as u64,
    })
}

/// The target holds every acknowledged insert and no other (read on the target itself,
/// and through the gateway); the source has no copy left.
fn check_rows(m: &MoveSpec<'_>, acknowledged: u64) -> Result<()> {
    let d = m.database;
    let query = format!("select count(*), isnull(max(id), 0) from [{d}].dbo.t where id > {}", m.base);
    let on_target = m.to.1.admin(&[query])?.first().copied().unwrap_or((0, 0));
    let expected = (acknowledged as i64, if acknowledged == 0 { 0 } else { (m.base + acknowledged) as i64 });
    if on_target != expected {
        return Err(BenchError::new(format!(
            "LOST OR EXTRA WRITES: after moving {d} from {} to {}, {} holds {} written rows (highest id {}), \
             but the writer had {acknowledged} inserts acknowledged",
            m.from.0, m.to.0, m.to.0, on_target.0, on_target.1
        )));
    }
    let left = m.from.1.admin(&[format!("select count(*), 0 from sys.databases where name = '{d}'")])?;
    if left.first().is_some_and(|r| r.0 != 0) {
        return Err(BenchError::new(format!("{} still has a database {d} after moving it to {}", m.from.0, m.to.0)));
    }
    let mut through = StreamConn::connect_within(m.gateway, "sa", PASSWORD, d, Some(WRITER_TIMEOUT))
        .map_err(|e| e.context(format!("{d} through the gateway after the move")))?;
    let seen =
        through.query(&format!("select 1 where (select count(*) from t where id > {}) = {acknowledged}", m.base))?;
    if seen.error.is_some() || seen.rows != 1 {
        return Err(BenchError::new(format!(
            "through the gateway, {d} does not hold the {acknowledged} acknowledged inserts: {:?}",
            seen.error
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_movers_line_is_read() {
        let line =
            "Moved 't000001' from s1 to s2: 1 log backups (81920 bytes shipped), write pause 312 ms, 905 ms in all.\n";
        assert_eq!(reported(line), Some((Duration::from_millis(312), Duration::from_millis(905))));
        assert_eq!(reported("Moved 'x' from s1 to s2"), None);
    }
}
