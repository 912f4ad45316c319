//! The portable engine: for each thread, `-o` OS threads each keep one blocking pread/pwrite
//! in flight, so the device sees a queue depth of `-o` per thread as with io_uring.

use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use super::{
    io_error, CpuWindow, Gate, OpGen, SeqCursor, Shared, SlotMemory, ThreadOutcome, ThreadPlan, MEASURE, STOP,
};
use crate::error::{Error, Result};

/// The shared sequential cursor of one thread's pool.
pub fn cursor(plan: &ThreadPlan) -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(plan.first))
}

/// Runs one of the `-o` pool threads standing for `plan`'s thread (`lane` of them) until the
/// run stops. Waits on `ready` once set up.
pub fn run_lane(
    plan: &ThreadPlan,
    lane: u32,
    seq: Arc<AtomicU64>,
    shared: &Shared,
    ready: &Gate,
) -> Result<ThreadOutcome> {
    let block = plan.block as usize;
    let memory = SlotMemory::new(1, block, plan.write_pct > 0)
        .map_err(|e| Error::new(format!("cannot allocate an I/O buffer: {e}")));
    let mut memory = match memory {
        Ok(m) => m,
        Err(e) => {
            ready.arrive_and_wait();
            return Err(e);
        }
    };
    let mut gen = OpGen::new(plan, u64::from(lane), SeqCursor::Shared(seq));
    let mut out = ThreadOutcome::default();
    ready.arrive_and_wait();
    let mut cpu = CpuWindow::new(shared.phase());
    loop {
        let phase = shared.phase();
        cpu.observe(phase);
        if phase == STOP {
            break;
        }
        let (write, offset) = gen.next_op();
        let issued;
        let result = if write {
            let data = plan.writes.data(&mut gen.rng, memory.slot_mut(0), block);
            // SAFETY: `data` points at `block` readable bytes: the write source or `buf`, both
            // alive for this call.
            let data = unsafe { std::slice::from_raw_parts(data, block) };
            issued = Instant::now();
            plan.file.write_at(data, offset)
        } else {
            issued = Instant::now();
            plan.file.read_at(&mut memory.slot_mut(0)[..block], offset)
        };
        let now = Instant::now();
        match result {
            Ok(n) if n == block => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            result => {
                let err = io_error(plan, write, offset, result);
                shared.fail(err.clone());
                return Err(err);
            }
        }
        shared.count(plan.id, 1, block as u64);
        if shared.phase() == MEASURE {
            let ns = now.saturating_duration_since(issued).as_nanos() as u64;
            if write {
                out.stats.write.record_ns(ns);
                out.stats.write_bytes += block as u64;
            } else {
                out.stats.read.record_ns(ns);
                out.stats.read_bytes += block as u64;
            }
        }
    }
    out.cpu = cpu.used();
    Ok(out)
}
