//! Every error raised in the source has a catalog row that describes it.
//!
//! Reads every `.rs` file under the workspace's `crates/` and finds each call of
//! `SqlError::new` whose first argument is an integer literal. The number must have a row
//! in the catalog (user-defined numbers, 50000 and above, have none). When the message is a
//! string literal, the literal must fit the row's template; when it is `format!` with a
//! literal format string, the format string with each `{…}` replaced by a wildcard must.
//! So a typo'd number, a new error without a row, or a message changed without its row
//! fails here, in any crate, without running the code that raises it.

use std::fs;
use std::path::{Path, PathBuf};

use tessera_errors::catalog;

/// The message argument of one call, as far as the source shows it.
#[derive(Debug)]
enum Text {
    /// A string literal (unescaped).
    Literal(String),
    /// `format!("…", …)`: the format string (unescaped, `{{`/`}}` not yet undone).
    Format(String),
    /// Anything else: a variable, a literal with a method applied, …
    Other,
}

#[derive(Debug)]
struct Call {
    line: usize,
    number: i32,
    text: Text,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read a source directory").map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target" || n.to_string_lossy().starts_with('.')) {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn skip_whitespace(src: &str, mut at: usize) -> usize {
    let bytes = src.as_bytes();
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if src[at..].starts_with("//") {
            at += src[at..].find('\n').unwrap_or(src.len() - at);
        } else {
            return at;
        }
    }
}

/// The string literal starting at `at` (`"…"`, `r"…"` or `r#"…"#`), unescaped, and the
/// offset just past it.
fn string_literal(src: &str, at: usize) -> Option<(String, usize)> {
    let rest = &src[at..];
    if let Some(raw) = rest.strip_prefix('r') {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let body = raw[hashes..].strip_prefix('"')?;
        let end = body.find(&format!("\"{}", "#".repeat(hashes)))?;
        return Some((body[..end].to_string(), at + 1 + hashes + 1 + end + 1 + hashes));
    }
    let body = rest.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, at + 1 + i + 1)),
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '\\' | '"' | '\'' => out.push(e),
                    'x' => {
                        let hex: String = [chars.next()?.1, chars.next()?.1].iter().collect();
                        out.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
                    }
                    'u' => {
                        let mut hex = String::new();
                        for (_, h) in chars.by_ref() {
                            match h {
                                '{' => {}
                                '}' => break,
                                h => hex.push(h),
                            }
                        }
                        out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    // A line continuation: the newline and the next line's indentation go.
                    '\n' | '\r' => {
                        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                            chars.next();
                        }
                    }
                    _ => return None,
                }
            }
            c => out.push(c),
        }
    }
    None
}

/// Every `SqlError::new(<integer literal>, …)` and `SqlError::informational(<integer
/// literal>, …)` call in `src`, in source order.
fn calls(src: &str) -> Vec<Call> {
    let mut found = Vec::new();
    let mut starts: Vec<(usize, usize)> = ["SqlError::new(", "SqlError::informational("]
        .iter()
        .flat_map(|call| src.match_indices(call).map(|(at, _)| (at, at + call.len())))
        .collect();
    starts.sort_unstable();
    for (start, args) in starts {
        let mut at = skip_whitespace(src, args);
        let digits: String = src[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '_').collect();
        if digits.is_empty() {
            continue;
        }
        at = skip_whitespace(src, at + digits.len());
        if !src[at..].starts_with(',') {
            continue;
        }
        let number: i32 = digits.replace('_', "").parse().expect("an error number fits an i32");
        let line = src[..start].matches('\n').count() + 1;
        at = skip_whitespace(src, at + 1);
        let text = if let Some((literal, end)) = string_literal(src, at) {
            // A literal changed by a method call (`.replace(…)`) is not the message itself.
            match src[skip_whitespace(src, end)..].chars().next() {
                Some(')' | ',') => Text::Literal(literal),
                _ => Text::Other,
            }
        } else if src[at..].starts_with("format!(") {
            let at = skip_whitespace(src, at + "format!(".len());
            match string_literal(src, at) {
                Some((format, _)) => Text::Format(format),
                None => Text::Other,
            }
        } else {
            Text::Other
        };
        found.push(Call { line, number, text });
    }
    found
}

/// Every error number written as a literal of 3 to 5 digits in a struct field
/// (`BackupError { number: 3102, … }`, `Notice { number: 3014, … }`) or as the first
/// argument of an `err(…)` helper (`err(3201, text)`), as `(line, number, form)`: the
/// shapes a crate's own error type takes when it is built by number rather than from a
/// catalog row. `number:` and `err(` must start a word (not `sequence_number:` or
/// `map_err(`); the literal must end there (not `100.0`, not `1_000_000`).
fn numbers_written(src: &str) -> Vec<(usize, i32, &'static str)> {
    let mut found = Vec::new();
    for form in ["number:", "err("] {
        for (start, _) in src.match_indices(form) {
            let word_start = src[..start].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if !word_start {
                continue;
            }
            let at = skip_whitespace(src, start + form.len());
            let digits: String = src[at..].chars().take_while(char::is_ascii_digit).collect();
            let ends =
                src[at + digits.len()..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
            if !(3..=5).contains(&digits.len()) || !ends {
                continue;
            }
            if form == "err(" && !src[skip_whitespace(src, at + digits.len())..].starts_with(',') {
                continue;
            }
            let line = src[..start].matches('\n').count() + 1;
            found.push((start, line, digits.parse().expect("at most 5 digits"), form));
        }
    }
    found.sort_unstable();
    found.into_iter().map(|(_, line, number, form)| (line, number, form)).collect()
}

/// A format string's text with each `{…}` argument replaced by `X` (which a template's
/// placeholder matches) and `{{`/`}}` undone.
fn format_sample(format: &str) -> String {
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                out.push('X');
            }
            c => out.push(c),
        }
    }
    out
}

#[test]
fn every_error_raised_in_the_source_has_a_catalog_row_that_fits() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    let mut with_text = 0;
    let mut problems = Vec::new();
    for file in &files {
        let src = fs::read_to_string(file).expect("read a source file");
        let shown = file.strip_prefix(&crates).unwrap_or(file).display().to_string();
        for call in calls(&src) {
            let sample = match &call.text {
                Text::Literal(s) => Some(s.clone()),
                Text::Format(f) => Some(format_sample(f)),
                Text::Other => None,
            };
            with_text += usize::from(sample.is_some());
            // PRINT's messages are number 0; 50000 and above are user-defined.
            if call.number == 0 || call.number >= 50000 {
                continue;
            }
            let Some(row) = catalog::lookup(call.number) else {
                problems.push(format!("crates/{shown}:{}: error {} has no catalog row", call.line, call.number));
                continue;
            };
            if let Some(sample) = sample {
                if !catalog::matches(row.template, &sample) {
                    problems.push(format!(
                        "crates/{shown}:{}: error {}: {sample:?} does not fit the template {:?}",
                        call.line, call.number, row.template
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
    // A scanner that stopped finding calls would pass everything above. The code raises its
    // errors by name now; the tests still build the errors they expect by number (27 calls
    // with a literal message when this floor was set).
    assert!(with_text >= 20, "only {with_text} calls with a literal message found under {}", crates.display());
}

/// No site outside the catalog raises an error by its number and text rather than by its
/// name (`msg::NAME.err()` / `.with(&[…])`), in the code that is not a test's: the catalog's
/// names are the way to raise an error (issue 32). That covers `SqlError::new(<literal>, …)`,
/// `Error::Numbered { … }`, and a crate's own error or message types built the same way
/// ([`numbers_written`]: `number: <literal>`, `err(<literal>, …)`). A number that comes from
/// data (`SqlError::new(e.number, …)`) is not a literal and is not counted.
#[test]
fn errors_are_raised_by_name_not_by_number() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("crates/");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    let mut sites = Vec::new();
    for file in files.iter().filter(|f| {
        let shown = f.to_string_lossy();
        !shown.contains("/tests/") && !shown.ends_with("/tests.rs") && !shown.contains("/crates/errors/")
    }) {
        let src = fs::read_to_string(file).expect("read a source file");
        // A file's unit tests build the errors they expect as they like.
        // (`mod tests;` only declares a file of its own, which the filter above leaves out.)
        let code = src.find("#[cfg(test)]\nmod tests {").map_or(&src[..], |at| &src[..at]);
        for call in calls(code).into_iter().filter(|c| c.number > 0 && c.number < 50000) {
            sites.push(format!("{}:{} ({})", file.display(), call.line, call.number));
        }
        // The storage layers raise theirs as `msg::NAME.engine(&[…])`.
        for (at, _) in code.match_indices("Error::Numbered {") {
            sites.push(format!("{}:{} (Error::Numbered)", file.display(), code[..at].matches('\n').count() + 1));
        }
        // A crate's own error and message types (`BackupError`, `Notice`, …) take theirs from
        // a catalog row too (`msg::NAME.with(&[…]).into()`).
        for (line, number, form) in numbers_written(code).into_iter().filter(|&(_, n, _)| n < 50000) {
            let written = if form == "err(" { format!("err({number}, …)") } else { format!("number: {number}") };
            sites.push(format!("{}:{line} ({written})", file.display()));
        }
    }
    assert!(
        sites.is_empty(),
        "{} site(s) raise an error by number; name it from tessera_errors::msg instead:\n{}",
        sites.len(),
        sites.join("\n")
    );
}

#[test]
fn the_scanner_reads_calls_as_written() {
    let src = r#"
        let a = SqlError::new(207, format!("Invalid column name '{name}'."));
        let b = SqlError::new(
            102,
            "Incorrect syntax near 'x'.",
        )
        .with_severity(15);
        let c = SqlError::new(2742, "SET DATEFIRST 0 is out of range.".replace('0', &n.to_string()));
        let d = SqlError::new(n, message);
        let e = SqlError::new(191, "Some part of your SQL statement is nested too deeply. \
                                    Rewrite the query or break it up into smaller queries.");
        let f = SqlError::new(8179, format!("Could not find prepared statement with handle {{{handle}}}."));
        let g = SqlError::informational(5701, format!("Changed database context to '{db}'."));
    "#;
    let found = calls(src);
    assert_eq!(found.len(), 6, "{found:?}");
    assert!(matches!(&found[5], Call { number: 5701, text: Text::Format(_), .. }));
    assert!(
        matches!(&found[0], Call { line: 2, number: 207, text: Text::Format(f) } if f == "Invalid column name '{name}'.")
    );
    assert!(
        matches!(&found[1], Call { line: 3, number: 102, text: Text::Literal(s) } if s == "Incorrect syntax near 'x'.")
    );
    assert!(matches!(&found[2], Call { number: 2742, text: Text::Other, .. }));
    assert!(
        matches!(&found[3], Call { number: 191, text: Text::Literal(s), .. } if s == "Some part of your SQL statement is nested too deeply. Rewrite the query or break it up into smaller queries.")
    );
    assert!(
        matches!(&found[4], Call { number: 8179, text: Text::Format(f), .. } if format_sample(f) == "Could not find prepared statement with handle {X}.")
    );
    assert!(catalog::matches(catalog::lookup(207).unwrap().template, &format_sample("Invalid column name '{name}'.")));
    assert!(!catalog::matches(catalog::lookup(207).unwrap().template, "Invalid column name {name}."));
}

#[test]
fn the_scanner_reads_numbers_written_as_fields_and_err_calls() {
    let src = r#"
        let a = BackupError { number: 3102, message: text };
        notify(Notice {
            number:
                4035,
            text,
        });
        return Err(err(
            3250,
            format!("The value '{mts}' is not within range."),
        ));
        let b = err(701, "There is insufficient system memory.");
        let c = Refusal { number: 18456, state: 8 };
        let d = BackupError { number: e.number(), message };
        let e = Row { sequence_number: 100, number: 12, ratio_number: 100.0 };
        let f = Big { number: 123456, weight: 100.0, number: 100.0 };
        let g = x.map_err(123, y).unwrap_or_else(|e| err(n, e)).err();
        let h = err(1234);
        let i = msg::DATABASE_NOT_FOUND.with(&[&name]).into();
    "#;
    let found = numbers_written(src);
    assert_eq!(
        found,
        vec![(2, 3102, "number:"), (4, 4035, "number:"), (8, 3250, "err("), (12, 701, "err("), (13, 18456, "number:")],
    );
}
