//! Whether the server's CPU is contended: the process used at least nine tenths of the
//! CPU it may use over the last [`WINDOW`]. Read from `getrusage` at most once a window,
//! by whichever request asks first; the others read the answer kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The share of the CPU the server may use above which it counts as contended, in tenths.
const CONTENDED_TENTHS: u128 = 9;
/// How long a measurement covers.
const WINDOW: Duration = Duration::from_millis(100);

struct Sample {
    at: Instant,
    cpu: Duration,
}

static LAST: Mutex<Option<Sample>> = Mutex::new(None);
static CONTENDED_NOW: AtomicBool = AtomicBool::new(false);

/// The process's CPU time (user and system, all threads).
fn process_cpu() -> Duration {
    // SAFETY: a zeroed rusage is valid for getrusage to fill; it only writes that struct.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Whether `used` CPU time over `wall` time on `cores` cores is contention.
fn is_contended(used: Duration, wall: Duration, cores: usize) -> bool {
    !wall.is_zero() && used.as_nanos() * 10 >= CONTENDED_TENTHS * wall.as_nanos() * cores as u128
}

/// Whether the CPU was contended over the last window (measured again when it is over).
pub fn contended(now: Instant) -> bool {
    if let Some(mut last) = LAST.try_lock() {
        let due = last.as_ref().is_none_or(|s| now.saturating_duration_since(s.at) >= WINDOW);
        if due {
            let cpu = process_cpu();
            if let Some(s) = last.as_ref() {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                let busy = is_contended(cpu.saturating_sub(s.cpu), now.saturating_duration_since(s.at), cores);
                CONTENDED_NOW.store(busy, Ordering::Relaxed);
            }
            *last = Some(Sample { at: now, cpu });
        }
    }
    CONTENDED_NOW.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_is_nine_tenths_of_every_core() {
        let ms = Duration::from_millis;
        assert!(is_contended(ms(180), ms(100), 2));
        assert!(!is_contended(ms(170), ms(100), 2));
        assert!(is_contended(ms(90), ms(100), 1));
        assert!(!is_contended(ms(0), ms(0), 2), "no time passed");
        // The sampler answers at once between measurements.
        let now = Instant::now();
        let first = contended(now);
        assert_eq!(contended(now), first);
    }
}
