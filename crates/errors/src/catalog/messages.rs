//! The catalog's rows, sorted by number. See `catalog.rs` for the template syntax.

use super::{Abort, Message};

const fn m(number: i32, severity: u8, aborts: Abort, template: &'static str) -> Message {
    Message { number, severity, aborts, template }
}

use Abort::{Batch, Connection, Statement, Transaction};

pub static MESSAGES: &[Message] = &[
    m(102, 15, Statement, "Incorrect syntax near '%.*ls'."),
    m(1205, 13, Transaction, "Transaction (Process ID %d) was deadlocked on %.*ls resources with another process and has been chosen as the deadlock victim. Rerun the transaction."),
    m(3617, 25, Connection, "%ls"),
    m(8114, 16, Batch, "Error converting data type %ls to %ls."),
];
