//! What the I/O of the engine's files costs: per file, the reads and writes issued, their
//! bytes and the time spent in them (`sys.dm_io_virtual_file_stats`); per kind of file,
//! process-wide, a latency histogram of log-scale buckets (for Prometheus).
//!
//! A [`DataFile`](crate::DataFile) is measured once it is given counters of its own
//! ([`DataFile::measured`](crate::DataFile::measured)): then each read or write reads the
//! monotonic clock before and after the system call and adds, with relaxed atomics, one
//! to its count, its bytes and its time to the file's counters, and one to a bucket and
//! its time to the histogram of its kind and direction. Nothing is locked or allocated;
//! every counter is a fixed field. A file that is not measured pays one branch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which kind of file an I/O was for: each kind has a latency histogram per direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A database's data file (`.mdf`).
    Data,
    /// A database's log file (`.ldf`).
    Log,
    /// A backup's media (`BACKUP … TO DISK`, read by RESTORE).
    Backup,
}

/// Whether an I/O read or wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Read,
    Write,
}

/// The time an I/O took, in whole microseconds (saturating).
fn micros(took: Duration) -> u64 {
    u64::try_from(took.as_micros()).unwrap_or(u64::MAX)
}

/// One file's counters since it was opened (each measured open has its own, which its
/// handles share).
#[derive(Debug)]
pub(crate) struct FileStats {
    kind: FileKind,
    reads: AtomicU64,
    bytes_read: AtomicU64,
    read_us: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
    write_us: AtomicU64,
}

/// A [`FileStats`]' counters as read at one moment (each counter read on its own: one
/// I/O ending meanwhile may show in some of them and not yet in others).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileFigures {
    /// Reads issued (each one system call: a vectored read of many pages is one).
    pub reads: u64,
    /// Bytes those reads returned (a failed read adds none).
    pub bytes_read: u64,
    /// Time spent in them, in microseconds.
    pub read_us: u64,
    pub writes: u64,
    pub bytes_written: u64,
    pub write_us: u64,
}

impl FileStats {
    pub(crate) fn new(kind: FileKind) -> FileStats {
        FileStats {
            kind,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            read_us: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            write_us: AtomicU64::new(0),
        }
    }

    /// Counts one I/O of `bytes` (0 if it failed) that took `took`, here and in its
    /// kind's histogram: five relaxed additions.
    pub(crate) fn record(&self, direction: Direction, bytes: usize, took: Duration) {
        let us = micros(took);
        let (count, sum, time) = match direction {
            Direction::Read => (&self.reads, &self.bytes_read, &self.read_us),
            Direction::Write => (&self.writes, &self.bytes_written, &self.write_us),
        };
        count.fetch_add(1, Ordering::Relaxed);
        sum.fetch_add(bytes as u64, Ordering::Relaxed);
        time.fetch_add(us, Ordering::Relaxed);
        latency(self.kind, direction).record_us(us);
    }

    pub(crate) fn figures(&self) -> FileFigures {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        FileFigures {
            reads: get(&self.reads),
            bytes_read: get(&self.bytes_read),
            read_us: get(&self.read_us),
            writes: get(&self.writes),
            bytes_written: get(&self.bytes_written),
            write_us: get(&self.write_us),
        }
    }
}

/// A measured file as `sys.dm_io_virtual_file_stats` shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileSample {
    pub figures: FileFigures,
    /// The file's size in bytes now.
    pub size: u64,
    /// Its descriptor (the handle SQL Server shows is Windows').
    pub handle: u64,
}

/// Buckets with an upper bound: 16 µs, 32 µs, … 2^23 µs (about 8.4 s), doubling.
pub const BOUNDED_BUCKETS: usize = 20;
/// Every bucket: the bounded ones, then the overflow (+Inf).
pub const BUCKETS: usize = BOUNDED_BUCKETS + 1;
/// The first bucket's upper bound is 2^4 µs.
const FIRST_BOUND_LOG2: u32 = 4;

/// The bounded buckets' upper bounds in microseconds, inclusive (Prometheus' `le`).
pub const BOUNDS_US: [u64; BOUNDED_BUCKETS] = {
    let mut bounds = [0u64; BOUNDED_BUCKETS];
    let mut i = 0;
    while i < BOUNDED_BUCKETS {
        bounds[i] = 1 << (FIRST_BOUND_LOG2 + i as u32);
        i += 1;
    }
    bounds
};

/// The bucket of a time of `us` microseconds: the first whose bound is at least `us`,
/// else the overflow. One leading-zero count, no search.
fn bucket(us: u64) -> usize {
    if us <= 1 << FIRST_BOUND_LOG2 {
        return 0;
    }
    // The smallest k with 2^k >= us, for us > 1.
    let k = u64::BITS - (us - 1).leading_zeros();
    ((k - FIRST_BOUND_LOG2) as usize).min(BOUNDED_BUCKETS)
}

/// A latency histogram: a fixed array of counters, one per bucket, and the sum of the
/// times recorded. Recording is two relaxed additions; its size never changes.
#[derive(Debug)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
    sum_us: AtomicU64,
}

/// A [`Histogram`] as read at one moment. `count` is the sum of `counts`, so the buckets
/// and the count always agree; `sum_us` may miss (or already hold) a time being recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// The bounded buckets' upper bounds (µs, inclusive); `counts` has one more entry,
    /// the overflow.
    pub bounds_us: &'static [u64; BOUNDED_BUCKETS],
    /// How many times fell in each bucket (not cumulative).
    pub counts: [u64; BUCKETS],
    pub sum_us: u64,
    pub count: u64,
}

impl Histogram {
    pub const fn new() -> Histogram {
        Histogram { counts: [const { AtomicU64::new(0) }; BUCKETS], sum_us: AtomicU64::new(0) }
    }

    pub fn record(&self, took: Duration) {
        self.record_us(micros(took));
    }

    fn record_us(&self, us: u64) {
        self.counts[bucket(us)].fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let counts = std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed));
        HistogramSnapshot {
            bounds_us: &BOUNDS_US,
            counts,
            sum_us: self.sum_us.load(Ordering::Relaxed),
            count: counts.iter().sum(),
        }
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// The process's histograms of measured files' I/O, by kind then direction.
static LATENCY: [[Histogram; 2]; 3] = [const { [const { Histogram::new() }; 2] }; 3];

/// The latencies of every measured file of `kind`'s I/O in `direction` since the process
/// started.
pub fn latency(kind: FileKind, direction: Direction) -> &'static Histogram {
    &LATENCY[kind as usize][direction as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_fall_in_the_first_bucket_whose_bound_holds_them() {
        assert_eq!(BOUNDS_US[0], 16);
        assert_eq!(BOUNDS_US[BOUNDED_BUCKETS - 1], 1 << 23);
        for (us, want) in [(0, 0), (1, 0), (16, 0), (17, 1), (32, 1), (33, 2), (1000, 6), (1 << 23, 19)] {
            assert_eq!(bucket(us), want, "{us} µs");
            assert!(us <= BOUNDS_US[want] && (want == 0 || us > BOUNDS_US[want - 1]), "{us} µs");
        }
        for us in [(1 << 23) + 1, 60_000_000, u64::MAX] {
            assert_eq!(bucket(us), BOUNDED_BUCKETS, "{us} µs overflows");
        }
        for k in 0..64 {
            assert!(bucket(1 << k) < BUCKETS && bucket((1u64 << k).wrapping_sub(1)) < BUCKETS);
        }
    }

    #[test]
    fn a_histogram_counts_every_time_once_and_stays_its_size() {
        let h = Histogram::new();
        let times =
            [Duration::from_micros(3), Duration::from_micros(20), Duration::from_millis(5), Duration::from_secs(60)];
        for t in times {
            h.record(t);
        }
        h.record(Duration::from_micros(20));
        let s = h.snapshot();
        assert_eq!(s.count, 5);
        assert_eq!(s.counts.len(), BOUNDS_US.len() + 1);
        assert_eq!((s.counts[0], s.counts[1], s.counts[bucket(5000)], s.counts[BOUNDED_BUCKETS]), (1, 2, 1, 1));
        assert_eq!(s.counts.iter().sum::<u64>(), s.count);
        assert_eq!(s.sum_us, 3 + 40 + 5000 + 60_000_000);
        assert_eq!(std::mem::size_of::<Histogram>(), (BUCKETS + 1) * 8, "a fixed array: nothing grows");
    }

    #[test]
    fn a_file_counts_its_reads_and_writes_and_its_kind_their_times() {
        let before = latency(FileKind::Backup, Direction::Write).snapshot().count;
        let f = FileStats::new(FileKind::Backup);
        f.record(Direction::Write, 4096, Duration::from_micros(100));
        f.record(Direction::Write, 0, Duration::from_micros(50));
        f.record(Direction::Read, 8192, Duration::from_micros(7));
        let want =
            FileFigures { reads: 1, bytes_read: 8192, read_us: 7, writes: 2, bytes_written: 4096, write_us: 150 };
        assert_eq!(f.figures(), want);
        assert!(latency(FileKind::Backup, Direction::Write).snapshot().count >= before + 2);
    }
}
