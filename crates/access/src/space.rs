//! A database's data file as the access layer sees it: the page store the buffer pool
//! reads and writes, the file header, space allocation and the per-tree latches.
//!
//! [`Space`] has one `impl` block, here: every method is declared in it with its
//! contract, in groups — the file and its trees, allocation, checkpoint and recovery,
//! transactions, locks, reads, row changes, trees inside transactions. Small methods are
//! written out; the larger ones call their bodies in modules by concern: `crate::read`
//! (reads and scans), `crate::txn` (commit, rollback, savepoints), `crate::txn::locks`
//! (key, table, schema and application locks), `crate::txn::write` (insert, update,
//! delete), `crate::txn::recovery` (undo and crash recovery) and `crate::bulk` (bulk
//! loads).
//!
//! File layout: page 0 is the file header; allocation maps sit at pages
//! `1 + k * BITS_PER_MAP` and each tracks itself and the `BITS_PER_MAP - 1` pages after
//! it, one bit per page (1 = in use). A 509 MiB stretch of file costs one 8 KiB map,
//! so allocation scales to multi-GB files without lists.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tessera_buffer::page::{self, PageNo, PageType, HEADER_SIZE, PAGE_SIZE};
use tessera_buffer::{BufferPool, FileId, PageStore};
use tessera_errors::{Error, Result};
use tessera_io::{DataFile, OpenMode};
use tessera_log::growth::{grown_size, DefaultGrowth};
use tessera_log::recovery::RecoveryOutcome;
use tessera_log::{Growth, Lsn, TxnId, Wal};

use crate::account::{self, PageAccount};
use crate::btree::{self, Direction};
use crate::bulk::{self, BulkOutcome};
use crate::lob;
use crate::lock::{LockManager, LockMode, Resource};
use crate::mtr::{LogCtx, Mtr};
use crate::ops::{PageOp, Undo, BITMAP_OFFSET};
use crate::read::{self, OnLocked, ReadLocks, Scan};
use crate::reserve::{self, Claim, Claimed};
use crate::row;
use crate::txn::{self, Durability, Hold, TreeMeta, Txn, TxnTable};
use crate::versions::Versions;

pub const BITS_PER_MAP: u32 = ((PAGE_SIZE - HEADER_SIZE) * 8) as u32;
const MAGIC: &[u8; 8] = b"TSRADAT1";
/// The data file format this build writes and reads (docs/FORMAT.md, "Format versions").
/// 2: rows may hold values stored off the row (`row::OffRow`, `crate::lob`).
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format this build reads; such a file is brought to [`FORMAT_VERSION`] when
/// it opens (every older format is a subset of the current one).
pub const OLDEST_FORMAT_VERSION: u32 = 1;
/// Offset of the file header fields inside page 0: magic (8 bytes), format version
/// (u32 LE), boot tree root (u32 LE), the database's file family (u128 LE, 0: not set).
const HDR_FIELDS: u16 = HEADER_SIZE as u16;
/// Offset of the file family: the id its log file carries too, so that a data file is
/// never recovered with another database's log.
const HDR_FAMILY: usize = HEADER_SIZE + 16;
/// Page number of the first tree created in a new file: the database's catalog.
pub const BOOT_ROOT: PageNo = PageNo::from_raw(2);

/// Sizes of a data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataConfig {
    /// Size of a new data file in bytes, rounded up to whole pages (at least the three
    /// pages every database uses: file header, allocation map, catalog root). By default
    /// the four pages an empty database uses: it grows as data arrives.
    pub initial_size: u64,
    /// How the file grows (None: an eighth of its size, 64 KiB to 64 MiB at a time).
    pub growth: Option<Growth>,
    /// The file never grows beyond this many bytes: a change that would need more fails
    /// with error 1105.
    pub max_size: u64,
    /// The database's id, which its locks' descriptions name (waits, sys.dm_tran_locks).
    pub database_id: u32,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig { initial_size: 4 * PAGE_SIZE as u64, growth: None, max_size: u64::MAX, database_id: 0 }
    }
}

/// The data file's default growth: an eighth of the file, 64 KiB to 64 MiB at a time.
const DATA_GROWTH: DefaultGrowth = DefaultGrowth { divisor: 8, min: 64 << 10, max: 64 << 20 };

/// How a data file may grow (see [`DataConfig`]).
struct DataLimits {
    growth: Option<Growth>,
    max_size: u64,
    /// The size it was made with: pages it never used are cut down to this, no lower.
    initial_size: u64,
}

/// The data file behind the buffer pool.
pub struct DataStore {
    file: DataFile,
    /// Its log, which also names the database.
    wal: Arc<Wal>,
    /// Pages the file holds; pages at or beyond it read as zeros (never written).
    pages: AtomicU32,
    limits: Mutex<DataLimits>,
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

    /// What the data file's reads and writes have cost since this open, its size and its
    /// descriptor (`sys.dm_io_virtual_file_stats`).
    pub fn io_sample(&self) -> Result<tessera_io::stats::FileSample> {
        self.file.sample()
    }

    /// Grows the file so it holds at least `pages` pages: in steps of its growth when the
    /// disk has room for them, else by just what is needed. Error 1105 past its maximum
    /// size, when it may not grow, or when the disk is full.
    fn grow_to(&self, pages: u32) -> Result<()> {
        let have = self.pages();
        if pages <= have {
            return Ok(());
        }
        let full = || Error::DataFull { database: self.wal.database().to_string() };
        let page = PAGE_SIZE as u64;
        let (size, need) = (u64::from(have) * page, u64::from(pages) * page);
        let stepped = {
            let limits = self.limits.lock();
            let max = limits.max_size.min(u64::from(u32::MAX) * page);
            grown_size(size, need, limits.growth, DATA_GROWTH, max, page).ok_or_else(full)?
        };
        self.extend_to((stepped / page) as u32).or_else(|e| match e {
            Error::DataFull { .. } => self.extend_to(pages),
            e => Err(e),
        })
    }

    /// Cuts the file to `pages` pages, or to the size it was made with if that is more,
    /// if it holds more: only pages never allocated may be cut (see
    /// [`Space::trim_unused_tails`]).
    fn trim_to(&self, pages: u32) -> Result<()> {
        let made = self.limits.lock().initial_size.div_ceil(PAGE_SIZE as u64);
        let pages = pages.max(u32::try_from(made).unwrap_or(u32::MAX));
        if pages >= self.pages() {
            return Ok(());
        }
        self.file.set_len(u64::from(pages) * PAGE_SIZE as u64)?;
        self.pages.store(pages, Ordering::Release);
        Ok(())
    }

    /// Allocates the file up to `pages` pages.
    fn extend_to(&self, pages: u32) -> Result<()> {
        if pages <= self.pages() {
            return Ok(());
        }
        self.file.allocate(u64::from(pages) * PAGE_SIZE as u64).map_err(|e| {
            if e.is_disk_full() {
                Error::DataFull { database: self.wal.database().to_string() }
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
        if no >= PageNo::from_raw(self.pages()) {
            buf.fill(0);
            return Ok(());
        }
        self.file.read_exact_at(buf, no.byte_offset())
    }

    fn read_pages(&self, first: PageNo, bufs: &mut [&mut [u8]]) -> Result<()> {
        // Pages beyond the file's end read as zeros, as in `read_page`.
        let inside = (self.pages().saturating_sub(first.raw()) as usize).min(bufs.len());
        let (within, beyond) = bufs.split_at_mut(inside);
        beyond.iter_mut().for_each(|b| b.fill(0));
        if within.is_empty() {
            return Ok(());
        }
        self.file.read_exact_vectored_at(within, first.byte_offset())
    }

    fn write_page(&self, no: PageNo, buf: &[u8]) -> Result<()> {
        // The WAL rule, where a page reaches the file: the log that describes its last
        // change is durable first (0: a page no record describes yet).
        let lsn = page::lsn(buf);
        assert!(lsn.is_none() || lsn < self.wal.durable_lsn(), "page {no} written before its log (LSN {lsn})");
        self.changes.mark(no);
        self.file.write_all_at(buf, no.byte_offset())
    }

    fn flush_log_to(&self, lsn: Lsn) -> Result<()> {
        self.wal.flush(lsn)
    }

    fn sync(&self) -> Result<()> {
        // A failed sync may have lost writes the pool now holds as clean (Linux drops the
        // pages whose write-back failed), so no checkpoint may complete and nothing may be
        // served on top of them: the database goes offline (9001) until it is opened
        // again, and its recovery redoes from the last checkpoint that did complete.
        self.file.sync_data().inspect_err(|_| self.wal.take_offline())
    }

    fn database_name(&self) -> &str {
        self.wal.database()
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

/// One database's storage: data file, log, allocation, tree latches, locks and the
/// table of active transactions.
pub struct Space {
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
    /// Page images the active transactions' rollbacks may log: one per change (at most
    /// `reserve::MAX_IMAGED_PAGES` per transaction).
    pub(crate) undo_images: AtomicU32,
    /// Pages the active transactions' rollbacks may need for splits (see
    /// `txn::reserve_undo`); the data file keeps them free.
    pub(crate) rollback_pages: AtomicU32,
    /// Log bytes and pages claimed by the mini-transactions in flight (see
    /// `crate::reserve`).
    pub(crate) claimed_log: AtomicU64,
    pub(crate) claimed_pages: AtomicU32,
    /// Frames bigger than a row change's promised now (see `reserve::promise_frame`).
    pub(crate) big_frames: Mutex<Vec<u64>>,
    pub(crate) trees: RwLock<HashMap<PageNo, Arc<TreeMeta>, BuildHasherDefault<PageNoHasher>>>,
    /// Whether any tree is charged to a page account (`crate::account`).
    pub(crate) has_charged_trees: AtomicBool,
    /// Large values freed by committed transactions, waiting for readers (`crate::lob`).
    pub(crate) lob_horizon: lob::Horizon,
    /// Row versions for snapshots (`crate::versions`).
    pub versions: Versions,
}

/// What is wrong with a data file's header page ([`Space::probe_header`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderFault {
    /// Not a valid tessera header: the property SQL Server's 5172 names.
    Invalid(&'static str),
    /// A tessera data file of this newer format, which this build does not read (948).
    Newer(u32),
}

impl Space {
    /// The database's name (its log keeps it).
    pub fn name(&self) -> &str {
        self.wal.database()
    }

    // The file and its trees.

    /// Creates the data file, `config.initial_size` bytes, and formats page 0, the first
    /// allocation map and the boot tree (the catalog root) through the log.
    pub fn create(path: &Path, pool: Arc<BufferPool>, wal: Arc<Wal>, config: &DataConfig) -> Result<Arc<Space>> {
        let file = DataFile::open(path, OpenMode::CreateNew, false)?;
        let space = Space::assemble(file, pool, wal, config);
        let pages = config.initial_size.div_ceil(PAGE_SIZE as u64).clamp(3, u64::from(u32::MAX)) as u32;
        space.store.extend_to(pages)?;
        let mut mtr = Mtr::claiming(&space, Claim::pages(3, 3))?;
        let h = mtr.latch_new(PageNo::NONE)?;
        mtr.apply(
            h,
            PageOp::Format {
                object: 0,
                ty: PageType::FileHeader,
                level: 0,
                prev: PageNo::NONE,
                next: PageNo::NONE,
                aux: 0,
            },
        );
        let mut fields = Vec::new();
        fields.extend_from_slice(MAGIC);
        fields.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        fields.extend_from_slice(&BOOT_ROOT.raw().to_le_bytes());
        mtr.apply(h, PageOp::Raw { offset: HDR_FIELDS, bytes: fields });
        let m = mtr.latch_new(PageNo::from_raw(1))?;
        mtr.apply(m, PageOp::alloc_map());
        mtr.apply(m, PageOp::SetBits { first: 0, count: 1, value: true });
        let boot = btree::create(&space, &mut mtr)?;
        assert_eq!(boot, BOOT_ROOT, "the boot tree is the first page allocated");
        mtr.commit_system()?;
        Ok(Arc::new(space))
    }

    /// Opens an existing data file (recovery is the caller's next step); it grows as
    /// `config` says (its initial size is not used).
    pub fn open(path: &Path, pool: Arc<BufferPool>, wal: Arc<Wal>, config: &DataConfig) -> Result<Arc<Space>> {
        let file = DataFile::open(path, OpenMode::Existing, false)?;
        let space = Space::assemble(file, pool, wal, config);
        Ok(Arc::new(space))
    }

    fn assemble(file: DataFile, pool: Arc<BufferPool>, wal: Arc<Wal>, config: &DataConfig) -> Space {
        let pages = (file.len().unwrap_or(0) / PAGE_SIZE as u64) as u32;
        let store = Arc::new(DataStore {
            file: file.measured(tessera_io::stats::FileKind::Data),
            wal: wal.clone(),
            pages: AtomicU32::new(pages),
            limits: Mutex::new(DataLimits {
                growth: config.growth,
                max_size: config.max_size,
                initial_size: config.initial_size,
            }),
            changes: crate::changes::ChangeMap::default(),
        });
        // Every change may promise a frame this big: room is counted in such frames.
        wal.set_frame_limit(Claim::CHANGE.frame);
        let file = pool.register(store.clone());
        let opened_at = wal.end_lsn();
        Space {
            pool,
            file,
            store,
            wal,
            locks: LockManager::for_database(config.database_id),
            txns: TxnTable::default(),
            opened_at,
            newest_bulk_note: Mutex::new(Lsn::NONE),
            alloc_hint: Mutex::new(Vec::new()),
            alloc_hwm: AtomicU32::new(pages),
            undo_reserve: AtomicU64::new(0),
            undo_images: AtomicU32::new(0),
            rollback_pages: AtomicU32::new(0),
            claimed_log: AtomicU64::new(0),
            claimed_pages: AtomicU32::new(0),
            big_frames: Mutex::new(Vec::new()),
            trees: RwLock::new(HashMap::default()),
            has_charged_trees: AtomicBool::new(false),
            lob_horizon: lob::Horizon::default(),
            versions: Versions::default(),
        }
    }

    /// Whether the log from `from` on may hold bulk-load notes: it does not when it
    /// starts after this open and no load has noted pages since `from`. Saves backups
    /// reading the log twice when there were no bulk loads.
    pub fn may_have_bulk_notes(&self, from: Lsn) -> bool {
        from < self.opened_at || *self.newest_bulk_note.lock() >= from
    }

    /// Checks the file header (after recovery, so a header that never reached the disk
    /// has been redone), and brings an older format's header to this build's (logged:
    /// from then on the file may hold what only this format has).
    pub fn verify_header(&self) -> Result<()> {
        let version = {
            let h = self.pool.fetch(self.file, PageNo::NONE)?;
            let p = h.read();
            let f = &p[HEADER_SIZE..HEADER_SIZE + 16];
            let version = u32::from_le_bytes(f[8..12].try_into().expect("4 bytes"));
            if &f[0..8] != MAGIC || !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
                return Err(Error::Corrupt {
                    database: self.name().to_string(),
                    path: self.store.path().to_path_buf(),
                    page: 0,
                    detail: "the file is not a tessera data file of a supported version".into(),
                });
            }
            version
        };
        if version < FORMAT_VERSION {
            let mut mtr = Mtr::claiming(self, Claim::CHANGE)?;
            let h = mtr.latch(PageNo::NONE)?;
            let at = HDR_FIELDS + MAGIC.len() as u16;
            mtr.apply(h, PageOp::Raw { offset: at, bytes: FORMAT_VERSION.to_le_bytes().to_vec() });
            mtr.commit_system()?;
        }
        Ok(())
    }

    /// Checks the first page of the file at `path` without opening it as a database: a
    /// tessera data file's header page, intact, of this build's format (what opening and
    /// attaching a database verify before recovery writes to the file). Returns its file
    /// family (0: not set), or what is wrong with it.
    pub fn probe_header(path: &Path) -> std::io::Result<std::result::Result<u128, HeaderFault>> {
        use std::io::Read;
        use HeaderFault::Invalid;
        let mut p = vec![0u8; PAGE_SIZE];
        let mut file = std::fs::File::open(path)?;
        let mut filled = 0;
        while filled < PAGE_SIZE {
            match file.read(&mut p[filled..])? {
                0 => return Ok(Err(Invalid("FILE SIZE"))),
                n => filled += n,
            }
        }
        if page::verify(&p, PageNo::NONE).is_err() || p.iter().all(|&b| b == 0) {
            return Ok(Err(Invalid("PageAudit")));
        }
        let f = &p[HEADER_SIZE..HEADER_SIZE + 12];
        if &f[0..8] != MAGIC {
            return Ok(Err(Invalid("file type")));
        }
        match u32::from_le_bytes(f[8..12].try_into().expect("4 bytes")) {
            OLDEST_FORMAT_VERSION..=FORMAT_VERSION => {}
            newer if newer > FORMAT_VERSION => return Ok(Err(HeaderFault::Newer(newer))),
            _ => return Ok(Err(Invalid("format version"))),
        }
        Ok(Ok(u128::from_le_bytes(p[HDR_FAMILY..HDR_FAMILY + 16].try_into().expect("16 bytes"))))
    }

    /// The file family in the header (0: not set; files made before it existed).
    pub fn family(&self) -> Result<u128> {
        let h = self.pool.fetch(self.file, PageNo::NONE)?;
        let p = h.read();
        Ok(u128::from_le_bytes(p[HDR_FAMILY..HDR_FAMILY + 16].try_into().expect("16 bytes")))
    }

    /// Sets the file family in the header, logged like any page change.
    pub fn set_family(&self, family: u128) -> Result<()> {
        let mut mtr = Mtr::claiming(self, Claim::CHANGE)?;
        let h = mtr.latch(PageNo::NONE)?;
        mtr.apply(h, PageOp::Raw { offset: HDR_FAMILY as u16, bytes: family.to_le_bytes().to_vec() });
        mtr.commit_system().map(|_| ())
    }

    /// The in-memory state of one tree: its latch (exclusive for changes, shared for
    /// reads) and its count of writing transactions.
    pub fn tree(&self, root: PageNo) -> Arc<TreeMeta> {
        if let Some(meta) = self.trees.read().get(&root) {
            return meta.clone();
        }
        self.trees.write().entry(root).or_insert_with(|| Arc::new(TreeMeta::new(root))).clone()
    }

    // Allocation.

    fn map_page(k: usize) -> PageNo {
        PageNo::from_raw(1 + (k as u32) * BITS_PER_MAP)
    }

    /// Allocates a free page inside `mtr` (its map bit is set by the mini-transaction)
    /// and returns its number; the caller formats it.
    pub fn alloc_page(&self, mtr: &mut Mtr) -> Result<PageNo> {
        let mut k = 0usize;
        loop {
            let map_no = Space::map_page(k);
            if map_no >= PageNo::from_raw(self.store.pages()) {
                // Not reached when the claims are right: the claim counted the new map.
                self.store.grow_to((map_no + 2).raw())?;
            }
            let mi = mtr.latch(map_no)?;
            if page::page_type(mtr.page(mi)) != Some(PageType::AllocMap) {
                // A map beyond the last one in use: create it.
                mtr.apply(mi, PageOp::alloc_map());
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
                self.alloc_hwm.fetch_max((no + 1).raw(), Ordering::AcqRel);
                if no >= PageNo::from_raw(self.store.pages()) {
                    // Not reached when the claims are right (a rollback's split beyond
                    // what its transaction reserved may get here).
                    self.store.grow_to((no + 1).raw())?;
                }
                mtr.apply(mi, PageOp::SetBits { first: bit, count: 1, value: true });
                mtr.count_pages(1);
                return Ok(no);
            }
            k += 1;
        }
    }

    /// Grows the data file, if needed, so that `extra` pages beyond the highest page in
    /// use exist: called (by [`Space::claim`]) before a change touches any page, so a
    /// full disk or file is error 1105 while nothing has been modified.
    pub fn ensure_data_room(&self, extra: u32) -> Result<()> {
        let want = self.high_water().saturating_add(extra);
        if want <= self.store.pages() {
            return Ok(());
        }
        self.store.grow_to(want)
    }

    /// Gives back what the data file and the log grew by for room that claims might
    /// have needed and did not use: the pages past the highest one allocated, the log's
    /// VLFs never used. Called after a checkpoint when nothing is claimed and nothing
    /// else uses the database (as its creation ends, as it closes), so an idle database
    /// costs only what it holds. The cut is not logged: pages past a file's end read as
    /// zeros and redo writes them wherever they are, as after a growth a crash forgot.
    pub fn trim_unused_tails(&self) -> Result<()> {
        let end = self.last_allocated()?.map_or(3, |p| p.raw() + 1);
        self.store.trim_to(end)?;
        self.alloc_hwm.fetch_min(end, Ordering::AcqRel);
        self.wal.trim_unused_tail()
    }

    /// The highest page the allocation maps mark in use.
    fn last_allocated(&self) -> Result<Option<PageNo>> {
        let mut last = None;
        self.for_each_map(|map_no, bits| {
            if let Some(i) = bits.iter().rposition(|&b| b != 0) {
                last = Some(map_no + (i as u32 * 8 + 7 - bits[i].leading_zeros()));
            }
        })?;
        Ok(last)
    }

    /// One past the highest page allocated in this run (the file's size when opened).
    pub fn high_water(&self) -> u32 {
        self.alloc_hwm.load(Ordering::Acquire)
    }

    /// Grows the log and the data file ahead, if they can, for a change that claims
    /// nothing (a split during a rollback): a best effort beyond what its transaction
    /// reserved.
    pub fn grow_ahead(&self, claim: Claim) {
        let _ = self.wal.ensure_room(claim.log);
        let _ = self.ensure_data_room(claim.pages);
    }

    /// Claims the room a mini-transaction may need before its first change (see
    /// `crate::reserve`): 9002 or 1105 if the log or the data file cannot hold it with
    /// everything already reserved. Held until the returned guard is dropped.
    pub fn claim(&self, claim: Claim) -> Result<Claimed<'_>> {
        reserve::claim(self, claim)
    }

    /// Sets how the data file grows from now on and the size it may not pass (ALTER
    /// DATABASE … MODIFY FILE); a file already bigger stays as it is and no longer grows.
    pub fn set_data_limits(&self, growth: Option<Growth>, max_size: u64) {
        let mut limits = self.store.limits.lock();
        (limits.growth, limits.max_size) = (growth, max_size);
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
        assert!(no > PageNo::from_raw(1), "page {no} is never freed");
        let k = ((no.raw() - 1) / BITS_PER_MAP) as usize;
        let map_no = Space::map_page(k);
        assert_ne!(no, map_no, "allocation maps are never freed");
        let bit = no - map_no;
        let pi = if unread { mtr.latch_new(no)? } else { mtr.latch(no)? };
        mtr.apply(
            pi,
            PageOp::Format { object: 0, ty: PageType::Free, level: 0, prev: PageNo::NONE, next: PageNo::NONE, aux: 0 },
        );
        let mi = mtr.latch(map_no)?;
        debug_assert!(
            mtr.page(mi)[BITMAP_OFFSET + (bit / 8) as usize] & (1 << (bit % 8)) != 0,
            "page {no} freed twice"
        );
        mtr.apply(mi, PageOp::SetBits { first: bit, count: 1, value: false });
        mtr.count_pages(-1);
        let mut hints = self.alloc_hint.lock();
        if let Some(h) = hints.get_mut(k) {
            *h = (*h).min((bit / 8) as usize);
        }
        Ok(())
    }

    /// Every page marked in use by the allocation maps.
    pub fn allocated_pages(&self) -> Result<Vec<PageNo>> {
        let mut out = Vec::new();
        self.for_each_map(|map_no, bits| {
            for (i, &b) in bits.iter().enumerate() {
                for j in 0..8 {
                    if b & (1 << j) != 0 {
                        out.push(map_no + i as u32 * 8 + j);
                    }
                }
            }
        })?;
        Ok(out)
    }

    /// Calls `f` with each allocation map in use: its page and its bitmap.
    fn for_each_map(&self, mut f: impl FnMut(PageNo, &[u8])) -> Result<()> {
        let mut k = 0;
        while Space::map_page(k) < PageNo::from_raw(self.store.pages()) {
            let map_no = Space::map_page(k);
            let h = self.pool.fetch(self.file, map_no)?;
            let p = h.read();
            if page::page_type(&p) != Some(PageType::AllocMap) {
                break;
            }
            f(map_no, &p[BITMAP_OFFSET..]);
            k += 1;
        }
        Ok(())
    }

    /// Gives back what the lock table, the active-transaction table and the promised
    /// frames kept from their busiest moment, where they hold nothing now: for a
    /// database gone idle (anything still held stays, and use grows them again).
    pub fn release_idle_memory(&self) {
        self.locks.release_idle_memory();
        self.txns.release_idle_memory();
        let mut big = self.big_frames.lock();
        if big.is_empty() {
            big.shrink_to_fit();
        }
    }

    // Checkpoint and recovery.

    /// Fuzzy checkpoint: flush every page dirty now (latching each), log the active
    /// transactions, point the master record at the checkpoint and let the log be
    /// reused below the oldest LSN still needed.
    /// Returns the master record it wrote.
    pub fn checkpoint(&self) -> Result<tessera_log::Master> {
        let redo_lsn = self.wal.begin_checkpoint();
        self.pool.flush_file(self.file)?;
        let (mut active, next_txn) = self.txns.snapshot();
        // Transactions that have logged nothing need no recovery: a checkpoint record
        // does not grow with idle sessions (it is written from the log's floor reserve).
        active.retain(|a| !a.first_lsn.is_none());
        let begin = active.iter().map(|a| a.first_lsn).fold(redo_lsn, Lsn::min);
        let ckpt = tessera_log::recovery::Checkpoint { redo_lsn, next_txn, active };
        let lsn = self.wal.append(&tessera_log::LogRecord::new(
            tessera_log::RecordKind::Checkpoint,
            TxnId::SYSTEM,
            Lsn::NONE,
            ckpt.encode(),
        ))?;
        self.wal.flush(lsn)?;
        let master = tessera_log::Master { checkpoint_lsn: lsn, begin_lsn: begin };
        self.wal.write_master(master)?;
        let reason = if begin < redo_lsn { "ACTIVE_TRANSACTION" } else { "NOTHING" };
        self.wal.truncate_before(begin, reason);
        Ok(master)
    }

    /// Crash recovery: redo from the last checkpoint, undo the losers.
    /// `decided_to_commit` says whether the instance decided to commit a prepared
    /// transaction found in doubt (see `RecordKind::Prepare`).
    pub fn recover(
        &self,
        master: tessera_log::Master,
        decided_to_commit: &dyn Fn(u128) -> bool,
    ) -> Result<RecoveryOutcome> {
        txn::recovery::recover(self, master, decided_to_commit)
    }

    // Transactions: bodies in `crate::txn`.

    /// Starts a transaction; finish it with [`Space::commit`] or [`Space::rollback`].
    pub fn begin(&self, durability: Durability) -> Txn {
        self.txns.begin(durability)
    }

    /// Commits: logs the commit, waits for the log flush (unless delayed), removes the
    /// transaction's ghosts and releases its locks.
    pub fn commit(&self, txn: Txn) -> Result<()> {
        txn::commit(self, txn)
    }

    /// Prepares the transaction for a commit across databases: logs a Prepare record
    /// naming the instance's `decision` and makes it durable. Then only [`Space::commit`]
    /// (once the decision is made) or [`Space::abandon`] ends it.
    pub fn prepare(&self, txn: &mut Txn, decision: u128) -> Result<()> {
        txn::prepare(self, txn, decision)
    }

    /// Ends a transaction without logging its outcome (a prepared one whose decision is
    /// in doubt): the database serves nothing more (9001) until it is opened again, when
    /// recovery settles the transaction from the instance's decision.
    pub fn abandon(&self, txn: Txn) {
        txn::abandon(self, txn)
    }

    /// Rolls the transaction back: undoes its changes newest first, with compensation
    /// records, then logs its end and releases its locks.
    pub fn rollback(&self, txn: Txn) -> Result<()> {
        txn::rollback(self, txn)
    }

    /// The point [`Space::rollback_to`] can return to: everything logged so far.
    pub fn savepoint(&self, txn: &Txn) -> Lsn {
        txn.last_lsn()
    }

    /// Partial rollback (`ROLLBACK TRANSACTION savepoint`, and statement atomicity inside
    /// a transaction): undoes, with compensation records, every change made after
    /// `savepoint`; the transaction stays open and keeps its locks. The compensation
    /// chain skips the undone records, so a later full rollback does not undo them twice.
    pub fn rollback_to(&self, txn: &mut Txn, savepoint: Lsn) -> Result<()> {
        txn::rollback_to(self, txn, savepoint)
    }

    /// Publishes a lower bound of the transaction's first LSN before its first record
    /// exists, so a checkpoint never truncates the log past it.
    pub(crate) fn note_first_lsn(&self, txn: &mut Txn) {
        txn::note_first_lsn(self, txn)
    }

    /// Logs `mtr` as the transaction's next Update record, with `undo` (whose
    /// compensation's log room the caller reserved first, see
    /// `txn::with_undo_reserved`). Returns the record's LSN.
    pub(crate) fn commit_update(&self, txn: &mut Txn, mtr: Mtr, undo: &Undo) -> Result<Lsn> {
        txn::commit_update(txn, mtr, undo)
    }

    // Locks: bodies in `crate::txn::locks`.

    /// The transaction's entry for a tree it locks keys in, made on first use with an
    /// intent lock on the table: IX (and a place among the tree's writers) when `write`,
    /// IS otherwise; a reader's entry becomes a writer's on its first write.
    pub(crate) fn tree_locks(&self, txn: &mut Txn, tree: PageNo, write: bool) -> Result<usize> {
        txn::locks::tree_locks(self, txn, tree, write)
    }

    /// Remembers a new key lock `r` in the tree of `txn.trees[i]`, to be released at the
    /// end of the statement or of the transaction as `hold` says, and counts it toward
    /// escalation to a table lock (see `txn::locks::lock_key`). A transaction holding
    /// `lock::MAX_LOCKS_PER_TXN` locks gets an error instead, and `r` is released.
    pub(crate) fn keep_lock(&self, txn: &mut Txn, i: usize, r: Resource, hold: Hold) -> Result<()> {
        txn::locks::keep_lock(self, txn, i, r, hold)
    }

    /// Locks the table of `txn.trees[i]` in `mode` (S or X: TABLOCK, TABLOCKX) to the end
    /// of the transaction; it then covers the key locks of that mode. (SQL Server keeps a
    /// TABLOCK without HOLDLOCK to the end of the statement; here the intent lock taken
    /// first merges with it, so it lasts as long as the intent.)
    pub(crate) fn lock_table(&self, txn: &mut Txn, i: usize, mode: LockMode) -> Result<()> {
        txn::locks::lock_table(self, txn, i, mode)
    }

    /// Takes an exclusive lock on the whole table `tree` (waiting for other writers and
    /// readers to finish): no key locks are taken in it afterwards.
    pub(crate) fn lock_table_exclusive(&self, txn: &mut Txn, tree: PageNo) -> Result<Arc<TreeMeta>> {
        let i = self.tree_locks(txn, tree, true)?;
        self.lock_table(txn, i, LockMode::Exclusive)?;
        Ok(txn.trees[i].meta.clone())
    }

    /// Takes a schema lock on object `object` (Sch-S for a statement using it, Sch-M for
    /// DDL changing it) until the statement ends.
    pub fn lock_schema(&self, txn: &mut Txn, object: u32, mode: LockMode) -> Result<()> {
        txn::locks::lock_schema(self, txn, object, mode)
    }

    /// Takes a schema-modification lock on object `object` until the transaction ends
    /// (DDL that goes with the transaction: nobody uses the object before it ends).
    pub fn lock_schema_to_end(&self, txn: &mut Txn, object: u32) -> Result<()> {
        txn::locks::lock_schema_to_end(self, txn, object)
    }

    /// Takes an application lock for the rest of the transaction (`sp_getapplock` with
    /// `@LockOwner = 'Transaction'`), waiting at most `timeout` (None: until granted);
    /// returns whether it had to wait.
    pub fn lock_app(&self, txn: &mut Txn, r: Resource, mode: LockMode, timeout: Option<Duration>) -> Result<bool> {
        txn::locks::lock_app(self, txn, r, mode, timeout)
    }

    /// Whether the transaction holds a writer's lock on `tree` (IX or X): it may have
    /// uncommitted changes there.
    pub fn may_have_written(&self, txn: &Txn, tree: PageNo) -> bool {
        matches!(
            self.locks.held(txn.id, Resource::Table(tree.raw())),
            Some(crate::lock::LockMode::IntentExclusive | crate::lock::LockMode::Exclusive)
        )
    }

    /// Whether the transaction holds a lock on `key` in `tree`.
    pub fn holds_key(&self, txn: &Txn, tree: PageNo, key: &[u8]) -> bool {
        self.locks.held(txn.id, Resource::key(tree.raw(), key)).is_some()
    }

    /// Lets go of the transaction's lock on `key` in `tree` unless a write made it X: a
    /// locking read whose row did not qualify keeps nothing (as SQL Server releases the
    /// U lock of a row an UPDATE's predicate rejects).
    pub fn release_key(&self, txn: &mut Txn, tree: PageNo, key: &[u8]) {
        txn::locks::release_key(self, txn, tree, key)
    }

    /// Takes a shared key-range lock on the keys of `tree` just below `above` (None: above
    /// its last key) to the end of the transaction (SERIALIZABLE; see
    /// `txn::locks::lock_range`).
    pub fn lock_range(&self, txn: &mut Txn, tree: PageNo, above: Option<&[u8]>) -> Result<()> {
        txn::locks::lock_range(self, txn, tree, above)
    }

    /// Takes shared key-range locks on everything of `tree` above `lo` up to its first
    /// live key, that key's range included (above the last key when there is none): the
    /// range just above a SERIALIZABLE range read. The ranges below the ghosts met on the
    /// way are taken too, in case a deleter of one rolls back.
    ///
    /// The live key may be another transaction's uncommitted insert, which a rollback
    /// would take away (merging its range with the next): so its writer is waited for
    /// (as SQL Server's RangeS-S locks the key too), and the keys looked up again until
    /// they stay the same.
    pub fn lock_ranges_above(&self, txn: &mut Txn, tree: PageNo, lo: &Bound<Vec<u8>>) -> Result<()> {
        txn::locks::lock_ranges_above(self, txn, tree, lo)
    }

    /// Ends a statement's locks: its statement-duration locks are released, except those
    /// a write converted to X, which are kept to the end of the transaction.
    pub fn end_statement(&self, txn: &mut Txn) {
        txn::locks::end_statement(self, txn);
        if txn.versions.snapshot.is_some_and(|s| s.statement) {
            self.release_snapshot(txn);
        }
    }

    // Row versions: see `crate::versions`.

    /// Takes a snapshot for the transaction's versioned reads, for the running statement
    /// or to the transaction's end (nothing if it holds one). False when the database
    /// does not allow snapshots now.
    pub fn take_snapshot(&self, txn: &mut Txn, statement: bool) -> bool {
        self.versions.take(&mut txn.versions, statement, (txn.owner, txn.id))
    }

    /// Lets go of the transaction's snapshot: its reads are locking reads again.
    pub fn release_snapshot(&self, txn: &mut Txn) {
        if txn.versions.snapshot.is_some() {
            self.versions.release(&mut txn.versions);
            lob::Horizon::snapshot_ended(self);
        }
    }

    /// Starts keeping row versions and allows snapshots once every transaction active
    /// now has ended (waits for them unless `cancel` is set meanwhile: 3617).
    pub fn start_versioning(&self, cancel: Option<&AtomicBool>) -> Result<()> {
        let active = || self.txns.snapshot().0.into_iter().map(|t| t.txn).collect::<Vec<_>>();
        self.versions.start(active, cancel)
    }

    /// Allows snapshots at once (a database opening: no transaction is active).
    pub fn start_versioning_idle(&self) {
        self.versions.start_idle();
    }

    /// Stops taking snapshots and, once the last one ends, keeping versions.
    pub fn stop_versioning(&self, cancel: Option<&AtomicBool>) -> Result<()> {
        self.versions.stop(cancel)
    }

    /// The lock a READ COMMITTED reader of `key` must wait for, if another transaction
    /// holds one: an exclusive table lock or an exclusive key lock.
    pub(crate) fn read_conflict(&self, txn: &Txn, meta: &TreeMeta, key: &[u8]) -> Option<(Resource, LockMode)> {
        if meta.writers.load(Ordering::Acquire) == 0 {
            return None;
        }
        let table = Resource::Table(meta.root.raw());
        if self.locks.conflicts(txn.id, table, LockMode::IntentShared) {
            return Some((table, LockMode::IntentShared));
        }
        let r = Resource::key(meta.root.raw(), key);
        self.locks.conflicts(txn.id, r, LockMode::Shared).then_some((r, LockMode::Shared))
    }

    // Reads: bodies in `crate::read`.

    /// Reads the committed (or own uncommitted) value of `key` and passes it to `f`.
    pub fn get_with<R>(&self, txn: &Txn, tree: PageNo, key: &[u8], f: impl Fn(&[u8]) -> R) -> Result<Option<R>> {
        read::get_with(self, txn, tree, key, f)
    }

    /// [`Space::get_with`], copying the value out.
    pub fn get(&self, txn: &Txn, tree: PageNo, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(txn, tree, key, |v| v.to_vec())
    }

    /// Reads `key` as `locks` says (see `crate::read`). A row that turns out not to
    /// exist keeps its new lock only if it is held to the end of the transaction.
    pub fn get_locked<R>(
        &self,
        txn: &mut Txn,
        tree: PageNo,
        key: &[u8],
        locks: ReadLocks,
        f: impl Fn(&[u8]) -> R,
    ) -> Result<Option<R>> {
        read::get_locked(self, txn, tree, key, locks, f)
    }

    /// Takes the locks on `tree` a read with `locks` needs before it reads rows: the
    /// intent lock of its row locks and the table lock asked for (none for READ
    /// COMMITTED or NOLOCK reads).
    pub fn lock_table_for_read(&self, txn: &mut Txn, tree: PageNo, locks: ReadLocks) -> Result<()> {
        read::lock_table_for_read(self, txn, tree, locks)
    }

    /// Rows with keys in `(lo, hi)` in `dir` order; rows other transactions hold locks
    /// on are waited for (READ COMMITTED), skipped or read as `on_locked` says.
    pub fn scan<'s>(
        &'s self,
        txn: &'s Txn,
        tree: PageNo,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        dir: Direction,
        on_locked: OnLocked,
    ) -> Scan<'s> {
        read::scan(self, txn, tree, lo, hi, dir, on_locked)
    }

    // Row changes: bodies in `crate::txn::write`.

    /// Inserts a row; a live row with the same key is error 2627.
    pub fn insert(&self, txn: &mut Txn, tree: PageNo, key: &[u8], value: &[u8]) -> Result<()> {
        txn::write::insert(self, txn, tree, key, value)
    }

    /// Replaces the value of an existing row; returns false if there is none.
    pub fn update(&self, txn: &mut Txn, tree: PageNo, key: &[u8], value: &[u8]) -> Result<bool> {
        txn::write::update(self, txn, tree, key, value)
    }

    /// Deletes a row (leaving a ghost until commit); returns false if there is none.
    pub fn delete(&self, txn: &mut Txn, tree: PageNo, key: &[u8]) -> Result<bool> {
        txn::write::delete(self, txn, tree, key)
    }

    // Large values stored off their rows: bodies in `crate::lob`.

    /// Stores `data` as a new value in the large-value tree `tree`, in chunks, as part of
    /// `txn` (whose lock on the row of `rows` that will point at it covers it; the intent
    /// locks on `rows`, then on `tree`, are taken first); returns the pointer the row
    /// keeps. Longer than `lob::MAX_VALUE_BYTES` is error 7119.
    pub fn lob_write(&self, txn: &mut Txn, rows: PageNo, tree: PageNo, data: &[u8]) -> Result<row::OffRow> {
        lob::write(self, txn, rows, tree, data)
    }

    /// [`Space::lob_write`] in pieces: a value appended to (`lob::Writer::append`) and
    /// finished, each chunk stored as it fills.
    pub fn lob_writer(&self, txn: &mut Txn, rows: PageNo, tree: PageNo) -> Result<lob::Writer> {
        lob::Writer::start(self, txn, rows, tree)
    }

    /// Starts a partial update of the stored `value` of `tree` as part of `txn` (which
    /// holds the lock on its row of `rows`): `removed` bytes from byte `at` (at most the
    /// value's length) replaced with what is appended (`lob::Rewriter`), written as the
    /// value's next generation — only the chunks that change go to the tree and the log.
    pub fn lob_rewriter(
        &self,
        txn: &mut Txn,
        rows: PageNo,
        tree: PageNo,
        value: row::OffRow,
        at: u64,
        removed: u64,
    ) -> Result<lob::Rewriter> {
        lob::Rewriter::start(self, txn, rows, tree, value, at, removed)
    }

    /// Starts a minimally logged load of the large-value tree `tree` (of the rows tree
    /// `rows`) for `txn`: when the tree is empty it takes the tree's exclusive lock, and
    /// the chunks of the values `txn` writes from now on are built into new pages with no
    /// log record of their bytes (`crate::bulk`) until [`Space::lob_bulk_finish`], which
    /// forces them to disk and makes them the tree. False, with nothing started, when the
    /// tree holds values. Nothing may read the values written meanwhile.
    pub fn lob_bulk_start(&self, txn: &mut Txn, rows: PageNo, tree: PageNo) -> Result<bool> {
        assert!(txn.lob_bulk.is_none(), "one large-value load at a time");
        self.tree_locks(txn, rows, true)?;
        txn.lob_bulk = bulk::BulkBuild::start(self, txn, tree)?;
        Ok(txn.lob_bulk.is_some())
    }

    /// Ends the load [`Space::lob_bulk_start`] began (if one is under way).
    pub fn lob_bulk_finish(&self, txn: &mut Txn) -> Result<Option<bulk::BulkOutcome>> {
        txn.lob_bulk.take().map(|load| load.finish(self, txn)).transpose()
    }

    /// Fills `out` with bytes `from .. from + out.len()` of `value` (which must hold
    /// them), copied once, from the pages. The caller holds a [`lob::Pin`] taken before
    /// it read the row that points at the value; a chunk that is gone all the same (a
    /// READ UNCOMMITTED reader's row was rolled back) is error 7105.
    pub fn lob_read(&self, tree: PageNo, value: row::OffRow, from: u64, out: &mut [u8]) -> Result<()> {
        lob::read(self, tree, value, from, out)
    }

    /// Notes, as part of `txn`, that its last change dropped the row's pointer to `value`
    /// (an entry in the free list): its chunks are removed once the transaction has
    /// committed and no reader may still hold the pointer; a rollback (or one to a
    /// savepoint before now) keeps them.
    pub fn lob_free(&self, txn: &mut Txn, tree: PageNo, value: row::OffRow) -> Result<()> {
        lob::free(self, txn, tree, value)
    }

    /// The free list's entries for `tree`: values that committed changes dropped, and
    /// generations whose older chunks may not be removed yet (what a check must not count
    /// as unreferenced).
    pub fn lob_dropped(&self, tree: PageNo) -> Result<Vec<lob::FreeEntry>> {
        lob::dropped(self, tree)
    }

    /// Removes every value left in the free list (by a crash between a commit and the
    /// removal): when the database opens, before anyone reads. Returns how many.
    pub fn lob_sweep(&self) -> Result<usize> {
        lob::sweep(self)
    }

    /// Takes the free-list entries of the large-value tree `tree` out as part of `txn`,
    /// the transaction that drops the tree.
    pub fn lob_forget(&self, txn: &mut Txn, tree: PageNo) -> Result<()> {
        lob::forget(self, txn, tree)
    }

    /// Pins the large values readable now until the pin is dropped: a reader takes one
    /// before it reads rows whose values it will read.
    pub fn lob_pin(self: &Arc<Self>) -> lob::Pin {
        lob::Horizon::pin(self)
    }

    /// Charges the tree rooted at `root` to `account` from now on (tempdb's quota per
    /// database; see `crate::account`), starting with the pages it holds now. A tree
    /// already charged to an account stays with it.
    pub fn charge_tree_to(&self, root: PageNo, account: Arc<PageAccount>) -> Result<()> {
        account::charge_tree_to(self, root, account)
    }

    // Trees as part of transactions.

    /// Creates an empty B+tree inside the transaction and returns its root page. If the
    /// transaction rolls back (or never commits before a crash) the tree's pages are freed.
    pub fn create_tree(&self, txn: &mut Txn) -> Result<PageNo> {
        self.note_first_lsn(txn);
        txn::with_undo_reserved(self, txn, 0, 0, None, |txn| {
            let mut mtr = Mtr::claiming(self, Claim::NEW_PAGE)?;
            let root = btree::create(self, &mut mtr)?;
            self.commit_update(txn, mtr, &Undo::CreateTree { root })?;
            Ok(root)
        })
    }

    /// Frees every page of a tree that no catalog entry names any more (a DROP committed
    /// when the log ended at `dropped_at`; 0 for drops recorded without it). Safe to
    /// repeat after a crash part-way: pages already freed are skipped, and once the root
    /// is free — it goes last — nothing is freed again, even if the root page has become
    /// another tree's root since.
    pub fn free_tree(&self, root: PageNo, dropped_at: Lsn) -> Result<()> {
        lob::Horizon::forget_tree(self, root);
        let meta = self.tree(root);
        let _latch = meta.latch.write();
        meta.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        meta.lob_next_id.store(0, std::sync::atomic::Ordering::Release);
        if !dropped_at.is_none() && !btree::holds_dropped_root(self, root, dropped_at)? {
            return Ok(());
        }
        btree::free_tree(self, root, LogCtx::system()).map(|_| ())
    }

    /// Loads `rows`, whose keys must be strictly ascending, into the tree `tree` if it is
    /// empty, minimally logged (see `crate::bulk`); takes an exclusive table lock first.
    /// Returns `None`, having changed nothing, when the tree holds any record (the caller
    /// then inserts row by row). The pages are durable when it returns, so the caller may
    /// commit at once; a rollback undoes the whole load.
    pub fn bulk_load<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        txn: &mut Txn,
        tree: PageNo,
        rows: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Option<BulkOutcome>> {
        bulk::load(self, txn, tree, rows)
    }
}

impl Drop for Space {
    fn drop(&mut self) {
        // The database layer checkpoints before closing; this only releases the frames.
        let _ = self.pool.unregister(self.file);
    }
}
