//! Which CPUs the process runs on: SQL Server's `affinity mask`.
//!
//! Linux keeps an affinity mask per thread, and a new thread starts with its creator's.
//! [`pin_process`] sets the mask of every thread the process has (workers, the I/O
//! ring's completion thread, the log writer, the background threads), and every thread
//! made afterwards inherits it from the thread that makes it. "All CPUs" means the CPUs
//! the process was allowed when it first asked ([`allowed_cpus`]), so a server started
//! under `taskset` stays within what it was given.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use tessera_errors::msg;
use tessera_errors::{Error, Result};

/// The CPUs this process was allowed to run on when first asked (before any pinning).
pub fn allowed_cpus() -> &'static BTreeSet<usize> {
    static ALLOWED: OnceLock<BTreeSet<usize>> = OnceLock::new();
    ALLOWED.get_or_init(|| thread_cpus(0).unwrap_or_else(|_| (0..num_cpus()).collect()))
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPUs the thread `tid` may run on (0: the calling thread).
pub fn thread_cpus(tid: i32) -> Result<BTreeSet<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(os_error("read the CPU affinity of a thread"));
    }
    // SAFETY: CPU_ISSET reads the set within CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

fn os_error(what: &str) -> Error {
    Error::Invalid(format!("cannot {what}: {}", std::io::Error::last_os_error()))
}

/// Runs every thread of the process on `cpus` (None: on all [`allowed_cpus`]). A CPU the
/// process is not allowed fails with error 5832 and changes nothing.
pub fn pin_process(cpus: Option<&BTreeSet<usize>>) -> Result<()> {
    let allowed = allowed_cpus();
    let cpus = cpus.unwrap_or(allowed);
    if cpus.is_empty() || !cpus.is_subset(allowed) {
        return Err(msg::AFFINITY_MASK_MISMATCH.engine(&[]));
    }
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: c is below CPU_SETSIZE (it came from a set read from the kernel).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // Threads made while the first pass runs may be missed by it; a second pass that
    // finds no new thread ends it (they all inherit from pinned threads from then on).
    let mut pinned = BTreeSet::new();
    loop {
        let tids = process_threads()?;
        let new: Vec<i32> = tids.into_iter().filter(|t| !pinned.contains(t)).collect();
        if new.is_empty() {
            return Ok(());
        }
        for tid in new {
            // SAFETY: `set` is a valid cpu_set_t of the size passed.
            let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            // A thread that ended meanwhile (ESRCH) needs no pinning.
            if r != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH) {
                return Err(os_error("set the CPU affinity of a thread"));
            }
            pinned.insert(tid);
        }
    }
}

/// The ids of this process's threads.
pub fn process_threads() -> Result<Vec<i32>> {
    let dir = std::path::Path::new("/proc/self/task");
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("list the threads in", dir, 0, e))?;
    Ok(entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_reaches_threads_made_before_and_after() {
        let all = allowed_cpus().clone();
        let first: BTreeSet<usize> = all.iter().take(1).copied().collect();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let before = std::thread::spawn(move || {
            rx.recv().unwrap();
            thread_cpus(0).unwrap()
        });
        pin_process(Some(&first)).unwrap();
        assert_eq!(std::thread::spawn(|| thread_cpus(0).unwrap()).join().unwrap(), first);
        tx.send(()).unwrap();
        assert_eq!(before.join().unwrap(), first);
        let missing: BTreeSet<usize> = [libc::CPU_SETSIZE as usize - 1].into();
        assert_eq!(pin_process(Some(&missing)).unwrap_err().number(), 5832);
        pin_process(None).unwrap();
        assert_eq!(thread_cpus(0).unwrap(), all);
    }
}
