//! Named instances, as SQL Server has them: the naming rules, an instance's default data
//! directory, and the host-wide directory where every running named instance registers
//! its name, TCP port and process id for the SQL Server Browser (`browser`).
//!
//! Invariant: an entry in the instances directory is live exactly while some process holds
//! an exclusive `flock` on it. The registering server holds it for its life and the kernel
//! drops it however the process ends, so an entry whose lock can be taken belongs to a dead
//! process: readers skip it and remove it. Holding the lock also makes an instance name
//! unique on the host.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::config::DEFAULT_DATA_DIR;

/// SQL Server's longest instance name.
pub const MAX_NAME_LEN: usize = 16;

/// Names SQL Server setup refuses besides its reserved keywords.
const RESERVED_NAMES: &[&str] = &["DEFAULT", "MSSQLSERVER"];

/// Checks `name` against SQL Server's rules for instance names (at most 16 characters, a
/// letter first, then letters, digits, `_` or `$`; not `DEFAULT`, `MSSQLSERVER` or a
/// reserved keyword) and returns it in upper case, as SQL Server keeps instance names
/// (they are not case-sensitive).
pub fn validate_name(name: &str) -> Result<String, String> {
    let invalid = |why: &str| Err(format!("'{name}' is not a valid instance name: {why}."));
    let mut chars = name.chars();
    match chars.next() {
        None => return invalid("it is empty"),
        Some(c) if !c.is_alphabetic() => return invalid("the first character must be a letter"),
        Some(_) => {}
    }
    if name.chars().count() > MAX_NAME_LEN {
        return invalid(&format!("it is longer than {MAX_NAME_LEN} characters"));
    }
    if let Some(c) = chars.find(|c| !(c.is_alphanumeric() || *c == '_' || *c == '$')) {
        return invalid(&format!("'{c}' is not allowed (only letters, digits, '_' and '$')"));
    }
    let upper = name.to_uppercase();
    if RESERVED_NAMES.contains(&upper.as_str()) || tessera_syntax::parser::is_reserved(&upper) {
        return invalid("it is a reserved name");
    }
    Ok(upper)
}

/// Where a named instance keeps its data when no data directory is given:
/// `tessera-data/instances/NAME`, beside (not inside) the default instance's databases.
pub fn default_data_dir(name: &str) -> PathBuf {
    Path::new(DEFAULT_DATA_DIR).join("instances").join(name)
}

/// The host-wide instances directory when none is configured: `tessera-instances` in the
/// system's temporary directory (`$TMPDIR`, else `/tmp`), shared by every user's instances.
pub fn default_instances_dir() -> PathBuf {
    std::env::temp_dir().join("tessera-instances")
}

/// A running instance as its entry records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub port: u16,
    pub pid: u32,
}

/// This process's entry in the instances directory, locked for as long as it lives;
/// removed when dropped.
#[derive(Debug)]
pub struct Registration {
    file: File,
    path: PathBuf,
    name: String,
}

fn flock(file: &File, how: libc::c_int) -> bool {
    // SAFETY: flock on a descriptor the caller owns; no memory is involved.
    unsafe { libc::flock(file.as_raw_fd(), how) == 0 }
}

fn open_entry(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

/// Creates the instances directory (sticky and writable by every user, as /tmp is, when
/// this call makes it).
fn ensure_dir(dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)))
        .map_err(|e| format!("cannot create the instances directory '{}': {e}", dir.display()))
}

/// Registers instance `name` listening on `port` in `dir`, or fails if a live process
/// has registered that name already.
pub fn register(dir: &Path, name: &str, port: u16) -> Result<Registration, String> {
    ensure_dir(dir)?;
    let path = dir.join(name);
    loop {
        let file =
            open_entry(&path).map_err(|e| format!("cannot create the instance entry '{}': {e}", path.display()))?;
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            let holder = read_entry(&mut &file, name).map(|e| e.pid.to_string()).unwrap_or_else(|| "?".into());
            return Err(format!("the instance {name} is already running on this host (pid {holder})."));
        }
        // A reader may have removed this stale entry between our open and our lock: then
        // the lock is on a file no longer in the directory, so start again.
        let ours = file.metadata().map(|m| m.ino()).ok();
        if ours.is_none() || std::fs::metadata(&path).map(|m| m.ino()).ok() != ours {
            continue;
        }
        let mut entry = Registration { file, path, name: name.to_string() };
        entry.set_port(port)?;
        return Ok(entry);
    }
}

impl Registration {
    /// Records the port the instance listens on (0 while it is not yet known: such an
    /// entry is not published).
    pub fn set_port(&mut self, port: u16) -> Result<(), String> {
        let text = format!("instance={}\nport={port}\npid={}\n", self.name, std::process::id());
        self.file
            .set_len(0)
            .and_then(|()| self.file.write_all_at(text.as_bytes(), 0))
            .map_err(|e| format!("cannot write the instance entry '{}': {e}", self.path.display()))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        flock(&self.file, libc::LOCK_UN);
    }
}

fn read_entry(mut file: impl Read, name: &str) -> Option<Entry> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    let field =
        |key: &str| text.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix('='))).map(str::trim);
    (field("instance")? == name).then_some(())?;
    Some(Entry { name: name.to_string(), port: field("port")?.parse().ok()?, pid: field("pid")?.parse().ok()? })
}

/// The live instances registered in `dir`, by name; entries of processes that have ended
/// are removed on the way.
pub fn live(dir: &Path) -> Vec<Entry> {
    let Ok(list) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut entries = Vec::new();
    for item in list.flatten() {
        let Some(name) = item.file_name().to_str().map(str::to_string) else { continue };
        let path = item.path();
        let Ok(file) = File::open(&path) else { continue };
        if flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            // Nobody holds it: its process is gone.
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if let Some(entry) = read_entry(&file, &name).filter(|e| e.port != 0) {
            entries.push(entry);
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_sql_servers_rules() {
        assert_eq!(validate_name("sqlExpress").unwrap(), "SQLEXPRESS");
        assert_eq!(validate_name("a_1$").unwrap(), "A_1$");
        assert_eq!(validate_name("ABCDEFGHIJKLMNOP").unwrap(), "ABCDEFGHIJKLMNOP");
        for (bad, why) in [
            ("", "empty"),
            ("1abc", "first character"),
            ("_abc", "first character"),
            ("ABCDEFGHIJKLMNOPQ", "longer than 16"),
            ("a-b", "'-' is not allowed"),
            ("a b", "' ' is not allowed"),
            ("a\\b", "'\\' is not allowed"),
            ("Default", "reserved"),
            ("mssqlserver", "reserved"),
            ("select", "reserved"),
        ] {
            let e = validate_name(bad).unwrap_err();
            assert!(e.contains("not a valid instance name") && e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn entries_live_while_registered_and_names_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("reg");
        let a = register(&reg, "ALPHA", 50001).unwrap();
        let b = register(&reg, "BETA", 50002).unwrap();
        let pid = std::process::id();
        assert_eq!(
            live(&reg),
            [Entry { name: "ALPHA".into(), port: 50001, pid }, Entry { name: "BETA".into(), port: 50002, pid }]
        );
        let e = register(&reg, "ALPHA", 50003).unwrap_err();
        assert!(e.contains("ALPHA is already running") && e.contains(&pid.to_string()), "{e}");
        drop(a);
        assert_eq!(live(&reg), [Entry { name: "BETA".into(), port: 50002, pid }]);
        // An entry nobody holds (its process died) is ignored and removed.
        std::fs::write(reg.join("GHOST"), "instance=GHOST\nport=1\npid=1\n").unwrap();
        assert_eq!(live(&reg).len(), 1);
        assert!(!reg.join("GHOST").exists());
        drop(b);
        assert!(live(&reg).is_empty());
        register(&reg, "ALPHA", 50004).unwrap();
    }
}
