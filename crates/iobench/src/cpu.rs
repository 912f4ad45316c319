//! CPU use: this process's and each thread's (getrusage) and the whole machine's (/proc/stat).

use serde::Serialize;

/// User and system CPU time consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user_ns: u64,
    pub sys_ns: u64,
}

impl CpuTimes {
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
        }
    }

    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes { user_ns: self.user_ns + other.user_ns, sys_ns: self.sys_ns + other.sys_ns }
    }

    pub fn total_ns(self) -> u64 {
        self.user_ns + self.sys_ns
    }
}

fn rusage(who: libc::c_int) -> CpuTimes {
    // SAFETY: getrusage fills the struct we pass; a zeroed rusage is a valid initial value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a local struct.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return CpuTimes::default();
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    CpuTimes { user_ns: ns(ru.ru_utime), sys_ns: ns(ru.ru_stime) }
}

/// CPU time used so far by this whole process.
pub fn process_times() -> CpuTimes {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time used so far by the calling thread.
pub fn thread_times() -> CpuTimes {
    rusage(libc::RUSAGE_THREAD)
}

/// The machine's cumulative CPU time from the first line of /proc/stat, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemTimes {
    pub user: u64,
    pub kernel: u64,
    pub idle: u64,
}

impl SystemTimes {
    pub fn read() -> Option<SystemTimes> {
        parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
    }
}

/// Parses the aggregate `cpu` line: user + nice count as user; system, irq and softirq as
/// kernel; idle and iowait as idle; steal as neither (it was not ours to use).
pub fn parse_proc_stat(text: &str) -> Option<SystemTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(SystemTimes { user: at(0) + at(1), kernel: at(2) + at(5) + at(6), idle: at(3) + at(4) })
}

/// CPU use over the measured interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuUsage {
    /// Logical CPUs of the machine.
    pub cpus: usize,
    /// The whole machine, as percentages of all its CPUs (diskspd's CPU table).
    pub machine_usage_pct: f64,
    pub machine_user_pct: f64,
    pub machine_kernel_pct: f64,
    pub machine_idle_pct: f64,
    /// This process, as percentages of one CPU (fio's usr_cpu / sys_cpu).
    pub process_user_pct: f64,
    pub process_sys_pct: f64,
}

impl CpuUsage {
    pub fn between(
        seconds: f64,
        process: CpuTimes,
        sys_before: Option<SystemTimes>,
        sys_after: Option<SystemTimes>,
    ) -> CpuUsage {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let pct_of_one = |ns: u64| if seconds > 0.0 { ns as f64 / 1e9 / seconds * 100.0 } else { 0.0 };
        let (mut usage, mut user, mut kernel, mut idle) = (0.0, 0.0, 0.0, 0.0);
        if let (Some(a), Some(b)) = (sys_before, sys_after) {
            let du = b.user.saturating_sub(a.user) as f64;
            let dk = b.kernel.saturating_sub(a.kernel) as f64;
            let di = b.idle.saturating_sub(a.idle) as f64;
            let all = du + dk + di;
            if all > 0.0 {
                user = du / all * 100.0;
                kernel = dk / all * 100.0;
                idle = di / all * 100.0;
                usage = user + kernel;
            }
        }
        CpuUsage {
            cpus,
            machine_usage_pct: usage,
            machine_user_pct: user,
            machine_kernel_pct: kernel,
            machine_idle_pct: idle,
            process_user_pct: pct_of_one(process.user_ns),
            process_sys_pct: pct_of_one(process.sys_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_parsing() {
        let text = "cpu  100 5 50 800 20 3 2 7 0 0\ncpu0 1 2 3 4\nintr 1\n";
        let t = parse_proc_stat(text).unwrap();
        assert_eq!(t, SystemTimes { user: 105, kernel: 55, idle: 820 });
        assert!(parse_proc_stat("intr 1\n").is_none());
        assert!(SystemTimes::read().is_some());
    }

    #[test]
    fn usage_percentages() {
        let a = SystemTimes { user: 0, kernel: 0, idle: 0 };
        let b = SystemTimes { user: 30, kernel: 20, idle: 50 };
        let u = CpuUsage::between(2.0, CpuTimes { user_ns: 500_000_000, sys_ns: 1_000_000_000 }, Some(a), Some(b));
        assert!((u.machine_usage_pct - 50.0).abs() < 1e-9);
        assert!((u.machine_user_pct - 30.0).abs() < 1e-9);
        assert!((u.machine_idle_pct - 50.0).abs() < 1e-9);
        assert!((u.process_user_pct - 25.0).abs() < 1e-9);
        assert!((u.process_sys_pct - 50.0).abs() < 1e-9);
    }

    #[test]
    fn thread_time_grows_with_work() {
        let before = thread_times();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let used = thread_times().since(before);
        assert!(used.total_ns() > 0);
        assert!(process_times().total_ns() >= used.total_ns());
    }
}
