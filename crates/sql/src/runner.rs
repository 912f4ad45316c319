//! Running a script as sqlcmd does: split it into batches at `GO [count]` lines and run
//! each batch `count` times, announcing loops as sqlcmd does.

use crate::error::SqlError;
use crate::output::ResultSink;
use crate::script::split_batches;
use crate::session::Session;

fn note(text: &str) -> SqlError {
    SqlError { number: 0, severity: 0, state: 0, message: text.to_string(), line: 0, procedure: None }
}

/// Runs every batch of `script`; returns how many batches raised an error.
pub fn run_script(session: &mut Session, script: &str, sink: &mut dyn ResultSink) -> usize {
    let mut failed = 0;
    for batch in split_batches(script) {
        if batch.repeat > 1 {
            sink.message(&note("Beginning execution loop"));
        }
        for _ in 0..batch.repeat {
            if session.execute(&batch.text, sink) {
                failed += 1;
            }
        }
        if batch.repeat > 1 {
            sink.message(&note(&format!("Batch execution completed {} times.", batch.repeat)));
        }
    }
    failed
}
