//! Tenant databases of one schema, made in process through the T-SQL layer: the helpers
//! `plancache` and `consolidation` share. A tenant is one database holding the schema's
//! tables and rows and its stored procedures, created in one transaction; many are made at
//! once on a few sessions, with progress every [`PROGRESS_EVERY`].

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_semantics::output::{Command, OutputColumn};
use tessera_semantics::types::Value;
use tessera_sql::{ResultSink, Session, Shared, SqlError};

use crate::error::{BenchError, Result};

/// How often long loops report progress.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// Keeps the first column of the last row of the last result set, and the first error
/// as "Msg N: text".
#[derive(Default)]
pub(crate) struct LastValue {
    pub value: Option<Value>,
    pub error: Option<String>,
}

impl ResultSink for LastValue {
    fn columns(&mut self, _: &[OutputColumn]) {
        self.value = None;
    }

    fn row(&mut self, row: &[Value]) {
        self.value = row.first().cloned();
    }

    fn done(&mut self, _: Option<u64>, _: Command) {}

    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 {
            self.error.get_or_insert_with(|| format!("Msg {}: {}", m.number, m.message));
        }
    }
}

/// The error of `what` if the sink saw one.
pub(crate) fn checked(sink: LastValue, what: &str) -> Result<Option<Value>> {
    match sink.error {
        Some(e) => Err(BenchError::new(format!("tessera {what}: {e}"))),
        None => Ok(sink.value),
    }
}

pub(crate) fn execute(session: &mut Session, text: &str, what: &str) -> Result<()> {
    let mut sink = LastValue::default();
    session.execute(text, &mut sink);
    checked(sink, what).map(drop)
}

/// A session of `sa` in `database`.
pub(crate) fn open_session(shared: &Arc<Shared>, database: &str) -> Result<Session> {
    Session::new(shared.clone(), "sa", database).map_err(|e| BenchError::new(format!("tessera session: {e}")))
}

/// What every tenant database holds.
pub(crate) struct TenantSchema {
    /// Tables and rows: one batch.
    pub tables: String,
    /// `create procedure …` texts, one batch each.
    pub procedures: Vec<String>,
}

impl TenantSchema {
    /// Tables, rows and procedures as one batch of one transaction, for a client in the
    /// tenant's database: each procedure through `exec('…')`, since CREATE PROCEDURE must
    /// start its batch.
    pub(crate) fn one_batch(&self) -> String {
        let mut text = format!("begin tran; {}", self.tables);
        for p in &self.procedures {
            text.push_str(&format!("exec('{}');\n", p.replace('\'', "''")));
        }
        text.push_str("commit");
        text
    }
}

/// One database of the schema: tables, rows and procedures, committed once. Its commits
/// are not forced to disk (DELAYED_DURABILITY = FORCED), so that call times measure the
/// plans and the work, not fdatasync.
pub(crate) fn create_tenant(session: &mut Session, name: &str, schema: &TenantSchema) -> Result<()> {
    execute(session, &format!("use master; create database [{name}]"), "create database")?;
    execute(session, &format!("alter database [{name}] set delayed_durability = forced"), "alter database")?;
    execute(session, &format!("use [{name}]; begin tran; {}", schema.tables), "schema")?;
    for text in &schema.procedures {
        execute(session, text, "create procedure")?;
    }
    execute(session, "commit", "commit")
}

/// Creates the databases `name(d)` for `d` in `range` on `threads` sessions, database `d`
/// on thread `d % threads`.
pub(crate) fn create_tenants(
    shared: &Arc<Shared>,
    schema: &TenantSchema,
    name: &(dyn Fn(usize) -> String + Sync),
    range: std::ops::Range<usize>,
    threads: usize,
    progress: &dyn Fn(&str),
) -> Result<()> {
    let threads = threads.max(1);
    let created = AtomicUsize::new(range.start);
    let started = Instant::now();
    let end = range.end;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (shared, created, range) = (shared.clone(), &created, range.clone());
                scope.spawn(move || -> Result<()> {
                    let mut session = open_session(&shared, "master")?;
                    for d in (range.start + t..range.end).step_by(threads) {
                        create_tenant(&mut session, &name(d), schema).map_err(|e| e.context(name(d)))?;
                        created.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        let mut reported = started;
        while !workers.iter().all(|w| w.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
            if reported.elapsed() >= PROGRESS_EVERY {
                reported = Instant::now();
                let done = created.load(Ordering::Relaxed);
                let seconds = started.elapsed().as_secs_f64();
                progress(&format!("setup: {done} of {end} databases, {seconds:.0} s"));
            }
        }
        workers.into_iter().try_for_each(|w| w.join().map_err(|_| BenchError::new("a setup thread panicked"))?)
    })
}

/// Bytes the files under `dir` take on disk.
pub(crate) fn disk_usage(dir: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut bytes = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        bytes += if meta.is_dir() { disk_usage(&entry.path())? } else { meta.blocks() * 512 };
    }
    Ok(bytes)
}

/// Bytes free for an unprivileged writer on the file system holding `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| BenchError::new(e.to_string()))?;
    // SAFETY: statvfs fills the zeroed struct from a NUL-terminated path it only reads.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Refuses a setup that would leave less than its own size free: `per_database` bytes for
/// each of `databases`, with a margin of 2×.
pub(crate) fn check_free_space(dir: &Path, per_database: u64, databases: usize, flag: &str) -> Result<()> {
    let needed = per_database * databases as u64;
    let free = free_bytes(dir)?;
    if needed.saturating_mul(2) > free {
        return Err(BenchError::new(format!(
            "{databases} databases of {} KiB need {} MiB, and only {} MiB are free in {} (a margin of 2× is asked): \
             at most {} databases fit ({flag})",
            per_database >> 10,
            needed >> 20,
            free >> 20,
            dir.display(),
            free / 2 / per_database.max(1)
        )));
    }
    Ok(())
}
