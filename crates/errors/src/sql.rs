//! Errors in SQL Server's shape: number, severity (class), state, message, line, procedure.

use std::fmt;

/// An error (severity ≥ 11) or an informational message (severity ≤ 10) as SQL Server
/// reports it. `line` is 0 until the executor fills in the line of the statement that
/// raised it.
#[derive(Clone, Debug, PartialEq)]
pub struct SqlError {
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

impl SqlError {
    /// An error of severity 16, state 1 — what most user errors are.
    pub fn new(number: i32, message: impl Into<String>) -> SqlError {
        SqlError {
            number,
            severity: 16,
            state: 1,
            message: message.into(),
            line: 0,
            procedure: None,
            preceding: Vec::new(),
        }
    }

    pub fn with_severity(mut self, severity: u8) -> SqlError {
        self.severity = severity;
        self
    }

    pub fn with_state(mut self, state: u8) -> SqlError {
        self.state = state;
        self
    }

    /// This error, reported after `first` (and what preceded it).
    pub fn after(mut self, first: SqlError) -> SqlError {
        let mut preceding = first.preceding.clone();
        preceding.push(SqlError { preceding: Vec::new(), ..first });
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
    fn from(e: crate::Error) -> SqlError {
        let number = e.number();
        let severity = match number {
            823 | 824 => 24,
            1205 => 13,
            3617 => 25,
            9002 | 1105 => 17,
            802 => 17,
            _ => 16,
        };
        SqlError { number, severity, state: 1, message: e.to_string(), line: 0, procedure: None, preceding: Vec::new() }
    }
}
