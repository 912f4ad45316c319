//! Running a script as sqlcmd does: split it into batches at `GO [count]` lines and run
//! each batch `count` times, announcing loops as sqlcmd does.

use crate::session::Session;
use tessera_errors::{ErrorDetail, SqlError};
use tessera_semantics::output::ResultSink;
use tessera_syntax::script::{parse_go_line, split_batches};

fn note(text: &str) -> SqlError {
    SqlError::from(ErrorDetail {
        number: 0,
        severity: 0,
        state: 0,
        message: text.to_string(),
        line: 0,
        procedure: None,
        preceding: Vec::new(),
    })
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
    split_batches(script).iter().map(|b| run_repeated(session, &b.text, b.repeat, sink)).sum()
}

/// Runs one batch `repeat` times (`GO n`); returns how many runs raised an error.
fn run_repeated(session: &mut dyn Batches, text: &str, repeat: u64, sink: &mut dyn ResultSink) -> usize {
    if repeat > 1 {
        sink.message(&note("Beginning execution loop"));
    }
    let mut failed = 0;
    for _ in 0..repeat {
        if session.run_batch(text, sink) {
            failed += 1;
        }
    }
    if repeat > 1 {
        sink.message(&note(&format!("Batch execution completed {repeat} times.")));
    }
    failed
}

/// sqlcmd's interactive mode: lines are gathered into a batch until a `GO [count]` line runs
/// it; `EXIT` or `QUIT` (or the end of input) ends the loop. `prompt(n)` is called before
/// line n of each batch is read. Returns how many batches raised an error.
pub fn run_interactive(
    session: &mut dyn Batches,
    lines: &mut dyn Iterator<Item = String>,
    vars: &[(String, String)],
    sink: &mut dyn ResultSink,
    prompt: &mut dyn FnMut(usize),
) -> usize {
    let mut failed = 0;
    let mut batch = String::new();
    let mut number = 1;
    loop {
        prompt(number);
        let Some(line) = lines.next() else { break };
        let command = line.trim();
        if command.eq_ignore_ascii_case("exit") || command.eq_ignore_ascii_case("quit") {
            break;
        }
        if let Some(repeat) = parse_go_line(&line) {
            let text = std::mem::take(&mut batch);
            number = 1;
            match substitute(&text, vars) {
                Ok(text) => failed += run_repeated(session, text.trim_end(), repeat, sink),
                Err(e) => {
                    sink.message(&note(&format!("Sqlcmd: Error: {e}")));
                    failed += 1;
                }
            }
            continue;
        }
        batch.push_str(&line);
        batch.push('\n');
        number += 1;
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

    /// Records the batches it is asked to run.
    struct Recorder(Vec<String>);

    impl Batches for Recorder {
        fn run_batch(&mut self, text: &str, _sink: &mut dyn ResultSink) -> bool {
            self.0.push(text.to_string());
            text.contains("fail")
        }
    }

    #[test]
    fn interactive_batches_and_prompts() {
        let input = ["select 1", "select $(x)", "go 2", "select 'fail'", "GO", "select 3", "exit", "select 4", "go"];
        let mut lines = input.iter().map(|s| s.to_string());
        let mut recorder = Recorder(Vec::new());
        let mut prompts = Vec::new();
        let mut sink = tessera_semantics::output::Collected::default();
        let vars = vec![("x".to_string(), "2".to_string())];
        let failed = run_interactive(&mut recorder, &mut lines, &vars, &mut sink, &mut |n| prompts.push(n));
        assert_eq!(recorder.0, ["select 1\nselect 2", "select 1\nselect 2", "select 'fail'"]);
        assert_eq!(failed, 1);
        assert_eq!(prompts, [1, 2, 3, 1, 2, 1, 2]);
    }
}
