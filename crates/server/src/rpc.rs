//! RPC requests (MS-TDS 2.2.6.6): ALL_HEADERS, then one or more calls separated by a batch
//! flag byte (0xFF from TDS 7.2, 0x80 before). Each call names its procedure by text or by
//! a well-known id, carries option flags and typed parameters with a status byte
//! (0x01 = OUTPUT, 0x02 = default value). A table-valued parameter (type 0xF3) carries
//! its table type's name, its columns' types and its rows.
//!
//! Also ALL_HEADERS itself ([`skip_all_headers`]), which SQL batch and transaction manager
//! requests start with too.

use tessera_execution::runtime::TableRows;
use tessera_semantics::types::{SqlType, Value};

use crate::codec::{bad, ucs2_decode, DecodeResult, Input, Reader};
use crate::types::{read_type_info, read_value};

/// Well-known procedure ids.
pub fn proc_name(id: u16) -> Option<&'static str> {
    Some(match id {
        1 => "sp_cursor",
        2 => "sp_cursoropen",
        3 => "sp_cursorprepare",
        4 => "sp_cursorexecute",
        5 => "sp_cursorprepexec",
        6 => "sp_cursorunprepare",
        7 => "sp_cursorfetch",
        8 => "sp_cursoroption",
        9 => "sp_cursorclose",
        10 => "sp_executesql",
        11 => "sp_prepare",
        12 => "sp_execute",
        13 => "sp_prepexec",
        14 => "sp_prepexecrpc",
        15 => "sp_unprepare",
        _ => return None,
    })
}

/// Option flag fNoMetaData: the result sets of the call go without their metadata
/// (COLMETADATA in its "no metadata" form), which the client has from an earlier call.
pub const OPTION_NO_METADATA: u16 = 0x02;

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// With its '@', or empty for a positional parameter.
    pub name: String,
    pub output: bool,
    pub ty: SqlType,
    pub value: Value,
    /// A table-valued parameter's rows (its value NULL).
    pub table: Option<TableRows>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub procedure: String,
    pub options: u16,
    pub params: Vec<Param>,
}

/// What ALL_HEADERS said that the server uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Headers {
    /// The transaction descriptor the client believes is current.
    pub transaction: Option<u64>,
}

/// Skips ALL_HEADERS if present (TDS 7.2+; its first DWORD is its own total length).
pub fn skip_all_headers(r: &mut (impl Input + ?Sized)) -> DecodeResult<Headers> {
    let mut h = Headers::default();
    let total = r.u32()? as usize;
    if !(4..=ALL_HEADERS_MAX).contains(&total) {
        return bad(format!("ALL_HEADERS length {total} out of range"));
    }
    let mut hr = Reader::new(r.take(total - 4)?);
    while !hr.is_empty() {
        let len = hr.u32()? as usize;
        if len < 6 || len - 4 > hr.remaining() {
            return bad("header length out of range");
        }
        let mut one = Reader::new(hr.bytes(len - 4)?);
        if one.u16()? == 2 && one.remaining() >= 8 {
            h.transaction = Some(one.u64()?);
        }
    }
    Ok(h)
}

/// The longest ALL_HEADERS block accepted (its headers are a few dozen bytes).
const ALL_HEADERS_MAX: usize = 64 << 10;

/// Decodes the calls of an RPC request (after ALL_HEADERS).
pub fn parse_calls(r: &mut (impl Input + ?Sized)) -> DecodeResult<Vec<Call>> {
    let mut calls = Vec::new();
    loop {
        calls.push(parse_call(r)?);
        match r.peek()? {
            None => return Ok(calls),
            Some(0xFF | 0x80) => {
                r.u8()?;
                if r.peek()?.is_none() {
                    return Ok(calls);
                }
            }
            Some(b) => return bad(format!("unexpected byte {b:#04x} after an RPC call")),
        }
        if calls.len() >= 1024 {
            return bad("too many RPC calls in one request");
        }
    }
}

fn parse_call(r: &mut (impl Input + ?Sized)) -> DecodeResult<Call> {
    let n = r.u16()?;
    let procedure = if n == 0xFFFF {
        let id = r.u16()?;
        match proc_name(id) {
            Some(p) => p.to_string(),
            None => return bad(format!("unknown procedure id {id}")),
        }
    } else {
        ucs2_decode(r.take(usize::from(n) * 2)?)?
    };
    let options = r.u16()?;
    let mut params = Vec::new();
    while let Some(b) = r.peek()? {
        if b == 0xFF || b == 0x80 {
            break;
        }
        let name = r.b_varchar()?;
        let status = r.u8()?;
        let output = status & 0x01 != 0;
        if r.peek()? == Some(TVP_TYPE) {
            r.u8()?;
            let table = Some(read_table(r)?);
            params.push(Param { name, output, ty: SqlType::Int, value: Value::Null, table });
        } else {
            let ti = read_type_info(r)?;
            let value = read_value(r, &ti)?;
            params.push(Param { name, output, ty: ti.sql_type(), value, table: None });
        }
        if params.len() > 2100 {
            return bad("more than 2100 parameters");
        }
    }
    Ok(Call { procedure, options, params })
}

/// The type of a table-valued parameter.
const TVP_TYPE: u8 = 0xF3;

/// The most columns a table-valued parameter's type may have (SQL Server's limit for a
/// table).
const TVP_MAX_COLUMNS: u16 = 1024;

/// A table-valued parameter after its type byte (MS-TDS TVP_TYPE_INFO, then its rows):
/// the type's name (database, schema, name), the columns' metadata (count, or 0xFFFF for
/// none; each column's user type, flags — 0x0200: the column takes its default and sends
/// nothing —, TYPE_INFO and an empty name), optional ORDER_UNIQUE (0x10) and
/// COLUMN_ORDERING (0x11) tokens and an end token; then rows, each a row token (0x01) and
/// the values of the columns that send one, and an end token.
fn read_table(r: &mut (impl Input + ?Sized)) -> DecodeResult<TableRows> {
    let _database = r.b_varchar()?;
    let schema = r.b_varchar()?;
    let name = r.b_varchar()?;
    let count = r.u16()?;
    let mut columns = Vec::new();
    if count != 0xFFFF {
        if count > TVP_MAX_COLUMNS {
            return bad(format!("a table-valued parameter of {count} columns"));
        }
        for _ in 0..count {
            let _user_type = r.u32()?;
            let flags = r.u16()?;
            let ti = read_type_info(r)?;
            let _column_name = r.b_varchar()?;
            columns.push((ti, flags & 0x0200 != 0));
        }
    }
    loop {
        match r.u8()? {
            0x00 => break,
            0x10 => {
                for _ in 0..r.u16()? {
                    r.u16()?;
                    r.u8()?;
                }
            }
            0x11 => {
                for _ in 0..r.u16()? {
                    r.u16()?;
                }
            }
            b => return bad(format!("unexpected byte {b:#04x} in a table-valued parameter's metadata")),
        }
    }
    let mut rows = Vec::new();
    loop {
        match r.u8()? {
            0x00 => break,
            0x01 => {
                let mut row = Vec::with_capacity(columns.len());
                for (ti, default) in &columns {
                    if !default {
                        row.push(read_value(r, ti)?);
                    }
                }
                rows.push(row);
            }
            b => return bad(format!("unexpected byte {b:#04x} in a table-valued parameter's rows")),
        }
    }
    let type_name = if schema.is_empty() { name } else { format!("{schema}.{name}") };
    let columns = columns.iter().map(|(ti, default)| (!default).then(|| ti.sql_type())).collect();
    Ok(TableRows { type_name, columns, rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{BufMut, BytesMut};

    #[test]
    fn decodes_sp_executesql_by_id() {
        let mut b = BytesMut::new();
        // ALL_HEADERS with a transaction descriptor header.
        b.put_u32_le(22);
        b.put_u32_le(18);
        b.put_u16_le(2);
        b.put_u64_le(7);
        b.put_u32_le(1);
        b.put_u16_le(0xFFFF);
        b.put_u16_le(10);
        b.put_u16_le(0);
        // @stmt nvarchar(max)
        b.put_u8(0);
        b.put_u8(0);
        crate::types::put_type_info(&mut b, &SqlType::NVarChar(tessera_access::row::MAX));
        crate::types::put_value(&mut b, &SqlType::NVarChar(tessera_access::row::MAX), &Value::str("select @P1"));
        b.put_u8(2);
        b.put_slice(&[b'@', 0, b'x', 0]);
        b.put_u8(1);
        crate::types::put_type_info(&mut b, &SqlType::Int);
        crate::types::put_value(&mut b, &SqlType::Int, &Value::Int(42));
        let mut r = Reader::new(&b);
        let h = skip_all_headers(&mut r).unwrap();
        assert_eq!(h.transaction, Some(7));
        let calls = parse_calls(&mut r).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].procedure, "sp_executesql");
        assert_eq!(calls[0].params[0].value, Value::str("select @P1"));
        assert_eq!(
            calls[0].params[1],
            Param { name: "@x".into(), output: true, ty: SqlType::Int, value: Value::Int(42), table: None }
        );
        for cut in 0..b.len() {
            let mut r = Reader::new(&b[..cut]);
            let _ = skip_all_headers(&mut r).and_then(|_| parse_calls(&mut r));
        }
    }

    /// An sp_executesql call whose one parameter is a varbinary(max) of `value`, framed
    /// into packets of 4,096 bytes.
    fn framed_call(value: &[u8]) -> Vec<u8> {
        let mut b = BytesMut::new();
        b.put_u32_le(4);
        b.put_slice(&[0xFF, 0xFF, 10, 0, 0, 0, 0, 0]);
        let ty = SqlType::VarBinary(tessera_access::row::MAX);
        crate::types::put_type_info(&mut b, &ty);
        crate::types::put_value(&mut b, &ty, &Value::Binary(value.into()));
        let mut wire = BytesMut::new();
        crate::packet::frame(crate::packet::kind::RPC, &b, 4096, true, &mut 1, &mut wire);
        wire.to_vec()
    }

    /// Decodes a framed request as a session's thread does, with a message limit.
    fn decode_framed(wire: Vec<u8>, max_message: usize, spool: &crate::spool::Place) -> Result<Vec<Call>, String> {
        let mut r = std::io::Cursor::new(wire);
        let first = crate::packet::read_header_blocking(&mut r).unwrap().unwrap();
        let limits = crate::packet::Limits { max_packet: crate::packet::MAX_PACKET_SIZE + 1, max_message };
        let memory = crate::budget::Budget::new(u64::MAX);
        let mut input = crate::packet::PacketInput::start(&mut r, limits, first, spool.clone(), &memory).unwrap();
        crate::request::decode_rpc_from(&mut input, crate::tokens::Version::V7_4)
    }

    /// A value past 1 MiB goes to a spool file as its packets arrive, and does not count
    /// against the message limit; a shorter one in memory does. Spooled values count
    /// against the server's spool budget instead.
    #[test]
    fn long_values_are_spooled_as_they_arrive() {
        let dir = tempfile::tempdir().unwrap();
        let budget = crate::budget::Budget::new(4 << 20);
        let place = crate::spool::Place { dir: dir.path().to_path_buf(), budget: budget.clone() };
        let long: Vec<u8> = (0..(3 << 20) + 11).map(|i: u32| (i % 253) as u8).collect();
        let calls = decode_framed(framed_call(&long), 64 << 10, &place).unwrap();
        let Value::Large(l) = &calls[0].params[0].value else { panic!("not spooled") };
        assert_eq!(l.len_bytes(), long.len() as u64);
        assert_eq!(l.value().unwrap(), Value::Binary(long.clone().into()));
        let short = vec![7u8; 200 << 10];
        let refused = decode_framed(framed_call(&short), 64 << 10, &place).unwrap_err();
        assert!(refused.contains("message larger than"), "{refused}");
        let calls = decode_framed(framed_call(&short), 1 << 20, &place).unwrap();
        assert_eq!(calls[0].params[0].value, Value::Binary(short.into()));
        // The first value still holds its 3 MiB: a second does not fit beside it.
        assert_eq!(budget.used_bytes(), long.len() as u64);
        let over = decode_framed(framed_call(&long), 64 << 10, &place).unwrap_err();
        assert!(over.contains("spool limit of 4 MB"), "{over}");
        assert_eq!(budget.used_bytes(), long.len() as u64, "the refused value's bytes are given back");
    }
}
