//! I/O: the function sys.dm_io_virtual_file_stats, from the counters each open database's
//! data file and log keep where their reads and writes happen (`tessera_io::stats`).

use super::{col, int, FunctionDef, Rows};
use crate::runtime::ExecCtx;
use tessera_errors::msg;
use tessera_semantics::types::SqlType::*;
use tessera_semantics::types::Value;

/// `sys.dm_io_virtual_file_stats(database_id, file_id)`: each file's reads and writes, the
/// bytes they moved and the time spent in them, for the database (NULL: every one) and
/// file (1 the data file, 2 the log; NULL: both) the arguments name.
///
/// Only open databases have rows: a closed one is not opened to be measured, and its
/// counters start again from zero when it next opens (SQL Server's start when a database
/// comes online). Times are those of the system calls (tessera's writes are buffered: a
/// log's fdatasync is not in its write stall); `sample_ms` is milliseconds since the
/// computer started, as SQL Server's; no I/O is queued by resource governance, so the
/// queued stalls are 0.
pub(super) static VIRTUAL_FILE_STATS: FunctionDef<14> = FunctionDef {
    name: "dm_io_virtual_file_stats",
    columns: [
        col("database_id", SmallInt, false),
        col("file_id", SmallInt, false),
        col("sample_ms", BigInt, false),
        col("num_of_reads", BigInt, false),
        col("num_of_bytes_read", BigInt, false),
        col("io_stall_read_ms", BigInt, false),
        col("num_of_writes", BigInt, false),
        col("num_of_bytes_written", BigInt, false),
        col("io_stall_write_ms", BigInt, false),
        col("io_stall", BigInt, false),
        col("size_on_disk_bytes", BigInt, false),
        col("file_handle", VarBinary(8), false),
        col("io_stall_queued_read_ms", BigInt, false),
        col("io_stall_queued_write_ms", BigInt, false),
    ],
    rows: virtual_file_stats,
};

fn virtual_file_stats(ctx: &ExecCtx, _db: &str, args: &[Value]) -> Rows<14> {
    super::server_state(ctx)?;
    let name = "sys.dm_io_virtual_file_stats";
    match args.len() {
        0 | 1 => return Err(msg::TOO_FEW_ARGUMENTS.with(&[&name])),
        2 => {}
        _ => return Err(msg::TOO_MANY_ARGUMENTS.with(&[&name])),
    }
    // NULL names every database (file); a value of another type names none.
    let named = |arg: &Value, id: i64| match arg {
        Value::Null => true,
        Value::Int(i) => *i == id,
        _ => false,
    };
    let sample_ms = int(i64::try_from(tessera_io::clock::coarse_monotonic().as_millis()).unwrap_or(i64::MAX));
    let count = |n: u64| int(i64::try_from(n).unwrap_or(i64::MAX));
    let ms = |us: u64| count(us / 1000);
    let mut rows = Vec::new();
    let mut failed = None;
    ctx.shared.engine.for_each_open(|db| {
        let id = i64::from(db.id());
        if failed.is_some() || !named(&args[0], id) {
            return;
        }
        let files = match db.io_samples() {
            Ok(files) => files,
            Err(e) => {
                failed = Some(e);
                return;
            }
        };
        for (file_id, f) in (1..).zip(files) {
            if !named(&args[1], file_id) {
                continue;
            }
            let io = f.figures;
            rows.push((
                id,
                [
                    int(id),
                    int(file_id),
                    sample_ms.clone(),
                    count(io.reads),
                    count(io.bytes_read),
                    ms(io.read_us),
                    count(io.writes),
                    count(io.bytes_written),
                    ms(io.write_us),
                    // The sum of the two as shown (each rounded down on its own).
                    count((io.read_us / 1000).saturating_add(io.write_us / 1000)),
                    count(f.size),
                    Value::Binary(f.handle.to_be_bytes().to_vec().into()),
                    int(0),
                    int(0),
                ],
            ));
        }
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    // By database; each database's files are in order already (the sort is stable).
    rows.sort_by_key(|&(id, _)| id);
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}
