use std::fmt;
use std::path::PathBuf;

pub type Result<T> = std::result::Result<T, Error>;

/// Every failure the storage layers can report. Each variant maps to the SQL Server
/// error number a client would see for the same condition (see [`Error::number`]).
#[derive(Debug)]
pub enum Error {
    /// The operating system failed a read, write or sync (SQL Server 823).
    Io { op: &'static str, path: PathBuf, offset: u64, source: std::io::Error },
    /// A page read from disk failed its checksum or identity check (SQL Server 824).
    Corrupt { database: String, path: PathBuf, page: u32, detail: String },
    /// A unique key already exists (SQL Server 2627).
    DuplicateKey { object: String, key: String },
    /// This transaction was chosen as the deadlock victim (SQL Server 1205).
    Deadlock,
    /// A lock could not be granted within the lock timeout (SQL Server 1222).
    LockTimeout,
    /// A SNAPSHOT transaction was to change a row another transaction changed and
    /// committed after its snapshot began (SQL Server 3960).
    UpdateConflict { database: String, table: String },
    /// The request was cancelled while it waited (an attention, a shutdown; SQL Server 3617).
    Cancelled,
    /// An earlier write or sync of the database's log failed: nothing more can be logged or
    /// acknowledged until the database is opened again (SQL Server 9001).
    LogUnavailable { database: String },
    /// A database file (data or log) of a newer format than this build reads: refused
    /// before anything is written to it (SQL Server 948).
    NewerFormat { database: String, version: u32, supported: u32 },
    /// The transaction log is full and cannot grow (SQL Server 9002).
    LogFull { database: String, reason: String },
    /// The data file cannot grow (SQL Server 1105).
    DataFull { database: String },
    /// A row is larger than a page can hold (SQL Server 511).
    RowTooLarge { size: usize, max: usize },
    /// An index key is larger than allowed (SQL Server 1946).
    KeyTooLarge { size: usize, max: usize },
    /// The buffer pool has no frame that can be evicted (SQL Server 802).
    PoolExhausted,
    /// A named object does not exist (SQL Server 208 for objects, 911 for databases).
    NotFound { kind: &'static str, name: String },
    /// A named object already exists (SQL Server 1801 for databases, 2714 otherwise).
    AlreadyExists { kind: &'static str, name: String },
    /// The request is not valid in the current state.
    Invalid(String),
    /// A condition with its own SQL Server error number and message (backup and restore,
    /// database states).
    Numbered { number: i32, message: String },
}

impl Error {
    /// The SQL Server error number for this condition.
    pub fn number(&self) -> i32 {
        match self {
            Error::Io { .. } => 823,
            Error::Corrupt { .. } => 824,
            Error::DuplicateKey { .. } => 2627,
            Error::Deadlock => 1205,
            Error::LockTimeout => 1222,
            Error::UpdateConflict { .. } => 3960,
            Error::Cancelled => 3617,
            Error::LogUnavailable { .. } => 9001,
            Error::NewerFormat { .. } => 948,
            Error::LogFull { .. } => 9002,
            Error::DataFull { .. } => 1105,
            Error::RowTooLarge { .. } => 511,
            Error::KeyTooLarge { .. } => 1946,
            Error::PoolExhausted => 802,
            Error::NotFound { kind: "database", .. } => 911,
            Error::NotFound { .. } => 208,
            Error::AlreadyExists { kind: "database", .. } => 1801,
            Error::AlreadyExists { .. } => 2714,
            Error::Invalid(_) => 50000,
            Error::Numbered { number, .. } => *number,
        }
    }

    /// Builds an [`Error::Io`] from an OS error.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, offset: u64, source: std::io::Error) -> Self {
        Error::Io { op, path: path.into(), offset, source }
    }

    /// True when the disk (or a quota) is full.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC) || source.raw_os_error() == Some(libc::EDQUOT))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, offset, source } => write!(
                f,
                "The operating system returned error {source} to tessera during a {op} at offset {offset:#018x} in file '{}'.",
                path.display()
            ),
            Error::Corrupt { database, path, page, detail } => write!(
                f,
                "tessera detected a logical consistency-based I/O error: {detail}. It occurred during a read of page (1:{page}) in database '{database}' at offset {:#018x} in file '{}'.",
                u64::from(*page) * 8192,
                path.display()
            ),
            Error::DuplicateKey { object, key } => write!(
                f,
                "Violation of PRIMARY KEY constraint. Cannot insert duplicate key in object '{object}'. The duplicate key value is ({key})."
            ),
            Error::Deadlock => write!(
                f,
                "Transaction was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction."
            ),
            Error::LockTimeout => write!(f, "Lock request time out period exceeded."),
            Error::UpdateConflict { database, table } => write!(
                f,
                "Snapshot isolation transaction aborted due to update conflict. You cannot use snapshot isolation to access table '{table}' directly or indirectly in database '{database}' to update, delete, or insert the row that has been modified or deleted by another transaction. Retry the transaction or change the isolation level for the update/delete statement."
            ),
            Error::Cancelled => write!(f, "The query was cancelled."),
            Error::LogUnavailable { database } => write!(
                f,
                "The log for database '{database}' is not available. Check the ERRORLOG for related error messages. Resolve any errors and restart the server."
            ),
            Error::NewerFormat { database, version, supported } => write!(
                f,
                "The database '{database}' cannot be opened because it is version {version}. This server supports version {supported} and earlier. A downgrade path is not supported."
            ),
            Error::LogFull { database, reason } => write!(
                f,
                "The transaction log for database '{database}' is full due to '{reason}'."
            ),
            Error::DataFull { database } => write!(
                f,
                "Could not allocate space for object in database '{database}' because the 'PRIMARY' filegroup is full."
            ),
            Error::RowTooLarge { size, max } => write!(
                f,
                "Cannot create a row of size {size} which is greater than the allowable maximum row size of {max}."
            ),
            Error::KeyTooLarge { size, max } => write!(
                f,
                "Operation failed. The index entry of length {size} bytes exceeds the maximum length of {max} bytes."
            ),
            Error::PoolExhausted => write!(f, "There is insufficient memory available in the buffer pool."),
            Error::NotFound { kind: "database", name } => write!(
                f,
                "Database '{name}' does not exist. Make sure that the name is entered correctly."
            ),
            Error::NotFound { kind, name } => write!(f, "Invalid {kind} name '{name}'."),
            Error::AlreadyExists { kind: "database", name } => write!(
                f,
                "Database '{name}' already exists. Choose a different database name."
            ),
            Error::AlreadyExists { kind, name } => write!(f, "There is already a {kind} named '{name}' in the database."),
            Error::Invalid(msg) | Error::Numbered { message: msg, .. } => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
