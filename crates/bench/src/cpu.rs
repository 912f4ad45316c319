//! CPU time of the processes and threads a benchmark runs, from /proc and getrusage, so a
//! report can say what each query cost the server and what it cost its client.

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// CPU seconds from /proc's clock ticks.
fn ticks_to_seconds(ticks: u64) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    ticks as f64 / hz as f64
}

/// (comm, ppid, utime + stime, cutime + cstime) of a /proc/…/stat line.
fn proc_stat(text: &str) -> Option<(String, u32, u64, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    let fields: Vec<&str> = text[close + 2..].split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    // Fields after the comm start at field 3 (state): ppid is 4, utime 14 … cstime 17.
    Some((comm, num(1)? as u32, num(11)? + num(12)?, num(13)? + num(14)?))
}

/// CPU seconds of this process's threads whose name starts with `prefix`.
pub fn thread_cpu(prefix: &str) -> f64 {
    let mut ticks = 0;
    for entry in fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        if let Some((comm, _, own, _)) =
            fs::read_to_string(entry.path().join("stat")).ok().as_deref().and_then(proc_stat)
        {
            if comm.starts_with(prefix) {
                ticks += own;
            }
        }
    }
    ticks_to_seconds(ticks)
}

/// CPU seconds of this process (all threads, alive or gone) or of its reaped children.
pub fn rusage_cpu(who: libc::c_int) -> f64 {
    // SAFETY: a zeroed rusage is valid for getrusage to fill.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid out-pointer.
    unsafe { libc::getrusage(who, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// CPU seconds of one live process (all its threads).
pub fn process_cpu(pid: u32) -> f64 {
    let own = fs::read_to_string(format!("/proc/{pid}/stat")).ok().as_deref().and_then(proc_stat).map_or(0, |s| s.2);
    ticks_to_seconds(own)
}

/// `pid` and its live children.
pub fn process_and_children(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let stat = fs::read_to_string(entry.path().join("stat")).ok();
        if stat.as_deref().and_then(proc_stat).is_some_and(|s| s.1 == pid) {
            out.push(child);
        }
    }
    out
}

/// CPU seconds of a PostgreSQL server: the postmaster, its reaped backends and its
/// live children (checkpointer, WAL writer, …).
pub fn postgres_cpu(postmaster: u32) -> f64 {
    let mut ticks = 0;
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Some((_, ppid, own, reaped)) =
            fs::read_to_string(entry.path().join("stat")).ok().as_deref().and_then(proc_stat)
        else {
            continue;
        };
        if pid == postmaster {
            ticks += own + reaped;
        } else if ppid == postmaster {
            ticks += own;
        }
    }
    ticks_to_seconds(ticks)
}

/// A set of CPUs as a bit mask (bit n: CPU n), for `sched_setaffinity`.
fn cpu_set(mask: u64) -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in (0..64).filter(|c| mask >> c & 1 == 1) {
        // SAFETY: CPU numbers below 64 are within the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// Confines every thread of `pid` and of its live children to the CPUs of `mask`; threads
/// and processes they start later inherit it.
pub fn pin_process_tree(pid: u32, mask: u64) -> std::io::Result<()> {
    let set = cpu_set(mask);
    for process in process_and_children(pid) {
        for task in fs::read_dir(format!("/proc/{process}/task"))?.flatten() {
            let Ok(tid) = task.file_name().to_string_lossy().parse::<libc::pid_t>() else { continue };
            // SAFETY: `set` is a valid cpu_set_t of the size passed.
            if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
                let e = std::io::Error::last_os_error();
                // A thread may end between the listing and the call.
                if e.raw_os_error() != Some(libc::ESRCH) {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Makes `command`'s process start confined to the CPUs of `mask`.
pub fn pin_command(command: &mut Command, mask: u64) {
    let set = cpu_set(mask);
    // SAFETY: sched_setaffinity is async-signal-safe and touches only the child.
    unsafe {
        command.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
