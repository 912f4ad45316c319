//! The cost of seed 002's statement through the T-SQL layer, counted in instructions
//! rather than timed: the VM these benchmarks run on moves a timing by 10–30 % from one
//! run to the next, an instruction count not at all. Loads `bench sql --quick`'s table
//! (20,000 rows of `char(1000)`, in a database of the same name: names are compared on
//! the way; a second argument loads that many rows instead, 1000000 for `bench sql`'s
//! full scale), then runs the seed's batch `N` times (default 100,000) in `timed_loop`,
//! which is what to count:
//!
//! ```sh
//! cargo build --release --example statement_cost -p tessera
//! valgrind --tool=callgrind --toggle-collect='statement_cost::timed_loop' \
//!     target/release/examples/statement_cost 20000
//! ```
//!
//! and divide "Collected" by N. It uses the server's allocator (mimalloc), as
//! `tessera bench sql` does.

use tessera_semantics::output::{Command, OutputColumn, StoredRow};
use tessera_semantics::types::Value;
use tessera_sql::{ResultSink, Session, SqlError};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rows loaded unless a second argument says otherwise (`bench sql`'s full scale is
/// 1,000,000).
const ROWS: usize = 20_000;
const ROWS_PER_INSERT: usize = 1_000;

/// Counts the bytes of the rows returned; fails on any error. It takes rows as they are
/// stored, reading the first column's bytes in place, unless `STATEMENT_COST_VALUES` is
/// set (then every row comes as values).
struct Sink {
    bytes: u64,
    takes_stored: bool,
}

impl ResultSink for Sink {
    fn columns(&mut self, _: &[OutputColumn]) {}

    fn row(&mut self, row: &[Value]) {
        if let Some(Value::Str(s)) = row.first() {
            self.bytes += s.len() as u64;
        }
    }

    fn takes_stored_rows(&self) -> bool {
        self.takes_stored
    }

    fn stored_row(&mut self, row: &StoredRow<'_>) {
        if let (_, Some(bytes)) = row.column(0) {
            self.bytes += bytes.len() as u64;
        }
    }

    fn done(&mut self, _: Option<u64>, _: Command) {}

    fn message(&mut self, m: &SqlError) {
        assert!(m.severity <= 10, "Msg {}: {}", m.number, m.message);
    }
}

fn main() {
    let statements: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let rows: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(ROWS);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = tessera_database::EngineConfig::new(dir.path());
    config.pool_bytes = (rows * 2200).max(256 << 20);
    config.background = false;
    let engine = tessera_database::Engine::open(config).expect("the engine opens");
    let shared = tessera_sql::start_instance(engine).expect("the instance starts");
    let mut session = Session::new(shared, "sa", "master").expect("a session");
    let mut sink = Sink { bytes: 0, takes_stored: std::env::var_os("STATEMENT_COST_VALUES").is_none() };
    session.execute(
        "create database [BufferPoolExtensions_test]; use [BufferPoolExtensions_test];
         create table [dbo].[TestTable] ([id] int identity(1,1) not null, [n] [char](1000) not null,
             constraint [PK_TestTable] primary key clustered ([id]));",
        &mut sink,
    );
    let mut insert = String::from("set nocount on; insert into [dbo].[TestTable] ([n]) values (replicate('A', 1000))");
    for _ in 1..ROWS_PER_INSERT {
        insert.push_str(", (replicate('A', 1000))");
    }
    for _ in 0..rows.div_ceil(ROWS_PER_INSERT) {
        session.execute(&insert, &mut sink);
    }
    session.execute("select [n] from [dbo].[TestTable];", &mut sink);
    let query =
        format!("select [n]\nfrom [dbo].[TestTable]\nwhere [id] = cast(rand(checksum(newid())) * {rows} as int) + 1;");
    session.execute(&query, &mut sink);
    let started = std::time::Instant::now();
    timed_loop(&mut session, &query, statements, &mut sink);
    let per_statement_us = started.elapsed().as_secs_f64() * 1e6 / statements as f64;
    println!("{statements} statements, {per_statement_us:.2} µs each ({} bytes returned)", sink.bytes);
}

#[inline(never)]
fn timed_loop(session: &mut Session, query: &str, statements: u64, sink: &mut Sink) {
    for _ in 0..statements {
        session.execute(query, sink);
    }
}
