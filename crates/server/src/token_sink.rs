//! The response to one request: results encoded as TDS tokens ([`TokenSink`], the
//! session's `ResultSink`), framed into packets and written to the socket as they fill —
//! a large value ([`Value::Large`]) in PLP chunks as it is read, so a value of any size
//! passes through a few packets of memory.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::output::EnvChange;
use tessera_semantics::output::{ColumnOrigins, Command, OutputColumn, StoredRow};
use tessera_semantics::types::large::PIECE_BYTES;
use tessera_semantics::types::{SqlType, Value};
use tessera_sql::{ResultSink, Session, SqlError};

use crate::packet::{self, kind, Limits, Message};
use crate::tokens::{self, done, Version};
use crate::transport::Transport;
use crate::types;

/// Framed response bytes gathered before one write to the socket, once a response has
/// written this much; before that each packet is written as it fills (as SQL Server sends
/// them), so a client waiting for the first rows of a selective scan gets them at once.
const WRITE_CHUNK: usize = 32 << 10;

/// Encodes a request's results as TDS tokens and writes full packets to the socket.
pub struct TokenSink<'a> {
    buf: BytesMut,
    /// Framed packets not yet written (written in chunks of [`WRITE_CHUNK`]).
    out: BytesMut,
    /// Bytes of this response written so far.
    written: usize,
    version: Version,
    packet_size: usize,
    packet_id: u8,
    writer: &'a mut Transport,
    /// The first write that failed (the client is gone): the request is cancelled and
    /// its output discarded.
    pub(crate) write_error: Option<io::Error>,
    pub(crate) cancel: Arc<AtomicBool>,
    /// The server's shutdown flag: a request it cancels gets error 3617 (one an
    /// attention cancels gets DONE_ATTN instead).
    pub stopping: Option<Arc<AtomicBool>>,
    server: String,
    columns: Vec<SqlType>,
    /// The last DONE, held back until we know whether more follows (DONE_MORE).
    pending: Option<(u16, u16, u64)>,
    /// The DONE status bits the errors since the last DONE ask for: DONE_ERROR, and with
    /// it DONE_SRVERROR after a fatal error (severity 20 or more), which tells the client
    /// the connection is ending.
    error_status: u16,
    pub(crate) in_proc: bool,
    /// The running RPC asked for no metadata (option fNoMetaData, 0x02): its result sets'
    /// COLMETADATA is the "no metadata" form.
    pub(crate) no_metadata: bool,
    pub(crate) transaction: u64,
    pub(crate) next_descriptor: u64,
    finished: bool,
}

impl<'a> TokenSink<'a> {
    pub(crate) fn new(
        version: Version,
        packet_size: usize,
        writer: &'a mut Transport,
        cancel: Arc<AtomicBool>,
        server: String,
    ) -> TokenSink<'a> {
        TokenSink {
            buf: BytesMut::with_capacity(packet_size),
            out: BytesMut::new(),
            written: 0,
            version,
            packet_size,
            packet_id: 1,
            writer,
            write_error: None,
            cancel,
            stopping: None,
            server,
            columns: Vec::new(),
            pending: None,
            error_status: 0,
            in_proc: false,
            no_metadata: false,
            transaction: 0,
            next_descriptor: 1,
            finished: false,
        }
    }

    /// RESETCONNECTION: a fresh session for whoever logged in, in the database it logged
    /// in to (`Session::fresh`). The fresh session keeps the connection's cancel flag (the
    /// attention watchdog holds it) and its network description (sys.dm_exec_connections).
    /// False when the connection must end instead (error 18059, written here).
    pub(crate) fn reset(&mut self, s: &mut Session) -> bool {
        let (host, app) = (s.state.host_name.clone(), s.state.program_name.clone());
        let connection = s.shared.sessions.lock().get(&s.state.spid).and_then(|i| i.connection.clone());
        let fresh = s.fresh();
        // A transaction left open is rolled back by the reset: the client hears so, as
        // after any rollback (tedious clears its "in transaction" state only then).
        if self.transaction != 0 {
            self.env_change(&EnvChange::RollbackTransaction);
        }
        s.close();
        match fresh {
            Ok(mut fresh) => {
                fresh.set_client(&host, &app);
                fresh.classify();
                fresh.state.cancel = s.state.cancel.clone();
                if let Some(c) = connection {
                    fresh.set_connection(c);
                }
                *s = fresh;
            }
            Err(e) => {
                self.message(&e);
                if e.severity >= 20 {
                    return false;
                }
            }
        }
        self.transaction = 0;
        tokens::env_change_reset_ack(&mut self.buf);
        true
    }

    fn flush_pending(&mut self) {
        if let Some((status, cur_cmd, count)) = self.pending.take() {
            tokens::done(&mut self.buf, self.version, tokens::DONE, status | done::MORE, cur_cmd, count);
        }
    }

    /// Frames every full packet's worth of tokens; writes each packet of the response's
    /// first [`WRITE_CHUNK`] as it fills, then once a chunk is gathered.
    fn ship(&mut self) {
        let room = self.packet_size - packet::HEADER_LEN;
        while self.buf.len() > room {
            let chunk = self.buf.split_to(room);
            if self.write_error.is_none() {
                packet::frame(kind::REPLY, &chunk, self.packet_size, false, &mut self.packet_id, &mut self.out);
            }
        }
        if self.out.len() >= WRITE_CHUNK || (self.written < WRITE_CHUNK && !self.out.is_empty()) {
            self.write_out();
        }
    }

    /// Sends `len` bytes that `read(out, offset)` fills, after the tokens in the buffer:
    /// each full packet is framed where it will be written and its bytes read straight
    /// into it (a large value's chunk goes from its pages to the socket's buffer in one
    /// copy); what does not fill a packet stays in the buffer.
    fn ship_read(&mut self, len: usize, mut read: impl FnMut(&mut [u8], u64) -> SqlResult<()>) -> SqlResult<()> {
        self.ship();
        let room = self.packet_size - packet::HEADER_LEN;
        let mut done = 0;
        while done < len {
            if self.write_error.is_some() {
                return Err(msg::QUERY_CANCELLED.err());
            }
            let take = (room - self.buf.len()).min(len - done);
            if self.buf.len() + take < room {
                let start = self.buf.len();
                self.buf.resize(start + take, 0);
                read(&mut self.buf[start..], done as u64)?;
                break;
            }
            packet::put_header(&mut self.out, kind::REPLY, 0, room, &mut self.packet_id);
            self.out.extend_from_slice(&self.buf);
            self.buf.clear();
            let start = self.out.len();
            self.out.resize(start + take, 0);
            read(&mut self.out[start..], done as u64)?;
            done += take;
            if self.out.len() >= WRITE_CHUNK {
                self.write_out();
            }
        }
        Ok(())
    }

    fn write_out(&mut self) {
        if self.write_error.is_none() && !self.out.is_empty() {
            self.written += self.out.len();
            if let Err(e) = io::Write::write_all(self.writer, &self.out) {
                // The client is gone: stop the request.
                self.write_error = Some(e);
                self.cancel.store(true, Ordering::Relaxed);
            }
        }
        self.out.clear();
    }

    /// The next message from the client (after a request, when the watchdog saw bytes).
    pub(crate) fn read_message(&mut self, limits: &Limits) -> io::Result<Option<Message>> {
        packet::read_message_blocking(&mut *self.writer, limits)
    }

    pub(crate) fn finish_batch(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let status = match self.pending.take() {
            Some((status, cur_cmd, count)) => {
                tokens::done(&mut self.buf, self.version, tokens::DONE, status, cur_cmd, count);
                return;
            }
            None if self.error_status != 0 => self.error_status,
            None => done::FINAL,
        };
        tokens::done(&mut self.buf, self.version, tokens::DONE, status, 0, 0);
    }

    /// An output parameter's value (a large one read whole: RETURNVALUE tokens are
    /// small in practice, and one that cannot be read is sent as NULL after its error).
    pub(crate) fn return_value(&mut self, ordinal: u16, name: &str, ty: &SqlType, value: &Value) {
        let value = match value.whole() {
            Ok(v) => v,
            Err(e) => {
                self.message(&e);
                std::borrow::Cow::Owned(Value::Null)
            }
        };
        tokens::return_value(&mut self.buf, self.version, ordinal, name, ty, &value);
        self.ship();
    }

    /// A row that holds large values: each goes in PLP chunks as it is read, the packets
    /// written as they fill. A value that fails to read half sent leaves the response
    /// with no way to go on (a row cannot hold an error): the request is cancelled and
    /// the connection ends, the reason logged by the session.
    fn large_row(&mut self, row: &[Value]) {
        let columns = std::mem::take(&mut self.columns);
        let compressed = tokens::row_start(&mut self.buf, columns.len(), |i| row[i].is_null());
        for (ty, v) in columns.iter().zip(row) {
            if compressed && v.is_null() {
                continue;
            }
            let sent = match v {
                Value::Large(l) if types::is_plp_of(ty, l.kind()) => {
                    types::put_plp_len(&mut self.buf, l.len_bytes());
                    let len = l.len_bytes();
                    let mut at = 0;
                    let mut sent = Ok(());
                    while at < len && sent.is_ok() {
                        let n = (len - at).min(PIECE_BYTES as u64) as usize;
                        self.buf.put_u32_le(n as u32);
                        sent = self.ship_read(n, |out, from| l.read(at + from, out));
                        at += n as u64;
                    }
                    sent.map(|()| types::put_plp_end(&mut self.buf))
                }
                Value::Large(l) => l.value().map(|whole| types::put_value(&mut self.buf, ty, &whole)),
                v => {
                    types::put_value(&mut self.buf, ty, v);
                    Ok(())
                }
            };
            if let Err(e) = sent {
                if self.write_error.is_none() {
                    self.write_error =
                        Some(io::Error::other(format!("a large value could not be read: {}", e.message)));
                    self.cancel.store(true, Ordering::Relaxed);
                }
                break;
            }
        }
        self.columns = columns;
        self.ship();
    }

    pub(crate) fn finish_proc(&mut self, failed: bool, more: bool) {
        let mut status = if failed { done::ERROR } else { done::FINAL };
        if more {
            status |= done::MORE;
        }
        tokens::done(&mut self.buf, self.version, tokens::DONEPROC, status, tokens::CUR_CMD_EXECUTE, 0);
        self.error_status = 0;
        if !more {
            self.finished = true;
        }
        self.ship();
    }

    /// Writes the last packet(s) of the response, marked end-of-message; if an attention
    /// interrupted the request, its acknowledgement (DONE with DONE_ATTN) follows as a
    /// message of its own, as SQL Server sends it (tedious waits for a new message).
    pub(crate) fn finish(mut self, attention: bool) -> io::Result<()> {
        if !self.finished {
            self.finish_batch();
        }
        if self.write_error.is_none() {
            let mut id = self.packet_id;
            packet::frame(kind::REPLY, &self.buf, self.packet_size, true, &mut id, &mut self.out);
            if attention {
                let mut ack = BytesMut::new();
                tokens::done(&mut ack, self.version, tokens::DONE, done::ATTN, 0, 0);
                packet::frame(kind::REPLY, &ack, self.packet_size, true, &mut 1, &mut self.out);
            }
        }
        self.write_out();
        match self.write_error.take() {
            Some(e) => Err(e),
            None => io::Write::flush(self.writer),
        }
    }
}

impl ResultSink for TokenSink<'_> {
    fn columns(&mut self, columns: &[OutputColumn]) {
        self.flush_pending();
        // An RPC with fNoMetaData gets the "no metadata" form (sp_cursorfetch's, from the
        // Microsoft JDBC driver): the client knows the columns already.
        tokens::col_metadata(&mut self.buf, self.version, if self.no_metadata { &[] } else { columns });
        self.columns = columns.iter().map(|c| c.ty).collect();
        self.ship();
    }

    fn cursor_columns(&mut self, columns: &[OutputColumn], origins: &ColumnOrigins) {
        if self.no_metadata {
            return self.columns(columns);
        }
        self.flush_pending();
        tokens::cursor_col_metadata(&mut self.buf, self.version, columns, origins);
        self.columns = columns.iter().map(|c| c.ty).collect();
        self.ship();
    }

    fn order(&mut self, columns: &[u16]) {
        tokens::order(&mut self.buf, columns);
        self.ship();
    }

    fn row(&mut self, row: &[Value]) {
        if self.write_error.is_some() {
            return;
        }
        if row.iter().any(|v| matches!(v, Value::Large(_))) {
            return self.large_row(row);
        }
        tokens::row(&mut self.buf, &self.columns, row);
        self.ship();
    }

    fn takes_stored_rows(&self) -> bool {
        true
    }

    fn stored_row(&mut self, row: &StoredRow<'_>) {
        if self.write_error.is_some() {
            return;
        }
        debug_assert!((0..row.len()).all(|i| Some(row.column(i).0) == self.columns.get(i)));
        tokens::stored_row(&mut self.buf, row);
        self.ship();
    }

    fn done(&mut self, count: Option<u64>, command: Command) {
        let mut status = if count.is_some() { done::COUNT } else { done::FINAL };
        status |= self.error_status;
        self.error_status = 0;
        if self.in_proc {
            let cur_cmd = tokens::cur_cmd(command);
            tokens::done(
                &mut self.buf,
                self.version,
                tokens::DONEINPROC,
                status | done::MORE,
                cur_cmd,
                count.unwrap_or(0),
            );
        } else {
            self.flush_pending();
            self.pending = Some((status, tokens::cur_cmd(command), count.unwrap_or(0)));
        }
        self.ship();
    }

    fn message(&mut self, m: &SqlError) {
        let shutdown = self.stopping.as_ref().is_some_and(|s| s.load(Ordering::SeqCst));
        if m.number == 3617 && self.cancel.load(Ordering::Relaxed) && !shutdown {
            // Cancelled by an attention: the client is told by DONE_ATTN, not an error.
            return;
        }
        self.flush_pending();
        tokens::message(&mut self.buf, self.version, m, &self.server);
        if m.severity > 10 {
            self.error_status |= done::ERROR;
        }
        if m.severity >= 20 {
            self.error_status |= done::SRVERROR;
        }
        self.ship();
    }

    fn env_change(&mut self, change: &EnvChange) {
        self.flush_pending();
        match change {
            EnvChange::Database { old, new } => tokens::env_change_text(&mut self.buf, tokens::ENV_DATABASE, new, old),
            EnvChange::BeginTransaction => {
                self.transaction = self.next_descriptor;
                self.next_descriptor += 1;
                tokens::env_change_transaction(&mut self.buf, tokens::ENV_BEGIN_TRAN, self.transaction);
            }
            EnvChange::CommitTransaction => {
                tokens::env_change_transaction(&mut self.buf, tokens::ENV_COMMIT_TRAN, self.transaction);
                self.transaction = 0;
            }
            EnvChange::RollbackTransaction => {
                tokens::env_change_transaction(&mut self.buf, tokens::ENV_ROLLBACK_TRAN, self.transaction);
                self.transaction = 0;
            }
        }
    }

    fn return_status(&mut self, status: i32) {
        self.flush_pending();
        tokens::return_status(&mut self.buf, status);
    }
}
