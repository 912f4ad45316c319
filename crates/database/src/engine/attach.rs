//! Detaching and attaching databases: a tenant's files moved between instances.
//!
//! The registry is the truth, as for CREATE and DROP DATABASE. Detach checkpoints and
//! closes the database (its data file then holds every committed change, and its log
//! needs no redo), then saves a registry without it — the saved registry remembers its
//! files as DETACHED, so that a later CREATE DATABASE of the name refuses them (5170)
//! instead of deleting them as a crash's orphans. A crash before the save leaves the
//! database attached; after it, detached with intact files. Attach checks the files
//! (both exist, the data file's header page is a tessera one, the log file is a tessera
//! log), opens the database — crash recovery over its own log — and only then saves a
//! registry that names it: a crash before the save leaves the files recovered and
//! unattached, after it an attached database.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tessera_access::space::{HeaderFault, Space, FORMAT_VERSION};
use tessera_errors::{msg, Error, Result};

use super::{key, Engine, Slot};
use crate::database::{Database, DatabaseOptions};
use crate::registry::{self, Change, DbState, Entry};

fn not_valid_header(path: &Path, property: &str) -> Error {
    msg::INVALID_FILE_HEADER.engine(&[&path.display(), &property])
}

fn unable_to_open(path: &Path, os_error: i32, text: &str) -> Error {
    let why = format!(". Operating system error {os_error}: \"{os_error}({text})\".");
    msg::PHYSICAL_FILE_OPEN_FAILED.engine(&[&"physical file", &path.display(), &why])
}

/// The path as the file system resolves it (symbolic links, `..`), for comparing files.
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Engine {
    /// `sp_detach_db`: checkpoints and closes the database and removes it from the
    /// registry, leaving its files. 3703 if anything holds it open, 7940 for master.
    pub fn detach_database(&self, name: &str) -> Result<()> {
        if key(name) == "master" {
            return Err(msg::DETACH_SYSTEM_DATABASE.engine(&[]));
        }
        let slot = self.slot(name)?;
        let _quiet = slot.engine_work.lock();
        let mut inner = self.inner.lock();
        if !inner.slots.get(&key(name)).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            // Dropped (and perhaps created again) while this waited.
            drop(inner);
            return self.detach_database(name);
        }
        {
            let mut open = slot.open.lock();
            if let Some(db) = open.take() {
                match Arc::try_unwrap(db) {
                    Ok(db) => {
                        if let Err(e) = db.checkpoint() {
                            *open = Some(Arc::new(db));
                            return Err(e);
                        }
                    }
                    Err(db) => {
                        *open = Some(db);
                        return Err(msg::DETACH_DATABASE_IN_USE.engine(&[&"database", &name]));
                    }
                }
            }
            slot.retired.store(true, Ordering::Release);
        }
        let entry = slot.entry.lock().clone();
        inner.slots.remove(&key(name));
        let saved_detached = inner.detached.clone();
        registry::remember_detached(&mut inner.detached, entry.clone());
        if let Err(e) = Engine::record(&mut inner, &[Change::Remove(name), Change::Detach(&entry)]) {
            // Still registered on disk: still attached (closed).
            slot.retired.store(false, Ordering::Release);
            inner.detached = saved_detached;
            inner.slots.insert(key(name), slot.clone());
            return Err(e);
        }
        Ok(())
    }

    /// `CREATE DATABASE … FOR ATTACH`: registers existing files as the database `name`
    /// and opens it (running recovery). Files detached from this instance keep the
    /// options they had (recovery model, delayed durability, sizes); others get
    /// `options`. Errors: 1801 (the name exists), 5120 (a file is missing or another
    /// database uses it), 5172 (not a tessera data or log file), 5173 (the log is another
    /// database's: the files' families differ), 948 (files of a newer format).
    pub fn attach_database(
        &self,
        name: &str,
        data_path: &Path,
        log_path: &Path,
        options: DatabaseOptions,
    ) -> Result<()> {
        if name.is_empty() || name.len() > 128 || name.contains(['/', '\\', '\t', '\n', '\0']) {
            return Err(Error::Invalid(format!("'{name}' is not a valid database name")));
        }
        let mut inner = self.inner.lock();
        if inner.slots.contains_key(&key(name)) {
            return Err(Error::AlreadyExists { kind: "database", name: name.to_string() });
        }
        for path in [data_path, log_path] {
            if !path.is_file() {
                return Err(unable_to_open(path, 2, "The system cannot find the file specified."));
            }
            let here = resolved(path);
            let used = inner.slots.values().any(|s| {
                let e = s.entry.lock();
                resolved(&e.data_path) == here || resolved(&e.log_path) == here
            });
            if used {
                return Err(unable_to_open(
                    path,
                    32,
                    "The process cannot access the file because it is being used by another process.",
                ));
            }
        }
        if resolved(data_path) == resolved(log_path) {
            return Err(not_valid_header(log_path, "file type"));
        }
        match Space::probe_header(data_path) {
            Ok(Ok(_family)) => {}
            Ok(Err(HeaderFault::Invalid(property))) => return Err(not_valid_header(data_path, property)),
            Ok(Err(HeaderFault::Newer(version))) => {
                return Err(Error::NewerFormat { database: name.to_string(), version, supported: FORMAT_VERSION })
            }
            Err(e) => return Err(unable_to_open(data_path, e.raw_os_error().unwrap_or(5), &e.to_string())),
        }
        let remembered = inner.detached.iter().position(|d| d.data_path == data_path && d.log_path == log_path);
        // Files detached here keep their options; the attaching login owns the database.
        let options = match remembered {
            // An attached database lets no ownership chain in until a sysadmin says so
            // again, as in SQL Server.
            Some(i) => DatabaseOptions {
                owner_sid: options.owner_sid,
                db_chaining: false,
                ..inner.detached[i].options.clone()
            },
            None => options,
        };
        let entry = Entry {
            name: name.to_string(),
            id: inner.new_id(name),
            data_path: data_path.to_path_buf(),
            log_path: log_path.to_path_buf(),
            options: DatabaseOptions { data_path: None, log_path: None, ..options },
            state: DbState::Online,
        };
        let db = Database::open(&entry, &self.host()).map_err(|e| match e {
            Error::Corrupt { path, .. } if path == log_path => not_valid_header(log_path, "file type"),
            Error::Io { path, source, .. }
                if path == log_path && source.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                not_valid_header(log_path, "FILE SIZE")
            }
            e => e,
        })?;
        db.set_version_store_max_bytes(self.config.version_store_max_bytes);
        let slot = Slot::new(entry.clone(), Some(Arc::new(db)));
        inner.slots.insert(key(name), slot);
        inner.id_taken(entry.id);
        let saved_detached = inner.detached.clone();
        registry::forget_detached(&mut inner.detached, data_path);
        registry::forget_detached(&mut inner.detached, log_path);
        if let Err(e) = Engine::record(
            &mut inner,
            &[Change::Put(&entry), Change::ForgetDetached(data_path), Change::ForgetDetached(log_path)],
        ) {
            inner.slots.remove(&key(name));
            inner.detached = saved_detached;
            return Err(e);
        }
        drop(inner);
        self.enforce_open_limit();
        Ok(())
    }
}
