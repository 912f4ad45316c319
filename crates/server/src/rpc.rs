//! Request bodies: ALL_HEADERS, SQL batch text, RPC calls with typed parameters, and
//! transaction manager requests.

use std::io;

use tessera_access::row::{self, MAX};
use tessera_sql::session::RpcParam;
use tessera_sql::types::{self, SqlType, Value};

use crate::packet::Reader;

fn bad(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Skips ALL_HEADERS (TDS 7.2+): a total length that includes itself.
pub fn skip_all_headers(r: &mut Reader, tds_version: u32) -> io::Result<()> {
    if tds_version < 0x7200_0000 {
        return Ok(());
    }
    let total = r.u32()? as usize;
    if total < 4 {
        return Err(bad("ALL_HEADERS shorter than its length"));
    }
    r.bytes(total - 4)?;
    Ok(())
}

/// A SQL batch's text.
pub fn batch_text(payload: &[u8], tds_version: u32) -> io::Result<String> {
    let mut r = Reader::new(payload);
    skip_all_headers(&mut r, tds_version)?;
    let n = r.remaining();
    if !n.is_multiple_of(2) {
        return Err(bad("SQL batch text is not UCS-2"));
    }
    r.ucs2(n / 2)
}

/// A decoded RPC request.
#[derive(Debug)]
pub struct RpcCall {
    pub procedure: String,
    pub params: Vec<RpcParam>,
}

/// Names of the procedures clients call by id.
fn proc_by_id(id: u16) -> io::Result<&'static str> {
    Ok(match id {
        10 => "sp_executesql",
        11 => "sp_prepare",
        12 => "sp_execute",
        13 => "sp_prepexec",
        15 => "sp_unprepare",
        id => return Err(bad(format!("procedure id {id} is not supported"))),
    })
}

/// Decodes an RPC request with one call (batched calls beyond the first are refused).
pub fn parse_rpc(payload: &[u8], tds_version: u32) -> io::Result<RpcCall> {
    let mut r = Reader::new(payload);
    skip_all_headers(&mut r, tds_version)?;
    let name_len = r.u16()?;
    let procedure = if name_len == 0xFFFF { proc_by_id(r.u16()?)?.to_string() } else { r.ucs2(usize::from(name_len))? };
    let _options = r.u16()?;
    let mut params = Vec::new();
    while r.remaining() > 0 {
        // A batch separator (0x80 / 0xFF) would start the next call.
        let name = r.b_varchar()?;
        let status = r.u8()?;
        let (ty, value) = typed_value(&mut r)?;
        // Some clients send parameter names without the '@'.
        let name = match name {
            n if n.is_empty() => None,
            n if n.starts_with('@') => Some(n),
            n => Some(format!("@{n}")),
        };
        params.push(RpcParam { name, value, ty, output: status & 0x01 != 0 });
    }
    Ok(RpcCall { procedure, params })
}

fn collation(r: &mut Reader) -> io::Result<()> {
    r.bytes(5).map(|_| ())
}

/// Reads a length-prefixed (1 byte) value; None when NULL.
fn byte_len_value<'a>(r: &mut Reader<'a>) -> io::Result<Option<&'a [u8]>> {
    let n = usize::from(r.u8()?);
    if n == 0 {
        return Ok(None);
    }
    r.bytes(n).map(Some)
}

/// Reads a PLP value (`(max)` types); None when NULL.
fn plp_value(r: &mut Reader) -> io::Result<Option<Vec<u8>>> {
    let total = r.u64()?;
    if total == u64::MAX {
        return Ok(None);
    }
    let mut out = Vec::new();
    loop {
        let chunk = r.u32()? as usize;
        if chunk == 0 {
            return Ok(Some(out));
        }
        if out.len() + chunk > crate::packet::MAX_MESSAGE_BYTES {
            return Err(bad("parameter value too large"));
        }
        out.extend_from_slice(r.bytes(chunk)?);
    }
}

fn le(bytes: &[u8]) -> i128 {
    let mut b = [0u8; 16];
    b[..bytes.len().min(16)].copy_from_slice(&bytes[..bytes.len().min(16)]);
    i128::from_le_bytes(b)
}

fn int_type(len: u8) -> io::Result<SqlType> {
    Ok(match len {
        1 => SqlType::TinyInt,
        2 => SqlType::SmallInt,
        4 => SqlType::Int,
        8 => SqlType::BigInt,
        n => return Err(bad(format!("integer of {n} bytes"))),
    })
}

fn int_value(t: &SqlType, b: &[u8]) -> row::Value {
    match t {
        SqlType::TinyInt => row::Value::TinyInt(b[0]),
        SqlType::SmallInt => row::Value::SmallInt(le(b) as i16),
        SqlType::Int => row::Value::Int(le(b) as i32),
        _ => row::Value::BigInt(le(b) as i64),
    }
}

fn time_ticks(b: &[u8], scale: u8) -> u64 {
    (le(b) as u64) * 10u64.pow(7 - u32::from(scale.min(7)))
}

/// A column's or parameter's TYPE_INFO: the wire type code, its declared length, and the
/// SQL type it stands for.
#[derive(Clone, Copy, Debug)]
pub struct TypeInfo {
    pub code: u8,
    /// Declared length for the length-prefixed types (0xFFFF = PLP, `(max)`).
    pub max: u16,
    pub ty: SqlType,
}

/// Reads a TYPE_INFO.
pub fn read_type_info(r: &mut Reader) -> io::Result<TypeInfo> {
    let code = r.u8()?;
    let fixed = |ty| Ok(TypeInfo { code, max: 0, ty });
    match code {
        0x30 => fixed(SqlType::TinyInt),
        0x34 => fixed(SqlType::SmallInt),
        0x38 => fixed(SqlType::Int),
        0x7F => fixed(SqlType::BigInt),
        0x32 => fixed(SqlType::Bit),
        0x3B => fixed(SqlType::Real),
        0x3E => fixed(SqlType::Float),
        0x3D => fixed(SqlType::DateTime),
        0x3A => fixed(SqlType::SmallDateTime),
        0x3C => fixed(SqlType::Money),
        0x7A => fixed(SqlType::SmallMoney),
        0x26 => {
            let len = r.u8()?;
            Ok(TypeInfo { code, max: u16::from(len), ty: int_type(len)? })
        }
        0x68 => {
            r.u8()?;
            fixed(SqlType::Bit)
        }
        0x6D => {
            let len = r.u8()?;
            fixed(if len == 4 { SqlType::Real } else { SqlType::Float })
        }
        0x6A | 0x6C => {
            let _len = r.u8()?;
            let precision = r.u8()?.clamp(1, 38);
            let scale = r.u8()?.min(precision);
            fixed(SqlType::Decimal { precision, scale })
        }
        0x6E => {
            let len = r.u8()?;
            fixed(if len == 4 { SqlType::SmallMoney } else { SqlType::Money })
        }
        0x6F => {
            let len = r.u8()?;
            fixed(if len == 4 { SqlType::SmallDateTime } else { SqlType::DateTime })
        }
        0x28 => fixed(SqlType::Date),
        0x29 => {
            let scale = r.u8()?.min(7);
            fixed(SqlType::Time { scale })
        }
        0x2A => {
            let scale = r.u8()?.min(7);
            fixed(SqlType::DateTime2 { scale })
        }
        0x24 => {
            r.u8()?;
            fixed(SqlType::UniqueIdentifier)
        }
        0xA7 | 0xAF | 0xE7 | 0xEF | 0xA5 | 0xAD => {
            let max = r.u16()?;
            if matches!(code, 0xA7 | 0xAF | 0xE7 | 0xEF) {
                collation(r)?;
            }
            let unicode = matches!(code, 0xE7 | 0xEF);
            let length = if max == 0xFFFF {
                MAX
            } else if unicode {
                (max / 2).max(1)
            } else {
                max.max(1)
            };
            let ty = match code {
                0xA7 => SqlType::VarChar(length),
                0xAF => SqlType::Char(length),
                0xE7 => SqlType::NVarChar(length),
                0xEF => SqlType::NChar(length),
                0xA5 => SqlType::VarBinary(length),
                _ => SqlType::Binary(length),
            };
            Ok(TypeInfo { code, max, ty })
        }
        other => Err(bad(format!("type 0x{other:02X} is not supported"))),
    }
}

/// Reads a value of a TYPE_INFO (TYPE_VARBYTE).
pub fn read_value(r: &mut Reader, info: &TypeInfo) -> io::Result<Value> {
    let ty = info.ty;
    let stored: Option<row::Value> = match info.code {
        0x30 => Some(row::Value::TinyInt(r.u8()?)),
        0x34 => Some(row::Value::SmallInt(r.u16()? as i16)),
        0x38 => Some(row::Value::Int(r.u32()? as i32)),
        0x7F => Some(row::Value::BigInt(r.u64()? as i64)),
        0x32 => Some(row::Value::Bit(r.u8()? != 0)),
        0x3B => Some(row::Value::Real(f32::from_bits(r.u32()?))),
        0x3E => Some(row::Value::Float(f64::from_bits(r.u64()?))),
        0x3D => Some(datetime_value(r.bytes(8)?)),
        0x3A => Some(datetime_value(r.bytes(4)?)),
        0x3C => Some(money_value(r.bytes(8)?)),
        0x7A => Some(money_value(r.bytes(4)?)),
        0xA7 | 0xAF | 0xE7 | 0xEF | 0xA5 | 0xAD => {
            let bytes = if info.max == 0xFFFF {
                plp_value(r)?
            } else {
                let n = r.u16()?;
                if n == 0xFFFF {
                    None
                } else {
                    Some(r.bytes(usize::from(n))?.to_vec())
                }
            };
            bytes.map(|b| {
                if matches!(info.code, 0xE7 | 0xEF) {
                    row::Value::Unicode(b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect())
                } else {
                    row::Value::Bytes(b)
                }
            })
        }
        code => byte_len_value(r)?.map(|b| match (code, ty) {
            (0x26, t) => int_value(&t, b),
            (0x68, _) => row::Value::Bit(b[0] != 0),
            (0x6D, _) if b.len() == 4 => row::Value::Real(f32::from_bits(le(b) as u32)),
            (0x6D, _) => row::Value::Float(f64::from_bits(le(b) as u64)),
            (0x6A | 0x6C, SqlType::Decimal { scale, .. }) => {
                let magnitude = le(&b[1..]);
                row::Value::Decimal { value: if b[0] == 1 { magnitude } else { -magnitude }, scale }
            }
            (0x6E, _) => money_value(b),
            (0x6F, _) => datetime_value(b),
            (0x28, _) => row::Value::Date(le(b) as i32),
            (0x29, SqlType::Time { scale }) => row::Value::Time(time_ticks(b, scale)),
            (0x2A, SqlType::DateTime2 { scale }) => {
                let (time, date) = b.split_at(b.len().saturating_sub(3));
                row::Value::DateTime2 { days: le(date) as i32, ticks: time_ticks(time, scale) }
            }
            _ => {
                let mut g = [0u8; 16];
                let n = b.len().min(16);
                g[..n].copy_from_slice(&b[..n]);
                row::Value::Guid(g)
            }
        }),
    };
    Ok(match stored {
        None => Value::Null,
        Some(v) => types::from_storage(v, &ty),
    })
}

fn money_value(b: &[u8]) -> row::Value {
    if b.len() == 4 {
        row::Value::Money(i64::from(le(b) as i32))
    } else {
        let high = le(&b[..4]) as i32;
        let low = le(&b[4..8]) as u32;
        row::Value::Money((i64::from(high) << 32) | i64::from(low))
    }
}

fn datetime_value(b: &[u8]) -> row::Value {
    if b.len() == 4 {
        row::Value::SmallDateTime { days: le(&b[..2]) as u16, minutes: le(&b[2..4]) as u16 }
    } else {
        row::Value::DateTime { days: le(&b[..4]) as i32, ticks: le(&b[4..8]) as u32 }
    }
}

/// TYPE_INFO followed by the value: the SQL type and value of a parameter.
fn typed_value(r: &mut Reader) -> io::Result<(SqlType, Value)> {
    let info = read_type_info(r)?;
    Ok((info.ty, read_value(r, &info)?))
}

/// A transaction manager request, as the T-SQL it stands for.
pub fn transaction_request(payload: &[u8], tds_version: u32) -> io::Result<String> {
    let mut r = Reader::new(payload);
    skip_all_headers(&mut r, tds_version)?;
    let kind = r.u16()?;
    let name = |r: &mut Reader| -> io::Result<String> {
        let n = if r.remaining() > 0 { r.b_varchar()? } else { String::new() };
        Ok(if n.is_empty() { String::new() } else { format!(" [{}]", n.replace(']', "]]")) })
    };
    Ok(match kind {
        5 => {
            let _isolation = r.u8()?;
            format!("BEGIN TRANSACTION{}", name(&mut r)?)
        }
        7 | 8 => {
            let n = name(&mut r)?;
            let flags = if r.remaining() > 0 { r.u8()? } else { 0 };
            let verb = if kind == 7 { "COMMIT" } else { "ROLLBACK" };
            let mut sql = format!("{verb} TRANSACTION{n}");
            if flags & 0x01 != 0 {
                sql.push_str("; BEGIN TRANSACTION");
            }
            sql
        }
        9 => format!("SAVE TRANSACTION{}", name(&mut r)?),
        other => return Err(bad(format!("transaction manager request {other} is not supported"))),
    })
}
