//! A streaming PostgreSQL reader: one connection speaking the v3 frontend/backend protocol
//! over plain TCP (trust authentication, as the benchmark's cluster is set up), sending a
//! simple Query and reading its reply off the socket as it arrives — the DataRow messages
//! counted and discarded, the first byte's and first row's arrival noted. libpq (and so
//! psql without FETCH_COUNT) holds a whole result set before handing it over; this reader,
//! like [`crate::tdsstream`] on the TDS side, holds one read buffer and one incomplete
//! message at most. The backend's pid comes from its BackendKeyData message.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use crate::error::{BenchError, Result};
use crate::tdsstream::StreamRun;

/// The socket read buffer (grown only for a message larger than it).
const READ_BUFFER: usize = 64 << 10;

/// One logged-in connection.
pub struct PgConn {
    stream: TcpStream,
    /// The backend serving this connection (from BackendKeyData).
    pub backend_pid: u32,
    buf: Vec<u8>,
}

/// One backend message's type and body, if `data` holds it whole.
fn message(data: &[u8]) -> Result<Option<(u8, &[u8])>> {
    if data.len() < 5 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    if len < 4 {
        return Err(BenchError::new(format!(
            "malformed PostgreSQL message (type {:?}, length {len})",
            data[0] as char
        )));
    }
    if data.len() < 1 + len {
        return Ok(None);
    }
    Ok(Some((data[0], &data[5..1 + len])))
}

/// An ErrorResponse's severity and message fields.
fn error_text(body: &[u8]) -> String {
    let mut severity = String::new();
    let mut text = String::new();
    for field in body.split(|&b| b == 0) {
        match field.first() {
            Some(b'S') => severity = String::from_utf8_lossy(&field[1..]).into_owned(),
            Some(b'M') => text = String::from_utf8_lossy(&field[1..]).into_owned(),
            _ => {}
        }
    }
    format!("{severity}: {text}")
}

/// How long a login may wait for the server's answer.
const LOGIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl PgConn {
    /// Connects to 127.0.0.1:`port` as `user` to `database` (trust authentication). A
    /// login not answered within `LOGIN_TIMEOUT` is an error, not a hang (a server or
    /// pooler that cannot accept leaves the connection in its listen queue).
    pub fn connect(port: u16, user: &str, database: &str) -> Result<PgConn> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(LOGIN_TIMEOUT))?;
        let mut body = 196_608u32.to_be_bytes().to_vec(); // protocol 3.0
        for (k, v) in [("user", user), ("database", database), ("application_name", "tessera bench")] {
            body.extend_from_slice(k.as_bytes());
            body.push(0);
            body.extend_from_slice(v.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut startup = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        startup.extend_from_slice(&body);
        stream.write_all(&startup)?;
        let mut conn = PgConn { stream, backend_pid: 0, buf: Vec::with_capacity(READ_BUFFER) };
        let mut filled = 0;
        conn.buf.resize(READ_BUFFER, 0);
        loop {
            let n = conn.stream.read(&mut conn.buf[filled..])?;
            if n == 0 {
                return Err(BenchError::new("PostgreSQL closed the connection during startup"));
            }
            filled += n;
            let mut pos = 0;
            while let Some((ty, body)) = message(&conn.buf[pos..filled])? {
                pos += 5 + body.len();
                match ty {
                    b'R' if body.len() >= 4 && body[..4] == [0, 0, 0, 0] => {}
                    b'R' => return Err(BenchError::new("PostgreSQL asked for a password: the reader needs trust")),
                    b'K' if body.len() >= 8 => {
                        conn.backend_pid = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
                    }
                    b'E' => return Err(BenchError::new(format!("PostgreSQL login: {}", error_text(body)))),
                    b'Z' => {
                        if conn.backend_pid == 0 {
                            return Err(BenchError::new("PostgreSQL sent no BackendKeyData"));
                        }
                        conn.stream.set_read_timeout(None)?;
                        return Ok(conn);
                    }
                    _ => {} // ParameterStatus, NoticeResponse
                }
            }
            conn.buf.copy_within(pos..filled, 0);
            filled -= pos;
            if filled == conn.buf.len() {
                conn.buf.resize(2 * filled, 0);
            }
        }
    }

    /// Sends `sql` as a simple Query and reads the reply up to ReadyForQuery as it arrives.
    /// A server error is reported in the run (`error`), not as an `Err`.
    pub fn query(&mut self, sql: &str) -> Result<StreamRun> {
        let mut request = Vec::with_capacity(sql.len() + 6);
        put_message(&mut request, b'Q', |m| {
            m.extend_from_slice(sql.as_bytes());
            m.push(0);
        });
        self.exchange(&request)
    }

    /// `sql` with binary `params` of the types `oids` as the extended protocol sends it
    /// (Parse, Bind with binary parameters and results, Execute, Sync): made before a
    /// clock starts, sent with [`PgConn::exchange`].
    pub fn extended(sql: &str, oids: &[u32], params: &[&[u8]]) -> Vec<u8> {
        let size: usize = params.iter().map(|p| p.len() + 4).sum();
        let mut request = Vec::with_capacity(sql.len() + size + 64);
        put_message(&mut request, b'P', |m| {
            m.push(0);
            m.extend_from_slice(sql.as_bytes());
            m.push(0);
            m.extend_from_slice(&(oids.len() as u16).to_be_bytes());
            for oid in oids {
                m.extend_from_slice(&oid.to_be_bytes());
            }
        });
        put_message(&mut request, b'B', |m| {
            m.extend_from_slice(&[0, 0]); // the unnamed portal and statement
            m.extend_from_slice(&[0, 1, 0, 1]); // every parameter binary
            m.extend_from_slice(&(params.len() as u16).to_be_bytes());
            for p in params {
                m.extend_from_slice(&(p.len() as u32).to_be_bytes());
                m.extend_from_slice(p);
            }
            m.extend_from_slice(&[0, 1, 0, 1]); // every result column binary
        });
        put_message(&mut request, b'E', |m| m.extend_from_slice(&[0, 0, 0, 0, 0]));
        put_message(&mut request, b'S', |_| {});
        request
    }

    /// Sends a request made by [`PgConn::query`] or [`PgConn::extended`] and reads the
    /// reply up to ReadyForQuery as it arrives (the clock runs from the send).
    pub fn exchange(&mut self, request: &[u8]) -> Result<StreamRun> {
        let mut run = StreamRun::default();
        let start = Instant::now();
        self.stream.write_all(request)?;
        let mut filled = 0;
        loop {
            let n = match self.stream.read(&mut self.buf[filled..]) {
                Ok(0) => return Err(BenchError::new("PostgreSQL closed the connection")),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            let now = Instant::now();
            if run.first_byte_seconds.is_none() {
                run.first_byte_seconds = Some(now.duration_since(start).as_secs_f64());
                run.first_read_bytes = n as u64;
            }
            run.bytes += n as u64;
            filled += n;
            run.max_buffered = run.max_buffered.max(filled);
            let mut pos = 0;
            let mut ready = false;
            while let Some((ty, body)) = message(&self.buf[pos..filled])? {
                pos += 5 + body.len();
                match ty {
                    b'D' => {
                        if run.rows == 0 {
                            run.first_row_seconds = Some(now.duration_since(start).as_secs_f64());
                        }
                        run.rows += 1;
                    }
                    b'C' => {
                        // "SELECT n"
                        let tag = String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(body)).into_owned();
                        run.reported_rows = tag.rsplit(' ').next().and_then(|n| n.parse().ok());
                    }
                    b'E' => {
                        run.error.get_or_insert_with(|| error_text(body));
                    }
                    b'Z' => ready = true,
                    _ => {} // RowDescription, NoticeResponse, ParameterStatus, ParseComplete, BindComplete
                }
            }
            if ready {
                if pos != filled {
                    return Err(BenchError::new("PostgreSQL sent bytes after ReadyForQuery"));
                }
                run.seconds = now.duration_since(start).as_secs_f64();
                return Ok(run);
            }
            self.buf.copy_within(pos..filled, 0);
            filled -= pos;
            if filled == self.buf.len() {
                self.buf.resize(2 * filled, 0);
            }
        }
    }
}

/// Appends a frontend message: its type, its length, then what `body` writes.
fn put_message(out: &mut Vec<u8>, ty: u8, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(ty);
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = (out.len() - at) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

impl Drop for PgConn {
    fn drop(&mut self) {
        // Terminate.
        let _ = self.stream.write_all(&[b'X', 0, 0, 0, 4]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_taken_whole() {
        let mut data = vec![b'D', 0, 0, 0, 10, 0, 1, 0, 0, 0, 0];
        assert_eq!(message(&data[..6]).unwrap(), None);
        assert_eq!(message(&data).unwrap(), Some((b'D', &[0u8, 1, 0, 0, 0, 0][..])));
        data[4] = 3;
        assert!(message(&data).is_err());
        let e = b"SERROR\0C42P01\0Mrelation \"x\" does not exist\0\0";
        assert_eq!(error_text(e), "ERROR: relation \"x\" does not exist");
    }
}
