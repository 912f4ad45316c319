//! The ERRORLOG's account of databases opened and closed, at a rate a person can read
//! with thousands of databases coming and going: each minute the first
//! [`LINES_PER_MINUTE`] openings and closings get a line each (SQL Server's "Starting up
//! database 'x'." and a closing line), and the rest of that minute are counted and told
//! in one line when the next minute's first event comes.

use std::time::{Duration, Instant};

use tessera_database::DatabaseEvent;

/// Events written one line each per minute.
pub const LINES_PER_MINUTE: u32 = 20;
const WINDOW: Duration = Duration::from_secs(60);

/// Counts a minute's events and decides which get a line.
#[derive(Debug)]
pub struct OpenCloseLog {
    window_start: Instant,
    written: u32,
    unlisted_opened: u64,
    unlisted_closed: u64,
}

impl Default for OpenCloseLog {
    fn default() -> Self {
        OpenCloseLog { window_start: Instant::now(), written: 0, unlisted_opened: 0, unlisted_closed: 0 }
    }
}

impl OpenCloseLog {
    /// The lines `event` at `now` adds to the ERRORLOG (none, one, or a summary of the
    /// last minute's unlisted events and then one).
    pub fn lines(&mut self, event: DatabaseEvent<'_>, now: Instant) -> Vec<String> {
        let mut lines = Vec::new();
        if now.duration_since(self.window_start) >= WINDOW {
            if self.unlisted_opened + self.unlisted_closed > 0 {
                lines.push(format!(
                    "{} more databases were opened and {} more closed in the minute before (not listed).",
                    self.unlisted_opened, self.unlisted_closed
                ));
            }
            *self = OpenCloseLog { window_start: now, ..OpenCloseLog::default() };
        }
        if self.written < LINES_PER_MINUTE {
            self.written += 1;
            lines.push(match event {
                DatabaseEvent::Opened(name) => format!("Starting up database '{name}'."),
                DatabaseEvent::Closed(name) => format!("Database '{name}' was closed (idle or over the open limit)."),
            });
        } else {
            match event {
                DatabaseEvent::Opened(_) => self.unlisted_opened += 1,
                DatabaseEvent::Closed(_) => self.unlisted_closed += 1,
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storm_of_openings_is_a_few_lines_a_minute() {
        let mut log = OpenCloseLog::default();
        let start = log.window_start;
        let mut lines = Vec::new();
        for i in 0..1000 {
            let name = format!("tenant{i}");
            lines.extend(log.lines(DatabaseEvent::Opened(&name), start + Duration::from_millis(i)));
            lines.extend(log.lines(DatabaseEvent::Closed(&name), start + Duration::from_millis(i)));
        }
        assert_eq!(lines.len(), LINES_PER_MINUTE as usize);
        assert_eq!(lines[0], "Starting up database 'tenant0'.");
        let next = log.lines(DatabaseEvent::Opened("late"), start + WINDOW);
        assert_eq!(
            next,
            [
                "990 more databases were opened and 990 more closed in the minute before (not listed).".to_string(),
                "Starting up database 'late'.".to_string()
            ]
        );
    }
}
