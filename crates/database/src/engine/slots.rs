//! The registered databases (`Slot`s) by name, with the indexes that keep the engine's
//! work per database independent of how many are registered: which database owns a file
//! path (checked by every restore and copy) or id (`DB_NAME` and the catalog views),
//! which is open (walked by the open limit and
//! the once-a-second maintenance), and which open ones have their log flushed in the
//! background (walked every tick). A server holds 100,000 databases with 20,000 of them
//! open; a walk over every registered slot per copy or per tick is what made copies slow
//! down as the registry grew.
//!
//! Invariants (all under `Engine::inner`, which owns the `Slots`):
//! - `files` maps each registered database's data and log paths to its key; a slot's
//!   paths change only through [`Slots::repath`].
//! - `open` holds every slot whose `open` handle is set, and `flushing` those of them
//!   whose options flush the log in the background; whoever opens, closes or alters a
//!   database calls [`Slots::note`] afterwards, under `Engine::inner`, and `note` reads
//!   the slot's present state, so the last caller leaves the sets right whatever the
//!   order. Walkers still check each slot they take (a set may name one that closed a
//!   moment ago).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::database::Database;
use crate::registry::Entry;

/// A registered database and, while it is open, its handle.
pub(super) struct Slot {
    pub(super) entry: Mutex<Entry>,
    pub(super) open: Mutex<Option<Arc<Database>>>,
    /// When it was last closed (None: not since the engine started).
    pub(super) closed_at: Mutex<Option<SystemTime>>,
    /// Set, under the `open` lock, when the database leaves the engine (DROP, detach): a
    /// thread that found the slot before then reports the database missing instead of
    /// opening its files again.
    pub(super) retired: AtomicBool,
    /// Held by the engine's own work on the database (the background thread's log
    /// flush, checkpoint and idle close), which takes a handle for that long. DROP,
    /// detach and RESTORE hold it while they look for other holders, so the engine's own
    /// work is waited for, never taken for a user of the database. Taken before
    /// `Engine::inner` by whoever takes both.
    pub(super) engine_work: Mutex<()>,
}

impl Slot {
    pub(super) fn new(entry: Entry, open: Option<Arc<Database>>) -> Arc<Slot> {
        Arc::new(Slot {
            entry: Mutex::new(entry),
            open: Mutex::new(open),
            closed_at: Mutex::new(None),
            retired: AtomicBool::new(false),
            engine_work: Mutex::new(()),
        })
    }

    /// The open database's handle (None: closed).
    pub(super) fn database(&self) -> Option<Arc<Database>> {
        self.open.lock().clone()
    }

    /// When the open database was last used (None: closed).
    pub(super) fn last_used_at(&self) -> Option<std::time::Instant> {
        self.open.lock().as_ref().map(|db| db.last_used_at())
    }
}

/// A slot's identity in the sets: its address (a slot is never moved while registered).
fn id(slot: &Arc<Slot>) -> usize {
    Arc::as_ptr(slot) as usize
}

/// The registered databases by lower-cased name, and their indexes (see the module).
#[derive(Default)]
pub(super) struct Slots {
    by_key: HashMap<String, Arc<Slot>>,
    /// Data or log path → the key of the database that owns it.
    files: HashMap<PathBuf, String>,
    /// Database id → its key (an id never changes while registered).
    ids: HashMap<u32, String>,
    open: HashMap<usize, Arc<Slot>>,
    flushing: HashMap<usize, Arc<Slot>>,
}

impl Slots {
    pub(super) fn get(&self, key: &str) -> Option<&Arc<Slot>> {
        self.by_key.get(key)
    }

    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<Slot>> {
        self.by_key.values()
    }

    /// Registers `slot` under `key` (which must be free), its files and, if it is open,
    /// its place in the open sets.
    pub(super) fn insert(&mut self, key: String, slot: Arc<Slot>) {
        {
            let e = slot.entry.lock();
            for path in [&e.data_path, &e.log_path] {
                self.files.insert(path.clone(), key.clone());
            }
            self.ids.insert(e.id, key.clone());
        }
        self.note(&slot);
        let previous = self.by_key.insert(key, slot);
        assert!(previous.is_none(), "a database registered twice under one name");
    }

    /// Forgets the database under `key`, its files and its place in the open sets.
    pub(super) fn remove(&mut self, key: &str) -> Option<Arc<Slot>> {
        let slot = self.by_key.remove(key)?;
        let e = slot.entry.lock();
        for path in [&e.data_path, &e.log_path] {
            if self.files.get(path).is_some_and(|owner| owner == key) {
                self.files.remove(path);
            }
        }
        if self.ids.get(&e.id).is_some_and(|owner| owner == key) {
            self.ids.remove(&e.id);
        }
        drop(e);
        self.open.remove(&id(&slot));
        self.flushing.remove(&id(&slot));
        Some(slot)
    }

    /// Moves the database under `key` to new files (a restore over it).
    pub(super) fn repath(&mut self, key: &str, data_path: &Path, log_path: &Path) {
        let Some(slot) = self.by_key.get(key) else { return };
        let mut e = slot.entry.lock();
        for path in [&e.data_path, &e.log_path] {
            if self.files.get(path).is_some_and(|owner| owner == key) {
                self.files.remove(path);
            }
        }
        e.data_path = data_path.to_path_buf();
        e.log_path = log_path.to_path_buf();
        for path in [data_path, log_path] {
            self.files.insert(path.to_path_buf(), key.to_string());
        }
    }

    /// The registered database with id `id`.
    pub(super) fn by_id(&self, id: u32) -> Option<&Arc<Slot>> {
        self.ids.get(&id).and_then(|key| self.by_key.get(key))
    }

    /// The key of the registered database whose data or log file is `path`.
    pub(super) fn owner_of(&self, path: &Path) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }

    /// Brings `slot`'s place in the open sets up to its present state (see the module).
    pub(super) fn note(&mut self, slot: &Arc<Slot>) {
        let flushes = slot.open.lock().as_ref().map(|db| db.options().flushes_in_background());
        let registered = {
            let key = crate::engine::key(&slot.entry.lock().name);
            self.by_key.get(&key).is_none_or(|s| Arc::ptr_eq(s, slot))
        };
        match flushes.filter(|_| registered) {
            None => {
                self.open.remove(&id(slot));
                self.flushing.remove(&id(slot));
            }
            Some(flushes) => {
                self.open.insert(id(slot), slot.clone());
                if flushes {
                    self.flushing.insert(id(slot), slot.clone());
                } else {
                    self.flushing.remove(&id(slot));
                }
            }
        }
    }

    /// The slots of the open databases (and perhaps one that closed a moment ago).
    pub(super) fn open(&self) -> Vec<Arc<Slot>> {
        self.open.values().cloned().collect()
    }

    /// The open databases whose log is flushed in the background (delayed durability).
    pub(super) fn flushing(&self) -> Vec<Arc<Slot>> {
        self.flushing.values().cloned().collect()
    }

    /// How many databases are open.
    pub(super) fn open_count(&self) -> usize {
        self.open.len()
    }
}
