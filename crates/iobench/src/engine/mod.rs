//! The two I/O engines and what they share: the run's phase, where each next I/O goes, what
//! writes carry, and how a failed I/O is reported.
//!
//! - [`uring`]: one io_uring per thread with `-o` requests in flight.
//! - [`threads`]: `-o` OS threads per thread, each doing blocking pread/pwrite.
//!
//! A completion counts when it is reaped while the run is in its measured phase; its latency
//! runs from just before the request was handed to the kernel to just after its completion was
//! seen, as fio's total latency (`lat`) does.

pub mod threads;
pub mod uring;

use std::fs::File;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use tessera_io::{AlignedBuf, IO_ALIGN};

use crate::cpu::{self, CpuTimes};
use crate::error::Error;
use crate::params::{Access, WriteData};
use crate::rng::Rng;
use crate::stats::IoStats;

pub const WARMUP: u8 = 0;
pub const MEASURE: u8 = 1;
pub const COOLDOWN: u8 = 2;
pub const STOP: u8 = 3;

/// A counter alone on its cache line, so threads bumping neighbours do not slow each other.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct PaddedCounter(pub AtomicU64);

/// State every worker reads: the phase, the first error, live counts for the progress line.
#[derive(Debug)]
pub struct Shared {
    phase: AtomicU8,
    error: Mutex<Option<Error>>,
    /// Completed I/Os and bytes per thread, whatever the phase (for progress).
    pub live_ios: Vec<PaddedCounter>,
    pub live_bytes: Vec<PaddedCounter>,
}

impl Shared {
    pub fn new(threads: usize, phase: u8) -> Shared {
        Shared {
            phase: AtomicU8::new(phase),
            error: Mutex::new(None),
            live_ios: (0..threads).map(|_| PaddedCounter::default()).collect(),
            live_bytes: (0..threads).map(|_| PaddedCounter::default()).collect(),
        }
    }

    #[inline]
    pub fn phase(&self) -> u8 {
        self.phase.load(Ordering::Acquire)
    }

    pub fn set_phase(&self, phase: u8) {
        self.phase.store(phase, Ordering::Release);
    }

    /// Records the first failure and stops the run.
    pub fn fail(&self, error: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(error);
        }
        self.set_phase(STOP);
    }

    pub fn failed(&self) -> bool {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    pub fn take_error(&self) -> Option<Error> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    #[inline]
    pub fn count(&self, thread: usize, ios: u64, bytes: u64) {
        self.live_ios[thread].0.fetch_add(ios, Ordering::Relaxed);
        self.live_bytes[thread].0.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn live_totals(&self) -> (u64, u64) {
        let sum = |v: &[PaddedCounter]| v.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
        (sum(&self.live_ios), sum(&self.live_bytes))
    }
}

/// The start line: every I/O thread arrives once set up and waits until the run opens it.
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Gate {
    /// Called by an I/O thread once it is set up (or has failed to be): counts it and waits for
    /// the gate to open.
    pub fn arrive_and_wait(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 += 1;
        self.changed.notify_all();
        while !state.1 {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Waits until `count` threads have arrived.
    pub fn wait_for(&self, count: usize) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.0 < count {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub fn open(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.changed.notify_all();
    }
}

/// What writes carry, shared by every thread of a run.
pub enum WriteSource {
    /// A block of zeros.
    Zeros(AlignedBuf),
    /// Each write's own buffer refilled with random bytes.
    PerIo,
    /// Random slices (4 KiB-aligned starts) of one buffer of random bytes.
    Buffer(AlignedBuf),
}

impl std::fmt::Debug for WriteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteSource::Zeros(b) => write!(f, "Zeros({} bytes)", b.len()),
            WriteSource::PerIo => f.write_str("PerIo"),
            WriteSource::Buffer(b) => write!(f, "Buffer({} bytes)", b.len()),
        }
    }
}

/// The request buffers of one I/O thread: one fresh anonymous mapping cut into `count` slots
/// of `size` bytes (page-aligned), laid out as fio lays out its `iodepth` buffers.
///
/// How a buffer's pages sit in physical memory decides how many DMA segments a request
/// needs, and on a virtio disk that moves throughput by 10-40 % at 16 KiB and more. So the
/// memory is made the way a fresh fio process makes it, whatever this process allocated and
/// freed before: fio fills its buffers at start-up when the job writes (the pages are then
/// faulted in together, in order: `populate`), and leaves them to be faulted in by the
/// first reads otherwise.
pub struct SlotMemory {
    ptr: NonNull<u8>,
    len: usize,
    size: usize,
    count: usize,
}

// SAFETY: the mapping is owned exclusively, like a Vec<u8>.
unsafe impl Send for SlotMemory {}

impl SlotMemory {
    pub fn new(count: usize, size: usize, populate: bool) -> std::io::Result<SlotMemory> {
        let size = round_up(size as u64);
        let len = size.checked_mul(count.max(1)).ok_or_else(|| std::io::Error::other("buffer size overflow"))?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | if populate { libc::MAP_POPULATE } else { 0 },
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(SlotMemory { ptr, len, size, count: count.max(1) })
    }

    /// Start of slot `i`.
    pub fn ptr(&self, i: usize) -> *mut u8 {
        assert!(i < self.count, "slot {i} of {}", self.count);
        // SAFETY: within the mapping.
        unsafe { self.ptr.as_ptr().add(i * self.size) }
    }

    /// Slot `i` as bytes.
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: the slot lies within the mapping and is uniquely borrowed through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(i), self.size) }
    }
}

impl Drop for SlotMemory {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

impl std::fmt::Debug for SlotMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlotMemory({} × {} bytes)", self.count, self.size)
    }
}

/// `n` rounded up to a whole number of [`IO_ALIGN`] units (at least one).
pub fn round_up(n: u64) -> usize {
    (n.max(1).div_ceil(IO_ALIGN as u64) * IO_ALIGN as u64) as usize
}

impl WriteSource {
    pub fn new(data: WriteData, block: u64, seed: u64) -> WriteSource {
        match data {
            WriteData::Zeros => WriteSource::Zeros(AlignedBuf::new(round_up(block))),
            WriteData::PerIoRandom => WriteSource::PerIo,
            WriteData::RandomBuffer { size } => {
                let mut buf = AlignedBuf::new(round_up(size.max(block)));
                Rng::stream(seed, u64::MAX).fill(&mut buf);
                WriteSource::Buffer(buf)
            }
        }
    }

    /// Where the next write of `block` bytes takes its data from; `own` is the request's own
    /// buffer (used, and refilled, for per-I/O random data).
    #[inline]
    pub fn data(&self, rng: &mut Rng, own: &mut [u8], block: usize) -> *const u8 {
        match self {
            WriteSource::Zeros(zeros) => zeros.as_ptr(),
            WriteSource::PerIo => {
                rng.fill(&mut own[..block]);
                own.as_ptr()
            }
            WriteSource::Buffer(buf) => {
                let starts = (buf.len() - block) / IO_ALIGN + 1;
                let at = rng.below(starts as u64) as usize * IO_ALIGN;
                buf[at..].as_ptr()
            }
        }
    }
}

/// Where a thread's sequential I/O goes next: private to an io_uring thread, shared by the
/// pool threads standing for one thread.
#[derive(Debug)]
pub enum SeqCursor {
    Local(u64),
    Shared(Arc<AtomicU64>),
}

/// Everything one thread (in diskspd's sense) needs.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    /// Index of the thread in the run (target-major).
    pub id: usize,
    pub target: usize,
    pub path: PathBuf,
    pub file: Arc<File>,
    /// I/O range `[start, end)`.
    pub start: u64,
    pub end: u64,
    pub block: u64,
    pub access: Access,
    pub write_pct: u32,
    /// First sequential offset, relative to `start` (`-T` × thread number).
    pub first: u64,
    pub outstanding: u32,
    pub seed: u64,
    pub writes: Arc<WriteSource>,
}

/// Chooses each I/O: read or write, and its offset.
#[derive(Debug)]
pub struct OpGen {
    pub rng: Rng,
    start: u64,
    len: u64,
    block: u64,
    access: Access,
    random_slots: u64,
    write_pct: u32,
    seq: SeqCursor,
}

impl OpGen {
    pub fn new(plan: &ThreadPlan, stream: u64, seq: SeqCursor) -> OpGen {
        let len = plan.end - plan.start;
        let random_slots = match plan.access {
            Access::Random { align } => (len - plan.block) / align + 1,
            Access::Sequential { .. } => 0,
        };
        OpGen {
            rng: Rng::stream(plan.seed, (plan.id as u64) << 20 | stream),
            start: plan.start,
            len,
            block: plan.block,
            access: plan.access,
            random_slots,
            write_pct: plan.write_pct,
            seq,
        }
    }

    /// (is it a write, offset in the file).
    #[inline]
    pub fn next_op(&mut self) -> (bool, u64) {
        let write = match self.write_pct {
            0 => false,
            100 => true,
            pct => self.rng.below(100) < u64::from(pct),
        };
        let offset = match self.access {
            Access::Random { align } => self.rng.below(self.random_slots) * align,
            Access::Sequential { stride } => {
                let (len, block) = (self.len, self.block);
                let advance = |cur: u64| if cur + stride + block > len { 0 } else { cur + stride };
                match &mut self.seq {
                    SeqCursor::Local(cur) => {
                        let at = *cur;
                        *cur = advance(at);
                        at
                    }
                    SeqCursor::Shared(cur) => {
                        // Cannot fail: the closure always returns Some.
                        cur.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| Some(advance(c))).unwrap_or(0)
                    }
                }
            }
        };
        (write, self.start + offset)
    }
}

/// A thread's measured work and the CPU it used while measuring.
#[derive(Debug, Default)]
pub struct ThreadOutcome {
    pub stats: IoStats,
    pub cpu: CpuTimes,
}

/// Follows phase changes seen by one OS thread to take its CPU time over the measured phase.
#[derive(Debug, Default)]
pub struct CpuWindow {
    seen: u8,
    start: Option<CpuTimes>,
    used: CpuTimes,
}

impl CpuWindow {
    pub fn new(phase: u8) -> CpuWindow {
        let mut w = CpuWindow { seen: WARMUP, start: None, used: CpuTimes::default() };
        w.observe(phase);
        w
    }

    #[inline]
    pub fn observe(&mut self, phase: u8) {
        if phase == self.seen {
            return;
        }
        if phase == MEASURE {
            self.start = Some(cpu::thread_times());
        } else if self.seen == MEASURE {
            if let Some(start) = self.start.take() {
                self.used = cpu::thread_times().since(start);
            }
        }
        self.seen = phase;
    }

    pub fn used(&self) -> CpuTimes {
        self.used
    }
}

/// The error for a failed or short I/O.
pub fn io_error(plan: &ThreadPlan, write: bool, offset: u64, result: std::io::Result<usize>) -> Error {
    let op = if write { "write" } else { "read" };
    let what = format!("{op} of {} bytes at offset {offset} in '{}'", plan.block, plan.path.display());
    match result {
        Ok(n) => Error::new(format!("{what} moved only {n} bytes (was the file truncated during the run?)")),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Error::new(format!(
            "{what} failed: {e} (with O_DIRECT, the block size, offsets and alignment must be multiples of the \
             device's logical block size)"
        )),
        Err(e) => Error::new(format!("{what} failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(access: Access, start: u64, end: u64, block: u64, write_pct: u32) -> ThreadPlan {
        let dir = std::env::temp_dir();
        ThreadPlan {
            id: 0,
            target: 0,
            path: dir.join("x"),
            file: Arc::new(File::open("/dev/null").unwrap()),
            start,
            end,
            block,
            access,
            write_pct,
            first: 0,
            outstanding: 1,
            seed: 9,
            writes: Arc::new(WriteSource::PerIo),
        }
    }

    #[test]
    fn random_offsets_are_aligned_and_in_range() {
        let p = plan(Access::Random { align: 4096 }, 8192, 8192 + 40960, 8192, 30);
        let mut g = OpGen::new(&p, 0, SeqCursor::Local(0));
        let mut writes = 0;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let (w, off) = g.next_op();
            writes += usize::from(w);
            assert!(off >= 8192 && off + 8192 <= 8192 + 40960 && (off - 8192) % 4096 == 0, "{off}");
            seen.insert(off);
        }
        // (40960 - 8192) / 4096 + 1 = 9 possible offsets, all used.
        assert_eq!(seen.len(), 9);
        assert!((2_700..3_300).contains(&writes), "{writes}");
    }

    #[test]
    fn sequential_offsets_wrap() {
        let p = plan(Access::Sequential { stride: 4096 }, 0, 16384, 4096, 0);
        let mut g = OpGen::new(&p, 0, SeqCursor::Local(8192));
        let offs: Vec<u64> = (0..6).map(|_| g.next_op().1).collect();
        assert_eq!(offs, vec![8192, 12288, 0, 4096, 8192, 12288]);
        // A block larger than the stride still never runs past the end.
        let p = plan(Access::Sequential { stride: 4096 }, 0, 20000, 8192, 0);
        let shared = Arc::new(AtomicU64::new(0));
        let mut g = OpGen::new(&p, 0, SeqCursor::Shared(shared.clone()));
        let offs: Vec<u64> = (0..5).map(|_| g.next_op().1).collect();
        assert_eq!(offs, vec![0, 4096, 8192, 0, 4096]);
        assert!(!g.next_op().0);
    }

    #[test]
    fn write_data_sources() {
        let mut rng = Rng::new(1);
        let mut mem = SlotMemory::new(2, 8192, true).unwrap();
        let own = mem.slot_mut(1);
        let src = WriteSource::new(WriteData::RandomBuffer { size: 65536 }, 8192, 5);
        let WriteSource::Buffer(buf) = &src else { panic!() };
        let base = buf.as_ptr() as usize;
        for _ in 0..100 {
            let p = src.data(&mut rng, own, 8192) as usize;
            assert!(p >= base && p + 8192 <= base + 65536 && (p - base).is_multiple_of(IO_ALIGN));
        }
        assert!(buf.iter().filter(|&&b| b == 0).count() < 1000);
        let src = WriteSource::new(WriteData::PerIoRandom, 8192, 5);
        let p = src.data(&mut rng, own, 8192);
        assert_eq!(p, own.as_ptr());
        assert!(own.iter().any(|&b| b != 0));
        let src = WriteSource::new(WriteData::Zeros, 8192, 5);
        let WriteSource::Zeros(z) = &src else { panic!() };
        assert!(z.iter().all(|&b| b == 0) && z.len() >= 8192);
    }

    #[test]
    fn slot_memory_is_aligned_and_separate() {
        let mut mem = SlotMemory::new(3, 5000, false).unwrap();
        assert_eq!(mem.ptr(1) as usize - mem.ptr(0) as usize, 8192);
        assert!((mem.ptr(2) as usize).is_multiple_of(IO_ALIGN));
        mem.slot_mut(2).fill(7);
        assert!(mem.slot_mut(1).iter().all(|&b| b == 0));
        assert_eq!(mem.slot_mut(2).len(), 8192);
    }

    #[test]
    fn cpu_window_measures_only_the_measured_phase() {
        let mut w = CpuWindow::new(WARMUP);
        w.observe(MEASURE);
        let t = std::time::Instant::now();
        let mut x = 1u64;
        while t.elapsed().as_millis() < 20 {
            x = x.wrapping_mul(3).wrapping_add(1);
        }
        std::hint::black_box(x);
        w.observe(COOLDOWN);
        assert!(w.used().total_ns() > 0);
        w.observe(STOP);
        assert!(w.used().total_ns() < 1_000_000_000);
    }
}
