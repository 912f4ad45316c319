//! Transaction manager requests (MS-TDS 2.2.6.9): begin, commit, rollback and save, which
//! pytds, go-mssqldb, tedious and FreeTDS-ODBC send instead of SQL text.
//!
//! A transaction's name is a B_VARBYTE: its length byte counts bytes, not characters
//! (SqlClient and tedious write it so; go-mssqldb and pytds send only empty names).
//!
//! Invariant: the session's transaction count (@@TRANCOUNT) stays the one truth. Each
//! request becomes the T-SQL it means ([`Request::statements`]), run through
//! `Session::execute`, so the ENVCHANGE 8/9/10 replies come from the same events a
//! `BEGIN TRAN` in a batch produces.

use crate::codec::{bad, DecodeResult, Input, Reader};

pub const TM_GET_DTC_ADDRESS: u16 = 0;
pub const TM_PROPAGATE_XACT: u16 = 1;
pub const TM_BEGIN_XACT: u16 = 5;
pub const TM_PROMOTE_XACT: u16 = 6;
pub const TM_COMMIT_XACT: u16 = 7;
pub const TM_ROLLBACK_XACT: u16 = 8;
pub const TM_SAVE_XACT: u16 = 9;

#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    Begin {
        isolation: u8,
        name: String,
    },
    Commit {
        name: String,
        begin_new: Option<(u8, String)>,
    },
    Rollback {
        name: String,
        begin_new: Option<(u8, String)>,
    },
    Save {
        name: String,
    },
    /// Distributed-transaction requests this server does not support.
    Unsupported(u16),
}

pub fn parse(r: &mut Reader) -> DecodeResult<Request> {
    let kind = r.u16()?;
    let begin_new = |r: &mut Reader| -> DecodeResult<Option<(u8, String)>> {
        if r.is_empty() {
            return Ok(None);
        }
        if r.u8()? & 0x01 == 0 {
            return Ok(None);
        }
        let iso = if r.is_empty() { 0 } else { r.u8()? };
        let name = if r.is_empty() { String::new() } else { r.b_varbyte_text()? };
        Ok(Some((iso, name)))
    };
    Ok(match kind {
        TM_BEGIN_XACT => {
            let isolation = r.u8()?;
            let name = if r.is_empty() { String::new() } else { r.b_varbyte_text()? };
            Request::Begin { isolation, name }
        }
        TM_COMMIT_XACT | TM_ROLLBACK_XACT => {
            let name = if r.is_empty() { String::new() } else { r.b_varbyte_text()? };
            let begin_new = begin_new(r)?;
            if kind == TM_COMMIT_XACT {
                Request::Commit { name, begin_new }
            } else {
                Request::Rollback { name, begin_new }
            }
        }
        TM_SAVE_XACT => Request::Save { name: r.b_varbyte_text()? },
        TM_GET_DTC_ADDRESS | TM_PROPAGATE_XACT | TM_PROMOTE_XACT => Request::Unsupported(kind),
        k => return bad(format!("unknown transaction manager request {k}")),
    })
}

fn isolation_sql(level: u8) -> Option<&'static str> {
    Some(match level {
        1 => "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
        2 => "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
        3 => "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        4 => "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        5 => "SET TRANSACTION ISOLATION LEVEL SNAPSHOT",
        _ => return None,
    })
}

fn quoted(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

fn begin(isolation: u8, name: &str, out: &mut Vec<String>) {
    if let Some(s) = isolation_sql(isolation) {
        out.push(s.to_string());
    }
    out.push(if name.is_empty() {
        "BEGIN TRANSACTION".to_string()
    } else {
        format!("BEGIN TRANSACTION {}", quoted(name))
    });
}

impl Request {
    /// The T-SQL batches this request runs, in order (each stops the rest if it fails).
    pub fn statements(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Request::Begin { isolation, name } => begin(*isolation, name, &mut out),
            Request::Commit { begin_new, .. } => {
                // A named COMMIT commits the outermost transaction like an unnamed one.
                out.push("COMMIT TRANSACTION".to_string());
                if let Some((iso, name)) = begin_new {
                    begin(*iso, name, &mut out);
                }
            }
            Request::Rollback { name, begin_new } => {
                out.push(if name.is_empty() {
                    "ROLLBACK TRANSACTION".to_string()
                } else {
                    format!("ROLLBACK TRANSACTION {}", quoted(name))
                });
                if let Some((iso, name)) = begin_new {
                    begin(*iso, name, &mut out);
                }
            }
            Request::Save { name } => out.push(format!("SAVE TRANSACTION {}", quoted(name))),
            Request::Unsupported(_) => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pytds_requests() {
        // TM_BEGIN_XACT, isolation 0, empty name.
        let mut r = Reader::new(&[5, 0, 0, 0]);
        assert_eq!(parse(&mut r).unwrap(), Request::Begin { isolation: 0, name: String::new() });
        // TM_COMMIT_XACT, empty name, begin a new one with isolation 2.
        let mut r = Reader::new(&[7, 0, 0, 1, 2, 0]);
        let req = parse(&mut r).unwrap();
        assert_eq!(req, Request::Commit { name: String::new(), begin_new: Some((2, String::new())) });
        assert_eq!(
            req.statements(),
            ["COMMIT TRANSACTION", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "BEGIN TRANSACTION"]
        );
        let mut r = Reader::new(&[8, 0, 0, 0]);
        assert_eq!(parse(&mut r).unwrap().statements(), ["ROLLBACK TRANSACTION"]);
        let mut r = Reader::new(&[9, 0]);
        assert!(parse(&mut r).is_err());
    }

    #[test]
    fn a_transaction_name_is_counted_in_bytes() {
        // TM_BEGIN_XACT, isolation 0, name "abc": 6 bytes of UCS-2 (what tedious sends).
        let mut r = Reader::new(&[5, 0, 0, 6, b'a', 0, b'b', 0, b'c', 0]);
        let req = parse(&mut r).unwrap();
        assert_eq!(req, Request::Begin { isolation: 0, name: "abc".into() });
        assert_eq!(req.statements(), ["BEGIN TRANSACTION [abc]"]);
        // TM_SAVE_XACT "sp"; an odd byte count is malformed.
        let mut r = Reader::new(&[9, 0, 4, b's', 0, b'p', 0]);
        assert_eq!(parse(&mut r).unwrap().statements(), ["SAVE TRANSACTION [sp]"]);
        let mut r = Reader::new(&[9, 0, 3, b's', 0, b'p']);
        assert!(parse(&mut r).is_err());
    }
}
