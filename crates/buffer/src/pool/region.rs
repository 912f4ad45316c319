//! One reserved range of anonymous virtual memory.
//!
//! The range is mapped once with `MAP_NORESERVE`, so it costs address space only; the kernel
//! commits memory page by page on first touch. `discard` hands committed memory back with
//! `MADV_DONTNEED`, and dropping the region is one `munmap`, whatever was touched.
//! With explicit huge pages (`HugePages::On`) the mapping reserves its huge pages up front
//! instead (`MAP_HUGETLB`, no `MAP_NORESERVE`).

use std::ptr;

use tessera_errors::{Error, Result};

/// Huge page size on x86-64 and arm64 (4 KiB base pages).
const HUGE: usize = 2 << 20;
/// Most bytes one `MADV_POPULATE_WRITE` call commits (see [`Region::populate`]).
const POPULATE_CHUNK: usize = 2 * HUGE;

/// How the frame region is backed (`PoolConfig::huge_pages`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HugePages {
    /// 4 KiB pages only (`MADV_NOHUGEPAGE`): the slowest release, no THP compaction stalls.
    Off,
    /// Transparent huge pages where the kernel can give them (`MADV_HUGEPAGE`): memory is
    /// still committed on first touch and returned by `madvise`, 2 MiB at a time.
    #[default]
    Transparent,
    /// Explicit huge pages (`MAP_HUGETLB`) from the kernel's pool, reserved in full when
    /// the pool is created: never swapped, never split. The pool cannot grow beyond the
    /// size it started with, and memory it gives back stays in the huge page pool.
    On,
}

impl std::str::FromStr for HugePages {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<HugePages, String> {
        match s.to_ascii_lowercase().as_str() {
            "off" => Ok(HugePages::Off),
            "transparent" => Ok(HugePages::Transparent),
            "on" => Ok(HugePages::On),
            other => Err(format!("unknown huge_pages setting '{other}' (off, transparent or on)")),
        }
    }
}

/// A private anonymous read-write mapping of `len` bytes with the extra mmap `flags`, at an
/// address the kernel chooses.
fn map_anonymous(len: usize, flags: libc::c_int) -> std::io::Result<*mut u8> {
    // SAFETY: an anonymous private mapping at an address the kernel chooses; no existing
    // memory is affected.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(p as *mut u8)
    }
}

/// `HugePages_Free` of /proc/meminfo.
fn huge_pages_free() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("HugePages_Free:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub(super) struct Region {
    map: *mut u8,
    map_len: usize,
    start: *mut u8,
    len: usize,
}

// SAFETY: the region is plain memory; every access to its bytes is synchronised by the pool
// (frame latches and frame ownership), the region itself only hands out addresses.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    /// Reserves `len` bytes (rounded up to the OS page size), aligned to 2 MiB, backed as
    /// `huge` says (see [`HugePages`]), so that both first touch and release work in 2 MiB
    /// units where huge pages are used.
    pub fn reserve(len: usize, what: &str, huge: HugePages) -> Result<Region> {
        assert!(len > 0);
        if huge == HugePages::On {
            return Self::reserve_hugetlb(len, what);
        }
        let len = len.next_multiple_of(4096);
        let map_len = len
            .checked_add(HUGE)
            .ok_or_else(|| Error::Invalid(format!("buffer pool {what} of {len} bytes is too large")))?;
        let map = map_anonymous(map_len, libc::MAP_NORESERVE).map_err(|e| {
            Error::Invalid(format!("cannot reserve {len} bytes of address space for the buffer pool {what}: {e}"))
        })?;
        let start = (map as usize).next_multiple_of(HUGE) as *mut u8;
        let advice = if huge == HugePages::Off { libc::MADV_NOHUGEPAGE } else { libc::MADV_HUGEPAGE };
        if len >= HUGE {
            // Best effort: without THP the region still works, it just releases more slowly.
            // SAFETY: [start, start + len) lies inside the mapping.
            unsafe { libc::madvise(start as *mut libc::c_void, len, advice) };
        }
        Ok(Region { map, map_len, start, len })
    }

    /// `HugePages::On`: explicit 2 MiB pages from the kernel's huge page pool
    /// (`vm.nr_hugepages`), all reserved by the mmap itself, so a shortage is an error now
    /// rather than a fault on first touch.
    fn reserve_hugetlb(len: usize, what: &str) -> Result<Region> {
        let len = len.next_multiple_of(HUGE);
        let map = map_anonymous(len, libc::MAP_HUGETLB).map_err(|err| {
            let free = huge_pages_free().map_or_else(|| "an unknown number of".to_string(), |n| n.to_string());
            Error::Invalid(format!(
                "cannot reserve {} MiB of huge pages for the buffer pool {what} (huge_pages = on): {} huge pages \
                 of 2 MiB needed, the kernel has {free} free (raise vm.nr_hugepages, or use huge_pages = \
                 transparent): {err}",
                len >> 20,
                len / HUGE,
            ))
        })?;
        debug_assert!((map as usize).is_multiple_of(HUGE));
        Ok(Region { map, map_len: len, start: map, len })
    }

    /// Commits the memory behind `[offset, offset + len)` (widened to whole 4 KiB pages)
    /// with `MADV_POPULATE_WRITE`, which faults it in without changing what it holds, so
    /// it is safe while others use the range. Returns false if the kernel does not
    /// support it; other failures (no memory to spare) just leave the range to be faulted
    /// in on first touch.
    pub fn populate(&self, offset: usize, len: usize) -> bool {
        let start = offset / 4096 * 4096;
        let end = (offset + len).next_multiple_of(4096).min(self.len);
        if start >= end {
            return true;
        }
        // In chunks: the kernel holds the process's mmap lock (shared) while it populates,
        // and on memory the VM host has not backed yet 64 MiB takes a tenth of a second,
        // during which any mmap or munmap (a large allocation grown or freed) waits, and
        // every page fault queues behind that waiter.
        for at in (start..end).step_by(POPULATE_CHUNK) {
            let len = POPULATE_CHUNK.min(end - at);
            // SAFETY: the range lies inside the mapping; populating does not change contents.
            let rc = unsafe { libc::madvise(self.start.add(at) as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
            if rc != 0 {
                return std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL);
            }
        }
        true
    }

    pub fn ptr(&self) -> *mut u8 {
        self.start
    }

    /// Gives the memory behind `[offset, offset + len)` back to the OS; it reads as zeros
    /// afterwards. Both must be multiples of 4096.
    ///
    /// # Safety
    /// No one may be reading or writing that range, nor hold references into it.
    pub unsafe fn discard(&self, offset: usize, len: usize) {
        debug_assert!(offset.is_multiple_of(4096) && len.is_multiple_of(4096));
        debug_assert!(offset + len <= self.len);
        if len == 0 {
            return;
        }
        // SAFETY: the range lies inside the mapping; the caller guarantees no one uses it.
        let rc = unsafe { libc::madvise(self.start.add(offset) as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        debug_assert_eq!(rc, 0, "madvise(MADV_DONTNEED) failed: {}", std::io::Error::last_os_error());
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping was created in `reserve` with exactly this address and length,
        // and the owner guarantees nothing points into it any more.
        let rc = unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
        debug_assert_eq!(rc, 0, "munmap failed: {}", std::io::Error::last_os_error());
    }
}
