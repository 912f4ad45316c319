//! A database's data file as the access layer sees it: the page store the buffer pool
//! reads and writes, the file header, space allocation and the per-tree latches.
//!
//! File layout: page 0 is the file header; allocation maps sit at pages
//! `1 + k * BITS_PER_MAP` and each tracks itself and the `BITS_PER_MAP - 1` pages after
//! it, one bit per page (1 = in use). A 512 MiB stretch of file costs one 8 KiB map,
//! so allocation scales to multi-GB files without lists.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tessera_buffer::page::{self, PageNo, PageType, HEADER_SIZE, PAGE_SIZE};
use tessera_buffer::{BufferPool, FileId, PageStore};
use tessera_errors::{Error, Result};
use tessera_io::{DataFile, OpenMode};
use tessera_log::{Lsn, Wal};

use crate::lock::LockManager;
use crate::mtr::Mtr;
use crate::ops::{PageOp, BITMAP_OFFSET};
use crate::txn::{TreeMeta, TxnTable};

pub const BITS_PER_MAP: u32 = ((PAGE_SIZE - HEADER_SIZE) * 8) as u32;
const MAGIC: &[u8; 8] = b"TSRADAT1";
const FORMAT_VERSION: u32 = 1;
/// Offset of the file header fields inside page 0.
const HDR_FIELDS: u16 = HEADER_SIZE as u16;
/// Page number of the first tree created in a new file: the database's catalog.
pub const BOOT_ROOT: PageNo = 2;

/// The data file behind the buffer pool.
pub struct DataStore {
    file: DataFile,
    database: String,
    wal: Arc<Wal>,
    /// Pages the file holds; pages at or beyond it read as zeros (never written).
    pages: AtomicU32,
    /// The extents written since the last reset (see [`crate::changes`]).
    pub changes: crate::changes::ChangeMap,
}

impl DataStore {
    /// Drops the data file's pages from the OS page cache (see `DataFile::drop_os_cache`).
    pub fn drop_os_cache(&self) {
        self.file.drop_os_cache();
    }

    pub fn pages(&self) -> u32 {
        self.pages.load(Ordering::Acquire)
    }

    /// Grows the file so it holds at least `pages` pages.
    fn extend_to(&self, pages: u32) -> Result<()> {
        if pages <= self.pages() {
            return Ok(());
        }
        self.file.allocate(u64::from(pages) * PAGE_SIZE as u64).map_err(|e| {
            if e.is_disk_full() {
                Error::DataFull { database: self.database.clone() }
            } else {
                e
            }
        })?;
        self.pages.fetch_max(pages, Ordering::AcqRel);
        Ok(())
    }
}

impl PageStore for DataStore {
    fn read_page(&self, no: PageNo, buf: &mut [u8]) -> Result<()> {
        if no >= self.pages() {
            buf.fill(0);
            return Ok(());
        }
        self.file.read_exact_at(buf, u64::from(no) * PAGE_SIZE as u64)
    }

    fn read_pages(&self, first: PageNo, bufs: &mut [&mut [u8]]) -> Result<()> {
        // Pages beyond the file's end read as zeros, as in `read_page`.
        let inside = (self.pages().saturating_sub(first) as usize).min(bufs.len());
        let (within, beyond) = bufs.split_at_mut(inside);
        beyond.iter_mut().for_each(|b| b.fill(0));
        if within.is_empty() {
            return Ok(());
        }
        self.file.read_exact_vectored_at(within, u64::from(first) * PAGE_SIZE as u64)
    }

    fn write_page(&self, no: PageNo, buf: &[u8]) -> Result<()> {
        self.changes.mark(no);
        self.file.write_all_at(buf, u64::from(no) * PAGE_SIZE as u64)
    }

    fn flush_log_to(&self, lsn: Lsn) -> Result<()> {
        self.wal.flush(lsn)
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data()
    }

    fn database_name(&self) -> &str {
        &self.database
    }

    fn path(&self) -> &Path {
        self.file.path()
    }
}

/// Hashes the page numbers that key the tree table with one multiplication (Fibonacci
/// hashing): every row operation looks its tree up, and SipHash's resistance to chosen
/// keys buys nothing for page numbers the engine assigns itself.
#[derive(Default)]
pub struct PageNoHasher(u64);

impl Hasher for PageNoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Log space every change checks for before touching a page (see `Wal::ensure_room`),
/// on top of what the active transactions would need to roll back.
pub const LOG_RESERVE: u64 = 4 << 20;
/// Unallocated pages the data file keeps beyond the highest page in use, so that a
/// structure modification never has to grow the file half-way through.
pub const DATA_RESERVE_PAGES: u32 = 256;

/// One database's storage: data file, log, allocation, tree latches, locks and the
/// table of active transactions.
pub struct Space {
    pub name: String,
    pub pool: Arc<BufferPool>,
    pub file: FileId,
    pub store: Arc<DataStore>,
    pub wal: Arc<Wal>,
    pub locks: LockManager,
    pub txns: TxnTable,
    /// The end of the log when this space was opened, and the LSN of the newest bulk-load
    /// note logged since (0: none): where notes may lie without reading the log.
    opened_at: Lsn,
    pub(crate) newest_bulk_note: Mutex<Lsn>,
    /// First map byte that may have a zero bit, per allocation map.
    alloc_hint: Mutex<Vec<usize>>,
    /// One past the highest page ever allocated in this run (or the file size at open).
    alloc_hwm: AtomicU32,
    /// Log bytes the active transactions' rollbacks may need (their compensation
    /// records); every forward change keeps this much room in the log.
    pub(crate) undo_reserve: AtomicU64,
    trees: RwLock<HashMap<PageNo, Arc<TreeMeta>, BuildHasherDefault<PageNoHasher>>>,
}

impl Space {
    /// Creates the data file and formats page 0, the first allocation map and the boot
    /// tree (the catalog root) through the log.
    pub fn create(name: &str, path: &Path, pool: Arc<BufferPool>, wal: Arc<Wal>) -> Result<Arc<Space>> {
        let file = DataFile::open(path, OpenMode::CreateNew, false)?;
        let space = Space::assemble(name, file, pool, wal);
        space.store.extend_to(DATA_RESERVE_PAGES + 8)?;
        let mut mtr = Mtr::new(&space)?;
        let h = mtr.latch_new(0)?;
        mtr.apply(h, PageOp::Format { object: 0, ty: PageType::FileHeader, level: 0, prev: 0, next: 0, aux: 0 });
        let mut fields = Vec::new();
        fields.extend_from_slice(MAGIC);
        fields.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        fields.extend_from_slice(&BOOT_ROOT.to_le_bytes());
        mtr.apply(h, PageOp::Raw { offset: HDR_FIELDS, bytes: fields });
        let m = mtr.latch_new(1)?;
        mtr.apply(m, PageOp::Format { object: 0, ty: PageType::AllocMap, level: 0, prev: 0, next: 0, aux: 0 });
        mtr.apply(m, PageOp::SetBits { first: 0, count: 1, value: true });
        let boot = crate::btree::create(&space, &mut mtr)?;
        assert_eq!(boot, BOOT_ROOT, "the boot tree is the first page allocated");
        mtr.commit_system()?;
        Ok(Arc::new(space))
    }

    /// Opens an existing data file (recovery is the caller's next step).
    pub fn open(name: &str, path: &Path, pool: Arc<BufferPool>, wal: Arc<Wal>) -> Result<Arc<Space>> {
        let file = DataFile::open(path, OpenMode::Existing, false)?;
        let space = Space::assemble(name, file, pool, wal);
        Ok(Arc::new(space))
    }

    fn assemble(name: &str, file: DataFile, pool: Arc<BufferPool>, wal: Arc<Wal>) -> Space {
        let pages = (file.len().unwrap_or(0) / PAGE_SIZE as u64) as u32;
        let store = Arc::new(DataStore {
            file,
            database: name.to_string(),
            wal: wal.clone(),
            pages: AtomicU32::new(pages),
            changes: crate::changes::ChangeMap::default(),
        });
        let file = pool.register(store.clone());
        let opened_at = wal.end_lsn();
        Space {
            name: name.to_string(),
            pool,
            file,
            store,
            wal,
            locks: LockManager::default(),
            txns: TxnTable::default(),
            opened_at,
            newest_bulk_note: Mutex::new(0),
            alloc_hint: Mutex::new(Vec::new()),
            alloc_hwm: AtomicU32::new(pages),
            undo_reserve: AtomicU64::new(0),
            trees: RwLock::new(HashMap::default()),
        }
    }

    /// Whether the log from `from` on may hold bulk-load notes: it does not when it
    /// starts after this open and no load has noted pages since `from`. Saves backups
    /// reading the log twice when there were no bulk loads.
    pub fn may_have_bulk_notes(&self, from: Lsn) -> bool {
        from < self.opened_at || *self.newest_bulk_note.lock() >= from
    }

    /// Checks the file header (after recovery, so a header that never reached the disk
    /// has been redone).
    pub fn verify_header(&self) -> Result<()> {
        let h = self.pool.fetch(self.file, 0)?;
        let p = h.read();
        let f = &p[HEADER_SIZE..HEADER_SIZE + 16];
        if &f[0..8] != MAGIC || u32::from_le_bytes(f[8..12].try_into().unwrap()) != FORMAT_VERSION {
            return Err(Error::Corrupt {
                database: self.name.clone(),
                path: self.store.path().to_path_buf(),
                page: 0,
                detail: "the file is not a tessera data file of a supported version".into(),
            });
        }
        Ok(())
    }

    /// The in-memory state of one tree: its latch (exclusive for changes, shared for
    /// reads) and its count of writing transactions.
    pub fn tree(&self, root: PageNo) -> Arc<TreeMeta> {
        if let Some(meta) = self.trees.read().get(&root) {
            return meta.clone();
        }
        self.trees.write().entry(root).or_insert_with(|| Arc::new(TreeMeta::new(root))).clone()
    }

    fn map_page(k: usize) -> PageNo {
        1 + (k as u32) * BITS_PER_MAP
    }

    /// Allocates a free page inside `mtr` (its map bit is set by the mini-transaction)
    /// and returns its number; the caller formats it.
    pub fn alloc_page(&self, mtr: &mut Mtr) -> Result<PageNo> {
        let mut k = 0usize;
        loop {
            let map_no = Space::map_page(k);
            if map_no >= self.store.pages() {
                self.store.extend_to(map_no + 64)?;
            }
            let mi = mtr.latch(map_no)?;
            if page::page_type(mtr.page(mi)) != Some(PageType::AllocMap) {
                // A map beyond the last one in use: create it.
                mtr.apply(mi, PageOp::Format { object: 0, ty: PageType::AllocMap, level: 0, prev: 0, next: 0, aux: 0 });
                mtr.apply(mi, PageOp::SetBits { first: 0, count: 1, value: true });
            }
            let found = {
                let mut hints = self.alloc_hint.lock();
                if hints.len() <= k {
                    hints.resize(k + 1, 0);
                }
                let bytes = &mtr.page(mi)[BITMAP_OFFSET..];
                let start = hints[k];
                match bytes[start..].iter().position(|&b| b != 0xFF) {
                    Some(i) => {
                        let byte = start + i;
                        hints[k] = byte;
                        let bit = byte as u32 * 8 + bytes[byte].trailing_ones();
                        Some(bit)
                    }
                    None => {
                        hints[k] = bytes.len();
                        None
                    }
                }
            };
            if let Some(bit) = found {
                let no = map_no + bit;
                self.alloc_hwm.fetch_max(no + 1, Ordering::AcqRel);
                if no >= self.store.pages() {
                    let pages = self.store.pages();
                    let grow = (pages / 8).clamp(128, 65536);
                    self.store.extend_to((no + 1).max(pages + grow))?;
                }
                mtr.apply(mi, PageOp::SetBits { first: bit, count: 1, value: true });
                return Ok(no);
            }
            k += 1;
        }
    }

    /// Grows the data file, if needed, so that [`DATA_RESERVE_PAGES`] pages beyond the
    /// highest page in use exist: called before a change touches any page, so a full
    /// disk is error 1105 while nothing has been modified.
    pub fn ensure_data_room(&self) -> Result<()> {
        let want = self.alloc_hwm.load(Ordering::Acquire) + DATA_RESERVE_PAGES;
        let pages = self.store.pages();
        if want <= pages {
            return Ok(());
        }
        let grow = (pages / 8).clamp(DATA_RESERVE_PAGES, 65536);
        // Ask for a generous step first; settle for the bare reserve when space is short.
        self.store.extend_to(want.max(pages + grow)).or_else(|_| self.store.extend_to(want))
    }

    /// Returns `no` to the free space inside `mtr`.
    pub fn free_page(&self, mtr: &mut Mtr, no: PageNo) -> Result<()> {
        self.free_page_with(mtr, no, false)
    }

    /// [`Space::free_page`] without reading the page first: for pages whose contents
    /// were never logged and may be torn or missing on disk (bulk loads).
    pub fn free_page_unread(&self, mtr: &mut Mtr, no: PageNo) -> Result<()> {
        self.free_page_with(mtr, no, true)
    }

    fn free_page_with(&self, mtr: &mut Mtr, no: PageNo, unread: bool) -> Result<()> {
        assert!(no > 1, "page {no} is never freed");
        let k = ((no - 1) / BITS_PER_MAP) as usize;
        let map_no = Space::map_page(k);
        assert_ne!(no, map_no, "allocation maps are never freed");
        let bit = no - map_no;
        let pi = if unread { mtr.latch_new(no)? } else { mtr.latch(no)? };
        mtr.apply(pi, PageOp::Format { object: 0, ty: PageType::Free, level: 0, prev: 0, next: 0, aux: 0 });
        let mi = mtr.latch(map_no)?;
        debug_assert!(
            mtr.page(mi)[BITMAP_OFFSET + (bit / 8) as usize] & (1 << (bit % 8)) != 0,
            "page {no} freed twice"
        );
        mtr.apply(mi, PageOp::SetBits { first: bit, count: 1, value: false });
        let mut hints = self.alloc_hint.lock();
        if let Some(h) = hints.get_mut(k) {
            *h = (*h).min((bit / 8) as usize);
        }
        Ok(())
    }

    /// Every page marked in use by the allocation maps.
    pub fn allocated_pages(&self) -> Result<Vec<PageNo>> {
        let mut out = Vec::new();
        let mut k = 0;
        while Space::map_page(k) < self.store.pages() {
            let map_no = Space::map_page(k);
            let h = self.pool.fetch(self.file, map_no)?;
            let p = h.read();
            if page::page_type(&p) != Some(PageType::AllocMap) {
                break;
            }
            for (i, &b) in p[BITMAP_OFFSET..].iter().enumerate() {
                for j in 0..8 {
                    if b & (1 << j) != 0 {
                        out.push(map_no + i as u32 * 8 + j);
                    }
                }
            }
            k += 1;
        }
        Ok(out)
    }

    /// Fuzzy checkpoint: flush every page dirty now (latching each), log the active
    /// transactions, point the master record at the checkpoint and let the log be
    /// reused below the oldest LSN still needed.
    /// Returns the master record it wrote.
    pub fn checkpoint(&self) -> Result<tessera_log::Master> {
        let redo_lsn = self.wal.begin_checkpoint();
        self.pool.flush_file(self.file)?;
        let (active, next_txn) = self.txns.snapshot();
        let begin = active.iter().filter(|a| a.first_lsn != 0).map(|a| a.first_lsn).fold(redo_lsn, Lsn::min);
        let ckpt = tessera_log::recovery::Checkpoint { redo_lsn, next_txn, active };
        let lsn =
            self.wal.append(&tessera_log::LogRecord::new(tessera_log::RecordKind::Checkpoint, 0, 0, ckpt.encode()))?;
        self.wal.flush(lsn)?;
        let master = tessera_log::Master { checkpoint_lsn: lsn, begin_lsn: begin };
        self.wal.write_master(master)?;
        let reason = if begin < redo_lsn { "ACTIVE_TRANSACTION" } else { "NOTHING" };
        self.wal.truncate_before(begin, reason);
        Ok(master)
    }
}

impl Drop for Space {
    fn drop(&mut self) {
        // The database layer checkpoints before closing; this only releases the frames.
        let _ = self.pool.unregister(self.file);
    }
}
