//! Bulk load, as bcp, freebcp, pytds, tedious and go-mssqldb send it: a SQL batch
//! `INSERT BULK table (col type, …) [WITH (…)]` announces the target, then one BULK_LOAD
//! message carries COLMETADATA (the types the client sends), ROW/NBCROW tokens and DONE.
//!
//! The announcement is an ordinary statement of the batch: the session checks it (the
//! table and columns must exist: the client gets 208/207 then, as from SQL Server) and
//! keeps its target ([`Session::take_bulk_target`]); the BULK_LOAD message is decoded
//! whole and handed to [`Session::bulk_insert`], which
//! inserts the rows with INSERT's checks as one transaction (unless the client has one
//! open) and reports one row count.
//!
//! Deviations from SQL Server, for safety: CHECK and FOREIGN KEY constraints are always
//! checked (SQL Server skips them without CHECK_CONSTRAINTS and marks them untrusted),
//! and NULLs sent for columns with a DEFAULT stay NULL (SQL Server's KEEP_NULLS).

use tessera_errors::msg;
use tessera_semantics::output::OutputColumn;
use tessera_semantics::output::{Command, EnvChange, ResultSink};
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::BulkTarget;
use tessera_sql::{Session, SqlError};

use crate::codec::{bad, DecodeResult, Input, Reader};
use crate::packet::PacketInput;
use crate::tokens::{self, Version};
use crate::types::{code, read_type_info, read_value, TypeInfo};

/// The most rows one BULK_LOAD message may carry (its bytes are bounded by the
/// connection's message limit as well).
const MAX_ROWS: usize = 10_000_000;

/// What a BULK_LOAD message carried: the columns' types and the rows.
pub type Decoded = (Vec<TypeInfo>, Vec<Vec<Value>>);

/// Inserts the rows of a decoded BULK_LOAD message into `target`. Errors (the decoding's
/// too) go to `sink`.
pub fn load(session: &mut Session, target: &BulkTarget, decoded: DecodeResult<Decoded>, sink: &mut dyn ResultSink) {
    let (columns, rows) = match decoded {
        Ok(decoded) => decoded,
        Err(e) => {
            sink.message(&msg::BULK_LOAD_READ_FAILED.with(&[&e]));
            return;
        }
    };
    if columns.len() != target.columns.len() {
        sink.message(&msg::BULK_LOAD_COLUMN_MISMATCH.with(&[&columns.len(), &target.columns.len()]));
        return;
    }
    let mut typed: Vec<(String, SqlType)> =
        target.columns.iter().zip(&columns).map(|(name, ti)| (name.clone(), ti.sql_type())).collect();
    let mut rows = rows;
    let skipped = match &target.identity {
        Some(id) if !target.keep_identity => typed.iter().position(|(n, _)| n.eq_ignore_ascii_case(id)),
        _ => None,
    };
    if let Some(i) = skipped {
        typed.remove(i);
        for row in &mut rows {
            row.remove(i);
        }
    }
    if typed.is_empty() {
        // Only the identity column was sent: each row still makes one.
        let mut total = 0;
        for _ in 0..rows.len() {
            if session.execute(
                &format!("INSERT INTO {} DEFAULT VALUES", target.table),
                &mut ErrorsOnly { inner: sink, failed: false },
            ) {
                return;
            }
            total += 1;
        }
        sink.done(Some(total), Command::BulkInsert);
        return;
    }
    session.bulk_insert(&target.table, &typed, rows, target.keep_identity, sink);
}

/// How a client writes the table name of a text, ntext or image column in a bulk load's
/// COLMETADATA: SqlClient, mssql-jdbc, tedious and FreeTDS's bcp write one US_VARCHAR;
/// the server's own COLMETADATA form (TDS 7.2 on) is a part count and a US_VARCHAR each.
#[derive(Clone, Copy)]
enum TableName {
    Single,
    Parts,
}

/// A BULK_LOAD message in memory: COLMETADATA, then rows up to DONE or the message's
/// end. The table names of text columns are read in the form clients write, else in the
/// server's form.
pub fn decode(payload: &[u8], version: Version) -> DecodeResult<Decoded> {
    let whole = |form| {
        let mut r = Reader::new(payload);
        let columns = colmetadata(&mut r, version, form)?;
        let rows = rows(&mut r, &columns)?;
        Ok((columns, rows))
    };
    whole(TableName::Single).or_else(|e| whole(TableName::Parts).map_err(|_| e))
}

/// A BULK_LOAD message read as its packets arrive (long PLP values spooled, see
/// `spool`). The table names of text columns are read in the form clients write unless
/// what follows is not a row or DONE, then again in the server's form.
pub fn decode_from<R: std::io::Read>(input: &mut PacketInput<'_, R>, version: Version) -> DecodeResult<Decoded> {
    input.mark();
    let columns = match colmetadata(input, version, TableName::Single) {
        Ok(columns) if matches!(input.peek()?, None | Some(tokens::ROW | tokens::NBCROW | tokens::DONE)) => columns,
        first => {
            input.rewind();
            colmetadata(input, version, TableName::Parts).map_err(|e| first.err().unwrap_or(e))?
        }
    };
    input.unmark();
    let rows = rows(input, &columns)?;
    Ok((columns, rows))
}

/// COLMETADATA, the table names of text columns in `table_name`'s form.
fn colmetadata(r: &mut (impl Input + ?Sized), version: Version, table_name: TableName) -> DecodeResult<Vec<TypeInfo>> {
    if r.u8()? != tokens::COLMETADATA {
        return bad("the bulk load does not start with COLMETADATA");
    }
    let count = usize::from(r.u16()?);
    if count == 0 || count == 0xFFFF {
        return bad("the bulk load has no columns");
    }
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        if version.wide() {
            r.u32()?;
        } else {
            r.u16()?;
        }
        r.u16()?; // flags
        let ti = read_type_info(r)?;
        if is_text(&ti) {
            // The table name of text, ntext and image columns.
            let parts = match table_name {
                TableName::Single => 1,
                TableName::Parts => r.u8()?,
            };
            for _ in 0..parts {
                r.us_varchar()?;
            }
        }
        r.b_varchar()?;
        columns.push(ti);
    }
    Ok(columns)
}

/// The rows after COLMETADATA, up to DONE or the message's end.
fn rows(r: &mut (impl Input + ?Sized), columns: &[TypeInfo]) -> DecodeResult<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    loop {
        // FreeTDS (freebcp, pymssql's bcp) ends the message after its last row, without the
        // DONE that other clients send.
        let Some(token) = r.peek()? else { return Ok(rows) };
        r.u8()?;
        match token {
            tokens::ROW => {
                let row = columns.iter().map(|ti| read_row_value(r, ti)).collect::<DecodeResult<Vec<_>>>()?;
                rows.push(row);
            }
            tokens::NBCROW => {
                let bitmap = r.take(columns.len().div_ceil(8))?.to_vec();
                let mut row = Vec::with_capacity(columns.len());
                for (i, ti) in columns.iter().enumerate() {
                    let null = bitmap[i / 8] & (1 << (i % 8)) != 0;
                    row.push(if null { Value::Null } else { read_row_value(r, ti)? });
                }
                rows.push(row);
            }
            tokens::DONE => return Ok(rows),
            other => return bad(format!("unexpected token {other:#04x} in the bulk load")),
        }
        if rows.len() > MAX_ROWS {
            return bad(format!("more than {MAX_ROWS} rows in one bulk load message"));
        }
    }
}

fn is_text(ti: &TypeInfo) -> bool {
    matches!(ti.code, code::TEXT | code::NTEXT | code::IMAGE)
}

/// A value in a row: as a parameter value, except that text, ntext and image values carry
/// a text pointer and timestamp first (an empty pointer means NULL).
fn read_row_value(r: &mut (impl Input + ?Sized), ti: &TypeInfo) -> DecodeResult<Value> {
    if is_text(ti) {
        let pointer = usize::from(r.u8()?);
        if pointer == 0 {
            return Ok(Value::Null);
        }
        r.skip(pointer + 8)?;
    }
    read_value(r, ti)
}

/// Passes only messages through (the probe's empty result is not the client's).
struct ErrorsOnly<'s> {
    inner: &'s mut dyn ResultSink,
    failed: bool,
}

impl ResultSink for ErrorsOnly<'_> {
    fn columns(&mut self, _: &[OutputColumn]) {}
    fn row(&mut self, _: &[Value]) {}
    fn done(&mut self, _: Option<u64>, _: Command) {}
    fn message(&mut self, m: &SqlError) {
        self.failed |= m.severity > 10;
        self.inner.message(m);
    }
    fn env_change(&mut self, change: &EnvChange) {
        self.inner.env_change(change);
    }
    fn return_status(&mut self, _: i32) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A bulk load of one image column "c" of table "t" holding 0xABCD, the table name
    /// written by `name`.
    fn image_load(name: &[u8]) -> Vec<u8> {
        let mut m = vec![tokens::COLMETADATA, 1, 0];
        m.extend([0, 0, 0, 0, 0x09, 0]); // user type, flags (nullable)
        m.push(code::IMAGE);
        m.extend(0x7FFF_FFFFu32.to_le_bytes());
        m.extend(name);
        m.extend([1, b'c', 0]);
        m.push(tokens::ROW);
        m.push(16);
        m.extend([0xFF; 16 + 8]);
        m.extend(2u32.to_le_bytes());
        m.extend([0xAB, 0xCD]);
        m
    }

    #[test]
    fn a_text_columns_table_name_is_read_in_either_form() {
        // One US_VARCHAR (tedious, SqlClient, mssql-jdbc, FreeTDS's bcp) ...
        let (columns, rows) = decode(&image_load(&[1, 0, b't', 0]), Version::V7_4).unwrap();
        assert_eq!((columns.len(), rows.len()), (1, 1));
        assert_eq!(rows[0][0], Value::Binary(Arc::from(&[0xABu8, 0xCD][..])));
        // ... or a part count and its parts (the server's own COLMETADATA form).
        let (_, rows) = decode(&image_load(&[1, 1, 0, b't', 0]), Version::V7_4).unwrap();
        assert_eq!(rows[0][0], Value::Binary(Arc::from(&[0xABu8, 0xCD][..])));
    }
}
