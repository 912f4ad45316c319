//! sqlcmd's batch splitting: a script is cut into batches at lines holding only `GO`.

/// One batch of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptBatch {
    /// The batch's text, lines as written (without the `GO` line).
    pub text: String,
    /// How many times to run it (`GO 5` → 5).
    pub repeat: u64,
    /// 1-based line of the script where the batch's text starts.
    pub first_line: u32,
}

/// If `line` is a batch separator (`GO`, `go 5`, ` GO -- done`), the repeat count.
///
/// A count of 0 or one that does not fit is not a separator.
pub fn parse_go_line(line: &str) -> Option<u64> {
    let line = line.trim();
    let rest = line.get(..2).filter(|go| go.eq_ignore_ascii_case("go")).map(|_| &line[2..])?;
    let rest = strip_comment(rest).trim_end();
    if rest.is_empty() {
        return Some(1);
    }
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let count = rest.trim_start();
    if !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    count.parse::<u64>().ok().filter(|&n| n > 0)
}

/// `text` without a trailing `-- comment`.
fn strip_comment(text: &str) -> &str {
    text.find("--").map_or(text, |i| &text[..i])
}

/// Splits a script into batches at `GO` lines (outside block comments).
/// Batches holding only whitespace and comments are dropped.
pub fn split_batches(script: &str) -> Vec<ScriptBatch> {
    let mut batches = Vec::new();
    let mut state = ScanState::Code;
    let mut text = String::new();
    let mut first_line = 1u32;
    let mut line_number = 0u32;
    for line in script.split_inclusive('\n') {
        line_number += 1;
        if state == ScanState::Code {
            if let Some(repeat) = parse_go_line(line) {
                push_batch(&mut batches, std::mem::take(&mut text), repeat, first_line);
                first_line = line_number + 1;
                continue;
            }
        }
        // sqlcmd looks for GO line by line: a quote left open at the end of a line does
        // not hide a later GO (the batch then fails alone with error 105), but block
        // comments do.
        state = match scan_line(line, state) {
            ScanState::Quoted(_) => ScanState::Code,
            other => other,
        };
        text.push_str(line);
    }
    push_batch(&mut batches, text, 1, first_line);
    batches
}

fn push_batch(batches: &mut Vec<ScriptBatch>, mut text: String, repeat: u64, first_line: u32) {
    // The line break before the GO line belongs to the separator, not to the batch.
    while text.ends_with('\n') || text.ends_with('\r') {
        text.pop();
    }
    if has_code(&text) {
        batches.push(ScriptBatch { text, repeat, first_line });
    }
}

/// Whether `text` holds anything besides whitespace and comments.
fn has_code(text: &str) -> bool {
    match crate::lexer::tokenize(text) {
        Ok(tokens) => tokens.len() > 1,
        Err(_) => true,
    }
}

/// Where the scanner is at the end of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanState {
    Code,
    /// Inside a quoted string or identifier closed by this character.
    Quoted(char),
    /// Inside block comments nested this deep.
    Comment(u32),
}

/// The state after scanning `line` from `state`.
fn scan_line(line: &str, mut state: ScanState) -> ScanState {
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        state = match state {
            ScanState::Code => match c {
                '-' if chars.peek() == Some(&'-') => return ScanState::Code,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    ScanState::Comment(1)
                }
                '\'' | '"' => ScanState::Quoted(c),
                '[' => ScanState::Quoted(']'),
                _ => ScanState::Code,
            },
            // A doubled closing quote reads as closing then reopening: same result.
            ScanState::Quoted(close) if c == close => ScanState::Code,
            ScanState::Quoted(_) => state,
            ScanState::Comment(depth) => match c {
                '*' if chars.peek() == Some(&'/') => {
                    chars.next();
                    if depth == 1 {
                        ScanState::Code
                    } else {
                        ScanState::Comment(depth - 1)
                    }
                }
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    ScanState::Comment(depth + 1)
                }
                _ => state,
            },
        };
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_lines() {
        assert_eq!(parse_go_line("GO"), Some(1));
        assert_eq!(parse_go_line("  go  \r\n"), Some(1));
        assert_eq!(parse_go_line("Go 5"), Some(5));
        assert_eq!(parse_go_line("GO -- done"), Some(1));
        assert_eq!(parse_go_line("GO 3 -- thrice"), Some(3));
        assert_eq!(parse_go_line("GO--x"), Some(1));
        assert_eq!(parse_go_line("GOTO x"), None);
        assert_eq!(parse_go_line("GO x"), None);
        assert_eq!(parse_go_line("GO 0"), None);
        assert_eq!(parse_go_line("GO;"), None);
        assert_eq!(parse_go_line("SELECT 1 GO"), None);
        assert_eq!(parse_go_line(""), None);
        assert_eq!(parse_go_line("é"), None);
    }

    #[test]
    fn splits_at_go_lines() {
        let script = "SELECT 1\nGO\n\nSELECT 2\nSELECT 3\ngo 2\n-- only a comment\nGO\nSELECT 4";
        let batches = split_batches(script);
        assert_eq!(batches.len(), 3);
        assert_eq!(batches[0], ScriptBatch { text: "SELECT 1".into(), repeat: 1, first_line: 1 });
        assert_eq!(batches[1], ScriptBatch { text: "\nSELECT 2\nSELECT 3".into(), repeat: 2, first_line: 3 });
        assert_eq!(batches[2], ScriptBatch { text: "SELECT 4".into(), repeat: 1, first_line: 9 });
    }

    #[test]
    fn go_inside_comments_is_text_but_an_open_quote_does_not_hide_it() {
        let script = "/* x\nGO\n/* nested */\nGO\n*/ SELECT 1\nGO\nSELECT 'a\nGO\nSELECT 5";
        let batches = split_batches(script);
        assert_eq!(batches.len(), 3);
        assert!(batches[0].text.ends_with("SELECT 1"));
        assert_eq!(batches[1].text, "SELECT 'a");
        assert_eq!(batches[2].first_line, 9);
    }

    #[test]
    fn comment_markers_in_strings_do_not_count() {
        let batches = split_batches("SELECT '/*'\nGO\nSELECT '--'\nGO\n");
        assert_eq!(batches.len(), 2);
    }

    #[test]
    fn empty_script() {
        assert!(split_batches("").is_empty());
        assert!(split_batches("GO\n  \nGO\n/* */").is_empty());
    }
}
