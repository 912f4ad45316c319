//! Resident memory of a server while it works, sampled from /proc on a thread of its own,
//! split into the server's page cache and everything else.
//!
//! - This process (tessera's in-process server): `/proc/self/smaps` is read whole at each
//!   sample; the sum of every mapping's `Rss` is the process's resident memory and the
//!   buffer pool's share is the `Rss` of its mappings — the frame region (the process's
//!   largest mapping: the pool reserves address space for the machine's memory) and the
//!   frame descriptors (1/128 of it, 64 bytes per 8 KiB frame) — so both figures come from
//!   one snapshot. `VmRSS` of `/proc/self/status` is read beside it as the raw figure.
//! - Another process (a PostgreSQL backend): `/proc/<pid>/status`, whose `RssShmem` is
//!   the shared memory the backend has touched (shared buffers among it) and `RssAnon` +
//!   `RssFile` the rest.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{BenchError, Result};

/// The sampling thread's name.
pub const THREAD_NAME: &str = "bench-rss";

/// One reading, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Seconds since the sampler started, in microseconds.
    pub at_us: u64,
    /// VmRSS.
    pub rss: u64,
    /// The page cache's resident share: the buffer pool's mappings (this process) or
    /// RssShmem (another process).
    pub cache: u64,
    /// Resident memory besides the cache (smaps total less the pool's mappings, or RssAnon
    /// + RssFile).
    pub other: u64,
}

/// Fields of a /proc/…/status text, in bytes.
fn status_fields(text: &str) -> (u64, u64, u64, u64) {
    let kb = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb << 10)
    };
    (kb("VmRSS:"), kb("RssAnon:"), kb("RssFile:"), kb("RssShmem:"))
}

/// Reads a whole /proc file into `buf` (reused: no allocation once it is big enough).
fn read_into(path: &str, buf: &mut String) -> std::io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_string(buf).map(|_| ())
}

/// The address ranges of this process's buffer pool mappings: the largest mapping (the
/// frame region) and, if there is one, the mapping of 1/128 of its size (the descriptors).
pub fn pool_mappings() -> Result<Vec<(u64, u64)>> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|l| {
            let range = l.split_whitespace().next()?;
            let (a, b) = range.split_once('-')?;
            Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?))
        })
        .collect();
    let frames =
        *ranges.iter().max_by_key(|(a, b)| b - a).ok_or_else(|| BenchError::new("/proc/self/maps is empty"))?;
    let descs_len = ((frames.1 - frames.0) / 128).next_multiple_of(4096);
    let mut out = vec![frames];
    out.extend(ranges.iter().copied().find(|(a, b)| b - a == descs_len));
    Ok(out)
}

/// The start address of an smaps mapping header ("start-end perms offset dev inode path");
/// None for the field lines ("Rss:      12 kB").
fn mapping_start(line: &str) -> Option<u64> {
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    u64::from_str_radix(b, 16).ok()?;
    u64::from_str_radix(a, 16).ok()
}

/// (total Rss, Rss inside `ranges`) of an smaps text.
fn smaps_rss(text: &str, ranges: &[(u64, u64)]) -> (u64, u64) {
    let (mut total, mut inside) = (0, 0);
    let mut current_in = false;
    for line in text.lines() {
        if let Some(kb) = line.strip_prefix("Rss:") {
            let bytes = kb.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) << 10;
            total += bytes;
            if current_in {
                inside += bytes;
            }
        } else if let Some(start) = mapping_start(line) {
            current_in = ranges.iter().any(|&(a, b)| start >= a && start < b);
        }
    }
    (total, inside)
}

/// Reads this process's memory: VmRSS, and the smaps split into the pool's mappings
/// (`ranges`) and the rest.
pub struct SelfProbe {
    ranges: Vec<(u64, u64)>,
    status: String,
    smaps: String,
}

impl SelfProbe {
    pub fn new(ranges: Vec<(u64, u64)>) -> SelfProbe {
        SelfProbe { ranges, status: String::with_capacity(4 << 10), smaps: String::with_capacity(1 << 20) }
    }

    pub fn read(&mut self) -> Sample {
        let _ = read_into("/proc/self/smaps", &mut self.smaps);
        let _ = read_into("/proc/self/status", &mut self.status);
        let (total, pool) = smaps_rss(&self.smaps, &self.ranges);
        let (rss, ..) = status_fields(&self.status);
        Sample { at_us: 0, rss, cache: pool, other: total.saturating_sub(pool) }
    }
}

/// Reads another process's memory from /proc/<pid>/status.
pub struct PidProbe {
    path: String,
    status: String,
}

impl PidProbe {
    pub fn new(pid: u32) -> PidProbe {
        PidProbe { path: format!("/proc/{pid}/status"), status: String::with_capacity(4 << 10) }
    }

    pub fn read(&mut self) -> Sample {
        let _ = read_into(&self.path, &mut self.status);
        let (rss, anon, file, shmem) = status_fields(&self.status);
        Sample { at_us: 0, rss, cache: shmem, other: anon + file }
    }
}

/// A probe the sampler can call.
pub enum Probe {
    SelfProcess(SelfProbe),
    Pid(PidProbe),
}

impl Probe {
    pub fn read(&mut self) -> Sample {
        match self {
            Probe::SelfProcess(p) => p.read(),
            Probe::Pid(p) => p.read(),
        }
    }
}

/// What a sampling run saw.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub samples: Vec<Sample>,
    /// Mean time one reading took.
    pub mean_read_us: f64,
}

impl Samples {
    /// The largest of `f` over the samples (0 with none).
    pub fn max_of(&self, f: impl Fn(&Sample) -> u64) -> u64 {
        self.samples.iter().map(f).max().unwrap_or(0)
    }

    /// The largest rise of `f` over the samples, each measured from the lowest value before
    /// it (or `start`, if lower): growth that memory given back meanwhile cannot hide.
    pub fn largest_rise(&self, start: u64, f: impl Fn(&Sample) -> u64) -> u64 {
        let mut low = start;
        let mut rise = 0;
        for s in &self.samples {
            let v = f(s);
            low = low.min(v);
            rise = rise.max(v - low);
        }
        rise
    }

    /// The smallest of `f` over the samples (0 with none).
    pub fn min_of(&self, f: impl Fn(&Sample) -> u64) -> u64 {
        self.samples.iter().map(f).min().unwrap_or(0)
    }
}

/// Reads a probe every `interval` on a thread of its own until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(Samples, Probe)>,
}

/// Samples kept before the buffer grows (preallocated, so the sampler allocates nothing
/// during a measurement of up to ~10 minutes at 10 ms).
const PREALLOCATED: usize = 64 << 10;

impl Sampler {
    pub fn start(mut probe: Probe, interval: Duration) -> Result<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new().name(THREAD_NAME.to_string()).spawn(move || {
            let mut out = Samples { samples: Vec::with_capacity(PREALLOCATED), mean_read_us: 0.0 };
            let start = Instant::now();
            let mut reading = Duration::ZERO;
            let mut next = start;
            loop {
                let before = Instant::now();
                let mut s = probe.read();
                reading += before.elapsed();
                s.at_us = before.duration_since(start).as_micros() as u64;
                out.samples.push(s);
                if flag.load(Ordering::Acquire) {
                    break;
                }
                next += interval;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
            out.mean_read_us = reading.as_secs_f64() * 1e6 / out.samples.len().max(1) as f64;
            (out, probe)
        })?;
        Ok(Sampler { stop, thread })
    }

    /// Stops the thread after one last reading; the samples, and the probe back.
    pub fn stop(self) -> Result<(Samples, Probe)> {
        self.stop.store(true, Ordering::Release);
        self.thread.join().map_err(|_| BenchError::new("the RSS sampler panicked"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_split_by_mapping() {
        let text = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
Rss:                2048 kB
AnonHugePages:      2048 kB
55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0                          [heap]
Size:                132 kB
Rss:                  12 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                   8 kB
";
        let (total, inside) = smaps_rss(text, &[(0x7f0000000000, 0x7f0000400000)]);
        assert_eq!((total, inside), ((2048 + 12 + 8) << 10, 2048 << 10));
        let (rss, anon, file, shmem) =
            status_fields("VmRSS:\t  1000 kB\nRssAnon:\t 600 kB\nRssFile:\t 300 kB\nRssShmem:\t 100 kB\n");
        assert_eq!((rss, anon, file, shmem), (1000 << 10, 600 << 10, 300 << 10, 100 << 10));
    }

    #[test]
    fn sampler_reads_this_process() {
        let probe = Probe::SelfProcess(SelfProbe::new(pool_mappings().unwrap()));
        let sampler = Sampler::start(probe, Duration::from_millis(1)).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let (samples, _) = sampler.stop().unwrap();
        assert!(samples.samples.len() >= 2);
        assert!(samples.max_of(|s| s.rss) > 0 && samples.max_of(|s| s.other) > 0);
    }

    #[test]
    fn the_largest_rise_starts_from_the_lowest_point_before_it() {
        let samples = |v: &[u64]| Samples {
            samples: v.iter().map(|&other| Sample { other, ..Sample::default() }).collect(),
            mean_read_us: 0.0,
        };
        // Memory given back (100 → 40), then growth (40 → 70): a rise of 30.
        assert_eq!(samples(&[100, 40, 50, 70, 60]).largest_rise(100, |s| s.other), 30);
        // Plain growth from the level before.
        assert_eq!(samples(&[10, 12, 15]).largest_rise(8, |s| s.other), 7);
        assert_eq!(samples(&[5, 4]).largest_rise(8, |s| s.other), 0);
        assert_eq!(samples(&[]).largest_rise(8, |s| s.other), 0);
    }
}
