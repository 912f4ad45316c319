//! A monotonic clock at the kernel tick's resolution, for what needs "about when" often
//! (when a database was last used): `CLOCK_MONOTONIC_COARSE` reads the time the kernel
//! last stored instead of the clock source, so it costs a few nanoseconds where a virtual
//! machine's `clock_gettime(CLOCK_MONOTONIC)` costs tens.

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

#[cfg(test)]
mod tests {
    use super::coarse_monotonic;

    #[test]
    fn the_coarse_clock_moves_forward_with_the_precise_one() {
        let a = coarse_monotonic();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = coarse_monotonic();
        assert!(b > a && b - a >= std::time::Duration::from_millis(20), "{a:?} then {b:?}");
    }
}
