//! Errors in SQL Server's shape: number, severity (class), state, message, line, procedure.
//! Every error is made from its row in the [catalog](crate::catalog), which gives its
//! severity and what it ends.

use std::fmt;

use crate::catalog::{self, Abort};

/// An error (severity ≥ 11) or an informational message (severity ≤ 10) as SQL Server
/// reports it: its [`ErrorDetail`], boxed. Every evaluation step returns a
/// `SqlResult<Value>`, which the detail inline made 96 bytes to move where a value alone
/// takes 32; errors are rare, so they take the allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct SqlError(Box<ErrorDetail>);

/// What an error says. `line` is 0 until the executor fills in the line of the statement
/// that raised it.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorDetail {
    pub number: i32,
    pub severity: u8,
    pub state: u8,
    pub message: String,
    pub line: u32,
    pub procedure: Option<String>,
    /// Errors reported just before this one by the same statement, as SQL Server follows
    /// some errors with a summary ("Could not create constraint or index. See previous
    /// errors."); the summary is the error CATCH and @@ERROR see.
    pub preceding: Vec<SqlError>,
}

pub type SqlResult<T> = std::result::Result<T, SqlError>;

impl std::ops::Deref for SqlError {
    type Target = ErrorDetail;

    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for SqlError {
    fn deref_mut(&mut self) -> &mut ErrorDetail {
        &mut self.0
    }
}

impl SqlError {
    /// The detail, unboxed (to move its parts out).
    pub fn into_detail(self) -> ErrorDetail {
        *self.0
    }
}

impl From<ErrorDetail> for SqlError {
    fn from(detail: ErrorDetail) -> SqlError {
        SqlError(Box::new(detail))
    }
}

impl SqlError {
    /// Error `number`, state 1, with the severity its catalog row gives (16 for a
    /// user-defined number, 50000 and above). Callers that raise a number with another
    /// severity chain [`SqlError::with_severity`].
    ///
    /// In debug builds, panics if `number` (other than a user-defined one) has no row in the
    /// catalog or `message` cannot be made from the row's template: every error tessera
    /// raises is described in `catalog/messages.rs`.
    pub fn new(number: i32, message: impl Into<String>) -> SqlError {
        let message = message.into();
        let severity = catalog_severity(number, &message);
        ErrorDetail { number, severity, state: 1, message, line: 0, procedure: None, preceding: Vec::new() }.into()
    }

    /// An informational message (severity 0, state 1): "Changed database context to …",
    /// BACKUP's progress, PRINT. Not looked up in the catalog: PRINT's number is 0.
    pub fn informational(number: i32, message: impl Into<String>) -> SqlError {
        ErrorDetail {
            number,
            severity: 0,
            state: 1,
            message: message.into(),
            line: 0,
            procedure: None,
            preceding: Vec::new(),
        }
        .into()
    }

    pub fn with_severity(mut self, severity: u8) -> SqlError {
        self.severity = severity;
        self
    }

    pub fn with_state(mut self, state: u8) -> SqlError {
        self.state = state;
        self
    }

    /// What this error ends (with `SET XACT_ABORT` OFF): its catalog row's answer, the
    /// statement for a user-defined number, and the connection whenever the error's own
    /// severity is 20 or more.
    pub fn aborts(&self) -> Abort {
        if self.severity >= 20 {
            return Abort::Connection;
        }
        if is_user_defined(self.number) {
            return Abort::Statement;
        }
        catalog::lookup(self.number).map_or(Abort::Statement, |m| m.aborts)
    }

    /// This error, reported after `first` (and what preceded it).
    pub fn after(mut self, first: SqlError) -> SqlError {
        let mut preceding = first.preceding.clone();
        preceding.push(ErrorDetail { preceding: Vec::new(), ..*first.0 }.into());
        preceding.append(&mut self.preceding);
        self.preceding = preceding;
        self
    }

    /// Sets the line unless one is already known.
    pub fn at_line(mut self, line: u32) -> SqlError {
        if self.line == 0 {
            self.line = line;
        }
        for p in &mut self.preceding {
            if p.line == 0 {
                p.line = line;
            }
        }
        self
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Msg {}, Level {}, State {}, Line {}: {}",
            self.number, self.severity, self.state, self.line, self.message
        )
    }
}

impl std::error::Error for SqlError {}

impl From<crate::Error> for SqlError {
    /// The engine's error with its SQL Server number and the severity the catalog gives it
    /// (checked against the catalog in debug builds, as [`SqlError::new`] is).
    fn from(e: crate::Error) -> SqlError {
        let number = e.number();
        let message = e.to_string();
        let severity = catalog_severity(number, &message);
        ErrorDetail { number, severity, state: 1, message, line: 0, procedure: None, preceding: Vec::new() }.into()
    }
}

/// 50000 (RAISERROR and THROW with a message of their own) and the numbers above it are
/// the user's: they have no catalog row.
pub(crate) fn is_user_defined(number: i32) -> bool {
    number >= 50000
}

/// The severity the catalog gives `number`: 16 for a user-defined number. In debug builds,
/// panics if the number has no row or `message` does not fit the row's template.
fn catalog_severity(number: i32, message: &str) -> u8 {
    if is_user_defined(number) {
        return 16;
    }
    match catalog::lookup(number) {
        Some(m) => {
            if cfg!(debug_assertions) && !catalog::matches(m.template, message) {
                panic!(
                    "error {number}: the message {message:?} does not fit its catalog template {:?} \
                     (crates/errors/src/catalog/messages.rs)",
                    m.template
                );
            }
            m.severity
        }
        None => {
            if cfg!(debug_assertions) {
                panic!(
                    "error {number} is not in the error catalog (crates/errors/src/catalog/messages.rs); \
                     add a row for it. Message: {message:?}"
                );
            }
            16
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn new_takes_the_severity_from_the_catalog() {
        let syntax = SqlError::new(156, "Incorrect syntax near the keyword 'FROM'.");
        assert_eq!((syntax.severity, syntax.state), (15, 1));
        assert_eq!(SqlError::new(3617, "The query was cancelled.").severity, 25);
        assert_eq!(
            SqlError::new(8153, "Warning: Null value is eliminated by an aggregate or other SET operation.").severity,
            10
        );
        assert_eq!(SqlError::new(208, "Invalid object name 't'.").severity, 16);
        // User-defined numbers have no row: severity 16 unless RAISERROR says otherwise.
        let user = 50000;
        assert_eq!(SqlError::new(user, "anything").severity, 16);
        assert_eq!(SqlError::new(user + 1, "anything").severity, 16);
        assert_eq!(SqlError::new(156, "Incorrect syntax near the keyword 'AS'.").with_severity(16).severity, 16);
    }

    #[test]
    fn aborts_comes_from_the_catalog() {
        assert_eq!(SqlError::new(207, "Invalid column name 'c'.").aborts(), Abort::Statement);
        assert_eq!(SqlError::new(208, "Invalid object name 't'.").aborts(), Abort::Batch);
        assert_eq!(
            SqlError::new(8169, "Conversion failed when converting from a character string to uniqueidentifier.")
                .aborts(),
            Abort::Transaction
        );
        assert_eq!(SqlError::from(Error::Deadlock).aborts(), Abort::Transaction);
        assert_eq!(SqlError::new(3617, "The query was cancelled.").aborts(), Abort::Connection);
        let user = 50000;
        assert_eq!(SqlError::new(user, "user text").aborts(), Abort::Statement);
        // The error's own severity decides when it is 20 or more, whatever the catalog says.
        assert_eq!(SqlError::new(user, "user text").with_severity(21).aborts(), Abort::Connection);
        assert_eq!(SqlError::new(207, "Invalid column name 'c'.").with_severity(20).aborts(), Abort::Connection);
    }

    /// Every engine error converts with its catalog severity, and (in debug builds) its
    /// message fits its template.
    #[test]
    fn engine_errors_convert_through_the_catalog() {
        let io = std::io::Error::from_raw_os_error(libc::EIO);
        let cases: Vec<(Error, i32, u8)> = vec![
            (Error::io("read", "/d/x.mdf", 8192, io), 823, 24),
            (
                Error::Corrupt {
                    database: "d".into(),
                    path: "/d/x.mdf".into(),
                    page: 7,
                    detail: "bad checksum".into(),
                },
                824,
                24,
            ),
            (Error::DuplicateKey { object: "tree 3".into(), key: "[01]".into() }, 2627, 14),
            (Error::Deadlock, 1205, 13),
            (Error::LockTimeout, 1222, 16),
            (Error::Cancelled, 3617, 25),
            (Error::UpdateConflict { database: "d".into(), table: "dbo.t".into() }, 3960, 16),
            (Error::LogUnavailable { database: "d".into() }, 9001, 21),
            (Error::NewerFormat { database: "d".into(), version: 2, supported: 1 }, 948, 20),
            (Error::LogFull { database: "d".into(), reason: "CHECKPOINT".into() }, 9002, 17),
            (Error::DataFull { database: "d".into() }, 1105, 17),
            (Error::RowTooLarge { size: 8061, max: 8060 }, 511, 16),
            (Error::KeyTooLarge { size: 903, max: 900 }, 1946, 16),
            (Error::PoolExhausted, 802, 17),
            (Error::NotFound { kind: "database", name: "d".into() }, 911, 16),
            (Error::NotFound { kind: "object", name: "t".into() }, 208, 16),
            (Error::AlreadyExists { kind: "database", name: "d".into() }, 1801, 16),
            (Error::AlreadyExists { kind: "object", name: "t".into() }, 2714, 16),
            (Error::Invalid("'' is not a valid database name".into()), 50000, 16),
            (
                Error::Numbered {
                    number: 3101,
                    message: "Exclusive access could not be obtained because the database is in use.".into(),
                },
                3101,
                16,
            ),
        ];
        for (e, number, severity) in cases {
            let e = SqlError::from(e);
            assert_eq!((e.number, e.severity), (number, severity), "{e}");
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "is not in the error catalog")]
    fn a_number_missing_from_the_catalog_panics_in_debug_builds() {
        let number = 1;
        let _ = SqlError::new(number, "No such error.");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "does not fit its catalog template")]
    fn a_message_that_does_not_fit_its_template_panics_in_debug_builds() {
        let number = 207;
        let _ = SqlError::new(number, "Invalid column name c.");
    }
}
