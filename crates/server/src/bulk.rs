//! Bulk load, as bcp, freebcp, pytds, tedious and go-mssqldb send it: a SQL batch
//! `INSERT BULK table (col type, …) [WITH (…)]` announces the target, then one BULK_LOAD
//! message carries COLMETADATA (the types the client sends), ROW/NBCROW tokens and DONE.
//!
//! The announcement is checked at once (the table and columns must exist: the client
//! gets 208/207 then, as from SQL Server) and remembered by the connection; the
//! BULK_LOAD message is decoded whole and handed to [`Session::bulk_insert`], which
//! inserts the rows with INSERT's checks as one transaction (unless the client has one
//! open) and reports one row count.
//!
//! Deviations from SQL Server, for safety: CHECK and FOREIGN KEY constraints are always
//! checked (SQL Server skips them without CHECK_CONSTRAINTS and marks them untrusted),
//! and NULLs sent for columns with a DEFAULT stay NULL (SQL Server's KEEP_NULLS).

use tessera_sql::bind::OutputColumn;
use tessera_sql::output::{Collected, EnvChange, ResultSink};
use tessera_sql::types::{SqlType, Value};
use tessera_sql::{Session, SqlError};
use tessera_syntax::lexer::{tokenize, Punct, TokenKind};

use crate::codec::{bad, DecodeResult, Reader};
use crate::tokens::{self, Version};
use crate::types::{code, read_type_info, read_value, TypeInfo};

/// The most rows one BULK_LOAD message may carry (its bytes are bounded by the
/// connection's message limit as well).
const MAX_ROWS: usize = 10_000_000;

/// What `INSERT BULK` announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkTarget {
    /// The table as the client wrote it (quoted parts kept).
    pub table: String,
    /// The columns the rows fill, in order.
    pub columns: Vec<String>,
    /// KEEPIDENTITY / KEEP_IDENTITY: the identity values sent are inserted.
    pub keep_identity: bool,
    /// The table's identity column, found when the target is checked. Without
    /// KEEPIDENTITY the values sent for it are dropped and the table makes its own.
    pub identity: Option<String>,
}

/// If `text` is an `INSERT BULK` statement, what it announces (or why it is malformed).
pub fn parse_insert_bulk(text: &str) -> Option<Result<BulkTarget, SqlError>> {
    let tokens = tokenize(text).ok()?;
    if !(tokens.first()?.is_word("insert") && tokens.get(1)?.is_word("bulk")) {
        return None;
    }
    let syntax = |near: &str| SqlError::new(102, format!("Incorrect syntax near '{near}'.")).with_severity(15);
    let mut i = 2;
    // The table: one to four parts, `db..t` allowed.
    let mut table = String::new();
    loop {
        match &tokens[i].kind {
            TokenKind::Word | TokenKind::QuotedIdent(_) => {
                table.push_str(tokens[i].text);
                i += 1;
            }
            _ if tokens[i].is_punct(Punct::Dot) => {}
            _ => return Some(Err(syntax(tokens[i].display_text()))),
        }
        if !tokens[i].is_punct(Punct::Dot) {
            break;
        }
        table.push('.');
        i += 1;
    }
    if !tokens[i].is_punct(Punct::LParen) {
        return Some(Err(syntax(tokens[i].display_text())));
    }
    i += 1;
    let mut columns = Vec::new();
    loop {
        let name = match &tokens[i].kind {
            TokenKind::QuotedIdent(name) => name.clone(),
            TokenKind::Word => tokens[i].text.to_string(),
            _ => return Some(Err(syntax(tokens[i].display_text()))),
        };
        columns.push(name);
        // Skip the type (and COLLATE …) up to the next top-level comma or parenthesis.
        let mut depth = 0;
        i += 1;
        loop {
            let t = &tokens[i];
            if t.kind == TokenKind::Eof {
                return Some(Err(syntax(tokens[i - 1].display_text())));
            }
            if t.is_punct(Punct::LParen) {
                depth += 1;
            } else if t.is_punct(Punct::RParen) {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else if t.is_punct(Punct::Comma) && depth == 0 {
                break;
            }
            i += 1;
        }
        i += 1;
        if tokens[i - 1].is_punct(Punct::RParen) {
            break;
        }
    }
    let keep_identity = tokens[i..].iter().any(|t| t.is_word("keepidentity") || t.is_word("keep_identity"));
    Some(Ok(BulkTarget { table, columns, keep_identity, identity: None }))
}

/// Checks that the announced table and columns exist (errors go to `sink`, the client) and
/// finds the table's identity column. Returns true if the target is good.
pub fn check_target(session: &mut Session, target: &mut BulkTarget, sink: &mut dyn ResultSink) -> bool {
    let columns: Vec<String> = target.columns.iter().map(|c| format!("[{}]", c.replace(']', "]]"))).collect();
    let probe = format!("SELECT TOP 0 {} FROM {}", columns.join(", "), target.table);
    let mut errors = ErrorsOnly { inner: sink, failed: false };
    session.execute(&probe, &mut errors);
    if errors.failed {
        return false;
    }
    let find = format!(
        "SELECT name FROM sys.columns WHERE object_id = OBJECT_ID(N'{}') AND is_identity = 1",
        target.table.replace('\'', "''")
    );
    let mut found = Collected::default();
    session.execute(&find, &mut found);
    target.identity = found.result_sets.first().and_then(|(_, rows)| rows.first()).and_then(|r| match r.first() {
        Some(Value::Str(name)) => Some(name.to_string()),
        _ => None,
    });
    true
}

/// Decodes a BULK_LOAD message and inserts its rows into `target`. Errors go to `sink`.
pub fn load(session: &mut Session, target: &BulkTarget, payload: &[u8], version: Version, sink: &mut dyn ResultSink) {
    let (columns, rows) = match decode(payload, version) {
        Ok(decoded) => decoded,
        Err(e) => {
            sink.message(&SqlError::new(4804, format!("The bulk load data could not be read: {e}.")).with_severity(16));
            return;
        }
    };
    if columns.len() != target.columns.len() {
        let message =
            format!("The bulk load sent {} columns; INSERT BULK named {}.", columns.len(), target.columns.len());
        sink.message(&SqlError::new(4822, message).with_severity(16));
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
        sink.done(Some(total), false);
        return;
    }
    session.bulk_insert(&target.table, &typed, rows, target.keep_identity, sink);
}

/// A BULK_LOAD message: COLMETADATA, then rows up to DONE or the message's end.
pub fn decode(payload: &[u8], version: Version) -> DecodeResult<(Vec<TypeInfo>, Vec<Vec<Value>>)> {
    let mut r = Reader::new(payload);
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
        let ti = read_type_info(&mut r)?;
        if is_text(&ti) {
            // The table name of text, ntext and image columns.
            let parts = r.u8()?;
            for _ in 0..parts {
                r.us_varchar()?;
            }
        }
        r.b_varchar()?;
        columns.push(ti);
    }
    let mut rows = Vec::new();
    loop {
        // FreeTDS (freebcp, pymssql's bcp) ends the message after its last row, without the
        // DONE that other clients send.
        if r.is_empty() {
            return Ok((columns, rows));
        }
        match r.u8()? {
            tokens::ROW => {
                let row = columns.iter().map(|ti| read_row_value(&mut r, ti)).collect::<DecodeResult<Vec<_>>>()?;
                rows.push(row);
            }
            tokens::NBCROW => {
                let bitmap = r.bytes(count.div_ceil(8))?;
                let mut row = Vec::with_capacity(count);
                for (i, ti) in columns.iter().enumerate() {
                    let null = bitmap[i / 8] & (1 << (i % 8)) != 0;
                    row.push(if null { Value::Null } else { read_row_value(&mut r, ti)? });
                }
                rows.push(row);
            }
            tokens::DONE => return Ok((columns, rows)),
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
fn read_row_value(r: &mut Reader, ti: &TypeInfo) -> DecodeResult<Value> {
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
    fn done(&mut self, _: Option<u64>, _: bool) {}
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

    #[test]
    fn insert_bulk_statements() {
        let t = parse_insert_bulk("insert bulk [dbo].[t] ([a] int, [b] nvarchar(10) COLLATE Latin1_General_CI_AS, c decimal(10, 2)) with (TABLOCK, KEEP_NULLS)")
            .unwrap()
            .unwrap();
        assert_eq!(t.table, "[dbo].[t]");
        assert_eq!(t.columns, ["a", "b", "c"]);
        assert!(!t.keep_identity);
        let t = parse_insert_bulk("INSERT BULK db..t (id int) WITH (KEEPIDENTITY)").unwrap().unwrap();
        assert_eq!((t.table.as_str(), t.keep_identity), ("db..t", true));
        assert!(parse_insert_bulk("insert into t values (1)").is_none());
        assert!(parse_insert_bulk("insert bulk t").unwrap().is_err());
        assert!(parse_insert_bulk("insert bulk t (a int").unwrap().is_err());
    }
}
