//! Running a script as sqlcmd does: split it into batches at `GO [count]` lines and run
//! each batch `count` times, announcing loops as sqlcmd does.

use crate::error::SqlError;
use crate::output::ResultSink;
use crate::script::split_batches;
use crate::session::Session;

fn note(text: &str) -> SqlError {
    SqlError {
        number: 0,
        severity: 0,
        state: 0,
        message: text.to_string(),
        line: 0,
        procedure: None,
        preceding: Vec::new(),
    }
}

/// Replaces sqlcmd scripting variables `$(name)` (names case-insensitive) with their values;
/// an undefined variable is sqlcmd's error.
pub fn substitute(script: &str, vars: &[(String, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(script.len());
    let mut rest = script;
    while let Some(start) = rest.find("$(") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        match vars.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, v)) => out.push_str(v),
            None => return Err(format!("'{name}' scripting variable not defined.")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Something that runs batches: a session in process, or a connection to a server.
pub trait Batches {
    /// Runs one batch; true if it raised an error.
    fn run_batch(&mut self, text: &str, sink: &mut dyn ResultSink) -> bool;
}

impl Batches for Session {
    fn run_batch(&mut self, text: &str, sink: &mut dyn ResultSink) -> bool {
        self.execute(text, sink)
    }
}

/// Runs every batch of `script`; returns how many batches raised an error.
pub fn run_script(session: &mut dyn Batches, script: &str, sink: &mut dyn ResultSink) -> usize {
    let mut failed = 0;
    for batch in split_batches(script) {
        if batch.repeat > 1 {
            sink.message(&note("Beginning execution loop"));
        }
        for _ in 0..batch.repeat {
            if session.run_batch(&batch.text, sink) {
                failed += 1;
            }
        }
        if batch.repeat > 1 {
            sink.message(&note(&format!("Batch execution completed {} times.", batch.repeat)));
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripting_variables() {
        let vars = vec![("Rows".to_string(), "10".to_string())];
        assert_eq!(substitute("go $(rows)\nselect $(ROWS)", &vars).unwrap(), "go 10\nselect 10");
        assert_eq!(substitute("select '$(nope)'", &vars).unwrap_err(), "'nope' scripting variable not defined.");
        assert_eq!(substitute("select '$(' + 'x'", &vars).unwrap(), "select '$(' + 'x'");
    }
}
