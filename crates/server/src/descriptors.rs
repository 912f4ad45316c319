//! File descriptors. At start the soft `RLIMIT_NOFILE` is raised to the hard limit, and
//! the descriptors are shared out: connections (a socket each) get at most half of what
//! the server's own files leave, the engine's files (a data file and a log file per open
//! database, backup media, the buffer pool extension) the rest, through the descriptor
//! cache (`tessera_io::descriptors`), which closes the least recently used file's
//! descriptor and reopens it on demand. So the number of open databases is bounded by
//! `max_open_databases`, not by descriptors, and the listener refuses connections past
//! their share, so an `accept` never fails for want of a descriptor.

/// Descriptors kept for the server's own files: the listener, the ERRORLOG, the reactor,
/// I/O rings, the registry and files a statement opens for a moment (certificates).
pub const RESERVED_FDS: u64 = 64;

/// The fewest descriptors a server starts with: room for a few connections and for the
/// descriptor cache's smallest size.
pub const MIN_FDS: u64 = RESERVED_FDS + 32;

/// The process's descriptor limit after start, and how it is shared out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The soft limit now.
    pub limit: u64,
    /// The soft limit before it was raised (None: it already was the hard limit).
    pub raised_from: Option<u64>,
    /// The most descriptors the engine's files keep open at once.
    pub file_descriptors: usize,
    pub max_connections: usize,
}

/// Raises the soft descriptor limit to the hard limit; returns (before, after).
pub fn raise_limit() -> std::io::Result<(u64, u64)> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let before = lim.rlim_cur;
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads one rlimit through a valid pointer.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim = raised;
    }
    Ok((before, lim.rlim_cur))
}

/// Shares `limit` descriptors out under the configured bound on connections; an error
/// when there are too few to start.
pub fn plan(limit: u64, raised_from: Option<u64>, connections: usize) -> Result<Budget, String> {
    if limit < MIN_FDS {
        return Err(format!(
            "the open file limit is {limit}; the server needs at least {MIN_FDS} (raise the hard limit: ulimit -Hn)"
        ));
    }
    let usable = limit - RESERVED_FDS;
    // Connections may take up to half; the engine's files get what they leave.
    let max_connections = (connections as u64).min(usable / 2).max(1);
    let file_descriptors = usable - max_connections;
    Ok(Budget {
        limit,
        raised_from,
        file_descriptors: usize::try_from(file_descriptors).unwrap_or(usize::MAX),
        max_connections: max_connections as usize,
    })
}

impl Budget {
    /// The ERRORLOG's account of it.
    pub fn describe(&self) -> String {
        let raised = match self.raised_from {
            Some(before) => format!("raised from {before} to {}", self.limit),
            None => format!("{}", self.limit),
        };
        format!(
            "Open file limit {raised}: {} user connections, {} descriptors for database files (closed least recently used first and reopened on demand), {RESERVED_FDS} kept for the server's own files.",
            self.max_connections, self.file_descriptors
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_limit_of_1024_keeps_room_for_both() {
        let b = plan(1024, None, 10_000).unwrap();
        assert_eq!((b.max_connections, b.file_descriptors), (480, 480));
        assert!(b.file_descriptors as u64 + b.max_connections as u64 + RESERVED_FDS <= 1024);
    }

    #[test]
    fn descriptors_that_connections_do_not_need_go_to_files() {
        let b = plan(20_000, None, 256).unwrap();
        assert_eq!((b.max_connections, b.file_descriptors), (256, 19_680));
        let b = plan(20_000, None, 10_000).unwrap();
        assert_eq!((b.max_connections, b.file_descriptors), (9_968, 9_968));
    }

    #[test]
    fn the_configured_bound_on_connections_wins_when_it_is_lower() {
        let b = plan(1 << 20, Some(1024), 10_000).unwrap();
        assert_eq!(b.max_connections, 10_000);
        assert!(b.describe().contains("raised from 1024 to 1048576"), "{}", b.describe());
    }

    #[test]
    fn too_few_descriptors_is_a_clear_refusal() {
        let e = plan(50, None, 10_000).unwrap_err();
        assert!(e.contains("at least 96"), "{e}");
    }
}
