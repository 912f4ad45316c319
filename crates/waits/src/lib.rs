//! What threads wait for, by SQL Server's wait types: counted for the process and per
//! session, with each session's wait in progress, and its running request's CPU time and
//! progress (see README.md).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Defines [`WaitType`] and its table from one list: variant, SQL Server's name, meaning.
macro_rules! wait_types {
    ($($variant:ident = $name:literal, $category:ident : $about:literal,)*) => {
        /// A kind of wait, named as SQL Server names it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum WaitType {
            $($variant,)*
        }

        impl WaitType {
            /// Every wait type, in the order the views list them.
            pub const ALL: &'static [WaitType] = &[$(WaitType::$variant,)*];

            /// SQL Server's name (`LCK_M_X`, `WRITELOG`, …).
            pub fn name(self) -> &'static str {
                match self {
                    $(WaitType::$variant => $name,)*
                }
            }

            /// What a thread in this wait is waiting for.
            pub fn about(self) -> &'static str {
                match self {
                    $(WaitType::$variant => $about,)*
                }
            }

            /// The category Query Store counts it under (`sys.query_store_wait_stats`).
            pub fn category(self) -> WaitCategory {
                match self {
                    $(WaitType::$variant => WaitCategory::$category,)*
                }
            }
        }
    };
}

wait_types! {
    LockShared = "LCK_M_S", Lock: "a shared lock on a row, table or application resource that another transaction holds incompatibly",
    LockUpdate = "LCK_M_U", Lock: "an update lock (a row an UPDATE or DELETE is about to read and change)",
    LockExclusive = "LCK_M_X", Lock: "an exclusive lock (a row, table or application resource to be written)",
    LockIntentShared = "LCK_M_IS", Lock: "an intent-shared table lock (a table another transaction locked exclusively)",
    LockIntentExclusive = "LCK_M_IX", Lock: "an intent-exclusive table lock (a table another transaction locked shared or exclusively)",
    LockSchemaStability = "LCK_M_SCH_S", Lock: "schema stability: a statement waiting for DDL on an object it uses",
    LockSchemaModification = "LCK_M_SCH_M", Lock: "schema modification: DDL waiting for the statements and transactions using its object",
    LockRangeShared = "LCK_M_RS_S", Lock: "a shared key-range lock (SERIALIZABLE reads)",
    LockRangeInsert = "LCK_M_RIn_NL", Lock: "an insert into a key range that a SERIALIZABLE reader holds",
    LockRangeExclusive = "LCK_M_RX_X", Lock: "an exclusive key-range lock",
    PageIoShared = "PAGEIOLATCH_SH", BufferIo: "a page being read from disk (or from the buffer pool extension) into the buffer pool",
    WriteLog = "WRITELOG", TranLogIo: "a commit waiting for its log records to be flushed to disk",
    ResourceGovernorIdle = "RESOURCE_GOVERNOR_IDLE", Cpu: "a request paced by a CPU or log-rate limit (Resource Governor or the database's limits)",
    RequestTurn = "TESSERA_REQUEST_TURN", WorkerThread: "a request waiting for a turn to run: its database or workload group runs as many requests as its limit allows",
    WaitFor = "WAITFOR", UserWait: "a WAITFOR DELAY or WAITFOR TIME statement",
}

/// The categories Query Store counts waits under, with SQL Server's ids
/// (`sys.query_store_wait_stats.wait_category`); tessera's own wait types fall in the
/// category of SQL Server's nearest ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitCategory {
    /// `SOS_SCHEDULER_YIELD`; tessera's CPU pacing (`RESOURCE_GOVERNOR_IDLE`).
    Cpu = 1,
    /// `THREADPOOL`; tessera's wait for a request's turn.
    WorkerThread = 2,
    Lock = 3,
    BufferIo = 6,
    TranLogIo = 14,
    /// `WAITFOR`.
    UserWait = 18,
}

impl WaitCategory {
    /// SQL Server's id of the category.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// SQL Server's name (`wait_category_desc`).
    pub fn name(self) -> &'static str {
        match self {
            WaitCategory::Cpu => "CPU",
            WaitCategory::WorkerThread => "Worker Thread",
            WaitCategory::Lock => "Lock",
            WaitCategory::BufferIo => "Buffer IO",
            WaitCategory::TranLogIo => "Tran Log IO",
            WaitCategory::UserWait => "User Wait",
        }
    }

    /// The category of SQL Server's id `id`.
    pub fn from_id(id: u8) -> Option<WaitCategory> {
        WaitType::ALL.iter().map(|t| t.category()).find(|c| c.id() == id)
    }
}

/// How many wait types there are.
pub const WAIT_TYPES: usize = WaitType::ALL.len();

impl WaitType {
    fn index(self) -> usize {
        self as usize
    }
}

/// The counters of one wait type.
#[derive(Default)]
struct Counter {
    waits: AtomicU64,
    total_us: AtomicU64,
    longest_us: AtomicU64,
}

/// One wait type's figures, as the views show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitFigures {
    /// Waits that ended.
    pub waits: u64,
    pub total_us: u64,
    pub longest_us: u64,
}

/// Counters per wait type (for the process, or for one session).
pub struct WaitStats {
    counters: [Counter; WAIT_TYPES],
}

impl Default for WaitStats {
    fn default() -> Self {
        WaitStats { counters: std::array::from_fn(|_| Counter::default()) }
    }
}

impl WaitStats {
    fn add(&self, kind: WaitType, waited: Duration) {
        let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        let c = &self.counters[kind.index()];
        c.waits.fetch_add(1, Ordering::Relaxed);
        c.total_us.fetch_add(us, Ordering::Relaxed);
        c.longest_us.fetch_max(us, Ordering::Relaxed);
    }

    /// The figures of `kind`.
    pub fn figures(&self, kind: WaitType) -> WaitFigures {
        let c = &self.counters[kind.index()];
        WaitFigures {
            waits: c.waits.load(Ordering::Relaxed),
            total_us: c.total_us.load(Ordering::Relaxed),
            longest_us: c.longest_us.load(Ordering::Relaxed),
        }
    }

    /// Every wait type with its figures, in [`WaitType::ALL`]'s order.
    pub fn all(&self) -> impl Iterator<Item = (WaitType, WaitFigures)> + '_ {
        WaitType::ALL.iter().map(|&k| (k, self.figures(k)))
    }

    /// Sets every counter to zero (`DBCC SQLPERF ('sys.dm_os_wait_stats', CLEAR)`).
    pub fn clear(&self) {
        for c in &self.counters {
            c.waits.store(0, Ordering::Relaxed);
            c.total_us.store(0, Ordering::Relaxed);
            c.longest_us.store(0, Ordering::Relaxed);
        }
    }
}

/// The process's counters: every wait of every thread, with a session or not.
pub fn process() -> &'static WaitStats {
    static PROCESS: std::sync::OnceLock<WaitStats> = std::sync::OnceLock::new();
    PROCESS.get_or_init(WaitStats::default)
}

/// What a wait is for, as the layer that waits knows it; the views name it as SQL Server
/// does (`KEY: 5:72057594043039744 (8194443284a0)`), translating trees to the objects and
/// indexes they store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// Nothing a view can name (a page read, a log flush, a delay).
    Nothing,
    /// A table lock: the tree (by its root page) of database `database`.
    Table { database: u32, tree: u32 },
    /// A key lock or a key-range lock in a tree, by the hash of the key.
    Key { database: u32, tree: u32, hash: u64 },
    /// A schema lock on an object, by its id.
    Object { database: u32, object: u32 },
    /// An application lock (`sp_getapplock`), by the hash of its name.
    Application { database: u32, hash: u64 },
}

/// A wait in progress, as `sys.dm_exec_requests` shows it.
#[derive(Clone, Copy, Debug)]
pub struct CurrentWait {
    pub kind: WaitType,
    pub since: Instant,
    pub resource: Resource,
    /// The session it waits for (0: none, or not known).
    pub blocker: i32,
}

/// One session's waits: its counters, its wait in progress and its last wait's type; and
/// its running request's CPU and progress.
pub struct SessionWaits {
    spid: i32,
    stats: WaitStats,
    current: Mutex<Option<CurrentWait>>,
    last: Mutex<Option<WaitType>>,
    request: Mutex<Option<Request>>,
    /// Time its waits took so far, in microseconds (counted as each ends).
    waited_us: AtomicU64,
    /// Working time of its requests that ended, in microseconds (sp_who2's CPUTime).
    cpu_us: AtomicU64,
    /// Pages its requests read from disk (sp_who2's DiskIO).
    disk_reads: AtomicU64,
    /// What its running request's finished statements did: pages read from disk, pages
    /// fetched, rows (`sys.dm_exec_requests`' reads, logical_reads, row_count).
    request_work: [AtomicU64; 3],
}

/// The request a session runs now, on the thread it is attached to.
struct Request {
    started: Instant,
    /// The session's `waited_us` when it started.
    waited_at_start_us: u64,
    /// Work done and work to do, for the requests that know (BACKUP, RESTORE, DBCC).
    progress: Option<(u64, u64)>,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl std::fmt::Debug for SessionWaits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWaits").field("spid", &self.spid).field("current", &self.current()).finish()
    }
}

impl SessionWaits {
    pub fn new(spid: i32) -> Arc<SessionWaits> {
        Arc::new(SessionWaits {
            spid,
            stats: WaitStats::default(),
            current: Mutex::new(None),
            last: Mutex::new(None),
            request: Mutex::new(None),
            waited_us: AtomicU64::new(0),
            cpu_us: AtomicU64::new(0),
            disk_reads: AtomicU64::new(0),
            request_work: Default::default(),
        })
    }

    /// Working time of all its requests so far, the running one's included.
    pub fn cpu(&self) -> Duration {
        Duration::from_micros(self.cpu_us.load(Ordering::Relaxed)) + self.request_cpu().unwrap_or_default()
    }

    /// Pages its requests have read from disk.
    pub fn disk_reads(&self) -> u64 {
        self.disk_reads.load(Ordering::Relaxed)
    }

    /// Counts `pages` read from disk by one of its requests.
    pub fn add_disk_reads(&self, pages: u64) {
        self.disk_reads.fetch_add(pages, Ordering::Relaxed);
    }

    /// The working time of its running request so far (None: none is running): the
    /// time since it began less the time it waited (`dm_exec_requests.cpu_time`). It is
    /// the thread's CPU time plus any time the thread was ready but not running, and
    /// costs the request no reading of a CPU clock (a system call).
    pub fn request_cpu(&self) -> Option<Duration> {
        let r = self.request.lock();
        let r = r.as_ref()?;
        let ended_waits = self.waited_us.load(Ordering::Relaxed).saturating_sub(r.waited_at_start_us);
        let in_wait = self.current().map_or(Duration::ZERO, |w| w.since.elapsed());
        Some(r.started.elapsed().saturating_sub(Duration::from_micros(ended_waits) + in_wait))
    }

    /// What its running request's finished statements did: (pages read from disk, pages
    /// fetched, rows).
    pub fn request_work(&self) -> (u64, u64, u64) {
        let [a, b, c] = &self.request_work;
        (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed), c.load(Ordering::Relaxed))
    }

    /// The fraction of its running request's work done (BACKUP, RESTORE, DBCC CHECKDB),
    /// from 0 to 1; None for requests that do not report it.
    pub fn request_progress(&self) -> Option<f64> {
        let r = self.request.lock();
        let (done, total) = r.as_ref()?.progress?;
        Some(if total == 0 { 1.0 } else { done.min(total) as f64 / total as f64 })
    }

    pub fn spid(&self) -> i32 {
        self.spid
    }

    /// The session's counters since it began.
    pub fn stats(&self) -> &WaitStats {
        &self.stats
    }

    /// The wait the session is in now, if any.
    pub fn current(&self) -> Option<CurrentWait> {
        *self.current.lock()
    }

    /// The type of the session's last wait, ended or not.
    pub fn last(&self) -> Option<WaitType> {
        *self.last.lock()
    }
}

thread_local! {
    /// The session the thread runs a request for.
    static SESSION: RefCell<Option<Arc<SessionWaits>>> = const { RefCell::new(None) };
    /// Time the thread's waits took so far (counted as each ends): a request's or a
    /// statement's working time is its elapsed time less what this grew by.
    static WAITED: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// Its id (0: none), read by the lock manager with every lock it grants.
    static SPID: Cell<i32> = const { Cell::new(0) };
    /// Microseconds the thread waited so far, per wait type (Query Store's wait
    /// statistics take the difference over a statement).
    static WAITED_BY_TYPE: [Cell<u64>; WAIT_TYPES] = const { [const { Cell::new(0) }; WAIT_TYPES] };
}

/// The session the calling thread works for (0: none: a background thread, or embedded
/// use without sessions).
pub fn current_session() -> i32 {
    SPID.with(Cell::get)
}

/// The thread works for `session` until the guard drops; then for the one it worked for
/// before (a session's request may run another session's work inside it, such as the
/// internal session that writes backup history).
///
/// The session's request runs from here until the guard drops (unless the session was
/// attached already: then its request goes on).
pub fn attach(session: &Arc<SessionWaits>) -> Attached {
    let previous = SESSION.with(|s| s.replace(Some(session.clone())));
    let previous_spid = SPID.with(|s| s.replace(session.spid));
    let mut request = session.request.lock();
    let began = request.is_none();
    let start = work_mark();
    if began {
        for w in &session.request_work {
            w.store(0, Ordering::Relaxed);
        }
        let waited_at_start_us = session.waited_us.load(Ordering::Relaxed);
        *request = Some(Request { started: start.0, waited_at_start_us, progress: None });
    }
    Attached { session: session.clone(), began, start, previous, previous_spid }
}

/// A point to measure the calling thread's working time from: now, and the time its
/// waits have taken so far (no system call: a vDSO clock read and a thread-local).
pub fn work_mark() -> (Instant, Duration) {
    (Instant::now(), WAITED.get())
}

/// The calling thread's working time since `mark`: the time elapsed less the time its
/// waits took meanwhile.
pub fn worked_since(mark: (Instant, Duration)) -> Duration {
    mark.0.elapsed().saturating_sub(WAITED.get().saturating_sub(mark.1))
}

/// Microseconds the calling thread has waited so far, per wait type (in
/// [`WaitType::ALL`]'s order): two readings bracket a statement's waits.
pub fn waited_by_type() -> [u64; WAIT_TYPES] {
    WAITED_BY_TYPE.with(|w| std::array::from_fn(|i| w[i].get()))
}

/// Undoes [`attach`] when dropped.
#[must_use = "the thread works for the session only while the guard lives"]
pub struct Attached {
    session: Arc<SessionWaits>,
    /// This attachment began the session's request (and so ends it).
    began: bool,
    /// When it was attached, for the request's working time.
    start: (Instant, Duration),
    previous: Option<Arc<SessionWaits>>,
    previous_spid: i32,
}

impl Drop for Attached {
    fn drop(&mut self) {
        if self.began {
            let worked = worked_since(self.start);
            *self.session.request.lock() = None;
            self.session.cpu_us.fetch_add(micros(worked), Ordering::Relaxed);
        }
        let previous = self.previous.take();
        SESSION.with(|s| *s.borrow_mut() = previous);
        SPID.with(|s| s.set(self.previous_spid));
    }
}

/// Adds a finished statement's work to the calling thread's request: pages read from
/// disk, pages fetched and rows.
pub fn add_request_work(physical_reads: u64, logical_reads: u64, rows: u64) {
    SESSION.with(|s| {
        if let Some(session) = s.borrow().as_ref() {
            for (counter, n) in session.request_work.iter().zip([physical_reads, logical_reads, rows]) {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    });
}

/// Reports how far the calling thread's request has got: `done` of `total` units of work
/// (pages, bytes), for `percent_complete` and `estimated_completion_time`.
pub fn progress(done: u64, total: u64) {
    SESSION.with(|s| {
        if let Some(session) = s.borrow().as_ref() {
            if let Some(r) = session.request.lock().as_mut() {
                r.progress = Some((done, total));
            }
        }
    });
}

/// Begins a wait of type `kind` for `resource` (called only once the thread knows it must
/// wait). It ends, and is counted, when the returned value drops.
pub fn begin(kind: WaitType, resource: Resource) -> Waiting {
    let session = SESSION.with(|s| s.borrow().clone());
    let since = Instant::now();
    if let Some(s) = &session {
        *s.current.lock() = Some(CurrentWait { kind, since, resource, blocker: 0 });
        *s.last.lock() = Some(kind);
    }
    Waiting { kind, since, session }
}

/// A wait in progress (see [`begin`]).
#[must_use = "a wait is counted when this value drops"]
pub struct Waiting {
    kind: WaitType,
    since: Instant,
    session: Option<Arc<SessionWaits>>,
}

impl Waiting {
    /// The session that holds what this wait is for (as it changes while the wait goes on).
    pub fn blocked_by(&self, spid: i32) {
        if let Some(s) = &self.session {
            if let Some(current) = s.current.lock().as_mut() {
                current.blocker = spid;
            }
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let waited = self.since.elapsed();
        process().add(self.kind, waited);
        WAITED.set(WAITED.get() + waited);
        WAITED_BY_TYPE.with(|w| {
            let c = &w[self.kind.index()];
            c.set(c.get() + micros(waited));
        });
        if let Some(s) = &self.session {
            s.stats.add(self.kind, waited);
            s.waited_us.fetch_add(micros(waited), Ordering::Relaxed);
            *s.current.lock() = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_type_is_listed_once() {
        let mut names: Vec<&str> = WaitType::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WAIT_TYPES);
        for (i, k) in WaitType::ALL.iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?} is listed at its own index");
            assert!(!k.about().is_empty());
        }
    }

    #[test]
    fn the_thread_counts_its_waits_by_type_and_each_type_has_a_category() {
        let before = waited_by_type();
        drop(begin(WaitType::WaitFor, Resource::Nothing));
        std::thread::sleep(Duration::from_millis(2));
        let w = begin(WaitType::WriteLog, Resource::Nothing);
        std::thread::sleep(Duration::from_millis(2));
        drop(w);
        let after = waited_by_type();
        assert!(after[WaitType::WriteLog.index()] >= before[WaitType::WriteLog.index()] + 2000);
        assert_eq!(after[WaitType::LockShared.index()], before[WaitType::LockShared.index()]);
        assert_eq!(WaitType::LockRangeInsert.category(), WaitCategory::Lock);
        assert_eq!(WaitCategory::from_id(14).map(WaitCategory::name), Some("Tran Log IO"));
        assert_eq!(WaitCategory::from_id(0), None);
    }

    #[test]
    fn a_wait_is_counted_for_the_process_and_the_attached_session() {
        let session = SessionWaits::new(77);
        let before = process().figures(WaitType::WaitFor);
        {
            let _attached = attach(&session);
            assert_eq!(current_session(), 77);
            let key = Resource::Key { database: 5, tree: 9, hash: 0xAB };
            let w = begin(WaitType::LockExclusive, key);
            w.blocked_by(12);
            let now = session.current().expect("a wait in progress");
            assert_eq!((now.kind, now.resource, now.blocker), (WaitType::LockExclusive, key, 12));
            drop(w);
            let _w = begin(WaitType::WaitFor, Resource::Nothing);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(current_session(), 0, "the guard detached the session");
        assert!(session.current().is_none());
        assert!(session.request_cpu().is_none(), "the request ended with the guard");
        assert_eq!(session.last(), Some(WaitType::WaitFor));
        assert_eq!(session.stats().figures(WaitType::LockExclusive).waits, 1);
        let mine = session.stats().figures(WaitType::WaitFor);
        assert_eq!(mine.waits, 1);
        assert!(mine.total_us >= 5_000 && mine.longest_us == mine.total_us, "{mine:?}");
        let after = process().figures(WaitType::WaitFor);
        assert!(after.waits > before.waits && after.total_us >= before.total_us + mine.total_us);
    }

    #[test]
    fn a_request_reports_its_cpu_and_progress_while_attached() {
        let session = SessionWaits::new(60);
        let attached = attach(&session);
        assert_eq!(session.request_progress(), None);
        // Work until the request has worked 5 ms, then wait 20 ms: the wait is not work.
        let mut x = 0u64;
        while session.request_cpu().expect("a request runs") < Duration::from_millis(5) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        let mark = work_mark();
        let waiting = begin(WaitType::WaitFor, Resource::Nothing);
        std::thread::sleep(Duration::from_millis(20));
        drop(waiting);
        let worked = worked_since(mark);
        assert!(worked + Duration::from_millis(20) <= mark.0.elapsed(), "a wait is not work: {worked:?}");
        let cpu = session.request_cpu().expect("a request runs");
        progress(25, 100);
        assert_eq!(session.request_progress(), Some(0.25));
        {
            let again = attach(&session);
            drop(again);
            assert!(session.request_cpu().is_some(), "a nested attachment leaves the request running");
        }
        drop(attached);
        assert_eq!(session.request_progress(), None);
        // Kept in whole microseconds: the session's total may round below the live reading.
        assert!(session.cpu() + Duration::from_millis(1) >= cpu, "the ended request's CPU is the session's");
    }

    #[test]
    fn attaching_nests() {
        let outer = SessionWaits::new(51);
        let inner = SessionWaits::new(52);
        let _a = attach(&outer);
        {
            let _b = attach(&inner);
            assert_eq!(current_session(), 52);
            drop(begin(WaitType::WriteLog, Resource::Nothing));
        }
        assert_eq!(current_session(), 51);
        assert_eq!(inner.stats().figures(WaitType::WriteLog).waits, 1);
        assert_eq!(outer.stats().figures(WaitType::WriteLog).waits, 0);
    }

    #[test]
    fn a_thread_without_a_session_counts_for_the_process_only() {
        let before = process().figures(WaitType::PageIoShared).waits;
        drop(begin(WaitType::PageIoShared, Resource::Nothing));
        assert!(process().figures(WaitType::PageIoShared).waits > before);
    }
}
