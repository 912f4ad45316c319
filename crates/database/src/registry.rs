//! The list of databases an instance hosts, kept in `<data dir>/databases.reg`.
//!
//! The file is a journal: a first line `tessera-registry 2`, then one line per change,
//! appended and made durable (fdatasync) before the change is reported done. A line is
//! `crc \t ops`: the CRC-32C of `ops` in eight hex digits, then one or more operations
//! separated by the record separator (0x1E), applied together or not at all:
//!
//! - `+ \t entry`: the database `entry` names exists (added, or replacing the one of that
//!   name);
//! - `- \t name`: the database `name` no longer exists;
//! - `D \t entry`: the files of `entry` were left by `sp_detach_db` (replacing any
//!   detached entry with either file), remembered so that no CREATE DATABASE takes them
//!   for files a crash orphaned and deletes them;
//! - `F \t path`: no detached database has the file `path` any more.
//!
//! An entry is `name \t id \t data file \t log file \t recovery model \t delayed durability
//! \t state \t sizes \t scratch`: the sizes are six fields, empty when not set (initial
//! data size, data growth, maximum data size, initial log size, log growth, maximum log
//! size; bytes, a growth in percent ends with `%`), then `SCRATCH` for a database whose
//! contents need not survive a restart (tempdb), empty otherwise, then the owner's
//! security id in hexadecimal (empty: `sa`; entries written before it have 14 fields),
//! then the resource limits, each empty when not set: the most requests that may run at
//! once, the CPU cap in percent, the log rate in KiB/s, the CPU share in percent, the
//! buffer-pool limit and the tempdb quota in MiB (entries written before the first have
//! 15 fields, before the next two 16, before the CPU share 18, before the last two 19),
//! then `DB_CHAINING` for a database that lets ownership chains cross into it, empty
//! otherwise (entries written before it have 21 fields), then likewise
//! `ALLOW_SNAPSHOT_ISOLATION` and `READ_COMMITTED_SNAPSHOT` (before them: 22 fields) and
//! `RECURSIVE_TRIGGERS` (before it: 24 fields).
//!
//! A crash while a line is appended leaves it torn: the last line, without its newline
//! or with a CRC that does not match, is not a change that happened (it was never
//! reported done) and is dropped. A line that fails its check anywhere else means the
//! file is damaged. When the journal has grown to twice what a fresh copy would take
//! (and at every start), it is rewritten whole — to a temporary file, fsynced, renamed
//! over the old, the directory fsynced — so a crash leaves the old or the new file. A
//! change therefore costs one short append and one fdatasync, whatever the number of
//! databases; rewriting is amortised over as many changes as there are databases.
//!
//! Files from before the journal (one entry per line, no first line, DETACHED in the
//! state field of detached files) are read as they are and rewritten at the next start.

use std::path::{Path, PathBuf};

use tessera_errors::{Error, Result};
use tessera_io::{DataFile, OpenMode};
use tessera_log::Growth;

use crate::database::{DatabaseOptions, DelayedDurability, RecoveryModel, ResourceLimits};

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

/// One change to the registry (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    Put(&'a Entry),
    Remove(&'a str),
    Detach(&'a Entry),
    ForgetDetached(&'a Path),
}

/// What `databases.reg` holds: the databases, and the files of detached ones.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    pub detached: Vec<Entry>,
}

/// Removes the detached entries that have the file `path`.
pub fn forget_detached(detached: &mut Vec<Entry>, path: &Path) {
    detached.retain(|d| d.data_path != path && d.log_path != path);
}

/// Remembers `entry` as detached, in place of any detached entry with either of its files.
pub fn remember_detached(detached: &mut Vec<Entry>, entry: Entry) {
    forget_detached(detached, &entry.data_path);
    forget_detached(detached, &entry.log_path);
    detached.push(entry);
}

impl Loaded {
    /// The model the journal's tests replay against (replay itself uses [`Replayed`]).
    #[cfg(test)]
    fn apply(&mut self, change: Change, key: &impl Fn(&str) -> String) {
        match change {
            Change::Put(e) => {
                let k = key(&e.name);
                self.entries.retain(|x| key(&x.name) != k);
                self.entries.push(e.clone());
            }
            Change::Remove(name) => {
                let k = key(name);
                self.entries.retain(|x| key(&x.name) != k);
            }
            Change::Detach(e) => remember_detached(&mut self.detached, e.clone()),
            Change::ForgetDetached(path) => forget_detached(&mut self.detached, path),
        }
    }
}

/// The state a replay builds, entries by key: a change costs the same whatever the
/// number of databases (a scan per change made a start with 100,000 databases take
/// minutes).
#[derive(Default)]
struct Replayed {
    entries: std::collections::HashMap<String, Entry>,
    detached: Vec<Entry>,
}

impl Replayed {
    fn apply(&mut self, change: Change, key: &impl Fn(&str) -> String) {
        match change {
            Change::Put(e) => {
                self.entries.insert(key(&e.name), e.clone());
            }
            Change::Remove(name) => {
                self.entries.remove(&key(name));
            }
            Change::Detach(e) => remember_detached(&mut self.detached, e.clone()),
            Change::ForgetDetached(path) => forget_detached(&mut self.detached, path),
        }
    }

    fn into_loaded(self) -> Loaded {
        Loaded { entries: self.entries.into_values().collect(), detached: self.detached }
    }
}

const HEADER: &str = "tessera-registry 2";
const OPS_SEPARATOR: char = '\u{1e}';
/// A journal this much bigger than a fresh copy is rewritten.
const SLACK_BYTES: u64 = 64 << 10;

/// The open registry file: appends changes, rewrites itself when the journal is long.
pub struct Registry {
    path: PathBuf,
    file: DataFile,
    len_bytes: u64,
    /// Bytes of the file when it was last rewritten.
    rewritten_bytes: u64,
    /// An append failed and its torn bytes could not be cut off: the next change
    /// rewrites the file instead of appending to it.
    must_rewrite: bool,
}

impl Registry {
    /// Reads the registry at `path` (none: an empty one), rewriting it compactly when a
    /// line was torn off, it is in the older format, or it has grown long.
    /// `key` gives the name under which two databases are the same one.
    pub fn open(path: &Path, key: impl Fn(&str) -> String) -> Result<(Registry, Loaded)> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Error::io("read", path, 0, e)),
        };
        let first = text.lines().next().unwrap_or("");
        let (mut loaded, whole) = if first == HEADER {
            replay(path, &text, &key)?
        } else if let Some(version) = first.strip_prefix("tessera-registry ") {
            // Written by another build: its lines may mean other things than ours.
            return Err(Error::Invalid(format!(
                "{}: the database registry is format {version}; this build reads format 2 (and the one-line-per-database format before it)",
                path.display()
            )));
        } else {
            // Rewritten as a journal below.
            (load_v1(path, &text)?, false)
        };
        loaded.entries.sort_unstable_by_key(|e| e.id);
        let entries: Vec<&Entry> = loaded.entries.iter().collect();
        let fresh_bytes = encode(&entries, &loaded.detached)?.len() as u64;
        let len = text.len() as u64;
        // Kept as it is when it is whole and not long: an open writes nothing then (a full
        // disk must not keep the instance from starting).
        let (file, len_bytes) = if whole && len <= 2 * fresh_bytes + SLACK_BYTES {
            (DataFile::open(path, OpenMode::Existing, false)?, len)
        } else {
            rewrite(path, &entries, &loaded.detached)?
        };
        let registry =
            Registry { path: path.to_path_buf(), file, len_bytes, rewritten_bytes: fresh_bytes, must_rewrite: false };
        Ok((registry, loaded))
    }

    /// Makes `changes` durable, together. `everything` gives the registry's whole
    /// contents after them (`entries`, `detached`), for when the file is rewritten.
    pub fn record(&mut self, changes: &[Change], everything: impl FnOnce() -> (Vec<Entry>, Vec<Entry>)) -> Result<()> {
        if self.must_rewrite {
            let (entries, detached) = everything();
            return self.rewrite(&entries, &detached);
        }
        let mut ops = String::new();
        for (i, change) in changes.iter().enumerate() {
            if i > 0 {
                ops.push(OPS_SEPARATOR);
            }
            match *change {
                Change::Put(e) => encode_entry(&mut ops, '+', e)?,
                Change::Remove(name) => push_op(&mut ops, '-', name),
                Change::Detach(e) => encode_entry(&mut ops, 'D', e)?,
                Change::ForgetDetached(path) => push_op(&mut ops, 'F', &path.display().to_string()),
            }
        }
        let line = format!("{:08x}\t{ops}\n", crc32c::crc32c(ops.as_bytes()));
        let appended = self.file.write_all_at(line.as_bytes(), self.len_bytes).and_then(|_| self.file.sync_data());
        if let Err(e) = appended {
            // Cut the torn line off, or rewrite the file at the next change.
            let cut = self.file.set_len(self.len_bytes).and_then(|_| self.file.sync_data());
            self.must_rewrite = cut.is_err();
            return Err(e);
        }
        self.len_bytes += line.len() as u64;
        if self.len_bytes > 2 * self.rewritten_bytes + SLACK_BYTES {
            let (entries, detached) = everything();
            // The change is durable already: a failed rewrite only leaves a long journal.
            let _ = self.rewrite(&entries, &detached);
        }
        Ok(())
    }

    fn rewrite(&mut self, entries: &[Entry], detached: &[Entry]) -> Result<()> {
        let (file, len_bytes) = rewrite(&self.path, &entries.iter().collect::<Vec<_>>(), detached)?;
        self.file = file;
        self.len_bytes = len_bytes;
        self.rewritten_bytes = len_bytes;
        self.must_rewrite = false;
        Ok(())
    }
}

fn push_op(out: &mut String, op: char, payload: &str) {
    out.push(op);
    out.push('\t');
    out.push_str(payload);
}

/// Writes a fresh registry holding `entries` and `detached` over the file at `path`
/// atomically; returns it opened for appending, and its length.
fn rewrite(path: &Path, entries: &[&Entry], detached: &[Entry]) -> Result<(DataFile, u64)> {
    let text = encode(entries, detached)?;
    tessera_io::durable::write_atomically(path, text.as_bytes(), 0o644)?;
    Ok((DataFile::open(path, OpenMode::Existing, false)?, text.len() as u64))
}

/// A fresh registry's text, holding `entries` and `detached`.
fn encode(entries: &[&Entry], detached: &[Entry]) -> Result<String> {
    let mut text = String::with_capacity((entries.len() + detached.len()) * 180 + HEADER.len() + 1);
    text.push_str(HEADER);
    text.push('\n');
    let records = entries.iter().map(|e| ('+', *e)).chain(detached.iter().map(|e| ('D', e)));
    let mut ops = String::with_capacity(180);
    for (op, e) in records {
        ops.clear();
        encode_entry(&mut ops, op, e)?;
        text.push_str(&format!("{:08x}\t", crc32c::crc32c(ops.as_bytes())));
        text.push_str(&ops);
        text.push('\n');
    }
    Ok(text)
}

/// Replays a journal; also says whether every line of it was whole (none torn off).
fn replay(path: &Path, text: &str, key: &impl Fn(&str) -> String) -> Result<(Loaded, bool)> {
    let bad = |line: usize| Error::Invalid(format!("{}: line {line} is damaged", path.display()));
    let mut loaded = Replayed::default();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, raw) in lines.iter().enumerate().skip(1) {
        let last = i + 1 == lines.len();
        let Some(line) = raw.strip_suffix('\n') else {
            // Torn by a crash while it was appended: never reported done.
            return Ok((loaded.into_loaded(), false));
        };
        let checked = line
            .split_once('\t')
            .filter(|(crc, ops)| u32::from_str_radix(crc, 16).is_ok_and(|crc| crc == crc32c::crc32c(ops.as_bytes())));
        let Some((_, ops)) = checked else {
            if last {
                return Ok((loaded.into_loaded(), false));
            }
            return Err(bad(i + 1));
        };
        // A line whose CRC holds was written whole: its operations all apply.
        for op in ops.split(OPS_SEPARATOR) {
            let (kind, payload) = op.split_once('\t').ok_or_else(|| bad(i + 1))?;
            match kind {
                "+" | "D" => {
                    let e = decode_entry(payload).ok_or_else(|| bad(i + 1))?;
                    loaded.apply(if kind == "D" { Change::Detach(&e) } else { Change::Put(&e) }, key);
                }
                "-" => loaded.apply(Change::Remove(payload), key),
                "F" => loaded.apply(Change::ForgetDetached(Path::new(payload)), key),
                _ => return Err(bad(i + 1)),
            }
        }
    }
    Ok((loaded.into_loaded(), true))
}

/// Reads a registry from before the journal: one entry per line.
fn load_v1(path: &Path, text: &str) -> Result<Loaded> {
    let mut out = Loaded::default();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let entry = decode_entry(line)
            .ok_or_else(|| Error::Invalid(format!("{}: line {} is damaged", path.display(), i + 1)))?;
        let detached = line.split('\t').nth(6) == Some(DETACHED);
        if detached {
            out.detached.push(entry);
        } else {
            out.entries.push(entry);
        }
    }
    Ok(out)
}

const DETACHED: &str = "DETACHED";

fn decode_entry(line: &str) -> Option<Entry> {
    let f: Vec<&str> = line.split('\t').collect();
    if ![6, 7, 13, 14, 15, 16, 18, 19, 21, 22, 24, 25].contains(&f.len()) {
        return None;
    }
    let size = |k: usize| -> Option<Option<u64>> {
        match f.get(k) {
            None | Some(&"") => Some(None),
            Some(s) => s.parse().ok().map(Some),
        }
    };
    let growth = |k: usize| -> Option<Option<Growth>> {
        match f.get(k) {
            None | Some(&"") => Some(None),
            Some(s) => Growth::parse(s).map(Some),
        }
    };
    let number = |k: usize| -> Option<Option<u32>> {
        match f.get(k) {
            None | Some(&"") => Some(None),
            Some(s) => s.parse().ok().map(Some),
        }
    };
    // An option that is on when its field holds its name.
    let flag = |k: usize, name: &str| -> Option<bool> {
        match f.get(k) {
            None | Some(&"") => Some(false),
            Some(s) if *s == name => Some(true),
            Some(_) => None,
        }
    };
    Some(Entry {
        name: f[0].to_string(),
        id: f[1].parse().ok()?,
        data_path: PathBuf::from(f[2]),
        log_path: PathBuf::from(f[3]),
        options: DatabaseOptions {
            recovery_model: RecoveryModel::parse(f[4])?,
            delayed_durability: DelayedDurability::parse(f[5])?,
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
                Some(_) => return None,
            },
            owner_sid: match f.get(14) {
                None | Some(&"") => None,
                Some(hex) => Some(decode_hex(hex)?),
            },
            limits: ResourceLimits {
                max_concurrent_requests: number(15)?,
                max_cpu_percent: number(16)?,
                max_log_rate_kb: number(17)?,
                cpu_share_percent: number(18)?,
                max_buffer_pool_mb: number(19)?,
                max_tempdb_mb: number(20)?,
            },
            db_chaining: flag(21, "DB_CHAINING")?,
            allow_snapshot_isolation: flag(22, "ALLOW_SNAPSHOT_ISOLATION")?,
            read_committed_snapshot: flag(23, "READ_COMMITTED_SNAPSHOT")?,
            recursive_triggers: flag(24, "RECURSIVE_TRIGGERS")?,
        },
        state: match f.get(6) {
            None | Some(&"ONLINE") | Some(&DETACHED) => DbState::Online,
            Some(&"RESTORING") => DbState::Restoring,
            Some(_) => return None,
        },
    })
}

/// Appends `op \t entry` to `out`.
fn encode_entry(out: &mut String, op: char, e: &Entry) -> Result<()> {
    use std::fmt::Write as _;
    let bad = |b: &u8| *b == b'\t' || *b == b'\n' || *b == OPS_SEPARATOR as u8;
    if e.name.as_bytes().iter().any(bad)
        || [&e.data_path, &e.log_path].iter().any(|p| p.as_os_str().as_encoded_bytes().iter().any(bad))
    {
        return Err(Error::Invalid(format!(
            "names and paths may not contain tabs, newlines or record separators: {:?}, {:?}, {:?}",
            e.name, e.data_path, e.log_path
        )));
    }
    let o = &e.options;
    let size = |s: Option<u64>| s.map(|n| n.to_string()).unwrap_or_default();
    let growth = |g: Option<Growth>| g.map(Growth::encode).unwrap_or_default();
    let number = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
    let _ = write!(
        out,
        "{op}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        e.name,
        e.id,
        e.data_path.display(),
        e.log_path.display(),
        o.recovery_model.name(),
        o.delayed_durability.name(),
        if op == 'D' { DETACHED } else { e.state.name() },
        size(o.initial_data_size),
        growth(o.data_growth),
        size(o.max_data_size),
        size(o.initial_log_size),
        growth(o.log_growth),
        size(o.max_log_size),
        if o.scratch { "SCRATCH" } else { "" },
        o.owner_sid.as_deref().map(encode_hex).unwrap_or_default(),
        number(o.limits.max_concurrent_requests),
        number(o.limits.max_cpu_percent),
        number(o.limits.max_log_rate_kb),
        number(o.limits.cpu_share_percent),
        number(o.limits.max_buffer_pool_mb),
        number(o.limits.max_tempdb_mb),
        if o.db_chaining { "DB_CHAINING" } else { "" },
        if o.allow_snapshot_isolation { "ALLOW_SNAPSHOT_ISOLATION" } else { "" },
        if o.read_committed_snapshot { "READ_COMMITTED_SNAPSHOT" } else { "" },
        if o.recursive_triggers { "RECURSIVE_TRIGGERS" } else { "" }
    );
    Ok(())
}

fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, id: u32) -> Entry {
        Entry {
            name: name.into(),
            id,
            data_path: PathBuf::from(format!("/d/{name}.mdf")),
            log_path: PathBuf::from(format!("/d/{name}_log.ldf")),
            options: DatabaseOptions {
                max_data_size: Some(id as u64 * 8192),
                owner_sid: id.is_multiple_of(3).then(|| vec![id as u8, 0xab, 0]),
                limits: ResourceLimits {
                    max_concurrent_requests: id.is_multiple_of(5).then_some(id % 7),
                    max_cpu_percent: id.is_multiple_of(2).then_some(id % 100),
                    max_log_rate_kb: id.is_multiple_of(3).then_some(id * 1000),
                    cpu_share_percent: id.is_multiple_of(4).then_some(id % 100),
                    max_buffer_pool_mb: id.is_multiple_of(6).then_some(id * 3),
                    max_tempdb_mb: id.is_multiple_of(7).then_some(id * 5),
                },
                db_chaining: id.is_multiple_of(2),
                recursive_triggers: id.is_multiple_of(5),
                ..DatabaseOptions::default()
            },
            state: DbState::Online,
        }
    }

    fn key(name: &str) -> String {
        name.to_lowercase()
    }

    fn everything(loaded: &Loaded) -> impl FnOnce() -> (Vec<Entry>, Vec<Entry>) + '_ {
        || (loaded.entries.clone(), loaded.detached.clone())
    }

    /// Replaying the journal costs a lookup per change, not a scan of every database: a
    /// scan per change (each lower-casing every name) made a server with 100,000
    /// databases take minutes to start. Counted in calls of `key`, not timed.
    #[test]
    fn replay_names_each_change_once_however_many_databases_there_are() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("databases.reg");
        let (mut registry, mut model) = Registry::open(&path, key).unwrap();
        let databases = 5_000u32;
        let entries: Vec<Entry> = (1..=databases).map(|i| entry(&format!("Tenant{i}"), i)).collect();
        for e in &entries {
            model.entries.push(e.clone());
            registry.record(&[Change::Put(e)], everything(&model)).unwrap();
        }
        model.entries.retain(|e| e.name != "Tenant7");
        registry.record(&[Change::Remove("tenant7")], everything(&model)).unwrap();
        drop(registry);
        let calls = std::cell::Cell::new(0u64);
        let counting = |name: &str| {
            calls.set(calls.get() + 1);
            key(name)
        };
        let (_, loaded) = Registry::open(&path, counting).unwrap();
        assert_eq!(loaded.entries.len(), databases as usize - 1);
        assert!(calls.get() <= u64::from(databases) + 1, "{} calls of key for {databases} changes", calls.get());
    }

    /// Changes recorded, and the state they lead to, come back from the file; so does
    /// the state after the journal was rewritten.
    #[test]
    fn recorded_changes_replay_to_the_same_state_before_and_after_a_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("databases.reg");
        let (mut registry, mut model) = Registry::open(&path, key).unwrap();
        let mut rewrites = 0;
        for i in 1..2000u32 {
            let e = entry(&format!("Db{}", i % 300), i);
            let changes: Vec<Change> = match i % 7 {
                0 => vec![Change::Remove(&e.name)],
                1 => vec![Change::Remove(&e.name), Change::Detach(&e)],
                2 => vec![Change::Put(&e), Change::ForgetDetached(&e.data_path)],
                _ => vec![Change::Put(&e)],
            };
            for c in &changes {
                model.apply(*c, &key);
            }
            let before = registry.rewritten_bytes;
            registry.record(&changes, everything(&model)).unwrap();
            rewrites += usize::from(registry.rewritten_bytes != before);
        }
        assert!(rewrites > 0, "the journal was rewritten as it grew");
        drop(registry);
        let (_, loaded) = Registry::open(&path, key).unwrap();
        model.entries.sort_unstable_by_key(|e| e.id);
        assert_eq!(loaded.entries, model.entries);
        assert_eq!(loaded.detached, model.detached);
    }

    /// A line torn by a crash (no newline, or its CRC wrong) at the end is a change that
    /// never happened; anywhere else it is damage.
    #[test]
    fn a_torn_last_line_is_dropped_and_a_damaged_one_elsewhere_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("databases.reg");
        let (mut registry, _) = Registry::open(&path, key).unwrap();
        let (a, b) = (entry("a", 1), entry("b", 2));
        registry.record(&[Change::Put(&a)], || unreachable!()).unwrap();
        registry.record(&[Change::Put(&b)], || unreachable!()).unwrap();
        drop(registry);
        let text = std::fs::read_to_string(&path).unwrap();
        for torn in [&text[..text.len() - 1], &text[..text.len() - 20]] {
            std::fs::write(&path, torn).unwrap();
            let (_, loaded) = Registry::open(&path, key).unwrap();
            assert_eq!(loaded.entries, vec![a.clone()]);
            std::fs::write(&path, &text).unwrap();
        }
        let mut flipped = text.clone().into_bytes();
        let at = text.find("\ta\t").unwrap() + 1;
        flipped[at] = b'z';
        std::fs::write(&path, &flipped).unwrap();
        let e = Registry::open(&path, key).err().expect("a damaged line is refused");
        assert!(e.to_string().contains("line 2 is damaged"), "{e}");
    }

    /// A registry written before the journal (one entry per line) reads as it was and is
    /// rewritten as a journal.
    #[test]
    fn a_registry_from_before_the_journal_is_read_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("databases.reg");
        std::fs::write(
            &path,
            "master\t1\t/d/master.mdf\t/d/master_log.ldf\tSIMPLE\tDISABLED\n\
             gone\t2\t/d/gone.mdf\t/d/gone_log.ldf\tFULL\tDISABLED\tDETACHED\t\t\t\t\t\t\t\n",
        )
        .unwrap();
        let (_, loaded) = Registry::open(&path, key).unwrap();
        assert_eq!(loaded.entries.iter().map(|e| &e.name[..]).collect::<Vec<_>>(), ["master"]);
        assert_eq!(loaded.detached.iter().map(|e| &e.name[..]).collect::<Vec<_>>(), ["gone"]);
        assert!(std::fs::read_to_string(&path).unwrap().starts_with(HEADER));
        let (_, again) = Registry::open(&path, key).unwrap();
        assert_eq!((again.entries, again.detached), (loaded.entries, loaded.detached));
    }

    /// A registry of another format (a newer build's) is refused, named, and left as it
    /// was; so is a header that only starts like ours.
    #[test]
    fn a_registry_of_another_format_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("databases.reg");
        for text in ["tessera-registry 3\nx\n", "tessera-registry 20\n"] {
            std::fs::write(&path, text).unwrap();
            let Err(e) = Registry::open(&path, key) else { panic!("opened a registry of another format") };
            assert!(e.to_string().contains("this build reads format 2"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }
}
