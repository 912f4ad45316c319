//! Who writes and syncs a log: one thread at a time per stage ([`Turn`]), and the one
//! background thread of the process that writes logs whose buffers filled.

use std::sync::atomic::Ordering;
use std::sync::{OnceLock, Weak};

use parking_lot::{Condvar, Mutex};
use tessera_errors::Result;

use crate::wal::Wal;

/// The one background thread of the process that writes (without syncing) the buffered
/// records of any log whose buffer filled, so appenders — a big transaction above all —
/// do not spend their own time copying log bytes into the kernel. Commits still flush
/// for themselves (group commit).
pub(crate) struct BackgroundWriter {
    queue: std::sync::Mutex<std::sync::mpsc::Sender<Weak<Wal>>>,
}

impl BackgroundWriter {
    pub(crate) fn send(&self, wal: Weak<Wal>) {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if queue.send(wal.clone()).is_err() {
            // The thread is gone (it never exits on its own); write inline instead.
            if let Some(w) = wal.upgrade() {
                w.write_queued.store(false, Ordering::Release);
                let _ = w.write_out();
            }
        }
    }
}

pub(crate) fn background_writer() -> &'static BackgroundWriter {
    static WRITER: OnceLock<BackgroundWriter> = OnceLock::new();
    WRITER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Weak<Wal>>();
        // If the thread cannot start, the receiver is dropped with the closure and `send`
        // finds the channel closed: appenders then write for themselves.
        let _ = std::thread::Builder::new().name("tessera-logwriter".into()).spawn(move || {
            for wal in rx {
                if let Some(wal) = wal.upgrade() {
                    wal.write_queued.store(false, Ordering::Release);
                    // A failure poisons the log; the next flush reports it.
                    let _ = wal.write_out();
                }
            }
        });
        BackgroundWriter { queue: std::sync::Mutex::new(tx) }
    })
}

/// A stage of the log (writing pending bytes, syncing) that one thread at a time works
/// at. Waiters sleep on a condition variable woken all at once when a turn ends, so each
/// looks at once whether that turn covered it (a mutex queue would wake them one by one).
#[derive(Default)]
pub(crate) struct Turn {
    busy: Mutex<bool>,
    ended: Condvar,
}

impl Turn {
    /// Until `covered()` holds: waits while another thread has the turn, else takes it and
    /// runs `work`. `check()` (the log not failed) is asked before every turn.
    pub(crate) fn until(
        &self,
        covered: impl Fn() -> bool,
        check: impl Fn() -> Result<()>,
        mut work: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let mut busy = self.busy.lock();
        loop {
            if covered() {
                return Ok(());
            }
            check()?;
            if *busy {
                self.ended.wait(&mut busy);
                continue;
            }
            *busy = true;
            drop(busy);
            let result = self.end_after(&mut work);
            busy = self.busy.lock();
            result?;
        }
    }

    /// Runs `work` unless another thread has the turn (then it will do the work).
    pub(crate) fn unless_busy(&self, mut work: impl FnMut() -> Result<()>) -> Result<()> {
        {
            let mut busy = self.busy.lock();
            if *busy {
                return Ok(());
            }
            *busy = true;
        }
        self.end_after(&mut work)
    }

    /// Runs `work` in the turn taken by the caller, then ends the turn.
    fn end_after(&self, work: &mut impl FnMut() -> Result<()>) -> Result<()> {
        let result = work();
        *self.busy.lock() = false;
        self.ended.notify_all();
        result
    }
}
