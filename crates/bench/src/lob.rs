//! `tessera bench lob`: large values written and read back, next to SQLite's incremental
//! blob I/O in the same run, and over the wire next to PostgreSQL over its protocol
//! (issue 34).
//!
//! tessera, in process: an engine and a session; `t (id int primary key, v varbinary(max))`;
//! each value goes in as a client sends it — an RPC, `sp_executesql` with `@id int` and
//! `@v varbinary(max)`, one autocommit INSERT (a durable commit) per value — and comes back
//! through `sp_executesql` of `select v from t where id = @id`, the sink reading the value
//! it is handed (a value of 1 MiB or more comes as a handle, read in pieces into one
//! buffer). Over TDS: a server started in process on a fresh directory, the values written
//! as a driver sends them (`sp_executesql` RPCs with a varbinary(max) parameter,
//! PLP-framed, each request encoded and framed before its clock starts) and read back by a
//! streaming reader ([`crate::tdsstream`]) that keeps one packet and reads a row as it
//! arrives. SQLite: bundled, WAL, `synchronous=FULL`; one transaction per value
//! (`INSERT … zeroblob(n)`, then `blob_open` and one write of the value), read back with
//! `blob_open` and `read_exact` into a buffer kept between reads.
//!
//! The values: `values` of `value_bytes` each, written and read in rounds that alternate
//! the sides (a drift in the machine's speed falls on both), then one of `big_bytes` on
//! each side, with the process's resident memory outside tessera's buffer pool sampled
//! every 10 ms during the big value's write and read (the goal: < 64 MiB above what it
//! was before), in process and again over TDS. PostgreSQL (`postgres_side`) then does
//! the same steps over its own protocol, the peer of the rows over TDS: a value that
//! crosses a socket is copied twice by the kernel, which SQLite's read in process is not.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, MAIN_DB};
use serde::Serialize;
use tessera_database::{Engine, EngineConfig};
use tessera_semantics::output::{Command, OutputColumn};
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::session::RpcParam;
use tessera_sql::{ResultSink, Session, SqlError};

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use crate::report::{fmt_value, Report, ResultRow};
use crate::rss::{self, Probe, Sampler, SelfProbe};
use crate::tdsstream::{executesql_body, RpcValue, StreamConn};

pub const NAME: &str = "lob";

/// tessera's throughput divided by SQLite's incremental blob I/O must reach this.
pub const GOAL_RATE_VS_SQLITE: f64 = 1.0;
/// The server's memory outside its buffer pool may grow by less than this during the big
/// value's transfer.
pub const GOAL_MEMORY_MIB: f64 = 64.0;

const ROUNDS: u64 = 10;
/// About the longest blob SQLite stores: its record (the value and a few bytes of header)
/// may not pass `SQLITE_MAX_LENGTH`, 10^9 bytes by default (the bundled build's).
const SQLITE_LONGEST_VALUE: usize = 999_999_000;
const MIB: f64 = (1u64 << 20) as f64;

#[derive(Debug, Clone, Serialize)]
pub struct LobParams {
    pub values: u64,
    pub value_bytes: usize,
    pub big_bytes: usize,
}

impl LobParams {
    /// The scale: 1,000 values of 1 MiB, and one of 999,999,000 bytes — the
    /// issue's 1 GiB cut to about the longest value SQLite holds (`SQLITE_MAX_LENGTH`,
    /// 10^9 bytes for a whole record, the value with its header).
    pub fn full() -> LobParams {
        LobParams { values: 1000, value_bytes: 1 << 20, big_bytes: SQLITE_LONGEST_VALUE }
    }

    /// 100 values of 1 MiB and one of 64 MiB.
    pub fn quick() -> LobParams {
        LobParams { values: 100, value_bytes: 1 << 20, big_bytes: 64 << 20 }
    }
}

pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
}

/// The value written under `id`: bytes that differ from value to value.
fn value_of(id: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u64).wrapping_mul(0x9E37_79B9).wrapping_add(id) as u8).collect()
}

/// Counts the bytes of the binary values handed to it; keeps the first error.
#[derive(Default)]
struct ByteCounter {
    bytes: u64,
    rows: u64,
    error: Option<SqlError>,
}

impl ResultSink for ByteCounter {
    fn columns(&mut self, _: &[OutputColumn]) {}

    /// A large value is read in pieces (as a client of the engine reads one), each into
    /// the same buffer.
    fn row(&mut self, row: &[Value]) {
        self.rows += 1;
        match row.first() {
            Some(Value::Binary(b)) => self.bytes += b.len() as u64,
            Some(Value::Large(l)) => {
                let mut read = 0;
                let outcome = l.for_each_piece(0, l.len_bytes(), |piece| {
                    read += piece.len() as u64;
                    Ok(())
                });
                match outcome {
                    Ok(()) => self.bytes += read,
                    Err(e) => self.message(&e),
                }
            }
            _ => {}
        }
    }

    fn done(&mut self, _: Option<u64>, _: Command) {}

    fn message(&mut self, m: &SqlError) {
        if m.severity > 10 && self.error.is_none() {
            self.error = Some(m.clone());
        }
    }
}

fn failed(what: &str, e: SqlError) -> BenchError {
    BenchError::new(format!("tessera {what}: Msg {}: {}", e.number, e.message))
}

/// tessera in process.
struct TesseraSide {
    engine: Arc<Engine>,
    session: Session,
}

impl TesseraSide {
    /// A buffer pool of `pool_bytes`: the benchmark gives it room for every value, as
    /// SQLite's reads come from the OS page cache, which holds them all.
    fn open(dir: &Path, pool_bytes: usize) -> Result<TesseraSide> {
        let mut config = EngineConfig::new(dir);
        config.pool_bytes = pool_bytes;
        let engine = Engine::open(config)?;
        let shared = tessera_sql::start_instance(engine.clone()).map_err(|e| failed("start", e))?;
        let mut session = Session::new(shared, "sa", "master").map_err(|e| failed("session", e))?;
        let mut sink = ByteCounter::default();
        session.execute(
            "create database lob; use lob; create table t (id int primary key, v varbinary(max) not null);",
            &mut sink,
        );
        if let Some(e) = sink.error {
            return Err(failed("create table", e));
        }
        Ok(TesseraSide { engine, session })
    }

    fn rpc(&mut self, text: &str, declared: &str, mut params: Vec<RpcParam>, what: &str) -> Result<ByteCounter> {
        let mut all = vec![
            RpcParam {
                name: None,
                value: Value::Str(text.into()),
                ty: SqlType::NVarChar(u16::MAX),
                output: false,
                table: None,
            },
            RpcParam {
                name: None,
                value: Value::Str(declared.into()),
                ty: SqlType::NVarChar(u16::MAX),
                output: false,
                table: None,
            },
        ];
        all.append(&mut params);
        let mut sink = ByteCounter::default();
        self.session.execute_rpc("sp_executesql", all, &mut sink);
        match sink.error.take() {
            Some(e) => Err(failed(what, e)),
            None => Ok(sink),
        }
    }

    fn write(&mut self, id: u64, value: &Arc<[u8]>) -> Result<()> {
        let params = vec![
            RpcParam {
                name: Some("@id".into()),
                value: Value::Int(id as i64),
                ty: SqlType::Int,
                output: false,
                table: None,
            },
            RpcParam {
                name: Some("@v".into()),
                value: Value::Binary(value.clone()),
                ty: SqlType::VarBinary(u16::MAX),
                output: false,
                table: None,
            },
        ];
        self.rpc("insert t values (@id, @v)", "@id int, @v varbinary(max)", params, "insert").map(|_| ())
    }

    /// Writes the changed pages out (not timed: the reads that follow do not share the
    /// machine with the writes' flushing, on either side).
    fn checkpoint(&mut self) -> Result<()> {
        let mut sink = ByteCounter::default();
        self.session.execute("checkpoint", &mut sink);
        sink.error.map_or(Ok(()), |e| Err(failed("checkpoint", e)))
    }

    fn read(&mut self, id: u64) -> Result<u64> {
        let params = vec![RpcParam {
            name: Some("@id".into()),
            value: Value::Int(id as i64),
            ty: SqlType::Int,
            output: false,
            table: None,
        }];
        let sink = self.rpc("select v from t where id = @id", "@id int", params, "select")?;
        if sink.rows != 1 {
            return Err(BenchError::new(format!("tessera: value {id} came back in {} rows", sink.rows)));
        }
        Ok(sink.bytes)
    }

    fn close(mut self) -> Result<()> {
        self.session.close();
        drop(self.session);
        self.engine.shutdown()?;
        Ok(())
    }
}

/// SQLite in process, incremental blob I/O.
struct SqliteSide {
    conn: Connection,
    buf: Vec<u8>,
}

impl SqliteSide {
    fn open(dir: &Path) -> Result<SqliteSide> {
        let conn = Connection::open(dir.join("lob.sqlite"))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL);",
        )?;
        Ok(SqliteSide { conn, buf: Vec::new() })
    }

    fn write(&mut self, id: u64, value: &[u8]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute("INSERT INTO t (id, v) VALUES (?1, zeroblob(?2))", (id as i64, value.len() as i64))?;
        {
            let mut blob = tx.blob_open(MAIN_DB, c"t", c"v", id as i64, false)?;
            blob.write_all(value)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn checkpoint(&mut self) -> Result<()> {
        self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    fn read(&mut self, id: u64) -> Result<u64> {
        let mut blob = self.conn.blob_open(MAIN_DB, c"t", c"v", id as i64, true)?;
        let len = blob.len();
        self.buf.resize(len, 0);
        blob.read_exact(&mut self.buf)?;
        Ok(len as u64)
    }
}

/// Seconds each side took for the same work, in alternating rounds.
fn alternate(
    rounds: u64,
    mut ours: impl FnMut(u64) -> Result<f64>,
    mut peer: impl FnMut(u64) -> Result<f64>,
) -> Result<(f64, f64)> {
    let (mut o, mut p) = (0.0, 0.0);
    for r in 0..rounds {
        if r % 2 == 0 {
            o += ours(r)?;
            p += peer(r)?;
        } else {
            p += peer(r)?;
            o += ours(r)?;
        }
    }
    Ok((o, p))
}

/// MB/s (10^6 bytes) of `bytes` in `seconds`.
fn mbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / 1e6 / seconds.max(1e-9)
}

/// tessera's buffer pool: room for every value the run writes (and a quarter more).
fn pool_bytes(p: &LobParams) -> usize {
    let data_bytes = p.values as usize * p.value_bytes + p.big_bytes;
    (data_bytes + data_bytes / 4).max(256 << 20)
}

struct InProcess {
    write: (f64, f64),
    read: (f64, f64),
    big_write: (f64, f64),
    big_read: (f64, f64),
    /// Growth of tessera's memory outside the buffer pool during the big value's write and
    /// read, in bytes.
    big_growth: u64,
    /// The log buffers' growth over the big write (chunks kept for reuse, up to their
    /// budget: a part of the memory target, as the buffer pool is).
    log_growth: u64,
}

fn in_process(dir: &Path, p: &LobParams, progress: &dyn Fn(&str)) -> Result<InProcess> {
    let mut ours = TesseraSide::open(&dir.join("tessera"), pool_bytes(p))?;
    let mut peer = SqliteSide::open(&dir.join("sqlite"))?;
    let per_round = p.values / ROUNDS;
    let values: Vec<Arc<[u8]>> = (0..per_round).map(|i| Arc::from(value_of(i, p.value_bytes))).collect();
    progress(&format!("in process: writing {} values of {} bytes a side", per_round * ROUNDS, p.value_bytes));
    let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let t = Instant::now();
        f()?;
        Ok(t.elapsed().as_secs_f64())
    };
    let write = {
        let (o, s) = (std::cell::RefCell::new(&mut ours), std::cell::RefCell::new(&mut peer));
        alternate(
            ROUNDS,
            |r| {
                timed(&mut || {
                    (0..per_round).try_for_each(|i| o.borrow_mut().write(r * per_round + i + 1, &values[i as usize]))
                })
            },
            |r| {
                timed(&mut || {
                    (0..per_round).try_for_each(|i| s.borrow_mut().write(r * per_round + i + 1, &values[i as usize]))
                })
            },
        )?
    };
    ours.checkpoint()?;
    peer.checkpoint()?;
    progress("in process: reading them back");
    let expected = per_round * ROUNDS * p.value_bytes as u64;
    let (mut ours_bytes, mut peer_bytes) = (0, 0);
    let read = {
        let (o, s) = (std::cell::RefCell::new(&mut ours), std::cell::RefCell::new(&mut peer));
        let (ob, sb) = (std::cell::RefCell::new(&mut ours_bytes), std::cell::RefCell::new(&mut peer_bytes));
        alternate(
            ROUNDS,
            |r| {
                timed(&mut || {
                    for i in 0..per_round {
                        **ob.borrow_mut() += o.borrow_mut().read(r * per_round + i + 1)?;
                    }
                    Ok(())
                })
            },
            |r| {
                timed(&mut || {
                    for i in 0..per_round {
                        **sb.borrow_mut() += s.borrow_mut().read(r * per_round + i + 1)?;
                    }
                    Ok(())
                })
            },
        )?
    };
    if ours_bytes != expected || peer_bytes != expected {
        return Err(BenchError::new(format!(
            "read back {ours_bytes} (tessera) and {peer_bytes} (sqlite) of {expected} bytes"
        )));
    }
    drop(values);
    progress(&format!("in process: one value of {} bytes a side", p.big_bytes));
    let big: Arc<[u8]> = Arc::from(value_of(0, p.big_bytes));
    let big_id = p.values + 1_000_000;
    let log_buffers = |side: &TesseraSide| {
        let stats = side.engine.log_buffer_stats();
        (stats.lent_bytes + stats.spare_bytes) as u64
    };
    let log_before = log_buffers(&ours);
    let sampler = Sampler::start(Probe::SelfProcess(SelfProbe::new(rss::pool_mappings()?)), Duration::from_millis(10))?;
    let t = Instant::now();
    ours.write(big_id, &big)?;
    let ours_big_write = t.elapsed().as_secs_f64();
    let log_growth = log_buffers(&ours).saturating_sub(log_before);
    ours.checkpoint()?;
    let t = Instant::now();
    let got = ours.read(big_id)?;
    let ours_big_read = t.elapsed().as_secs_f64();
    let (samples, _) = sampler.stop()?;
    let start = samples.samples.first().map_or(0, |s| s.other);
    let big_growth = samples.largest_rise(start, |s| s.other);
    if got != p.big_bytes as u64 {
        return Err(BenchError::new(format!("tessera read {got} bytes of the big value")));
    }
    let t = Instant::now();
    peer.write(big_id, &big)?;
    let peer_big_write = t.elapsed().as_secs_f64();
    peer.checkpoint()?;
    let t = Instant::now();
    peer.read(big_id)?;
    let peer_big_read = t.elapsed().as_secs_f64();
    ours.close()?;
    Ok(InProcess {
        write: (mbps(expected, write.0), mbps(expected, write.1)),
        read: (mbps(expected, read.0), mbps(expected, read.1)),
        big_write: (mbps(p.big_bytes as u64, ours_big_write), mbps(p.big_bytes as u64, peer_big_write)),
        big_read: (mbps(p.big_bytes as u64, ours_big_read), mbps(p.big_bytes as u64, peer_big_read)),
        big_growth,
        log_growth,
    })
}

/// MB/s of a side over the wire: the values written and read, the big one written and read.
struct Rates {
    write: f64,
    read: f64,
    big_write: f64,
    big_read: f64,
}

impl Rates {
    /// The rates of the seconds each step took, for the run's `p`.
    fn of(p: &LobParams, [write, read, big_write, big_read]: [f64; 4]) -> Rates {
        let total = p.values * p.value_bytes as u64;
        let big = p.big_bytes as u64;
        Rates {
            write: mbps(total, write),
            read: mbps(total, read),
            big_write: mbps(big, big_write),
            big_read: mbps(big, big_read),
        }
    }
}

/// What the TDS half measured: its rates, and the growth of the process's memory outside
/// the buffer pool during the big value.
struct OverTds {
    rates: Rates,
    big_growth: u64,
}

/// Over TDS: `values` values, then the big one, through a server in process, the
/// requests sent and the replies read by the streaming client (an RPC as a driver sends
/// it, PLP-framed; a SELECT whose reply is read off the socket as it arrives, a row of a
/// GiB never held whole).
fn over_tds(dir: &Path, p: &LobParams, progress: &dyn Fn(&str)) -> Result<OverTds> {
    let config = tessera_server::Config {
        port: 0,
        data_dir: dir.join("server"),
        sa_password: Some(crate::pointselect::PASSWORD.to_string()),
        // Room for every value, as in process (SQLite's reads come from the OS page cache,
        // which holds them all).
        memory_mb: pool_bytes(p) >> 20,
        ..tessera_server::Config::default()
    };
    let server = tessera_server::RunningServer::start(config).map_err(BenchError::new)?;
    let port = server.addr.port();
    let values: Vec<Vec<u8>> = (0..p.values.min(100)).map(|i| value_of(i, p.value_bytes)).collect();
    let mut setup = StreamConn::connect(port, "sa", crate::pointselect::PASSWORD, "master")?;
    let made =
        setup.query("create database lob; use lob; create table t (id int primary key, v varbinary(max) not null)")?;
    if let Some(e) = made.error {
        return Err(BenchError::new(format!("tessera create table over TDS: {e}")));
    }
    drop(setup);
    let mut conn = StreamConn::connect(port, "sa", crate::pointselect::PASSWORD, "lob")?;
    progress(&format!("over TDS: writing {} values", p.values));
    // Each request encoded before the clock runs for it: the client's cost is not the server's.
    let mut written = 0.0;
    for id in 1..=p.values {
        let v = &values[(id as usize - 1) % values.len()][..];
        let body = executesql_body(
            "insert t values (@id, @v)",
            "@id int, @v varbinary(max)",
            &[("@id", RpcValue::Int(id as i32)), ("@v", RpcValue::Binary(v))],
        );
        let run = conn.rpc(&body)?;
        if let Some(e) = run.error {
            return Err(BenchError::new(format!("tessera insert over TDS: {e}")));
        }
        written += run.seconds;
    }
    progress("over TDS: reading them back");
    let mut reader = conn;
    let t = Instant::now();
    let mut bytes = 0;
    for id in 1..=p.values {
        let run = reader.query(&format!("select v from t where id = {id}"))?;
        if let Some(e) = run.error {
            return Err(BenchError::new(format!("tessera select over TDS: {e}")));
        }
        if run.rows != 1 {
            return Err(BenchError::new(format!("value {id} came back in {} rows", run.rows)));
        }
        bytes += run.bytes;
    }
    let read = t.elapsed().as_secs_f64();
    if bytes < p.values * p.value_bytes as u64 {
        return Err(BenchError::new(format!("read {bytes} bytes over TDS, fewer than the values hold")));
    }
    progress(&format!("over TDS: one value of {} bytes", p.big_bytes));
    let big_id = p.values + 1_000_000;
    // The request is made and framed before the clock and the memory samples start: the
    // client's copy of the value is not the server's.
    let framed = {
        let big = value_of(0, p.big_bytes);
        let body = executesql_body(
            "insert t values (@id, @v)",
            "@id int, @v varbinary(max)",
            &[("@id", RpcValue::Int(big_id as i32)), ("@v", RpcValue::Binary(&big))],
        );
        reader.frame_rpc(&body)
    };
    let sampler = Sampler::start(Probe::SelfProcess(SelfProbe::new(rss::pool_mappings()?)), Duration::from_millis(10))?;
    let run = reader.send_rpc(&framed)?;
    if let Some(e) = run.error {
        return Err(BenchError::new(format!("tessera insert of the big value over TDS: {e}")));
    }
    let big_write = run.seconds;
    drop(framed);
    let checkpoint = reader.query("checkpoint")?;
    if let Some(e) = checkpoint.error {
        return Err(BenchError::new(format!("tessera checkpoint over TDS: {e}")));
    }
    let run = reader.query(&format!("select v from t where id = {big_id}"))?;
    let (samples, _) = sampler.stop()?;
    if let Some(e) = run.error {
        return Err(BenchError::new(format!("tessera select of the big value over TDS: {e}")));
    }
    if run.rows != 1 || run.bytes < p.big_bytes as u64 {
        return Err(BenchError::new(format!("the big value came back as {} rows of {} bytes", run.rows, run.bytes)));
    }
    let start = samples.samples.first().map_or(0, |s| s.other);
    let big_growth = samples.largest_rise(start, |s| s.other);
    drop(reader);
    server.stop().map_err(BenchError::new)?;
    Ok(OverTds { rates: Rates::of(p, [written, read, big_write, run.seconds]), big_growth })
}

/// The over-the-wire peer: a PostgreSQL server of the benchmark's own (`synchronous_commit`
/// on, `shared_buffers` with room for every value as tessera's pool has), `t (id int
/// primary key, v bytea)` stored without compression (`STORAGE EXTERNAL`: tessera and
/// SQLite compress nothing), one autocommit INSERT per value, each value a binary `bytea`
/// parameter of the extended protocol (the request made before its clock), read back in
/// binary.
fn postgres_side(dir: &Path, p: &LobParams, progress: &dyn Fn(&str)) -> Result<Rates> {
    use crate::peers::pgwire::PgConn;
    let server = crate::peers::postgres::start_postgres(dir, pool_bytes(p) >> 20)?;
    let mut conn = PgConn::connect(server.port, "postgres", "postgres")?;
    let checked = |run: crate::tdsstream::StreamRun, what: &str| match run.error {
        Some(e) => Err(BenchError::new(format!("postgresql {what}: {e}"))),
        None => Ok(run),
    };
    checked(
        conn.query(
            "create table t (id int primary key, v bytea not null); alter table t alter column v set storage external",
        )?,
        "create table",
    )?;
    const INT4: u32 = 23;
    const BYTEA: u32 = 17;
    let values: Vec<Vec<u8>> = (0..p.values.min(100)).map(|i| value_of(i, p.value_bytes)).collect();
    progress(&format!("postgresql: writing {} values", p.values));
    let mut written = 0.0;
    for id in 1..=p.values {
        let v = &values[(id as usize - 1) % values.len()][..];
        let request =
            PgConn::extended("insert into t values ($1, $2)", &[INT4, BYTEA], &[&(id as i32).to_be_bytes(), v]);
        written += checked(conn.exchange(&request)?, "insert")?.seconds;
    }
    checked(conn.query("checkpoint")?, "checkpoint")?;
    progress("postgresql: reading them back");
    let (mut read, mut bytes) = (0.0, 0);
    for id in 1..=p.values {
        let request = PgConn::extended("select v from t where id = $1", &[INT4], &[&(id as i32).to_be_bytes()]);
        let run = checked(conn.exchange(&request)?, "select")?;
        if run.rows != 1 {
            return Err(BenchError::new(format!("postgresql: value {id} came back in {} rows", run.rows)));
        }
        read += run.seconds;
        bytes += run.bytes;
    }
    if bytes < p.values * p.value_bytes as u64 {
        return Err(BenchError::new(format!("postgresql: read {bytes} bytes, fewer than the values hold")));
    }
    progress(&format!("postgresql: one value of {} bytes", p.big_bytes));
    let big_id = (p.values + 1_000_000) as i32;
    let request = {
        let big = value_of(0, p.big_bytes);
        PgConn::extended("insert into t values ($1, $2)", &[INT4, BYTEA], &[&big_id.to_be_bytes(), &big])
    };
    let big_write = checked(conn.exchange(&request)?, "insert of the big value")?.seconds;
    drop(request);
    checked(conn.query("checkpoint")?, "checkpoint")?;
    let request = PgConn::extended("select v from t where id = $1", &[INT4], &[&big_id.to_be_bytes()]);
    let run = checked(conn.exchange(&request)?, "select of the big value")?;
    if run.rows != 1 || run.bytes < p.big_bytes as u64 {
        return Err(BenchError::new(format!(
            "postgresql: the big value came back as {} rows of {} bytes",
            run.rows, run.bytes
        )));
    }
    drop(conn);
    drop(server);
    Ok(Rates::of(p, [written, read, big_write, run.seconds]))
}

/// Runs both sides in fresh subdirectories of `dir` (removed afterwards).
pub fn run(dir: &Path, params: &LobParams, progress: &dyn Fn(&str)) -> Result<Outcome> {
    fs::create_dir_all(dir)?;
    progress("measuring fdatasync latency of the data directory");
    let machine = Machine::detect(dir)?;
    let mut report = Report::new(NAME, serde_json::to_value(params)?, machine);
    let mut failures = Vec::new();
    let work = dir.join("lob-run");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(work.join("sqlite"))?;
    let size = |b: usize| match b {
        SQLITE_LONGEST_VALUE => "999,999,000 bytes".to_string(),
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b => format!("{} MiB", b >> 20),
    };
    let each = size(params.value_bytes);
    let measured = in_process(&work, params, progress);
    let _ = fs::remove_dir_all(work.join("tessera"));
    let tds = over_tds(&work, params, progress);
    let _ = fs::remove_dir_all(work.join("server"));
    let wire = postgres_side(&work.join("postgres"), params, progress);
    match &measured {
        Ok(m) => {
            let rows = [
                (format!("write {} values of {each}, one commit each, in process", params.values), m.write),
                (format!("read {} values of {each}, in process", params.values), m.read),
                (format!("write one value of {}, in process", size(params.big_bytes)), m.big_write),
                (format!("read one value of {}, in process", size(params.big_bytes)), m.big_read),
            ];
            for (what, (o, s)) in rows {
                report.push(ResultRow::rate(what, "MB/s", o, "sqlite", s, GOAL_RATE_VS_SQLITE));
            }
            report.push(ResultRow::own(
                format!("memory outside the buffer pool, growth during the {} value", size(params.big_bytes)),
                "MiB",
                m.big_growth as f64 / MIB,
                GOAL_MEMORY_MIB,
            ));
            report.note(format!(
                "in process, the log buffers grew by {:.1} MiB during the big write (written chunks kept for reuse, \
                 up to their budget, a part of the memory target)",
                m.log_growth as f64 / MIB
            ));
        }
        Err(e) => failures.push(format!("in process: {e}")),
    }
    match (&tds, &measured) {
        (Ok(OverTds { rates: t, big_growth }), Ok(m)) => {
            let peer = "sqlite, in process";
            let big = size(params.big_bytes);
            let rows = [
                (
                    format!("write {} values of {each}, one commit each, over TDS (sp_executesql RPC)", params.values),
                    t.write,
                    m.write.1,
                ),
                (format!("read {} values of {each} over TDS (streaming reader)", params.values), t.read, m.read.1),
                (format!("write one value of {big} over TDS (PLP, spooled by the server)"), t.big_write, m.big_write.1),
                (format!("read one value of {big} over TDS (PLP as it is read)"), t.big_read, m.big_read.1),
            ];
            for (what, ours, sqlite) in rows {
                report.push(ResultRow::rate(what, "MB/s", ours, peer, sqlite, GOAL_RATE_VS_SQLITE));
            }
            report.push(ResultRow::own(
                format!("memory outside the buffer pool, growth during the {big} value over TDS (server and client)"),
                "MiB",
                *big_growth as f64 / MIB,
                GOAL_MEMORY_MIB,
            ));
        }
        (Err(e), _) => failures.push(format!("over TDS: {e}")),
        (Ok(_), Err(_)) => {}
    }
    match (&tds, &wire) {
        (Ok(OverTds { rates: t, .. }), Ok(w)) => {
            let big = size(params.big_bytes);
            let rows = [
                (format!("write {} values of {each}, one commit each, over the wire", params.values), t.write, w.write),
                (format!("read {} values of {each} over the wire", params.values), t.read, w.read),
                (format!("write one value of {big} over the wire"), t.big_write, w.big_write),
                (format!("read one value of {big} over the wire"), t.big_read, w.big_read),
            ];
            for (what, ours, pg) in rows {
                report.push(ResultRow::rate(what, "MB/s", ours, "postgresql, its protocol", pg, GOAL_RATE_VS_SQLITE));
            }
        }
        (_, Err(e)) => failures.push(format!("postgresql: {e}")),
        (Err(_), Ok(_)) => {}
    }
    let _ = fs::remove_dir_all(&work);
    report.note(format!(
        "ratio = tessera's MB/s ÷ the peer's: SQLite's incremental blob I/O, or PostgreSQL over its protocol \
         (goal {}); MB = 10^6 bytes of value",
        fmt_value(GOAL_RATE_VS_SQLITE)
    ));
    report.note(
        "over the wire: tessera over TDS (the rows above) beside PostgreSQL over its protocol, both servers on this \
         machine's loopback with their clients: a value read over a socket is copied by the kernel twice more than \
         SQLite's read in process, so the rows against SQLite in process are for information",
    );
    report.note(
        "a value of 1 MiB or more is never whole in the server's memory: parameters arrive as PLP chunks \
         (over TDS spooled to a file in the data directory), are stored chunk by chunk, and are read back in \
         pieces (over TDS sent as PLP chunks as they are read)",
    );
    for f in &failures {
        report.note(format!("not measured: {f}"));
    }
    Ok(Outcome { report, failures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_reports_both_sides() {
        let dir = tempfile::tempdir().unwrap();
        let p = LobParams { values: 20, value_bytes: 20_000, big_bytes: 300_000 };
        let outcome = run(dir.path(), &p, &|_| {}).unwrap();
        // PostgreSQL, the over-the-wire peer, may not be installed (scripts/install-postgres.sh).
        let installed = crate::peers::postgres::pg_tool("initdb").is_some();
        let missing_peer = |f: &String| !installed && f.starts_with("postgresql:");
        assert!(outcome.failures.iter().all(missing_peer), "{:?}", outcome.failures);
        if installed {
            assert!(outcome.report.results.iter().any(|r| r.peer == "postgresql, its protocol"));
        }
        let row = &outcome.report.results[0];
        assert_eq!(row.peer, "sqlite");
        assert!(row.ours > 0.0 && row.peer_value.unwrap() > 0.0);
    }
}
