//! Many reads and writes in flight from one thread, through Linux io_uring.
//!
//! [`Uring`] is a thin, safe-where-possible wrapper over one submission/completion ring:
//! queue positioned reads and writes (each tagged with a caller-chosen token), submit them in
//! one system call, and reap their completions. It is the engine `tessera iobench` drives and
//! the one the buffer pool can use to keep many page reads in flight.
//!
//! The buffers handed to [`Uring::queue_read`] and [`Uring::queue_write`] are used by the kernel
//! until the matching completion is reaped, which is why those calls are `unsafe`. Dropping a
//! `Uring` waits for every operation still in flight, so a ring never outlives the I/O it
//! started.

use std::io;
use std::os::unix::io::RawFd;

use std::marker::PhantomData;

use io_uring::{opcode, squeue, types, EnterFlags, IoUring};

/// One finished operation: the token it was queued with and the kernel's result (bytes moved,
/// or a negated errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub token: u64,
    pub result: i32,
}

impl Completion {
    /// Bytes transferred, or the OS error the operation failed with.
    pub fn bytes(&self) -> io::Result<usize> {
        if self.result < 0 {
            Err(io::Error::from_raw_os_error(-self.result))
        } else {
            Ok(self.result as usize)
        }
    }
}

/// One io_uring with room for `depth` operations in flight.
///
/// A ring belongs to the thread that created it: with the flags it is set up with
/// (SINGLE_ISSUER, DEFER_TASKRUN) the kernel accepts submissions and delivers completions only
/// to that thread, so `Uring` is neither `Send` nor `Sync`.
pub struct Uring {
    ring: IoUring,
    depth: usize,
    /// Operations queued or submitted whose completion has not been reaped.
    in_flight: usize,
    _not_send: PhantomData<*const ()>,
}

impl Uring {
    /// Sets up a ring for `depth` operations in flight (1 ..= 32768).
    ///
    /// Fails when the kernel has no io_uring or refuses it (older than 5.6, disabled through
    /// `/proc/sys/kernel/io_uring_disabled`, or blocked by a seccomp filter, as in many
    /// containers); the error says so.
    pub fn new(depth: u32) -> io::Result<Uring> {
        if depth == 0 || depth > 32768 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("io_uring depth {depth} out of range")));
        }
        // Completions are only needed by the thread that submits, so ask the kernel not to
        // interrupt it for them (COOP_TASKRUN, 5.19+), say one thread submits
        // (SINGLE_ISSUER, 6.0+) and let completion work wait until that thread asks for
        // completions (DEFER_TASKRUN, 6.1+), as fio does. Older kernels reject the flags: drop
        // them one by one.
        let attempts: [fn() -> io_uring::Builder; 3] = [
            || {
                let mut b = IoUring::builder();
                b.setup_coop_taskrun().setup_single_issuer().setup_defer_taskrun();
                b
            },
            || {
                let mut b = IoUring::builder();
                b.setup_coop_taskrun();
                b
            },
            IoUring::builder,
        ];
        let mut last = None;
        for attempt in attempts {
            match attempt().build(depth) {
                Ok(ring) => return Ok(Uring { ring, depth: depth as usize, in_flight: 0, _not_send: PhantomData }),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
                Err(e) => return Err(unavailable(e)),
            }
        }
        Err(unavailable(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))))
    }

    /// Whether this process may use io_uring at all (a one-entry ring can be set up).
    pub fn is_available() -> bool {
        Uring::new(1).is_ok()
    }

    /// How many operations may be in flight at once.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Operations queued or submitted whose completion has not been reaped yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues a read of `len` bytes at `offset` of `fd` into `buf`; it starts at the next
    /// [`submit`](Self::submit) or [`submit_and_wait`](Self::submit_and_wait).
    ///
    /// # Safety
    /// `buf` must be valid for writes of `len` bytes, and neither it nor `fd` may be freed,
    /// closed or otherwise used until the completion carrying `token` has been reaped (or the
    /// ring dropped). With O_DIRECT, `buf`, `len` and `offset` must be aligned as the device
    /// requires.
    pub unsafe fn queue_read(&mut self, fd: RawFd, buf: *mut u8, len: u32, offset: u64, token: u64) -> io::Result<()> {
        let entry = opcode::Read::new(types::Fd(fd), buf, len).offset(offset).build().user_data(token);
        self.push(&entry)
    }

    /// Queues a write of `len` bytes from `buf` at `offset` of `fd`.
    ///
    /// # Safety
    /// As for [`queue_read`](Self::queue_read), with `buf` valid for reads of `len` bytes and
    /// left unchanged until the completion is reaped.
    pub unsafe fn queue_write(
        &mut self,
        fd: RawFd,
        buf: *const u8,
        len: u32,
        offset: u64,
        token: u64,
    ) -> io::Result<()> {
        let entry = opcode::Write::new(types::Fd(fd), buf, len).offset(offset).build().user_data(token);
        self.push(&entry)
    }

    /// Safety: the entry's buffer obligations are the caller's (see the queue functions).
    unsafe fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        if self.in_flight >= self.depth {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("io_uring already has {} operations in flight", self.depth),
            ));
        }
        if self.ring.submission().is_full() {
            // Queued entries the kernel has not taken yet: hand them over to make room.
            self.submit()?;
        }
        self.ring.submission().push(entry).map_err(|_| io::Error::other("io_uring submission queue is full"))?;
        self.in_flight += 1;
        Ok(())
    }

    /// Starts every queued operation, and makes completions that are ready visible to
    /// [`pop`](Self::pop) and [`reap`](Self::reap) without waiting; returns how many operations
    /// the kernel took.
    pub fn submit(&mut self) -> io::Result<usize> {
        self.enter(0)
    }

    /// Starts every queued operation and waits until at least `min_complete` completions are
    /// ready to reap (fewer if fewer are in flight).
    pub fn submit_and_wait(&mut self, min_complete: usize) -> io::Result<usize> {
        let ready = self.ring.completion().len();
        let want = min_complete.min(self.in_flight).saturating_sub(ready);
        self.enter(want)
    }

    fn enter(&mut self, want: usize) -> io::Result<usize> {
        loop {
            let pending = self.ring.submission().len();
            // SAFETY: the queued entries' buffers are the callers' obligation (see the queue
            // functions); no extended argument is passed.
            let entered = unsafe {
                self.ring.submitter().enter::<libc::sigset_t>(
                    pending as u32,
                    want as u32,
                    EnterFlags::GETEVENTS.bits(),
                    None,
                )
            };
            match entered {
                Ok(n) => return Ok(n),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // The completion queue is too full to take more: the caller must reap first.
                // Nothing is lost, the entries stay queued.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && !self.ring.completion().is_empty() => return Ok(0),
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes one ready completion, if there is one.
    pub fn pop(&mut self) -> Option<Completion> {
        let cqe = self.ring.completion().next()?;
        self.in_flight = self.in_flight.saturating_sub(1);
        Some(Completion { token: cqe.user_data(), result: cqe.result() })
    }

    /// Moves every ready completion into `out` (appending); returns how many.
    pub fn reap(&mut self, out: &mut Vec<Completion>) -> usize {
        let mut n = 0;
        for cqe in self.ring.completion() {
            out.push(Completion { token: cqe.user_data(), result: cqe.result() });
            n += 1;
        }
        self.in_flight -= n.min(self.in_flight);
        n
    }

    /// Submits what is queued and waits for every operation in flight, returning their
    /// completions.
    pub fn drain(&mut self) -> io::Result<Vec<Completion>> {
        let mut out = Vec::with_capacity(self.in_flight);
        while self.in_flight > 0 {
            self.submit_and_wait(1)?;
            self.reap(&mut out);
        }
        Ok(out)
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel may still be reading or writing the buffers of operations in flight;
        // closing the ring would not stop it. Wait for them.
        let mut sink = Vec::new();
        while self.in_flight > 0 {
            if self.submit_and_wait(1).is_err() {
                break;
            }
            sink.clear();
            self.reap(&mut sink);
        }
    }
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring").field("depth", &self.depth).field("in_flight", &self.in_flight).finish()
    }
}

fn unavailable(e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!(
            "io_uring is not available here ({e}): the kernel is older than 5.6, io_uring is disabled \
             (/proc/sys/kernel/io_uring_disabled) or a seccomp filter blocks it"
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::io::AsRawFd;

    use super::*;
    use crate::AlignedBuf;

    #[test]
    fn writes_then_reads_many_in_flight() {
        let mut ring = Uring::new(8).expect("io_uring is available on the kernels tessera is tested on");
        let dir = tempfile::tempdir().unwrap();
        let file =
            std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(dir.path().join("u.dat")).unwrap();
        let fd = file.as_raw_fd();
        let mut bufs: Vec<AlignedBuf> = (0..8)
            .map(|i| {
                let mut b = AlignedBuf::new(4096);
                b.fill(i as u8 + 1);
                b
            })
            .collect();
        for (i, b) in bufs.iter().enumerate() {
            // SAFETY: the buffers and file outlive the drain below.
            unsafe { ring.queue_write(fd, b.as_ptr(), 4096, i as u64 * 4096, i as u64).unwrap() };
        }
        assert_eq!(ring.in_flight(), 8);
        let done = ring.drain().unwrap();
        assert_eq!(done.len(), 8);
        assert!(done.iter().all(|c| c.bytes().unwrap() == 4096));
        for (i, b) in bufs.iter_mut().enumerate() {
            b.fill(0);
            // SAFETY: as above.
            unsafe { ring.queue_read(fd, b.as_mut_ptr(), 4096, i as u64 * 4096, 100 + i as u64).unwrap() };
        }
        // A ninth operation does not fit.
        let extra = AlignedBuf::new(4096);
        // SAFETY: refused before reaching the kernel.
        assert!(unsafe { ring.queue_write(fd, extra.as_ptr(), 4096, 0, 99) }.is_err());
        let mut done = Vec::new();
        while ring.in_flight() > 0 {
            ring.submit_and_wait(1).unwrap();
            ring.reap(&mut done);
        }
        let mut tokens: Vec<u64> = done.iter().map(|c| c.token).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, (100..108).collect::<Vec<_>>());
        for (i, b) in bufs.iter().enumerate() {
            assert!(b.iter().all(|&x| x == i as u8 + 1));
        }
    }

    #[test]
    fn errors_come_back_as_completions() {
        let Ok(mut ring) = Uring::new(2) else {
            return;
        };
        let mut buf = AlignedBuf::new(4096);
        // SAFETY: fd -1 fails in the kernel without touching the buffer.
        unsafe { ring.queue_read(-1, buf.as_mut_ptr(), 4096, 0, 7).unwrap() };
        let done = ring.drain().unwrap();
        assert_eq!(done[0].token, 7);
        assert_eq!(done[0].bytes().unwrap_err().raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn completions_one_at_a_time() {
        let Ok(mut ring) = Uring::new(4) else {
            return;
        };
        let file = tempfile::tempfile().unwrap();
        let bufs: Vec<AlignedBuf> = (0..4).map(|_| AlignedBuf::new(4096)).collect();
        for (i, b) in bufs.iter().enumerate() {
            // SAFETY: the buffers and file outlive the completions reaped below.
            unsafe { ring.queue_write(file.as_raw_fd(), b.as_ptr(), 4096, i as u64 * 4096, i as u64).unwrap() };
        }
        ring.submit().unwrap();
        let mut seen = Vec::new();
        while ring.in_flight() > 0 {
            match ring.pop() {
                Some(c) => {
                    assert_eq!(c.bytes().unwrap(), 4096);
                    seen.push(c.token);
                }
                None => {
                    ring.submit_and_wait(1).unwrap();
                }
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3]);
        assert!(ring.pop().is_none());
        assert_eq!(file.metadata().unwrap().len(), 4 * 4096);
    }

    #[test]
    fn depth_is_checked() {
        assert!(Uring::new(0).is_err());
        assert!(Uring::new(1 << 20).is_err());
    }
}
