//! Device profiles: emulated slower devices for the files under a path, so that one disk
//! can stand in for the HDD and SSD tiers a benchmark contrasts (seed 002).
//!
//! A profile adds, to every read and write of a [`crate::DataFile`] under its path, the
//! time such a device would take: a positioning delay for a random access (none when the
//! access continues where the previous one ended) plus the transfer at the profile's
//! bandwidth. A device with queue depth 1 (a disk arm) serves one request at a time:
//! concurrent requests wait for each other, as on the real thing.
//!
//! Profiles are process-wide and looked up on every I/O (one atomic load when none is
//! set), so a benchmark can load its data at full speed and then put the data files on
//! "hdd" for the measured part. Invariant: the real I/O always happens; a profile only
//! ever adds time.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceProfile {
    pub name: String,
    /// Time to reach a random position (seek + rotation for a disk).
    pub access: Duration,
    /// Bytes per second once positioned.
    pub bandwidth: u64,
    /// Requests served at once (1 for a disk arm).
    pub queue_depth: usize,
}

impl DeviceProfile {
    /// A 7,200 rpm disk: ~8 ms per random access, 150 MB/s sequential, one arm.
    pub fn hdd() -> DeviceProfile {
        DeviceProfile { name: "hdd".into(), access: Duration::from_millis(8), bandwidth: 150 << 20, queue_depth: 1 }
    }

    /// A SATA SSD: ~100 µs per random access, 500 MB/s, 32 requests in flight.
    pub fn ssd() -> DeviceProfile {
        DeviceProfile { name: "ssd".into(), access: Duration::from_micros(100), bandwidth: 500 << 20, queue_depth: 32 }
    }

    /// `hdd`, `ssd` or `none`.
    pub fn named(name: &str) -> Result<Option<DeviceProfile>, String> {
        match name.to_ascii_lowercase().as_str() {
            "hdd" => Ok(Some(DeviceProfile::hdd())),
            "ssd" => Ok(Some(DeviceProfile::ssd())),
            "none" => Ok(None),
            other => Err(format!("unknown device profile '{other}' (hdd, ssd or none)")),
        }
    }

    /// What one request of `len` bytes costs, `sequential` if it continues the previous one.
    pub fn cost(&self, len: usize, sequential: bool) -> Duration {
        let transfer = Duration::from_secs_f64(len as f64 / self.bandwidth.max(1) as f64);
        if sequential {
            transfer
        } else {
            self.access + transfer
        }
    }
}

/// An emulated device: its profile, its queue, where its last request ended.
struct Device {
    profile: DeviceProfile,
    busy: Mutex<usize>,
    freed: Condvar,
    last_end: AtomicU64,
    requests: AtomicU64,
    delayed_ns: AtomicU64,
}

impl Device {
    fn serve<T>(&self, offset: u64, len: usize, io: impl FnOnce() -> T) -> T {
        {
            let mut busy = self.busy.lock();
            while *busy >= self.profile.queue_depth.max(1) {
                self.freed.wait(&mut busy);
            }
            *busy += 1;
        }
        let sequential = self.last_end.swap(offset + len as u64, Ordering::Relaxed) == offset;
        let start = Instant::now();
        let out = io();
        let cost = self.profile.cost(len, sequential);
        if let Some(rest) = cost.checked_sub(start.elapsed()) {
            std::thread::sleep(rest);
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.delayed_ns.fetch_add(cost.as_nanos() as u64, Ordering::Relaxed);
        *self.busy.lock() -= 1;
        self.freed.notify_one();
        out
    }
}

static ANY: AtomicBool = AtomicBool::new(false);

fn devices() -> &'static RwLock<Vec<(PathBuf, Arc<Device>)>> {
    static DEVICES: RwLock<Vec<(PathBuf, Arc<Device>)>> = RwLock::new(Vec::new());
    &DEVICES
}

/// Puts every file under `dir` on `profile` (`None` removes the profile of `dir`).
pub fn set_profile(dir: &Path, profile: Option<DeviceProfile>) {
    let mut list = devices().write();
    list.retain(|(p, _)| p != dir);
    if let Some(profile) = profile {
        list.push((
            dir.to_path_buf(),
            Arc::new(Device {
                profile,
                busy: Mutex::new(0),
                freed: Condvar::new(),
                last_end: AtomicU64::new(u64::MAX),
                requests: AtomicU64::new(0),
                delayed_ns: AtomicU64::new(0),
            }),
        ));
    }
    // Longest prefix first, so a nested directory's profile wins.
    list.sort_by_key(|(p, _)| std::cmp::Reverse(p.as_os_str().len()));
    ANY.store(!list.is_empty(), Ordering::Release);
}

/// The profile name of the files under `path`, if any (for reports).
pub fn profile_of(path: &Path) -> Option<String> {
    device(path).map(|d| d.profile.name.clone())
}

/// (requests, emulated time) served by the profile set on exactly `dir`.
pub fn profile_stats(dir: &Path) -> Option<(u64, Duration)> {
    let list = devices().read();
    let (_, d) = list.iter().find(|(p, _)| p == dir)?;
    Some((d.requests.load(Ordering::Relaxed), Duration::from_nanos(d.delayed_ns.load(Ordering::Relaxed))))
}

fn device(path: &Path) -> Option<Arc<Device>> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    devices().read().iter().find(|(p, _)| path.starts_with(p)).map(|(_, d)| d.clone())
}

/// Runs one I/O of `len` bytes at `offset` of `path`, taking as long as its device would.
pub(crate) fn through<T>(path: &Path, offset: u64, len: usize, io: impl FnOnce() -> T) -> T {
    match device(path) {
        Some(d) => d.serve(offset, len, io),
        None => io(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_accesses_pay_positioning_and_an_arm_serialises() {
        let hdd = DeviceProfile::hdd();
        assert!(hdd.cost(8192, false) >= Duration::from_millis(8));
        assert!(hdd.cost(8192, true) < Duration::from_micros(100));
        assert!(DeviceProfile::named("floppy").is_err());
        assert_eq!(DeviceProfile::named("none"), Ok(None));

        let dir = tempfile::tempdir().unwrap();
        let fast =
            DeviceProfile { name: "t".into(), access: Duration::from_millis(5), bandwidth: 1 << 30, queue_depth: 1 };
        set_profile(dir.path(), Some(fast));
        let file = dir.path().join("x");
        assert_eq!(profile_of(&file).as_deref(), Some("t"));
        let start = Instant::now();
        std::thread::scope(|s| {
            for i in 0..4u64 {
                let file = &file;
                s.spawn(move || through(file, i * 1_000_000, 8192, || ()));
            }
        });
        assert!(start.elapsed() >= Duration::from_millis(20), "four random requests on one arm: one after another");
        assert_eq!(profile_stats(dir.path()).map(|s| s.0), Some(4));
        set_profile(dir.path(), None);
        assert_eq!(profile_of(&file), None);
    }
}
