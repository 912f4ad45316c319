//! One reserved range of anonymous virtual memory.
//!
//! The range is mapped once with `MAP_NORESERVE`, so it costs address space only; the kernel
//! commits memory page by page on first touch. `discard` hands committed memory back with
//! `MADV_DONTNEED`, and dropping the region is one `munmap`, whatever was touched.

use std::ptr;

use tessera_io::{Error, Result};

/// Transparent huge page size on x86-64 and arm64 (4 KiB base pages).
const HUGE: usize = 2 << 20;

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
    /// Reserves `len` bytes (rounded up to the OS page size), aligned to 2 MiB and advised
    /// for transparent huge pages, so that both first touch and release work in 2 MiB units.
    pub fn reserve(len: usize, what: &str) -> Result<Region> {
        assert!(len > 0);
        let len = len.next_multiple_of(4096);
        let map_len = len
            .checked_add(HUGE)
            .ok_or_else(|| Error::Invalid(format!("buffer pool {what} of {len} bytes is too large")))?;
        // SAFETY: anonymous private mapping at an address the kernel chooses.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::Invalid(format!(
                "cannot reserve {len} bytes of address space for the buffer pool {what}: {}",
                std::io::Error::last_os_error()
            )));
        }
        let map = p as *mut u8;
        let start = (map as usize).next_multiple_of(HUGE) as *mut u8;
        if len >= HUGE {
            // Best effort: without THP the region still works, it just releases more slowly.
            // SAFETY: [start, start + len) lies inside the mapping.
            unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        }
        Ok(Region { map, map_len, start, len })
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
