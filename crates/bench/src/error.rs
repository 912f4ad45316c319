//! The one error type of the benchmark harness.

use std::fmt;

/// An error from a benchmark: a failed peer, a failed tessera side, an I/O problem, a chart that
/// could not be drawn. It carries a message only; the harness reports it and moves on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchError {
    message: String,
}

impl BenchError {
    pub fn new(message: impl Into<String>) -> Self {
        BenchError { message: message.into() }
    }

    /// The same error with `context` in front of its message.
    pub fn context(self, context: impl fmt::Display) -> Self {
        BenchError { message: format!("{context}: {}", self.message) }
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BenchError {}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::new(format!("I/O error: {e}"))
    }
}

impl From<rusqlite::Error> for BenchError {
    fn from(e: rusqlite::Error) -> Self {
        BenchError::new(format!("SQLite: {e}"))
    }
}

impl From<heed::Error> for BenchError {
    fn from(e: heed::Error) -> Self {
        BenchError::new(format!("LMDB: {e}"))
    }
}

impl From<serde_json::Error> for BenchError {
    fn from(e: serde_json::Error) -> Self {
        BenchError::new(format!("JSON: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, BenchError>;
