//! The error catalog: every error number tessera raises, with its severity, its message
//! template and what it ends. One table (`messages.rs`), sorted by number, that every
//! [`SqlError`](crate::SqlError) is checked against when it is made; `sys.messages` shows it.
//!
//! Templates are written as SQL Server's `sys.messages` writes them: `%ls`, `%.*ls`,
//! `%d`, `%I64d`, `%u` and `%x` stand for an argument, `%%` for a percent sign. A message
//! made from a template has each placeholder replaced by text; [`matches`] checks that it
//! was.

pub mod messages;

pub use messages::MESSAGES;

use crate::SqlError;

/// What an error ends when `SET XACT_ABORT` is OFF (with it ON, every error at or above
/// severity 11 rolls the transaction back and ends the batch). Ordered: each ends what
/// the ones before it end too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Abort {
    /// Only the statement that raised it; the batch goes on with the next one.
    Statement,
    /// The batch; an open transaction stays open.
    Batch,
    /// The batch, and the transaction is rolled back (a deadlock victim, a conversion
    /// error); inside TRY the transaction is doomed instead (XACT_STATE() = -1).
    Transaction,
    /// The connection (severity 20 and above).
    Connection,
}

/// One row of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub number: i32,
    /// 0–10 informational, 11–16 user errors, 17–19 resources, 20–25 fatal.
    pub severity: u8,
    pub aborts: Abort,
    pub template: &'static str,
}

impl Message {
    /// This error, raised where its template has no placeholders: the call site names
    /// the error (`msg::COMMIT_WITHOUT_BEGIN.err()`), the catalog holds its number, its
    /// severity and its text.
    pub fn err(&self) -> SqlError {
        debug_assert_eq!(literal_pieces(self.template).len(), 1, "error {} takes arguments", self.number);
        SqlError::new(self.number, render(self.template, &[]))
    }

    /// This error as the storage layers raise it (`Error::Numbered`, which keeps the
    /// number when it reaches a client), its placeholders filled by `args`.
    pub fn engine(&self, args: &[&dyn std::fmt::Display]) -> crate::Error {
        debug_assert_eq!(literal_pieces(self.template).len(), args.len() + 1, "error {} arguments", self.number);
        crate::Error::Numbered { number: self.number, message: render(self.template, args) }
    }

    /// This error with its template's placeholders filled, in order, by `args`.
    pub fn with(&self, args: &[&dyn std::fmt::Display]) -> SqlError {
        debug_assert_eq!(
            literal_pieces(self.template).len(),
            args.len() + 1,
            "error {} takes {} argument(s)",
            self.number,
            literal_pieces(self.template).len() - 1
        );
        SqlError::new(self.number, render(self.template, args))
    }
}

/// `template` with each placeholder replaced by the next of `args` (SQL Server's
/// `(null)` when they run out) and `%%` by `%`.
fn render(template: &str, args: &[&dyn std::fmt::Display]) -> String {
    let pieces = literal_pieces(template);
    let mut out = String::with_capacity(template.len() + 16 * args.len());
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            match args.get(i - 1) {
                Some(a) => out.push_str(&a.to_string()),
                None => out.push_str("(null)"),
            }
        }
        out.push_str(piece);
    }
    out
}

/// The catalog entry for `number`, if tessera raises it.
pub fn lookup(number: i32) -> Option<&'static Message> {
    MESSAGES.binary_search_by_key(&number, |m| m.number).ok().map(|i| &MESSAGES[i])
}

/// True if `message` is `template` with each placeholder replaced by some text (possibly
/// empty).
pub fn matches(template: &str, message: &str) -> bool {
    let pieces = literal_pieces(template);
    let Some((first, rest)) = pieces.split_first() else { return true };
    let Some(mut remaining) = message.strip_prefix(first.as_str()) else { return false };
    let Some((last, middle)) = rest.split_last() else { return remaining.is_empty() };
    for piece in middle {
        match remaining.find(piece.as_str()) {
            Some(at) => remaining = &remaining[at + piece.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last.as_str())
}

/// The text between placeholders: one more piece than there are placeholders.
fn literal_pieces(template: &str) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            pieces.last_mut().expect("at least one piece").push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            pieces.last_mut().expect("at least one piece").push('%');
            continue;
        }
        // A placeholder: flags, width and precision, then a conversion letter
        // (`ls`, `d`, `I64d`, …).
        while let Some(&c) = chars.peek() {
            chars.next();
            if matches!(c, 'd' | 'i' | 'u' | 'x' | 'X' | 's' | 'S') {
                break;
            }
        }
        pieces.push(String::new());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_sorted_and_each_entry_is_sound() {
        for pair in MESSAGES.windows(2) {
            assert!(pair[0].number < pair[1].number, "{} then {}", pair[0].number, pair[1].number);
        }
        for m in MESSAGES {
            assert!(m.severity <= 25, "{}", m.number);
            assert_eq!(
                m.aborts == Abort::Connection,
                m.severity >= 20,
                "{}: severity {} aborts {:?}",
                m.number,
                m.severity,
                m.aborts
            );
            assert!(!m.template.is_empty(), "{}", m.number);
            // User-defined numbers (RAISERROR and THROW with their own text) have no row.
            assert!(m.number > 0 && m.number < 50000, "{}", m.number);
        }
    }

    #[test]
    fn templates_match_the_messages_made_from_them() {
        let t = "Incorrect syntax near '%.*ls'.";
        assert!(matches(t, "Incorrect syntax near 'FROM'."));
        assert!(matches(t, "Incorrect syntax near ''."));
        assert!(!matches(t, "Incorrect syntax near the keyword 'FROM'."));
        let t =
            "Cannot insert the value NULL into column '%.*ls', table '%.*ls'; column does not allow nulls. %ls fails.";
        assert!(matches(t, "Cannot insert the value NULL into column 'a', table 'db.dbo.t'; column does not allow nulls. INSERT fails."));
        assert!(!matches(t, "Cannot insert the value NULL into column 'a'."));
        assert!(matches("%d%% done", "50% done"));
        assert!(matches("%ls", "anything at all"));
        assert!(matches("Plain.", "Plain."));
        assert!(!matches("Plain.", "Plain. And more."));
    }

    #[test]
    fn lookup_finds_every_entry() {
        for m in MESSAGES {
            assert_eq!(lookup(m.number), Some(m));
        }
        assert_eq!(lookup(-1), None);
    }
}
