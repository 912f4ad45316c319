//! File descriptors. At start the soft `RLIMIT_NOFILE` is raised to the hard limit, and
//! the descriptors are shared out: connections (a socket each) get at most half of what
//! the server's own files leave, open databases (a data file and a log file each) the
//! rest. The engine closes the least recently used idle database before it would keep
//! more open than its share, and the listener refuses connections past theirs, so
//! neither can take the descriptors the other needs, and an `accept` never fails for
//! want of one.

/// Descriptors an open database holds: its data file and its log file.
pub const FDS_PER_OPEN_DATABASE: u64 = 2;

/// Descriptors kept for the server's own files: the listener, the ERRORLOG, the reactor,
/// I/O rings, the registry and files a statement opens for a moment (backups, restores,
/// certificates).
pub const RESERVED_FDS: u64 = 64;

/// The fewest descriptors a server starts with: room for master, tempdb, msdb and a few
/// user databases, and a few connections.
pub const MIN_FDS: u64 = RESERVED_FDS + 32;

/// The process's descriptor limit after start, and how it is shared out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The soft limit now.
    pub limit: u64,
    /// The soft limit before it was raised (None: it already was the hard limit).
    pub raised_from: Option<u64>,
    pub max_open_databases: usize,
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

/// Shares `limit` descriptors out under the configured bounds; an error when there are
/// too few to start.
pub fn plan(limit: u64, raised_from: Option<u64>, databases: usize, connections: usize) -> Result<Budget, String> {
    if limit < MIN_FDS {
        return Err(format!(
            "the open file limit is {limit}; the server needs at least {MIN_FDS} (raise the hard limit: ulimit -Hn)"
        ));
    }
    let usable = limit - RESERVED_FDS;
    // Connections may take up to half; the databases get what they leave.
    let connections_share = (connections as u64).min(usable / 2);
    let db_share = (usable - connections_share) / FDS_PER_OPEN_DATABASE;
    let max_open_databases = (databases as u64).min(db_share).max(1);
    let max_connections = (connections as u64).min(usable - max_open_databases * FDS_PER_OPEN_DATABASE).max(1);
    Ok(Budget {
        limit,
        raised_from,
        max_open_databases: max_open_databases as usize,
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
            "Open file limit {raised}: at most {} databases open at once ({FDS_PER_OPEN_DATABASE} descriptors each) and {} user connections; {RESERVED_FDS} kept for the server's own files.",
            self.max_open_databases, self.max_connections
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_limit_of_1024_keeps_room_for_both() {
        let b = plan(1024, None, 4096, 10_000).unwrap();
        assert_eq!(b.max_open_databases, 240);
        assert_eq!(b.max_connections, 480);
        assert!(b.max_open_databases as u64 * FDS_PER_OPEN_DATABASE + b.max_connections as u64 + RESERVED_FDS <= 1024);
    }

    #[test]
    fn descriptors_that_connections_do_not_need_go_to_databases() {
        let b = plan(20_000, None, 20_000, 256).unwrap();
        assert_eq!((b.max_open_databases, b.max_connections), (9_840, 256));
        let b = plan(20_000, None, 20_000, 10_000).unwrap();
        assert_eq!((b.max_open_databases, b.max_connections), (4_984, 9_968));
    }

    #[test]
    fn configured_bounds_win_when_they_are_lower() {
        let b = plan(1 << 20, Some(1024), 4096, 10_000).unwrap();
        assert_eq!((b.max_open_databases, b.max_connections), (4096, 10_000));
        assert!(b.describe().contains("raised from 1024 to 1048576"), "{}", b.describe());
    }

    #[test]
    fn too_few_descriptors_is_a_clear_refusal() {
        let e = plan(50, None, 4096, 10_000).unwrap_err();
        assert!(e.contains("at least 96"), "{e}");
    }
}
