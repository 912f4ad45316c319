//! The list of databases an instance hosts, kept in `<data dir>/databases.reg`.
//!
//! One line per database: `name \t id \t data file \t log file \t recovery model \t
//! delayed durability \t state \t sizes` (lines without the state are ONLINE; without the
//! sizes, the engine's sizes apply). A line whose state is DETACHED is no database: it
//! remembers the files `sp_detach_db` left, so that no CREATE DATABASE takes them for
//! files a crash orphaned and deletes them. The sizes are six fields, empty when not set: initial
//! data size, data growth, maximum data size, initial log size, log growth, maximum log
//! size (bytes; a growth in percent ends with `%`); then `SCRATCH` for a database whose
//! contents need not survive a restart (tempdb), empty otherwise. The file is replaced atomically (write
//! a temporary file, fsync, rename, fsync the directory), so a crash leaves the old or the
//! new list, never a mix.

use std::io::Write;
use std::path::{Path, PathBuf};

use tessera_errors::{Error, Result};
use tessera_log::Growth;

use crate::database::{DatabaseOptions, DelayedDurability, RecoveryModel};

/// `sys.databases.state_desc`: RESTORING between a RESTORE … WITH NORECOVERY and the
/// RESTORE that recovers it; such a database cannot be opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DbState {
    #[default]
    Online,
    Restoring,
}

impl DbState {
    pub fn name(self) -> &'static str {
        match self {
            DbState::Online => "ONLINE",
            DbState::Restoring => "RESTORING",
        }
    }
}

/// A registered database: what listings and metadata read without opening it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub id: u32,
    pub data_path: PathBuf,
    pub log_path: PathBuf,
    pub options: DatabaseOptions,
    pub state: DbState,
}

impl Entry {
    /// Bytes of its data file and of its log file as they are on disk now.
    pub fn file_bytes(&self) -> (u64, u64) {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        (size(&self.data_path), size(&self.log_path))
    }
}

/// What `databases.reg` holds: the databases, and the files of detached ones.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    pub detached: Vec<Entry>,
}

pub fn load(path: &Path) -> Result<Loaded> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(Error::io("read", path, 0, e)),
    };
    let bad = |line: usize| Error::Invalid(format!("{}: line {line} is damaged", path.display()));
    let mut out = Loaded::default();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        if ![6, 7, 13, 14].contains(&f.len()) {
            return Err(bad(i + 1));
        }
        let size = |k: usize| -> Result<Option<u64>> {
            match f.get(k) {
                None | Some(&"") => Ok(None),
                Some(s) => s.parse().map(Some).map_err(|_| bad(i + 1)),
            }
        };
        let growth = |k: usize| -> Result<Option<Growth>> {
            match f.get(k) {
                None | Some(&"") => Ok(None),
                Some(s) => Growth::parse(s).map(Some).ok_or_else(|| bad(i + 1)),
            }
        };
        let detached = f.get(6) == Some(&DETACHED);
        let list = if detached { &mut out.detached } else { &mut out.entries };
        list.push(Entry {
            name: f[0].to_string(),
            id: f[1].parse().map_err(|_| bad(i + 1))?,
            data_path: PathBuf::from(f[2]),
            log_path: PathBuf::from(f[3]),
            options: DatabaseOptions {
                recovery_model: RecoveryModel::parse(f[4]).ok_or_else(|| bad(i + 1))?,
                delayed_durability: DelayedDurability::parse(f[5]).ok_or_else(|| bad(i + 1))?,
                data_path: None,
                log_path: None,
                initial_data_size: size(7)?,
                data_growth: growth(8)?,
                max_data_size: size(9)?,
                initial_log_size: size(10)?,
                log_growth: growth(11)?,
                max_log_size: size(12)?,
                scratch: match f.get(13) {
                    None | Some(&"") => false,
                    Some(&"SCRATCH") => true,
                    Some(_) => return Err(bad(i + 1)),
                },
            },
            state: match f.get(6) {
                None | Some(&"ONLINE") | Some(&DETACHED) => DbState::Online,
                Some(&"RESTORING") => DbState::Restoring,
                Some(_) => return Err(bad(i + 1)),
            },
        });
    }
    Ok(out)
}

const DETACHED: &str = "DETACHED";

/// Replaces the file with `entries` and the `detached` databases' files.
pub fn save(path: &Path, entries: &[&Entry], detached: &[Entry]) -> Result<()> {
    use std::fmt::Write as _;
    let mut text = String::with_capacity((entries.len() + detached.len()) * 160);
    for (e, is_detached) in entries.iter().map(|e| (*e, false)).chain(detached.iter().map(|e| (e, true))) {
        let bad = |b: &u8| *b == b'\t' || *b == b'\n';
        if e.name.as_bytes().iter().any(bad)
            || [&e.data_path, &e.log_path].iter().any(|p| p.as_os_str().as_encoded_bytes().iter().any(bad))
        {
            return Err(Error::Invalid(format!(
                "names and paths may not contain tabs or newlines: {:?}, {:?}, {:?}",
                e.name, e.data_path, e.log_path
            )));
        }
        let o = &e.options;
        let size = |s: Option<u64>| s.map(|n| n.to_string()).unwrap_or_default();
        let growth = |g: Option<Growth>| g.map(Growth::encode).unwrap_or_default();
        let _ = writeln!(
            text,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            e.name,
            e.id,
            e.data_path.display(),
            e.log_path.display(),
            o.recovery_model.name(),
            o.delayed_durability.name(),
            if is_detached { DETACHED } else { e.state.name() },
            size(o.initial_data_size),
            growth(o.data_growth),
            size(o.max_data_size),
            size(o.initial_log_size),
            growth(o.log_growth),
            size(o.max_log_size),
            if o.scratch { "SCRATCH" } else { "" }
        );
    }
    let tmp = path.with_extension("tmp");
    let io = |op, e| Error::io(op, &tmp, 0, e);
    let mut f = std::fs::File::create(&tmp).map_err(|e| io("create", e))?;
    f.write_all(text.as_bytes()).map_err(|e| io("write", e))?;
    f.sync_all().map_err(|e| io("sync", e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io("rename", path, 0, e))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io("sync", dir, 0, e))?;
    }
    Ok(())
}
