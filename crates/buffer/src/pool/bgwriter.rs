//! The background writer (`tessera-bgwriter`): releases frames stranded beyond a lowered
//! limit and writes cold dirty frames ahead of the clock hand, so that foreground eviction
//! finds clean victims (README, "Background writer").

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::evict::Evict;
use super::frame::{Kind, State, DIRTY, NO_KEY, WRITING};
use super::Inner;

/// Background writer period when nobody kicks it.
const WRITER_PERIOD: Duration = Duration::from_millis(100);
/// Most pages the background writer writes per round.
const WRITER_BATCH: usize = 256;

#[derive(Default)]
pub(super) struct WriterState {
    pub(super) shutdown: bool,
    kicked: bool,
    /// A round is running: the writer may hold a pin (see `is_writing`).
    in_round: bool,
}

impl Inner {
    pub(super) fn kick_writer(&self) {
        if self.writer_enabled && !self.writer_kick.swap(true, Ordering::AcqRel) {
            self.writer.lock().kicked = true;
            self.writer_cv.notify_one();
        }
    }

    pub(super) fn writer_loop(&self) {
        loop {
            {
                let mut g = self.writer.lock();
                if !g.kicked && !g.shutdown {
                    self.writer_cv.wait_for(&mut g, WRITER_PERIOD);
                }
                if g.shutdown {
                    return;
                }
                g.kicked = false;
                g.in_round = true;
            }
            self.writer_kick.store(false, Ordering::Release);
            self.writer_round();
            self.writer.lock().in_round = false;
        }
    }

    /// The writer is in a round, and may hold a pin on the frame it writes.
    pub(super) fn is_writing(&self) -> bool {
        self.writer.lock().in_round
    }

    /// One round: release frames stranded beyond the limit, then, if free frames are
    /// scarce, write the dirty, unpinned, cold frames in the window ahead of the clock hand.
    fn writer_round(&self) {
        let limit = self.limit.load(Ordering::Relaxed);
        let n = self.hwm.load(Ordering::Acquire);
        for i in limit..n {
            if self.writer_stop.load(Ordering::Relaxed) {
                return;
            }
            let s = State(self.frame(i as u32).state.load(Ordering::Relaxed));
            if s.kind() == Kind::Valid && s.pins() == 0 {
                if let Ok(Evict::Done { .. }) = self.try_evict(i as u32, true) {
                    self.free_frame(i as u32);
                }
            }
        }
        let free = self.free.lock().len + limit.saturating_sub(self.hwm.load(Ordering::Relaxed));
        if n == 0 || free >= (limit / 8).max(8).min(limit) {
            return;
        }
        let window = (n / 8).clamp(64, 4096).min(n);
        let start = self.hand.load(Ordering::Relaxed) % n;
        let mut written = 0;
        for step in 0..window {
            if self.writer_stop.load(Ordering::Relaxed) || written >= WRITER_BATCH {
                return;
            }
            let i = ((start + step) % n) as u32;
            let f = self.frame(i);
            let s = State(f.state.load(Ordering::Relaxed));
            if s.kind() != Kind::Valid || s.pins() != 0 || s.usage() != 0 {
                continue;
            }
            if f.dirty.load(Ordering::Relaxed) & (DIRTY | WRITING) != DIRTY {
                continue;
            }
            let k = f.key.load(Ordering::Acquire);
            let Some((_pin, e)) = (if k == NO_KEY { None } else { self.pin_if_mapped(i, k) }) else { continue };
            // Errors are left to foreground eviction and checkpoints, which report them.
            let r = self.write_frame(i, &e, false);
            if let Ok(true) = r {
                written += 1;
            }
        }
    }
}
