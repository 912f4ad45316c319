//! Memory governance: how large the shared buffer pool may be right now.
//!
//! The pool reserves address space for the machine's whole memory once (nothing is
//! committed until a frame is touched, see `tessera_buffer`), so its limit can move
//! anywhere inside that reservation live. The limit — the *target* — is kept between
//! `min` and `max` server memory:
//! - raising `max` lets the pool grow on demand; lowering it shrinks the pool at once
//!   (frames beyond the limit are evicted and their memory returned to the OS);
//! - every second the engine samples the memory available to the process — the tighter of
//!   the machine (`/proc/meminfo` MemAvailable) and its cgroup v2 (`memory.max` minus
//!   `memory.current`) — and, when it falls below a low-water mark, lowers the target
//!   towards `min`; when memory is plentiful again the target climbs back to `max` in steps.
//!
//! Invariants: `min <= target <= max <= reservation`; the target changes only through
//! [`next_target`] (pressure) or [`MemoryGovernor::set_limits`] (configuration).
//!
//! Also here: the process's and the machine's memory as the DMVs show them, and
//! [`CountingAllocator`], which measures what the heap holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// No pressure is acted on above this much available memory… (see [`low_water`]).
const LOW_WATER_MIN: u64 = 256 << 20;
/// The smallest step by which the target moves under pressure or recovers after it.
const STEP_MIN: u64 = 64 << 20;

/// Memory available to this process, as the tighter of machine and cgroup sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemorySample {
    pub total_bytes: u64,
    pub available_bytes: u64,
}

/// Below this much available memory the pool gives memory back: 5 % of the total, at
/// least 256 MiB.
pub fn low_water(total: u64) -> u64 {
    (total / 20).max(LOW_WATER_MIN)
}

/// The pool's next target given a sample: shrink by at least the shortfall under the
/// low-water mark (and at least a tenth of the target, 64 MiB at least) but never below
/// `min`; grow back by a step while available memory is above twice the mark.
pub fn next_target(target: u64, min: u64, max: u64, s: MemorySample) -> u64 {
    debug_assert!(min <= max);
    let low = low_water(s.total_bytes);
    let step = (target / 10).max(STEP_MIN);
    let next = if s.available_bytes < low {
        target.saturating_sub(step.max(low - s.available_bytes))
    } else if s.available_bytes > 2 * low {
        target.saturating_add(step.min(s.available_bytes - 2 * low))
    } else {
        target
    };
    next.clamp(min, max)
}

/// `/proc/meminfo` `key:  N kB` in bytes.
fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))?;
    let kb = line[key.len() + 1..].split_whitespace().next()?.parse::<u64>().ok()?;
    Some(kb << 10)
}

/// This process's cgroup v2 directory, if it has one with a memory controller.
fn cgroup_dir() -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    dir.join("memory.max").exists().then_some(dir)
}

fn read_u64(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Samples the machine and the cgroup (None when /proc is unreadable).
pub fn sample() -> Option<MemorySample> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let mut s = MemorySample {
        total_bytes: meminfo_field(&meminfo, "MemTotal")?,
        available_bytes: meminfo_field(&meminfo, "MemAvailable")?,
    };
    if let Some(dir) = cgroup_dir() {
        // "max" (no limit) does not parse and leaves the machine's figures.
        if let (Some(limit), Some(current)) = (read_u64(&dir.join("memory.max")), read_u64(&dir.join("memory.current")))
        {
            if limit < s.total_bytes {
                s.total_bytes = limit;
                s.available_bytes = s.available_bytes.min(limit.saturating_sub(current));
            }
        }
    }
    Some(s)
}

/// The machine's memory as `sys.dm_os_sys_memory` shows it (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemMemory {
    pub total: u64,
    pub available: u64,
    pub swap_total: u64,
    pub swap_free: u64,
    pub cached: u64,
    pub slab_reclaimable: u64,
    pub slab_unreclaimable: u64,
}

pub fn system_memory() -> SystemMemory {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let f = |k: &str| meminfo_field(&text, k).unwrap_or(0);
    let (total, available) =
        sample().map_or((f("MemTotal"), f("MemAvailable")), |s| (s.total_bytes, s.available_bytes));
    SystemMemory {
        total,
        available,
        swap_total: f("SwapTotal"),
        swap_free: f("SwapFree"),
        cached: f("Cached") + f("Buffers"),
        slab_reclaimable: f("SReclaimable"),
        slab_unreclaimable: f("SUnreclaim"),
    }
}

/// This process's memory as `sys.dm_os_process_memory` shows it (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    pub resident: u64,
    pub virtual_size: u64,
    pub locked: u64,
    pub huge_pages: u64,
    pub swapped: u64,
    pub page_faults: u64,
}

pub fn process_memory() -> ProcessMemory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // minflt and majflt are fields 10 and 12; count after the parenthesised command name.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let field = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    ProcessMemory {
        resident: meminfo_field(&status, "VmRSS").unwrap_or(0),
        virtual_size: meminfo_field(&status, "VmSize").unwrap_or(0),
        locked: meminfo_field(&status, "VmLck").unwrap_or(0),
        huge_pages: meminfo_field(&rollup, "AnonHugePages").unwrap_or(0),
        swapped: meminfo_field(&status, "VmSwap").unwrap_or(0),
        page_faults: field(7) + field(9),
    }
}

/// The configured bounds and the current target, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStatus {
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub target_bytes: u64,
    /// Address space reserved for the pool: the most `max` can be.
    pub reservation_bytes: u64,
    /// How many times pressure lowered the target.
    pub pressure_events: u64,
}

/// Page life expectancy: how long a page stays in the pool at the current eviction rate
/// (resident pages ÷ evictions per second, the rate smoothed over about five minutes).
struct LifeExpectancy {
    started: Instant,
    last: Option<(Instant, u64)>,
    /// Evictions per second, exponentially smoothed.
    rate: f64,
}

/// Smoothing time constant of the eviction rate.
const PLE_WINDOW_SECS: f64 = 300.0;

impl LifeExpectancy {
    fn observe(&mut self, evictions: u64, now: Instant) {
        if let Some((t, e)) = self.last {
            let dt = now.duration_since(t).as_secs_f64();
            if dt > 0.0 {
                let instant = evictions.saturating_sub(e) as f64 / dt;
                let w = (dt / PLE_WINDOW_SECS).min(1.0);
                self.rate += w * (instant - self.rate);
            }
        }
        self.last = Some((now, evictions));
    }

    fn seconds(&self, resident: u64, now: Instant) -> u64 {
        let uptime = now.duration_since(self.started).as_secs();
        if self.rate <= f64::EPSILON {
            return uptime;
        }
        ((resident as f64 / self.rate) as u64).min(uptime.max(1) * 1000)
    }
}

pub struct MemoryGovernor {
    ple: Mutex<LifeExpectancy>,
    reservation: u64,
    /// (min, max)
    limits: Mutex<(u64, u64)>,
    target: AtomicU64,
    pressure_events: AtomicU64,
    /// Page size of the pool, to keep targets whole frames.
    unit: u64,
}

impl MemoryGovernor {
    pub fn new(reservation: u64, max: u64, unit: usize) -> MemoryGovernor {
        let max = max.clamp(unit as u64, reservation);
        MemoryGovernor {
            ple: Mutex::new(LifeExpectancy { started: Instant::now(), last: None, rate: 0.0 }),
            reservation,
            limits: Mutex::new((0, max)),
            target: AtomicU64::new(max),
            pressure_events: AtomicU64::new(0),
            unit: unit as u64,
        }
    }

    fn whole(&self, bytes: u64) -> u64 {
        (bytes / self.unit).max(1) * self.unit
    }

    /// New bounds (min/max server memory); `max` is capped by the reservation and `min`
    /// by `max`. Returns the new target, which the caller applies to the pool.
    pub fn set_limits(&self, min: u64, max: u64) -> u64 {
        let max = self.whole(max.min(self.reservation));
        let min = min.min(max);
        *self.limits.lock() = (min, max);
        self.target.store(max, Ordering::Relaxed);
        max
    }

    /// One sample's effect: the new target if it changed.
    pub fn adjust(&self, s: MemorySample) -> Option<u64> {
        let (min, max) = *self.limits.lock();
        let current = self.target.load(Ordering::Relaxed);
        let next = self.whole(next_target(current, min, max, s)).clamp(min.min(max), max);
        if next == current {
            return None;
        }
        if next < current {
            self.pressure_events.fetch_add(1, Ordering::Relaxed);
        }
        self.target.store(next, Ordering::Relaxed);
        Some(next)
    }

    /// Feeds the pool's eviction counter (the engine does every second).
    pub fn observe_evictions(&self, evictions: u64) {
        self.ple.lock().observe(evictions, Instant::now());
    }

    /// Page life expectancy in seconds for a pool holding `resident` pages.
    pub fn page_life_expectancy(&self, resident: u64) -> u64 {
        self.ple.lock().seconds(resident, Instant::now())
    }

    pub fn status(&self) -> MemoryStatus {
        let (min, max) = *self.limits.lock();
        MemoryStatus {
            min_bytes: min,
            max_bytes: max,
            target_bytes: self.target.load(Ordering::Relaxed),
            reservation_bytes: self.reservation,
            pressure_events: self.pressure_events.load(Ordering::Relaxed),
        }
    }
}

/// The bytes live on the heap of a process whose global allocator is the
/// [`CountingAllocator`].
static LIVE_HEAP_BYTES: AtomicI64 = AtomicI64::new(0);

/// A global allocator that counts the bytes live on the heap, for measuring what
/// structures hold (an open idle database, issue 39): a test or example of its own sets
/// `#[global_allocator] static A: CountingAllocator = CountingAllocator;` and reads
/// [`CountingAllocator::live_bytes`] before and after.
pub struct CountingAllocator;

impl CountingAllocator {
    /// The bytes allocated and not yet freed through this allocator.
    pub fn live_bytes() -> i64 {
        LIVE_HEAP_BYTES.load(Ordering::Relaxed)
    }
}

// SAFETY: every call goes to the system allocator with the caller's arguments; only the
// byte count is recorded beside it.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_HEAP_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_HEAP_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_HEAP_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn pressure_shrinks_towards_min_and_relief_grows_back_to_max() {
        let total = 16 * GIB;
        let (min, max) = (GIB, 8 * GIB);
        let tight = MemorySample { total_bytes: total, available_bytes: 100 << 20 };
        let mut t = max;
        let mut steps = 0;
        while t > min {
            let next = next_target(t, min, max, tight);
            assert!(next < t, "pressure always shrinks until min");
            t = next;
            steps += 1;
        }
        assert_eq!(t, min);
        assert!(steps < 30, "shrinking to min takes few steps: {steps}");
        assert_eq!(next_target(t, min, max, tight), min, "never below min");
        let plenty = MemorySample { total_bytes: total, available_bytes: 12 * GIB };
        while t < max {
            t = next_target(t, min, max, plenty);
        }
        assert_eq!(t, max, "never above max");
        let middle = MemorySample { total_bytes: total, available_bytes: low_water(total) + 1 };
        assert_eq!(next_target(3 * GIB, min, max, middle), 3 * GIB, "between the marks nothing moves");
    }

    #[test]
    fn governor_keeps_its_bounds() {
        let g = MemoryGovernor::new(4 * GIB, 8 * GIB, 8192);
        assert_eq!(g.status().max_bytes, 4 * GIB, "max is capped by the reservation");
        assert_eq!(g.set_limits(GIB, 2 * GIB), 2 * GIB);
        let tight = MemorySample { total_bytes: 8 * GIB, available_bytes: 0 };
        let mut last = 2 * GIB;
        while let Some(t) = g.adjust(tight) {
            assert!(t < last && t >= GIB);
            last = t;
        }
        assert_eq!(g.status().target_bytes, GIB);
        assert!(g.status().pressure_events > 0);
        assert_eq!(g.set_limits(3 * GIB, GIB), GIB, "min above max is capped by max");
        assert_eq!(g.status().min_bytes, GIB);
    }

    #[test]
    fn life_expectancy_follows_the_eviction_rate() {
        let start = Instant::now();
        let mut ple = LifeExpectancy { started: start, last: None, rate: 0.0 };
        ple.observe(0, start);
        assert!(ple.seconds(1000, start + std::time::Duration::from_secs(10)) >= 10, "no evictions: uptime");
        // 100 evictions per second for ten minutes: 1,000 resident pages live ~10 s.
        for i in 1..=600u64 {
            ple.observe(100 * i, start + std::time::Duration::from_secs(i));
        }
        let s = ple.seconds(1000, start + std::time::Duration::from_secs(600));
        assert!((9..=13).contains(&s), "{s}");
    }

    #[test]
    fn meminfo_parses() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_field(text, "MemTotal"), Some(24_000_000 << 10));
        assert_eq!(meminfo_field(text, "MemAvailable"), Some(20_000_000 << 10));
        assert_eq!(meminfo_field(text, "Mem"), None);
        assert!(sample().is_some_and(|s| s.available_bytes <= s.total_bytes));
        let p = process_memory();
        assert!(p.resident > 0 && p.virtual_size >= p.resident && p.page_faults > 0, "{p:?}");
        assert!(system_memory().total > 0);
    }
}
