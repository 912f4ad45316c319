//! Response tokens, and [`TokenSink`]: the T-SQL layer's result stream encoded as TDS.
//!
//! Types on the wire (TDS 7.2+): integers as INTN, bit as BITN, real/float as FLTN,
//! decimal/numeric as DECIMALN, money as MONEYN, char/varchar as BIGCHAR/BIGVARCHAR and
//! nchar/nvarchar as NCHAR/NVARCHAR with the server collation (`(max)` as PLP), binary as
//! BIGBINARY/BIGVARBINARY, date/time/datetime2 as DATEN/TIMEN/DATETIME2N, datetime and
//! smalldatetime as DATETIMN, uniqueidentifier as GUIDN. Values go through
//! `tessera_sql::types::to_storage`, whose representation (Windows-1252 varchar, UTF-16
//! nvarchar, datetime as days since 1900 + 1/300 s ticks) is TDS's.

use tessera_access::row::{self, MAX};
use tessera_sql::bind::OutputColumn;
use tessera_sql::output::{EnvChange, ResultSink};
use tessera_sql::types::{self, SqlType, Value};
use tessera_sql::SqlError;

/// SQL_Latin1_General_CP1_CI_AS as TDS's 5-byte collation (LCID 0x0409, flags, sort id 52).
pub const COLLATION: [u8; 5] = [0x09, 0x04, 0xD0, 0x00, 0x34];

pub const DONE_FINAL: u16 = 0x00;
pub const DONE_MORE: u16 = 0x01;
pub const DONE_ERROR: u16 = 0x02;
pub const DONE_INXACT: u16 = 0x04;
pub const DONE_COUNT: u16 = 0x10;
pub const DONE_ATTN: u16 = 0x20;

const TOKEN_COLMETADATA: u8 = 0x81;
const TOKEN_ROW: u8 = 0xD1;
const TOKEN_DONE: u8 = 0xFD;
const TOKEN_DONEPROC: u8 = 0xFE;
const TOKEN_DONEINPROC: u8 = 0xFF;
const TOKEN_ERROR: u8 = 0xAA;
const TOKEN_INFO: u8 = 0xAB;
const TOKEN_ENVCHANGE: u8 = 0xE3;
const TOKEN_LOGINACK: u8 = 0xAD;
const TOKEN_RETURNSTATUS: u8 = 0x79;
const TOKEN_RETURNVALUE: u8 = 0xAC;

/// The name the server reports in LOGINACK, ERROR and INFO tokens.
pub const SERVER_NAME: &str = "tessera";

fn b_varchar(out: &mut Vec<u8>, s: &str) {
    let units: Vec<u16> = s.encode_utf16().take(255).collect();
    out.push(units.len() as u8);
    for u in units {
        out.extend_from_slice(&u.to_le_bytes());
    }
}

fn us_varchar(out: &mut Vec<u8>, s: &str) {
    let units: Vec<u16> = s.encode_utf16().take(65_535).collect();
    out.extend_from_slice(&(units.len() as u16).to_le_bytes());
    for u in units {
        out.extend_from_slice(&u.to_le_bytes());
    }
}

/// Appends a token with a 16-bit length prefix written once the body is known.
fn with_length(out: &mut Vec<u8>, token: u8, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(token);
    let at = out.len();
    out.extend_from_slice(&[0, 0]);
    body(out);
    let len = (out.len() - at - 2) as u16;
    out[at..at + 2].copy_from_slice(&len.to_le_bytes());
}

pub fn loginack(out: &mut Vec<u8>, tds_version: u32) {
    with_length(out, TOKEN_LOGINACK, |b| {
        b.push(1);
        b.extend_from_slice(&tds_version.to_be_bytes());
        b_varchar(b, "Microsoft SQL Server");
        b.extend_from_slice(&[16, 0, 0x03, 0xE8]);
    });
}

/// ENVCHANGE with text values (database 1, language 2, packet size 4).
pub fn envchange_text(out: &mut Vec<u8>, kind: u8, new: &str, old: &str) {
    with_length(out, TOKEN_ENVCHANGE, |b| {
        b.push(kind);
        b_varchar(b, new);
        b_varchar(b, old);
    });
}

/// ENVCHANGE with binary values (collation 7, transactions 8/9/10).
pub fn envchange_bytes(out: &mut Vec<u8>, kind: u8, new: &[u8], old: &[u8]) {
    with_length(out, TOKEN_ENVCHANGE, |b| {
        b.push(kind);
        b.push(new.len() as u8);
        b.extend_from_slice(new);
        b.push(old.len() as u8);
        b.extend_from_slice(old);
    });
}

/// The error a cancelled batch stops with inside the session.
const CANCELLED: i32 = 3617;

pub fn message(out: &mut Vec<u8>, m: &SqlError) {
    let token = if m.severity > 10 { TOKEN_ERROR } else { TOKEN_INFO };
    with_length(out, token, |b| {
        b.extend_from_slice(&m.number.to_le_bytes());
        b.push(m.state);
        b.push(m.severity);
        us_varchar(b, &m.message);
        b_varchar(b, SERVER_NAME);
        b_varchar(b, m.procedure.as_deref().unwrap_or(""));
        b.extend_from_slice(&(m.line as i32).to_le_bytes());
    });
}

pub fn done(out: &mut Vec<u8>, token: u8, status: u16, count: u64) {
    out.push(token);
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&0xC1u16.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
}

pub fn done_final(out: &mut Vec<u8>, status: u16, count: u64) {
    done(out, TOKEN_DONE, status, count);
}

pub fn doneproc(out: &mut Vec<u8>, status: u16, count: u64) {
    done(out, TOKEN_DONEPROC, status, count);
}

pub fn return_status(out: &mut Vec<u8>, status: i32) {
    out.push(TOKEN_RETURNSTATUS);
    out.extend_from_slice(&status.to_le_bytes());
}

/// RETURNVALUE for an OUTPUT parameter.
pub fn return_value(out: &mut Vec<u8>, ordinal: u16, name: &str, value: &Value, ty: &SqlType) {
    out.push(TOKEN_RETURNVALUE);
    out.extend_from_slice(&ordinal.to_le_bytes());
    b_varchar(out, name);
    out.push(0x01); // status: output parameter
    out.extend_from_slice(&0u32.to_le_bytes()); // user type
    out.extend_from_slice(&0x0001u16.to_le_bytes()); // flags: nullable
    type_info(out, ty);
    value_bytes(out, value, ty);
}

fn is_plp(t: &SqlType) -> bool {
    matches!(t, SqlType::VarChar(MAX) | SqlType::NVarChar(MAX) | SqlType::VarBinary(MAX))
}

/// TYPE_INFO of a column or parameter.
pub fn type_info(out: &mut Vec<u8>, t: &SqlType) {
    use SqlType::*;
    match *t {
        Bit => out.extend_from_slice(&[0x68, 1]),
        TinyInt => out.extend_from_slice(&[0x26, 1]),
        SmallInt => out.extend_from_slice(&[0x26, 2]),
        Int => out.extend_from_slice(&[0x26, 4]),
        BigInt => out.extend_from_slice(&[0x26, 8]),
        Real => out.extend_from_slice(&[0x6D, 4]),
        Float => out.extend_from_slice(&[0x6D, 8]),
        Decimal { precision, scale } => {
            let len = t.fixed_size().unwrap_or(17) as u8;
            out.extend_from_slice(&[0x6A, len, precision, scale]);
        }
        Money => out.extend_from_slice(&[0x6E, 8]),
        SmallMoney => out.extend_from_slice(&[0x6E, 4]),
        Char(n) | VarChar(n) | NChar(n) | NVarChar(n) => {
            let (code, bytes) = match *t {
                Char(_) => (0xAF, n),
                VarChar(_) => (0xA7, n),
                NChar(_) => (0xEF, n.saturating_mul(2)),
                _ => (0xE7, if n == MAX { MAX } else { n.saturating_mul(2) }),
            };
            out.push(code);
            out.extend_from_slice(&bytes.to_le_bytes());
            out.extend_from_slice(&COLLATION);
        }
        Binary(n) => {
            out.push(0xAD);
            out.extend_from_slice(&n.to_le_bytes());
        }
        VarBinary(n) => {
            out.push(0xA5);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Date => out.push(0x28),
        Time { scale } => out.extend_from_slice(&[0x29, scale]),
        DateTime2 { scale } => out.extend_from_slice(&[0x2A, scale]),
        DateTime => out.extend_from_slice(&[0x6F, 8]),
        SmallDateTime => out.extend_from_slice(&[0x6F, 4]),
        UniqueIdentifier => out.extend_from_slice(&[0x24, 16]),
    }
}

/// Bytes of a `time(scale)` value: 100 ns ticks in units of 10^-scale s.
fn time_bytes(ticks: u64, scale: u8) -> Vec<u8> {
    let units = ticks / 10u64.pow(7 - u32::from(scale.min(7)));
    let len = match scale {
        0..=2 => 3,
        3..=4 => 4,
        _ => 5,
    };
    units.to_le_bytes()[..len].to_vec()
}

/// A value as TYPE_VARBYTE for its type (NULL included).
pub fn value_bytes(out: &mut Vec<u8>, v: &Value, t: &SqlType) {
    use SqlType::*;
    if is_plp(t) {
        match v {
            Value::Null => out.extend_from_slice(&u64::MAX.to_le_bytes()),
            v => {
                let data = match types::to_storage(v, t) {
                    row::Value::Bytes(b) => b,
                    row::Value::Unicode(u) => u.iter().flat_map(|c| c.to_le_bytes()).collect(),
                    _ => Vec::new(),
                };
                out.extend_from_slice(&(data.len() as u64).to_le_bytes());
                if !data.is_empty() {
                    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
                    out.extend_from_slice(&data);
                }
                out.extend_from_slice(&0u32.to_le_bytes());
            }
        }
        return;
    }
    let short_null = !matches!(t, Char(_) | VarChar(_) | NChar(_) | NVarChar(_) | Binary(_) | VarBinary(_));
    if v.is_null() {
        if short_null {
            out.push(0);
        } else {
            out.extend_from_slice(&0xFFFFu16.to_le_bytes());
        }
        return;
    }
    let stored = types::to_storage(v, t);
    let mut put = |bytes: &[u8]| {
        out.push(bytes.len() as u8);
        out.extend_from_slice(bytes);
    };
    match (stored, *t) {
        (row::Value::Bit(b), _) => put(&[u8::from(b)]),
        (row::Value::TinyInt(x), _) => put(&[x]),
        (row::Value::SmallInt(x), _) => put(&x.to_le_bytes()),
        (row::Value::Int(x), _) => put(&x.to_le_bytes()),
        (row::Value::BigInt(x), _) => put(&x.to_le_bytes()),
        (row::Value::Real(x), _) => put(&x.to_le_bytes()),
        (row::Value::Float(x), _) => put(&x.to_le_bytes()),
        (row::Value::Decimal { value, .. }, Decimal { .. }) => {
            let len = t.fixed_size().unwrap_or(17);
            let mut b = vec![u8::from(value >= 0)];
            b.extend_from_slice(&value.unsigned_abs().to_le_bytes()[..len - 1]);
            put(&b);
        }
        (row::Value::Money(m), SmallMoney) => put(&(m as i32).to_le_bytes()),
        (row::Value::Money(m), _) => {
            let mut b = ((m >> 32) as i32).to_le_bytes().to_vec();
            b.extend_from_slice(&(m as u32).to_le_bytes());
            put(&b);
        }
        (row::Value::Date(d), _) => put(&d.to_le_bytes()[..3]),
        (row::Value::Time(ticks), Time { scale }) => put(&time_bytes(ticks, scale)),
        (row::Value::DateTime2 { days, ticks }, DateTime2 { scale }) => {
            let mut b = time_bytes(ticks, scale);
            b.extend_from_slice(&days.to_le_bytes()[..3]);
            put(&b);
        }
        (row::Value::DateTime { days, ticks }, _) => {
            let mut b = days.to_le_bytes().to_vec();
            b.extend_from_slice(&ticks.to_le_bytes());
            put(&b);
        }
        (row::Value::SmallDateTime { days, minutes }, _) => {
            let mut b = days.to_le_bytes().to_vec();
            b.extend_from_slice(&minutes.to_le_bytes());
            put(&b);
        }
        (row::Value::Guid(g), _) => put(&g),
        (row::Value::Bytes(b), _) => {
            out.extend_from_slice(&(b.len() as u16).to_le_bytes());
            out.extend_from_slice(&b);
        }
        (row::Value::Unicode(u), _) => {
            out.extend_from_slice(&((u.len() * 2) as u16).to_le_bytes());
            for c in u {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        (other, _) => {
            debug_assert!(false, "value {other:?} does not fit type {t:?}");
            out.push(0);
        }
    }
}

/// Encodes the T-SQL layer's result stream as TDS tokens.
pub struct TokenSink {
    pub out: Vec<u8>,
    columns: Vec<SqlType>,
    /// Inside a procedure call (RPC): result ends are DONEINPROC.
    in_proc: bool,
    pub failed: bool,
    /// Transaction descriptor changes to report (ENVCHANGE 8/9/10).
    pub transaction: Option<u64>,
    next_descriptor: u64,
    pub database: Option<(String, String)>,
    pub status: Option<i32>,
}

impl TokenSink {
    pub fn new(in_proc: bool) -> TokenSink {
        TokenSink {
            out: Vec::with_capacity(4096),
            columns: Vec::new(),
            in_proc,
            failed: false,
            transaction: None,
            next_descriptor: 1,
            database: None,
            status: None,
        }
    }
}

impl ResultSink for TokenSink {
    fn columns(&mut self, columns: &[OutputColumn]) {
        self.columns = columns.iter().map(|c| c.ty).collect();
        self.out.push(TOKEN_COLMETADATA);
        self.out.extend_from_slice(&(columns.len() as u16).to_le_bytes());
        for c in columns {
            self.out.extend_from_slice(&0u32.to_le_bytes());
            let flags: u16 = if c.nullable { 0x0001 } else { 0 };
            self.out.extend_from_slice(&flags.to_le_bytes());
            type_info(&mut self.out, &c.ty);
            b_varchar(&mut self.out, &c.name);
        }
    }

    fn row(&mut self, row: &[Value]) {
        self.out.push(TOKEN_ROW);
        for (v, t) in row.iter().zip(&self.columns) {
            value_bytes(&mut self.out, v, t);
        }
    }

    fn done(&mut self, count: Option<u64>, _result_set: bool) {
        let mut status = DONE_MORE;
        if count.is_some() {
            status |= DONE_COUNT;
        }
        let token = if self.in_proc { TOKEN_DONEINPROC } else { TOKEN_DONE };
        done(&mut self.out, token, status, count.unwrap_or(0));
    }

    fn message(&mut self, m: &SqlError) {
        // A batch stopped by an Attention ends with DONE's attention bit, not an error (as
        // SQL Server, which never sends 3617 to the client).
        if m.number == CANCELLED {
            return;
        }
        if m.severity > 10 {
            self.failed = true;
        }
        message(&mut self.out, m);
    }

    fn env_change(&mut self, change: &EnvChange) {
        match change {
            EnvChange::Database { old, new } => {
                envchange_text(&mut self.out, 1, new, old);
                self.database = Some((old.clone(), new.clone()));
            }
            EnvChange::BeginTransaction => {
                let d = self.next_descriptor;
                self.next_descriptor += 1;
                envchange_bytes(&mut self.out, 8, &d.to_le_bytes(), &[]);
                self.transaction = Some(d);
            }
            EnvChange::CommitTransaction => envchange_bytes(&mut self.out, 9, &[], &[0; 8]),
            EnvChange::RollbackTransaction => envchange_bytes(&mut self.out, 10, &[], &[0; 8]),
        }
    }

    fn return_status(&mut self, status: i32) {
        self.status = Some(status);
        return_status(&mut self.out, status);
    }
}
