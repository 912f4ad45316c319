//! The client is told when the server ends its transaction (ENVCHANGE 8/9/10 in TDS):
//! drivers track the transaction by these, and one left believing a rolled-back
//! transaction is still open sends the rest of its "transaction" as autocommit
//! statements that each commit.

mod common;

use tessera_semantics::output::{Command, EnvChange, OutputColumn};
use tessera_semantics::types::Value;
use tessera_sql::{ResultSink, Session, SqlError};

/// What a batch sent, in order: errors by number and transaction changes.
#[derive(Default)]
struct Events(Vec<String>);

impl ResultSink for Events {
    fn columns(&mut self, _: &[OutputColumn]) {}
    fn row(&mut self, _: &[Value]) {}
    fn done(&mut self, _: Option<u64>, _: Command) {}
    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 {
            self.0.push(format!("error {}", m.number));
        }
    }
    fn env_change(&mut self, c: &EnvChange) {
        match c {
            EnvChange::BeginTransaction => self.0.push("begin".into()),
            EnvChange::CommitTransaction => self.0.push("commit".into()),
            EnvChange::RollbackTransaction => self.0.push("rollback".into()),
            EnvChange::Database { .. } => {}
        }
    }
}

fn run(s: &mut Session, sql: &str) -> Vec<String> {
    let mut events = Events::default();
    s.execute(sql, &mut events);
    events.0
}

#[test]
fn a_transaction_the_server_rolls_back_is_announced_after_its_error() {
    let (_dir, mut s) = common::session();
    run(&mut s, "create table pk (id int primary key); insert into pk values (1);");

    // XACT_ABORT: the duplicate key ends the transaction.
    assert_eq!(run(&mut s, "set xact_abort on; begin tran; insert into pk values (2);"), ["begin"]);
    assert_eq!(run(&mut s, "insert into pk values (1);"), ["error 2627", "rollback"]);
    assert_eq!(run(&mut s, "select @@trancount;"), Vec::<String>::new());
    assert_eq!(run(&mut s, "select count(*) from pk where id = 2;"), Vec::<String>::new());

    // An error that ends the transaction by itself (a conversion error), XACT_ABORT off.
    assert_eq!(run(&mut s, "set xact_abort off; begin tran; insert into pk values (3);"), ["begin"]);
    assert_eq!(run(&mut s, "select convert(int, 'x');"), ["error 245", "rollback"]);

    // A statement error that leaves the transaction open says nothing of it.
    assert_eq!(run(&mut s, "begin tran; insert into pk values (1);"), ["begin", "error 2627"]);
    assert_eq!(run(&mut s, "commit;"), ["commit"]);
}
