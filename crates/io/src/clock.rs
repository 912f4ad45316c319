//! A monotonic clock at the kernel tick's resolution, for what needs "about when" often
//! (when a database was last used): `CLOCK_MONOTONIC_COARSE` reads the time the kernel
//! last stored instead of the clock source, so it costs a few nanoseconds where a virtual
//! machine's `clock_gettime(CLOCK_MONOTONIC)` costs tens. And a thread's CPU time, which
//! SET STATISTICS TIME reports and the resource governors charge.

use std::time::Duration;

/// Time since an unspecified start (the same for the whole system), a few milliseconds
/// behind the precise clock at most.
pub fn coarse_monotonic() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the call writes only it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_MONOTONIC_COARSE is always available on Linux");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The calling thread's CPU time so far.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::{coarse_monotonic, thread_cpu_time};

    #[test]
    fn the_coarse_clock_moves_forward_with_the_precise_one() {
        let a = coarse_monotonic();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = coarse_monotonic();
        assert!(b > a && b - a >= std::time::Duration::from_millis(20), "{a:?} then {b:?}");
    }

    #[test]
    fn a_busy_thread_has_spent_cpu_time() {
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(thread_cpu_time() > std::time::Duration::ZERO);
    }
}
