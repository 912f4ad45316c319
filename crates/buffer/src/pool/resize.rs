//! Moving the limit: `set_max_bytes` grows by putting retired frames back on the free
//! list, and shrinks by evicting the frames beyond the new limit and giving their memory
//! back to the OS (README, "Memory: one reserved region, madvise, one munmap").

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tessera_errors::{Error, Result};

use super::evict::Evict;
use super::frame::{Kind, State, NIL};
use super::Inner;
use crate::page::PAGE_SIZE;

/// How long `set_max_bytes` waits for pinned frames beyond the new limit.
const SHRINK_PATIENCE: Duration = if cfg!(test) { Duration::from_millis(50) } else { Duration::from_secs(2) };

impl Inner {
    pub(super) fn set_max_bytes(&self, bytes: usize) -> Result<()> {
        let _serial = self.resize.lock();
        let new = bytes / PAGE_SIZE;
        if new == 0 || new > self.reserve {
            return Err(Error::Invalid(format!(
                "buffer pool size {bytes} must be between {PAGE_SIZE} and the {} bytes reserved at startup",
                self.reserve * PAGE_SIZE
            )));
        }
        let old = self.limit.load(Ordering::Relaxed);
        if new >= old {
            let mut fl = self.free.lock();
            // Frames retired by an earlier shrink below the high-water mark become usable again.
            let hwm = self.hwm.load(Ordering::Relaxed);
            for i in old..new.min(hwm) {
                let f = self.frame(i as u32);
                if State(f.state.load(Ordering::Acquire)).kind() == Kind::Free {
                    f.next_free.store(fl.head, Ordering::Relaxed);
                    fl.head = i as u32;
                    fl.len += 1;
                }
            }
            self.limit.store(new, Ordering::Release);
            return Ok(());
        }
        // Shrink: stop handing out frames >= new, drop them from the free list.
        {
            let mut fl = self.free.lock();
            self.limit.store(new, Ordering::Release);
            let (mut head, mut len) = (NIL, 0);
            let mut cur = fl.head;
            while cur != NIL {
                let f = self.frame(cur);
                let next = f.next_free.load(Ordering::Relaxed);
                if (cur as usize) < new {
                    f.next_free.store(head, Ordering::Relaxed);
                    head = cur;
                    len += 1;
                }
                cur = next;
            }
            fl.head = head;
            fl.len = len;
        }
        let old_hwm = self.hwm.load(Ordering::Acquire);
        let deadline = Instant::now() + SHRINK_PATIENCE;
        let mut first_err = None;
        loop {
            let hwm = self.hwm.load(Ordering::Acquire);
            let mut remaining = 0;
            for i in new..hwm {
                let i = i as u32;
                let s = State(self.frame(i).state.load(Ordering::Acquire));
                match s.kind() {
                    Kind::Free => {}
                    Kind::Valid if s.pins() == 0 => match self.try_evict(i, true) {
                        Ok(Evict::Done { .. }) => self.free_frame(i),
                        Ok(Evict::Skipped) => remaining += 1,
                        Err(e) => {
                            remaining += 1;
                            first_err.get_or_insert(e);
                        }
                    },
                    Kind::Orphan if s.pins() == 0 && self.claim_orphan(i) => self.free_frame(i),
                    _ => remaining += 1,
                }
            }
            if remaining == 0 || first_err.is_some() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Lower the high-water mark over the trailing free frames, then give their memory
        // (and that of every other free frame beyond the limit) back to the OS. Frames that
        // are free and beyond the limit are touched by no one: only a grow, which holds
        // `resize` like us, can hand them out again.
        {
            let _fl = self.free.lock();
            let mut top = self.hwm.load(Ordering::Relaxed);
            while top > new && State(self.frame(top as u32 - 1).state.load(Ordering::Acquire)).kind() == Kind::Free {
                top -= 1;
            }
            self.hwm.store(top, Ordering::Release);
        }
        let mut run_start = None;
        for i in new..=old_hwm {
            let free = i < old_hwm && State(self.frame(i as u32).state.load(Ordering::Acquire)).kind() == Kind::Free;
            match (free, run_start) {
                (true, None) => run_start = Some(i),
                (false, Some(s)) => {
                    // SAFETY: see above; these frames are free and beyond the limit.
                    unsafe { self.frames.discard(s * PAGE_SIZE, (i - s) * PAGE_SIZE) };
                    run_start = None;
                }
                _ => {}
            }
        }
        // Frames the prefault thread committed above the old high-water mark were never
        // handed out: give back those beyond the new limit too.
        let populated = self.prefault.committed.load(Ordering::Acquire);
        let above = old_hwm.max(new);
        if populated > above {
            // SAFETY: beyond the high-water mark and the limit: nobody uses these frames,
            // and only the prefault thread, which needs `resize` (held here), touches them.
            unsafe { self.frames.discard(above * PAGE_SIZE, (populated - above) * PAGE_SIZE) };
        }
        self.prefault.clamp(new);
        first_err.map_or(Ok(()), Err)
    }
}
