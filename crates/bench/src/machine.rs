//! The machine a benchmark ran on, read from /proc, and the measured fdatasync latency of the
//! directory the benchmark's data lives in.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Samples of the fdatasync measurement.
pub const FSYNC_SAMPLES: usize = 200;
/// Bytes written before each fdatasync.
const FSYNC_WRITE_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
    /// Median latency in microseconds of a 4 KiB write + fdatasync in the data directory.
    pub disk_fsync_us: f64,
    /// When the benchmark ran, UTC, ISO 8601.
    pub date: String,
}

impl Machine {
    /// Describes this machine and measures fdatasync latency in `data_dir`.
    pub fn detect(data_dir: &Path) -> Result<Machine> {
        Ok(Machine { disk_fsync_us: measure_fsync_us(data_dir, FSYNC_SAMPLES)?, ..Machine::describe() })
    }

    /// Describes this machine without touching a disk (`disk_fsync_us` is 0).
    pub fn describe() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| format!("Linux {}", s.trim()))
            .unwrap_or_else(|_| std::env::consts::OS.to_string());
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Machine {
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| std::env::consts::ARCH.to_string())
                + &cpu_family(&cpuinfo),
            cores,
            memory_gib: mem_total_gib(&meminfo).unwrap_or(0.0),
            kernel,
            disk_fsync_us: 0.0,
            date: utc_now_iso8601(),
        }
    }

    /// One line for a table header or a chart caption.
    pub fn summary(&self) -> String {
        format!(
            "{}, {} cores, {:.1} GiB, {}, fdatasync {:.0} µs, {}",
            self.cpu_model, self.cores, self.memory_gib, self.kernel, self.disk_fsync_us, self.date
        )
    }
}

/// Lets the disk finish earlier writes (the previous run's files, deletions) before a
/// timed run starts, so one side's leftover write-back does not land on the next side's
/// timing: the virtual disks these runs meet are otherwise very noisy.
pub fn settle_disk() {
    // SAFETY: sync(2) has no arguments and cannot fail.
    unsafe { libc::sync() };
    std::thread::sleep(std::time::Duration::from_millis(300));
}

/// The CPU model from /proc/cpuinfo's text ("model name", or "Processor"/"cpu model" elsewhere).
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        let value = value.trim();
        let wanted = key == "model name" || key == "Processor" || key == "cpu model" || key == "cpu";
        (wanted && !value.is_empty()).then(|| value.to_string())
    })
}

/// " (family 26, model 2)" from /proc/cpuinfo's text, which tells CPU generations apart when
/// the model name does not (a VM may show only "AMD EPYC"); empty if it is not there.
pub fn cpu_family(cpuinfo: &str) -> String {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    match (field("cpu family"), field("model")) {
        (Some(family), Some(model)) => format!(" (family {family}, model {model})"),
        _ => String::new(),
    }
}

/// MemTotal from /proc/meminfo's text, in GiB.
pub fn mem_total_gib(meminfo: &str) -> Option<f64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// Median latency in microseconds of `samples` small writes, each followed by fdatasync, on a
/// temporary file in `dir` (removed afterwards).
pub fn measure_fsync_us(dir: &Path, samples: usize) -> Result<f64> {
    fs::create_dir_all(dir)?;
    let path = dir.join(format!(".tessera-fsync-probe-{}", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
        let block = [0x5Au8; FSYNC_WRITE_BYTES];
        // Allocate the block first so the timed syncs are data-only, as a log's are.
        file.write_all(&block)?;
        file.sync_all()?;
        let mut times = Vec::with_capacity(samples.max(1));
        for i in 0..samples.max(1) {
            let mut buf = block;
            buf[0] = i as u8;
            let start = Instant::now();
            file.write_all_at(&buf, 0)?;
            file.sync_data()?;
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
        Ok(median(&mut times))
    })();
    let _ = fs::remove_file(&path);
    result
}

/// The median of `values` (sorts them).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Now, UTC, as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now_iso8601() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    iso8601_from_unix(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian calendar).
pub fn iso8601_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Year, month, day of the day `days` after 1970-01-01 (Howard Hinnant's civil-from-days).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era, 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1st
    let mp = (5 * doy + 2) / 153; // month from March, 0..=11
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(iso8601_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_from_unix(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(iso8601_from_unix(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn proc_parsing() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_family("cpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"), " (family 26, model 2)");
        assert_eq!(cpu_family(cpuinfo), "");
        let meminfo = "MemTotal:       24576000 kB\nMemFree:  1 kB\n";
        let gib = mem_total_gib(meminfo).unwrap();
        assert!((gib - 23.4375).abs() < 1e-9);
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
