//! The file registry: the registered files, each with its page table, and the lock-free
//! lookup of a file's radix through the slot table; `register` and `discard` (README,
//! "Files: register, discard, flush").

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tessera_errors::Error;

use super::frame::{Kind, State};
use super::quota::FileQuota;
use super::table::{key, Radix, RadixRef, SlotTable};
use super::{FileId, Inner, PageStore};

pub(super) struct FileEntry {
    pub(super) id: FileId,
    pub(super) store: Arc<dyn PageStore>,
    /// The file's page table (README, "Page table").
    pub(super) radix: RadixRef,
    /// Set by `discard` (with the entry's removal from the registry). A thread that sees it
    /// clear while holding a shard mutex may use `radix` for keys of that shard until it
    /// releases the mutex; once it is set, the radix may already serve another file.
    pub(super) closed: AtomicBool,
    /// Its resident pages and their limit (README, "Per-file limits").
    pub(super) quota: FileQuota,
}

pub(super) struct Files {
    pub(super) map: HashMap<u32, Arc<FileEntry>>,
    pub(super) next: u32,
    /// Every slot table built so far; the last is current (`Inner::slots`). Replaced tables
    /// are kept because a lock-free reader may still be looking at one. Boxed: readers hold
    /// their addresses, which must not move when the `Vec` grows.
    #[allow(clippy::vec_box)]
    pub(super) tables: Vec<Box<SlotTable>>,
    /// Every radix built so far, in use or spare. Kept, and boxed, for the same reasons.
    #[allow(clippy::vec_box)]
    pub(super) radixes: Vec<Box<Radix>>,
    /// Radixes of discarded files, emptied, ready for the next `register`.
    pub(super) spare: Vec<RadixRef>,
}

impl Files {
    pub(super) fn table(&self) -> &SlotTable {
        self.tables.last().expect("the registry always has a slot table")
    }
}

pub(super) fn not_registered(file: FileId) -> Error {
    Error::Invalid(format!("buffer pool: file {} is not registered", file.0))
}

impl Inner {
    /// The registered file, through the registry lock (not for the hit path). An entry found
    /// while holding a shard mutex stays open until that mutex is released (see `discard`).
    pub(super) fn entry(&self, file: FileId) -> Option<Arc<FileEntry>> {
        self.files.read().map.get(&file.0).cloned()
    }

    pub(super) fn slot_table(&self) -> &SlotTable {
        // SAFETY: `slots` always points at a table owned by `files`, which keeps every table
        // it ever built until `self` drops.
        unsafe { &*self.slots.load(Ordering::Acquire) }
    }

    pub(super) fn register(&self, store: Arc<dyn PageStore>) -> FileId {
        let mut guard = self.files.write();
        let files = &mut *guard;
        if (files.map.len() + 1) * 2 > files.table().len() {
            // Double the slot table. Every registered id keeps a slot of its own: two ids
            // that differ in their low bits still differ with one more bit.
            let table = Box::new(SlotTable::new(files.table().len() * 2));
            for (&id, e) in files.map.iter() {
                table.set(id, e.radix);
            }
            self.slots.store(&*table as *const SlotTable as *mut SlotTable, Ordering::Release);
            files.tables.push(table);
        }
        loop {
            let id = files.next;
            files.next = if id >= u32::MAX - 1 { 1 } else { id + 1 };
            // A registered id holds its slot, so a free slot also means the id is not in use.
            if !files.table().is_free(id) {
                continue;
            }
            assert!(!files.map.contains_key(&id));
            let radix = match files.spare.pop() {
                Some(r) => r,
                None => {
                    let b = Box::new(Radix::new());
                    // SAFETY: the box is kept in `files.radixes` until the pool drops.
                    let r = unsafe { RadixRef::new(&b) };
                    files.radixes.push(b);
                    r
                }
            };
            debug_assert!(radix.get().resident().is_empty(), "a spare radix must be empty");
            files.table().set(id, radix);
            let entry =
                FileEntry { id: FileId(id), store, radix, closed: AtomicBool::new(false), quota: FileQuota::default() };
            files.map.insert(id, Arc::new(entry));
            return FileId(id);
        }
    }

    pub(super) fn discard(&self, file: FileId) {
        if let Some(ext) = self.extension() {
            ext.invalidate_file(file.0);
        }
        let entry = {
            let files = &mut *self.files.write();
            let Some(entry) = files.map.remove(&file.0) else { return };
            entry.closed.store(true, Ordering::Release);
            files.table().clear(file.0);
            entry
        };
        // Pass every shard mutex once. Whoever saw the file open under a shard mutex (a
        // loader about to map a page, an evictor, a flush) is done with the radix after
        // this, and whoever takes a shard mutex later sees it closed: from here on only we
        // change the radix, and entries only go from mapped to empty.
        for s in self.shards.iter() {
            drop(s.0.lock());
        }
        let radix = entry.radix.get();
        for (no, _) in radix.resident() {
            let k = key(file, no);
            let g = self.shard(k).0.lock();
            let Some(i) = radix.entry(no).and_then(|e| e.swap(0, Ordering::AcqRel).checked_sub(1)) else { continue };
            let f = self.frame(i);
            let prev = f
                .state
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |x| {
                    let s = State(x);
                    Some(if s.pins() == 0 { State::new(Kind::Owned, 0, 0) } else { s.with_kind(Kind::Orphan) }.0)
                })
                .unwrap_or_else(|x| x);
            self.resident.fetch_sub(1, Ordering::Relaxed);
            entry.quota.resident_pages.fetch_sub(1, Ordering::Relaxed);
            drop(g);
            if State(prev).pins() == 0 {
                assert_eq!(State(prev).kind(), Kind::Valid);
                self.free_frame(i);
            }
        }
        // Empty now, and no one but lock-free readers (who validate what they find) can still
        // be looking at it: ready for the next file.
        debug_assert!(radix.resident().is_empty());
        self.files.write().spare.push(entry.radix);
    }
}
