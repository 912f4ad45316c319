//! The instance's decisions on transactions that change more than one database
//! (`<data dir>/decisions.log`): two-phase commit inside one instance, as SQL Server
//! commits a transaction across its databases.
//!
//! Each database has its own log, so no one log's commit record can commit them all.
//! [`crate::Transaction::commit_together`] does it in two phases:
//!
//! 1. every database the transaction changed logs a Prepare record naming a fresh
//!    decision id and makes it durable (its locks still held);
//! 2. the decision `C <id>` is appended here and synced: **the commit point**;
//! 3. every database logs its Commit record (durable), releasing its locks;
//! 4. `F <id>` is appended (not synced): the decision is no longer needed.
//!
//! A database whose recovery finds a Prepare record with no Commit or End after it asks
//! this journal: a live `C` commits the transaction, anything else rolls it back
//! (presumed abort: a crash before step 2 leaves no decision, and a decision is
//! forgotten only once every database's Commit record is durable, step 3).
//!
//! Format: a first line `tessera-decisions 1`, then lines `<crc32c 8 hex>\t<C|F>\t<id 32
//! hex>`, the crc over the text after the first tab. A last line torn by a crash is
//! ignored; a damaged line before it makes the open fail. When an open finds more than
//! live decisions in it, and when it has grown past [`REWRITE_BYTES`], it is rewritten
//! (atomically) with the live decisions only.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use tessera_errors::{Error, Result};
use tessera_io::{DataFile, OpenMode};

const HEADER: &str = "tessera-decisions 1";
/// The journal is rewritten with the live decisions when it grows past this.
const REWRITE_BYTES: u64 = 64 << 10;

/// Why [`Decisions::decide`] did not make a decision.
#[derive(Debug)]
pub(crate) enum Undecided {
    /// Nothing that reads as a decision reached the file: the transaction rolls back.
    NotMade(Error),
    /// The line was written but its sync failed: it may be on disk or not.
    InDoubt(Error),
}

/// The journal of commit decisions (see the module documentation).
pub(crate) struct Decisions {
    path: PathBuf,
    inner: Mutex<Inner>,
}

struct Inner {
    file: DataFile,
    len_bytes: u64,
    /// Decided to commit and not yet forgotten.
    live: HashSet<u128>,
    /// A write or sync failed: whether the last decision is on disk is unknown, so no
    /// more are made until the instance starts again.
    failed: bool,
}

fn line(op: char, id: u128) -> String {
    let text = format!("{op}\t{id:032x}");
    format!("{:08x}\t{text}\n", crc32c::crc32c(text.as_bytes()))
}

/// The decisions a journal's text leaves live, and whether the text holds anything else
/// (forgotten decisions, a torn last line): then it is rewritten.
fn replay(path: &Path, text: &str) -> Result<(HashSet<u128>, bool)> {
    let damaged = |n: usize| Error::Invalid(format!("{}: line {n} is damaged", path.display()));
    let mut lines = text.split_inclusive('\n').enumerate();
    match lines.next() {
        Some((_, first)) if first.trim_end() == HEADER => {}
        _ => return Err(Error::Invalid(format!("{}: not a decisions journal ({HEADER})", path.display()))),
    }
    let mut live = HashSet::new();
    let mut untidy = false;
    let lines: Vec<(usize, &str)> = lines.collect();
    for (i, &(n, raw)) in lines.iter().enumerate() {
        let parsed = raw.strip_suffix('\n').and_then(|l| {
            let (crc, text) = l.split_once('\t')?;
            (u32::from_str_radix(crc, 16).ok()? == crc32c::crc32c(text.as_bytes())).then_some(())?;
            let (op, id) = text.split_once('\t')?;
            Some((op, u128::from_str_radix(id, 16).ok()?))
        });
        match parsed {
            Some(("C", id)) => {
                live.insert(id);
            }
            Some(("F", id)) => {
                live.remove(&id);
                untidy = true;
            }
            // Torn by a crash while it was appended: it never counted.
            _ if i + 1 == lines.len() => untidy = true,
            _ => return Err(damaged(n + 1)),
        }
    }
    Ok((live, untidy))
}

/// Writes a journal holding `live` over `path`, atomically; returns it opened, and its length.
fn rewrite(path: &Path, live: &HashSet<u128>) -> Result<(DataFile, u64)> {
    let mut text = format!("{HEADER}\n");
    for id in live {
        text.push_str(&line('C', *id));
    }
    tessera_io::durable::write_atomically(path, text.as_bytes(), 0o644)?;
    Ok((DataFile::open(path, OpenMode::Existing, false)?, text.len() as u64))
}

impl Decisions {
    /// Opens (or makes) the journal in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Decisions> {
        let path = dir.join("decisions.log");
        let (live, untidy, len) = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let (live, untidy) = replay(&path, &text)?;
                (live, untidy, text.len() as u64)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (HashSet::new(), true, 0),
            Err(e) => return Err(Error::io("read", &path, 0, e)),
        };
        // Rewritten only when it holds more than its live decisions: an open writes
        // nothing otherwise (a full disk must not keep the instance from starting).
        let (file, len_bytes) =
            if untidy { rewrite(&path, &live)? } else { (DataFile::open(&path, OpenMode::Existing, false)?, len) };
        Ok(Decisions { path, inner: Mutex::new(Inner { file, len_bytes, live, failed: false }) })
    }

    /// Makes the decision to commit `id` durable: the commit point of a transaction
    /// across databases.
    pub(crate) fn decide(&self, id: u128) -> std::result::Result<(), Undecided> {
        let mut inner = self.inner.lock();
        if inner.failed {
            return Err(Undecided::NotMade(Error::Invalid(format!(
                "{}: an earlier sync failed; no transaction across databases commits until the server starts again",
                self.path.display()
            ))));
        }
        let text = line('C', id);
        let at = inner.len_bytes;
        if let Err(e) = inner.file.write_all_at(text.as_bytes(), at) {
            // Not written whole, so not a decision (a line without its end is torn). Cut
            // off, the next decision goes where it would have.
            if inner.file.set_len(at).is_err() {
                inner.failed = true;
            }
            return Err(Undecided::NotMade(e));
        }
        inner.len_bytes += text.len() as u64;
        if let Err(e) = inner.file.sync_data() {
            // Written, perhaps on disk: in doubt.
            inner.failed = true;
            return Err(Undecided::InDoubt(e));
        }
        inner.live.insert(id);
        Ok(())
    }

    /// Forgets `id`: every database's Commit record of it is durable. Not synced (a
    /// decision remembered too long is harmless); a failure only leaves it remembered.
    pub(crate) fn forget(&self, id: u128) {
        let mut inner = self.inner.lock();
        if inner.failed || !inner.live.remove(&id) {
            return;
        }
        let text = line('F', id);
        let at = inner.len_bytes;
        if inner.file.write_all_at(text.as_bytes(), at).is_err() {
            inner.failed = true;
            return;
        }
        inner.len_bytes += text.len() as u64;
        if inner.len_bytes > REWRITE_BYTES {
            if let Ok((file, len)) = rewrite(&self.path, &inner.live) {
                inner.file = file;
                inner.len_bytes = len;
            }
        }
    }

    /// Whether the instance decided to commit `id` (and has not forgotten it).
    pub(crate) fn decided_to_commit(&self, id: u128) -> bool {
        self.inner.lock().live.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_survive_an_open_and_forgotten_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = Decisions::open(dir.path()).unwrap();
        d.decide(7).unwrap();
        d.decide(u128::MAX).unwrap();
        d.forget(7);
        assert!(!d.decided_to_commit(7) && d.decided_to_commit(u128::MAX));
        drop(d);
        let d = Decisions::open(dir.path()).unwrap();
        assert!(!d.decided_to_commit(7) && d.decided_to_commit(u128::MAX));
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_a_damaged_one_before_it_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("decisions.log");
        let whole = format!("{HEADER}\n{}{}", line('C', 1), line('C', 2));
        std::fs::write(&path, &whole[..whole.len() - 5]).unwrap();
        let d = Decisions::open(dir.path()).unwrap();
        assert!(d.decided_to_commit(1) && !d.decided_to_commit(2));
        drop(d);
        let damaged = format!("{HEADER}\n{}{}", line('C', 1).replace("\tC\t", "\tF\t"), line('C', 2));
        std::fs::write(&path, damaged).unwrap();
        let e = Decisions::open(dir.path()).err().expect("refused");
        assert!(e.to_string().contains("line 2 is damaged"), "{e}");
    }

    #[test]
    fn a_decision_not_written_whole_is_no_decision_and_one_not_synced_is_in_doubt() {
        use tessera_io::faults::{self, Fault, Op};
        let dir = tempfile::tempdir().unwrap();
        let d = Decisions::open(dir.path()).unwrap();
        faults::arm(Fault { partial: true, ..Fault::new(Op::Write, dir.path(), "decisions.log", libc::ENOSPC) });
        assert!(matches!(d.decide(1), Err(Undecided::NotMade(_))));
        d.decide(2).unwrap();
        faults::arm(Fault::new(Op::Sync, dir.path(), "decisions.log", libc::EIO));
        assert!(matches!(d.decide(3), Err(Undecided::InDoubt(_))));
        assert!(matches!(d.decide(4), Err(Undecided::NotMade(_))), "no decision after a failed sync");
        drop(d);
        let d = Decisions::open(dir.path()).unwrap();
        assert!(!d.decided_to_commit(1) && d.decided_to_commit(2) && !d.decided_to_commit(4));
    }

    #[test]
    fn the_journal_is_rewritten_when_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let d = Decisions::open(dir.path()).unwrap();
        for id in 0..2000 {
            d.decide(id).unwrap();
            d.forget(id);
        }
        d.decide(5000).unwrap();
        assert!(std::fs::metadata(dir.path().join("decisions.log")).unwrap().len() < REWRITE_BYTES);
        drop(d);
        assert!(Decisions::open(dir.path()).unwrap().decided_to_commit(5000));
    }
}
