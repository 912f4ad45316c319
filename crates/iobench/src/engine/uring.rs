//! The io_uring engine: one ring per thread, `-o` requests always in flight.
//!
//! Each request has its own slot (an aligned buffer and the time it was handed to the
//! kernel). Two ways to keep the ring full:
//!
//! - one at a time (the default, fio's defaults `iodepth_batch_submit=1`,
//!   `iodepth_batch_complete_max=1`): take one completion, stamp it, queue its replacement
//!   and submit it at once; wait only when no completion is ready. Each request's latency
//!   includes the time its completion waited while earlier ones were replaced.
//! - in batches (`--batch`): reap every ready completion, stamp them with one clock read,
//!   queue all replacements and submit them with one system call, which also waits for the
//!   next completion.

use std::os::unix::io::AsRawFd;
use std::time::Instant;

use tessera_io::{Completion, Uring};

use super::{
    io_error, CpuWindow, Gate, OpGen, SeqCursor, Shared, SlotMemory, ThreadOutcome, ThreadPlan, MEASURE, STOP,
};
use crate::error::{Error, Result};

struct Slot {
    write: bool,
    offset: u64,
    issued: Instant,
}

/// Runs one thread's I/O until the run stops. Arrives at `ready` once set up (whether or not
/// setting up worked).
pub fn run_thread(plan: &ThreadPlan, shared: &Shared, ready: &Gate, batch: bool) -> Result<ThreadOutcome> {
    let setup = || -> Result<(Uring, SlotMemory, Vec<Slot>)> {
        let ring = Uring::new(plan.outstanding).map_err(|e| Error::new(e.to_string()))?;
        let memory = SlotMemory::new(plan.outstanding as usize, plan.block as usize, plan.write_pct > 0)
            .map_err(|e| Error::new(format!("cannot allocate I/O buffers: {e}")))?;
        let now = Instant::now();
        let slots = (0..plan.outstanding).map(|_| Slot { write: false, offset: 0, issued: now }).collect();
        Ok((ring, memory, slots))
    };
    let setup = setup();
    ready.arrive_and_wait();
    let (ring, memory, slots) = setup?;
    let mut worker = Worker {
        plan,
        shared,
        ring,
        memory,
        slots,
        gen: OpGen::new(plan, 0, SeqCursor::Local(plan.first)),
        out: ThreadOutcome::default(),
        unreported: (0, 0),
    };
    let outcome = if batch { worker.batched() } else { worker.one_at_a_time() };
    // The ring must finish with the slots' buffers before they are freed.
    let _ = worker.ring.drain();
    outcome.map(|()| worker.out)
}

struct Worker<'a> {
    plan: &'a ThreadPlan,
    shared: &'a Shared,
    ring: Uring,
    /// The slots' buffers (declared after the ring, which drains before they are unmapped).
    memory: SlotMemory,
    slots: Vec<Slot>,
    gen: OpGen,
    out: ThreadOutcome,
    /// Completions (and bytes) not yet added to the shared live counters.
    unreported: (u64, u64),
}

impl Worker<'_> {
    /// Queues a new request in slot `index` (not yet submitted).
    fn queue(&mut self, index: usize) -> Result<()> {
        let (write, offset) = self.gen.next_op();
        let block = self.plan.block as usize;
        let fd = self.plan.file.as_raw_fd();
        let slot = &mut self.slots[index];
        slot.write = write;
        slot.offset = offset;
        // SAFETY: the slot's buffer (or the shared write source, which lives in an Arc the plan
        // holds) and the file outlive the request: `run_thread` drains the ring before either
        // is dropped, and a slot is reused only after its completion has been reaped.
        let queued = unsafe {
            if write {
                let data = self.plan.writes.data(&mut self.gen.rng, self.memory.slot_mut(index), block);
                self.ring.queue_write(fd, data, block as u32, offset, index as u64)
            } else {
                self.ring.queue_read(fd, self.memory.ptr(index), block as u32, offset, index as u64)
            }
        };
        queued.map_err(|e| Error::new(format!("cannot queue an I/O on '{}': {e}", self.plan.path.display())))
    }

    fn submit_error(&self, e: std::io::Error) -> Error {
        Error::new(format!("io_uring submission for '{}' failed: {e}", self.plan.path.display()))
    }

    /// Checks and counts one completion stamped `now`, in `phase`; returns its slot.
    fn complete(&mut self, c: Completion, now: Instant, phase: u8) -> Result<usize> {
        let index = c.token as usize;
        let block = self.plan.block;
        let slot = &self.slots[index];
        match c.bytes() {
            Ok(got) if got as u64 == block => {}
            result => {
                let err = io_error(self.plan, slot.write, slot.offset, result);
                self.shared.fail(err.clone());
                return Err(err);
            }
        }
        self.unreported.0 += 1;
        self.unreported.1 += block;
        if phase == MEASURE {
            let ns = now.saturating_duration_since(slot.issued).as_nanos() as u64;
            let stats = &mut self.out.stats;
            if slot.write {
                stats.write.record_ns(ns);
                stats.write_bytes += block;
            } else {
                stats.read.record_ns(ns);
                stats.read_bytes += block;
            }
        }
        Ok(index)
    }

    fn report(&mut self) {
        let (n, bytes) = std::mem::take(&mut self.unreported);
        if n > 0 {
            self.shared.count(self.plan.id, n, bytes);
        }
    }

    fn start(&mut self) -> Result<()> {
        for i in 0..self.slots.len() {
            self.queue(i)?;
        }
        let now = Instant::now();
        for slot in &mut self.slots {
            slot.issued = now;
        }
        self.ring.submit().map_err(|e| self.submit_error(e))?;
        Ok(())
    }

    fn one_at_a_time(&mut self) -> Result<()> {
        let mut cpu = CpuWindow::new(self.shared.phase());
        self.start()?;
        loop {
            let Some(c) = self.ring.pop() else {
                if self.ring.in_flight() == 0 {
                    break;
                }
                self.report();
                self.ring.submit_and_wait(1).map_err(|e| self.submit_error(e))?;
                continue;
            };
            let now = Instant::now();
            let phase = self.shared.phase();
            cpu.observe(phase);
            let index = self.complete(c, now, phase)?;
            if phase != STOP {
                self.queue(index)?;
                self.slots[index].issued = Instant::now();
                self.ring.submit().map_err(|e| self.submit_error(e))?;
            }
        }
        self.report();
        self.out.cpu = cpu.used();
        Ok(())
    }

    fn batched(&mut self) -> Result<()> {
        let mut cpu = CpuWindow::new(self.shared.phase());
        self.start()?;
        let mut done: Vec<Completion> = Vec::with_capacity(self.slots.len());
        let mut fresh: Vec<usize> = Vec::with_capacity(self.slots.len());
        loop {
            if !fresh.is_empty() {
                let now = Instant::now();
                for &i in &fresh {
                    self.slots[i].issued = now;
                }
                fresh.clear();
            }
            self.ring.submit_and_wait(1).map_err(|e| self.submit_error(e))?;
            self.ring.reap(&mut done);
            let now = Instant::now();
            let phase = self.shared.phase();
            cpu.observe(phase);
            let mut batch = std::mem::take(&mut done);
            for c in batch.drain(..) {
                let index = self.complete(c, now, phase)?;
                if phase != STOP {
                    self.queue(index)?;
                    fresh.push(index);
                }
            }
            done = batch;
            self.report();
            if phase == STOP && self.ring.in_flight() == 0 {
                break;
            }
        }
        self.out.cpu = cpu.used();
        Ok(())
    }
}
