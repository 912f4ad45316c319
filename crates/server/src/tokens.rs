//! Encoders for the response tokens the server sends (MS-TDS 2.2.7): LOGINACK, ENVCHANGE,
//! INFO, ERROR, COLMETADATA (with TABNAME and COLINFO for server cursors), ROW, NBCROW,
//! DONE/DONEPROC/DONEINPROC, RETURNSTATUS and RETURNVALUE.
//!
//! Invariant: every token with a length field is written with its exact length (clients
//! such as pytds and FreeTDS derive field sizes from it). Differences between TDS
//! versions are keyed on [`Version`]: 7.1 uses 4-byte DONE counts, 2-byte user types and
//! 2-byte line numbers; 7.2 and later use 8, 4 and 4 bytes.

use bytes::{BufMut, BytesMut};
use tessera_semantics::output::{ColumnOrigins, Command, OutputColumn, StoredRow};
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::SqlError;

use crate::codec::{put_b_varchar, put_us_varchar, ucs2_len};
use crate::types::{put_null, put_stored_value, put_type_info, put_value, COLLATION};

pub const COLMETADATA: u8 = 0x81;
pub const TABNAME: u8 = 0xA4;
pub const COLINFO: u8 = 0xA5;
pub const ORDER: u8 = 0xA9;
pub const ERROR: u8 = 0xAA;
pub const INFO: u8 = 0xAB;
pub const RETURNVALUE: u8 = 0xAC;
pub const LOGINACK: u8 = 0xAD;
pub const RETURNSTATUS: u8 = 0x79;
pub const ROW: u8 = 0xD1;
pub const NBCROW: u8 = 0xD2;
pub const ENVCHANGE: u8 = 0xE3;
pub const DONE: u8 = 0xFD;
pub const DONEPROC: u8 = 0xFE;
pub const DONEINPROC: u8 = 0xFF;

/// DONE status bits.
pub mod done {
    pub const FINAL: u16 = 0x00;
    pub const MORE: u16 = 0x01;
    pub const ERROR: u16 = 0x02;
    pub const INXACT: u16 = 0x04;
    pub const COUNT: u16 = 0x10;
    pub const ATTN: u16 = 0x20;
    pub const SRVERROR: u16 = 0x100;
}

/// A negotiated TDS version, as LOGIN7 and LOGINACK carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32);

impl Version {
    pub const V7_1: Version = Version(0x7100_0001);
    pub const V7_2: Version = Version(0x7209_0002);
    pub const V7_3A: Version = Version(0x730A_0003);
    pub const V7_3B: Version = Version(0x730B_0003);
    pub const V7_4: Version = Version(0x7400_0004);

    /// The version the server acknowledges for what a client asked: one of the values
    /// clients know (tedious rejects any other), never above 7.4. None below 7.1.
    pub fn negotiate(requested: u32) -> Option<Version> {
        // Clients send the LOGIN7 field little-endian; 7.0 is 0x70000000, 7.1 0x71000001.
        let major = requested >> 24;
        Some(match requested {
            // TDS 8.0 (0x08000000, "strict" encryption) logs in as 7.4.
            r if r >= 0x7400_0004 || major > 0x74 || major == 0x08 => Version::V7_4,
            r if r >= 0x730B_0003 => Version::V7_3B,
            r if r >= 0x730A_0003 => Version::V7_3A,
            r if r >= 0x7209_0002 => Version::V7_2,
            r if r >= 0x7100_0000 => Version::V7_1,
            _ => return None,
        })
    }

    pub fn wide(self) -> bool {
        self >= Version::V7_2
    }
}

/// Writes a token whose body has a two-byte length, filling in the length afterwards.
fn with_len16(out: &mut BytesMut, token: u8, body: impl FnOnce(&mut BytesMut)) {
    out.put_u8(token);
    let at = out.len();
    out.put_u16_le(0);
    body(out);
    let len = (out.len() - at - 2).min(0xFFFF) as u16;
    out[at..at + 2].copy_from_slice(&len.to_le_bytes());
}

pub fn login_ack(out: &mut BytesMut, version: Version, program: &str, prog_version: [u8; 4]) {
    with_len16(out, LOGINACK, |out| {
        out.put_u8(1); // SQL_TSQL
        out.put_u32(version.0); // big-endian on the wire
        put_b_varchar(out, program);
        out.put_slice(&prog_version);
    });
}

/// ENVCHANGE with B_VARCHAR values (database 1, language 2, packet size 4).
pub fn env_change_text(out: &mut BytesMut, kind: u8, new: &str, old: &str) {
    with_len16(out, ENVCHANGE, |out| {
        out.put_u8(kind);
        put_b_varchar(out, new);
        put_b_varchar(out, old);
    });
}

pub const ENV_DATABASE: u8 = 1;
pub const ENV_LANGUAGE: u8 = 2;
pub const ENV_PACKET_SIZE: u8 = 4;
pub const ENV_COLLATION: u8 = 7;
pub const ENV_BEGIN_TRAN: u8 = 8;
pub const ENV_COMMIT_TRAN: u8 = 9;
pub const ENV_ROLLBACK_TRAN: u8 = 10;
pub const ENV_RESET_ACK: u8 = 18;
pub const ENV_ROUTING: u8 = 20;

/// ENVCHANGE 20 (TDS 7.4): the client is to close this connection and log in again at
/// `server`:`port` over TCP (read-only routing, Azure's redirect). The new value is
/// RoutingDataValueLength, protocol 0 (TCP), the port and the server as US_VARCHAR;
/// the old value is empty.
pub fn env_change_routing(out: &mut BytesMut, server: &str, port: u16) {
    with_len16(out, ENVCHANGE, |out| {
        out.put_u8(ENV_ROUTING);
        let name: Vec<u16> = server.encode_utf16().collect();
        out.put_u16_le((1 + 2 + 2 + 2 * name.len()) as u16);
        out.put_u8(0);
        out.put_u16_le(port);
        out.put_u16_le(name.len() as u16);
        for unit in name {
            out.put_u16_le(unit);
        }
        out.put_u16_le(0);
    });
}

/// ENVCHANGE 7: the SQL collation (new value SQL_Latin1_General_CP1_CI_AS, old empty).
pub fn env_change_collation(out: &mut BytesMut) {
    with_len16(out, ENVCHANGE, |out| {
        out.put_u8(ENV_COLLATION);
        out.put_u8(COLLATION.len() as u8);
        out.put_slice(&COLLATION);
        out.put_u8(0);
    });
}

/// ENVCHANGE 8/9/10: begin (new descriptor), commit or rollback (old descriptor).
pub fn env_change_transaction(out: &mut BytesMut, kind: u8, descriptor: u64) {
    with_len16(out, ENVCHANGE, |out| {
        out.put_u8(kind);
        if kind == ENV_BEGIN_TRAN {
            out.put_u8(8);
            out.put_u64_le(descriptor);
            out.put_u8(0);
        } else {
            out.put_u8(0);
            out.put_u8(8);
            out.put_u64_le(descriptor);
        }
    });
}

/// ENVCHANGE 18: acknowledges RESETCONNECTION.
pub fn env_change_reset_ack(out: &mut BytesMut) {
    with_len16(out, ENVCHANGE, |out| {
        out.put_u8(ENV_RESET_ACK);
        out.put_u8(0);
        out.put_u8(0);
    });
}

/// ERROR (severity > 10) or INFO. Severity 10 goes as class 0, as SQL Server sends it
/// ("for compatibility", its documentation says): clients that treat a class of 6 and up
/// as an error (FreeTDS's dblib, pymssql) take it for the warning it is.
pub fn message(out: &mut BytesMut, version: Version, m: &SqlError, server: &str) {
    let token = if m.severity > 10 { ERROR } else { INFO };
    let class = if m.severity == 10 { 0 } else { m.severity };
    with_len16(out, token, |out| {
        out.put_i32_le(m.number);
        out.put_u8(m.state);
        out.put_u8(class);
        // Keep the whole token under the two-byte length: at most 30 000 characters.
        let text: String =
            if ucs2_len(&m.message) > 30_000 { m.message.chars().take(15_000).collect() } else { m.message.clone() };
        put_us_varchar(out, &text);
        put_b_varchar(out, server);
        put_b_varchar(out, m.procedure.as_deref().unwrap_or(""));
        if version.wide() {
            out.put_u32_le(m.line);
        } else {
            out.put_u16_le(m.line.min(0xFFFF) as u16);
        }
    });
}

fn put_user_type(out: &mut BytesMut, version: Version) {
    if version.wide() {
        out.put_u32_le(0);
    } else {
        out.put_u16_le(0);
    }
}

/// COLMETADATA for a result set (an empty list writes the "no metadata" form).
/// ORDER: the result columns (1-based) the rows are sorted by.
pub fn order(out: &mut BytesMut, columns: &[u16]) {
    debug_assert!(!columns.is_empty() && columns.len() < 0x7FFF);
    out.put_u8(ORDER);
    out.put_u16_le((columns.len() * 2) as u16);
    for c in columns {
        out.put_u16_le(*c);
    }
}

pub fn col_metadata(out: &mut BytesMut, version: Version, columns: &[OutputColumn]) {
    put_col_metadata(out, version, columns, |_| 0);
}

/// COLMETADATA of a server cursor's result, its hidden and key columns flagged (fHidden,
/// fKey), then TABNAME and COLINFO saying where each column comes from.
pub fn cursor_col_metadata(out: &mut BytesMut, version: Version, columns: &[OutputColumn], origins: &ColumnOrigins) {
    put_col_metadata(out, version, columns, |i| match origins.columns.get(i) {
        Some(o) => (if o.hidden { 0x2000 } else { 0 }) | (if o.key { 0x4000 } else { 0 }),
        None => 0,
    });
    with_len16(out, TABNAME, |out| {
        for table in &origins.tables {
            out.put_u8(table.len().min(4) as u8);
            for part in table.iter().take(4) {
                put_us_varchar(out, part);
            }
        }
    });
    with_len16(out, COLINFO, |out| {
        for (i, o) in origins.columns.iter().enumerate() {
            out.put_u8((i + 1) as u8);
            out.put_u8(o.table);
            let status = (if o.expression { 0x04 } else { 0 })
                | (if o.key { 0x08 } else { 0 })
                | (if o.hidden { 0x10 } else { 0 })
                | (if o.base_name.is_some() { 0x20 } else { 0 });
            out.put_u8(status);
            if let Some(name) = &o.base_name {
                put_b_varchar(out, name);
            }
        }
    });
}

/// COLMETADATA (an empty list writes the "no metadata" form), each column's flags
/// (fNullable and updateable "unknown") with `extra(i)`'s.
fn put_col_metadata(out: &mut BytesMut, version: Version, columns: &[OutputColumn], extra: impl Fn(usize) -> u16) {
    out.put_u8(COLMETADATA);
    if columns.is_empty() {
        out.put_u16_le(0xFFFF);
        return;
    }
    out.put_u16_le(columns.len().min(0xFFFE) as u16);
    for (i, c) in columns.iter().enumerate() {
        put_user_type(out, version);
        // fNullable 0x0001; updateable "unknown" 0x0008.
        let flags: u16 = if c.nullable { 0x0001 } else { 0 } | 0x0008 | extra(i);
        out.put_u16_le(flags);
        put_type_info(out, &c.ty);
        put_b_varchar(out, &c.name);
    }
}

/// ROW, or NBCROW when that is shorter (a row with at least one NULL).
pub fn row(out: &mut BytesMut, types: &[SqlType], values: &[Value]) {
    put_row(out, types.len(), |i| values[i].is_null(), |out, i| put_value(out, &types[i], &values[i]));
}

/// ROW or NBCROW for a row in its stored form: each value written from its stored bytes.
pub fn stored_row(out: &mut BytesMut, row: &StoredRow<'_>) {
    put_row(
        out,
        row.len(),
        |i| row.column(i).1.is_none(),
        |out, i| match row.column(i) {
            (ty, Some(bytes)) => put_stored_value(out, ty, bytes),
            (ty, None) => put_null(out, ty),
        },
    );
}

/// A row of `width` columns: NBCROW when its NULL bitmap is no longer than the NULLs it
/// spares (each NULL column then written only as its bit), else ROW with every column.
fn put_row(
    out: &mut BytesMut,
    width: usize,
    is_null: impl Fn(usize) -> bool,
    mut put_column: impl FnMut(&mut BytesMut, usize),
) {
    let compressed = row_start(out, width, &is_null);
    for i in 0..width {
        if !(compressed && is_null(i)) {
            put_column(out, i);
        }
    }
}

/// The token that starts a row of `width` columns (ROW, or NBCROW with its NULL bitmap,
/// as [`put_row`] chooses); true for NBCROW, whose NULL columns are then left out.
pub fn row_start(out: &mut BytesMut, width: usize, is_null: impl Fn(usize) -> bool) -> bool {
    let nulls = (0..width).filter(|&i| is_null(i)).count();
    let bitmap_len = width.div_ceil(8);
    let compressed = nulls > 0 && nulls >= bitmap_len;
    if compressed {
        out.put_u8(NBCROW);
        let at = out.len();
        out.put_bytes(0, bitmap_len);
        for i in (0..width).filter(|&i| is_null(i)) {
            out[at + i / 8] |= 1 << (i % 8);
        }
    } else {
        out.put_u8(ROW);
    }
    compressed
}

/// The CurCmd of the DONEPROC that ends a procedure call.
pub const CUR_CMD_EXECUTE: u16 = 0xE0;

/// The CurCmd of a DONE that ends `command`: MS-TDS leaves the values to SQL Server;
/// these are the ones it sends, and the Microsoft JDBC driver reads them.
pub fn cur_cmd(command: Command) -> u16 {
    match command {
        Command::Select => 0xC1,
        Command::SelectInto => 0xC2,
        Command::Insert => 0xC3,
        Command::Delete => 0xC4,
        Command::Update => 0xC5,
        Command::Merge => 0x117,
        Command::BulkInsert => 0xF0,
        Command::CreateTable => 0xC6,
        Command::DropTable => 0xC7,
        Command::CreateIndex => 0xC8,
        Command::DropIndex => 0xC9,
        Command::CreateDatabase => 0xCB,
        Command::DropDatabase => 0xCC,
        Command::Grant => 0xCD,
        Command::Revoke => 0xCE,
        Command::Deny => 0x99,
        Command::CreateView => 0xCF,
        Command::DropView => 0xD0,
        Command::AlterDatabase => 0xD7,
        Command::AlterTable => 0xD8,
        Command::CreateProcedure => 0xDE,
        Command::DropProcedure => 0xDF,
        Command::CreateFunction => 0xB2,
        Command::DropFunction => 0xB3,
        Command::DropSchema => 0xB0,
        Command::CreateSchema => 0x14A,
        Command::CreateUser => 0x13B,
        Command::AlterUser => 0x13C,
        Command::DropUser => 0x13D,
        Command::CreateRole => 0x13F,
        Command::AlterRole => 0x140,
        Command::DropRole => 0x141,
        Command::CreateLogin => 0x145,
        Command::AlterLogin => 0x146,
        Command::DropLogin => 0x147,
        Command::OtherDdl => 0xB6,
    }
}

/// DONE, DONEPROC or DONEINPROC.
pub fn done(out: &mut BytesMut, version: Version, token: u8, status: u16, cur_cmd: u16, count: u64) {
    out.put_u8(token);
    out.put_u16_le(status);
    out.put_u16_le(cur_cmd);
    if version.wide() {
        out.put_u64_le(count);
    } else {
        out.put_u32_le(count.min(u64::from(u32::MAX)) as u32);
    }
}

pub fn return_status(out: &mut BytesMut, status: i32) {
    out.put_u8(RETURNSTATUS);
    out.put_i32_le(status);
}

/// RETURNVALUE for an OUTPUT parameter (`name` with its '@').
pub fn return_value(out: &mut BytesMut, version: Version, ordinal: u16, name: &str, ty: &SqlType, value: &Value) {
    out.put_u8(RETURNVALUE);
    out.put_u16_le(ordinal);
    put_b_varchar(out, name);
    out.put_u8(0x01); // output parameter
    put_user_type(out, version);
    out.put_u16_le(0x0001 | 0x0008);
    put_type_info(out, ty);
    put_value(out, ty, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_ack_matches_golden_bytes() {
        // go-mssqldb's tds_login_test: AD 32 00 | 01 | 74 00 00 04 | 14 "Microsoft SQL Server" | 0C 00 07 D0
        let mut out = BytesMut::new();
        login_ack(&mut out, Version::V7_4, "Microsoft SQL Server", [0x0C, 0x00, 0x07, 0xD0]);
        assert_eq!(&out[..8], &[0xAD, 0x32, 0x00, 0x01, 0x74, 0x00, 0x00, 0x04]);
        assert_eq!(out.len(), 3 + 0x32);
        let mut d = BytesMut::new();
        done(&mut d, Version::V7_4, DONE, 0, 0, 0);
        assert_eq!(&d[..], &[0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    /// A stored row written from its bytes is, byte for byte, the ROW or NBCROW its
    /// decoded values give: every type, NULLs in any number, columns in any order.
    #[test]
    fn stored_rows_encode_as_their_values_do() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        use tessera_access::row::{self, RowSchema, Value as V, MAX};
        use tessera_execution::encoding::from_storage;
        use SqlType as T;
        let units = |s: &str| V::Unicode(s.encode_utf16().collect());
        let samples: Vec<(SqlType, Vec<V>)> = vec![
            (T::Bit, vec![V::Bit(true), V::Bit(false)]),
            (T::TinyInt, vec![V::TinyInt(0), V::TinyInt(255)]),
            (T::SmallInt, vec![V::SmallInt(-32768), V::SmallInt(7)]),
            (T::Int, vec![V::Int(i32::MIN), V::Int(42)]),
            (T::BigInt, vec![V::BigInt(i64::MIN), V::BigInt(1)]),
            (T::Real, vec![V::Real(1.5), V::Real(-3.25e30)]),
            (T::Float, vec![V::Float(-2.25e100), V::Float(0.1)]),
            (T::Decimal { precision: 5, scale: 2 }, vec![V::Decimal { value: -12345, scale: 2 }]),
            (T::Decimal { precision: 19, scale: 0 }, vec![V::Decimal { value: 9_999_999_999_999_999_999, scale: 0 }]),
            (T::Decimal { precision: 38, scale: 10 }, vec![V::Decimal { value: -(10i128.pow(37)) + 7, scale: 10 }]),
            (T::Money, vec![V::Money(i64::MIN), V::Money(-1), V::Money(123_456_789_012)]),
            (T::SmallMoney, vec![V::Money(-2_147_483_648), V::Money(5)]),
            (T::Char(4), vec![V::Bytes(b"ab  ".to_vec()), V::Bytes(vec![0xE9, 0x80, b'x', b' '])]),
            (
                T::VarChar(10),
                vec![V::Bytes(b"plain".to_vec()), V::Bytes(vec![b'c', b'a', b'f', 0xE9]), V::Bytes(Vec::new())],
            ),
            (T::VarChar(MAX), vec![V::Bytes(vec![b'y'; 3000])]),
            (T::NChar(3), vec![units("\u{4e2d}  ")]),
            (T::NVarChar(10), vec![units("caf\u{e9} \u{1f600}"), units("")]),
            (T::NVarChar(MAX), vec![units(&"z".repeat(1500))]),
            (T::Binary(3), vec![V::Bytes(vec![0, 1, 255])]),
            (T::VarBinary(4), vec![V::Bytes(vec![9]), V::Bytes(Vec::new())]),
            (T::VarBinary(MAX), vec![V::Bytes(vec![7; 2000])]),
            (T::Date, vec![V::Date(0), V::Date(738_000)]),
            (T::Time { scale: 0 }, vec![V::Time(863_990_000_000)]),
            (T::Time { scale: 7 }, vec![V::Time(123_456_789)]),
            (T::DateTime2 { scale: 3 }, vec![V::DateTime2 { days: 738_000, ticks: 456_789_000 }]),
            (T::DateTimeOffset { scale: 5 }, vec![V::DateTimeOffset { days: 1, ticks: 100, offset: -840 }]),
            (
                T::DateTime,
                vec![V::DateTime { days: -53_690, ticks: 25_919_999 }, V::DateTime { days: 44_000, ticks: 0 }],
            ),
            (T::SmallDateTime, vec![V::SmallDateTime { days: 65_535, minutes: 1439 }]),
            (T::UniqueIdentifier, vec![V::Guid(*b"0123456789abcdef")]),
        ];
        let mut rng = StdRng::seed_from_u64(19);
        let mut encoded = 0;
        for round in 0..2000 {
            let width = rng.random_range(1..=12);
            let picks: Vec<usize> = (0..width).map(|_| rng.random_range(0..samples.len())).collect();
            let schema = RowSchema::new(picks.iter().map(|&k| samples[k].0).collect()).unwrap();
            let null_odds = [0.0, 0.2, 0.8][round % 3];
            let stored: Vec<V> = picks
                .iter()
                .map(|&k| {
                    let pool = &samples[k].1;
                    if rng.random_bool(null_odds) {
                        V::Null
                    } else {
                        pool[rng.random_range(0..pool.len())].clone()
                    }
                })
                .collect();
            // A row past the largest row size is left out.
            let Ok(bytes) = row::encode(&schema, &stored) else { continue };
            encoded += 1;
            // Some of the row's columns, in some order, some twice.
            let columns: Vec<usize> =
                (0..rng.random_range(1..=width + 2)).map(|_| rng.random_range(0..width)).collect();
            let types: Vec<SqlType> = columns.iter().map(|&c| schema.columns()[c]).collect();
            let mut spans = Vec::new();
            row::locate(&schema, &bytes, &columns, &mut spans).unwrap();
            let (mut from_bytes, mut from_values) = (BytesMut::new(), BytesMut::new());
            stored_row(
                &mut from_bytes,
                &StoredRow::new(&bytes, &types, &spans, tessera_execution::encoding::stored_value),
            );
            let values: Vec<Value> =
                columns.iter().zip(&types).map(|(&c, ty)| from_storage(stored[c].clone(), ty)).collect();
            row(&mut from_values, &types, &values);
            assert_eq!(from_bytes, from_values, "{types:?} {stored:?}");
        }
        assert!(encoded > 1000, "{encoded} rows compared");
    }

    #[test]
    fn versions_negotiate_to_known_values() {
        assert_eq!(Version::negotiate(0x7400_0004), Some(Version::V7_4));
        assert_eq!(Version::negotiate(0x0800_0000), Some(Version::V7_4));
        assert_eq!(Version::negotiate(0x7100_0001), Some(Version::V7_1));
        assert_eq!(Version::negotiate(0x730B_0003), Some(Version::V7_3B));
        assert_eq!(Version::negotiate(0x7000_0000), None);
    }
}
