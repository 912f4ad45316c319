//! Decoding request messages after login: SQL batch text, RPC calls and transaction
//! manager requests, each behind the ALL_HEADERS block of TDS 7.2+. A malformed body is
//! an error message for that request (the connection goes on): these decoders say what is
//! wrong with it, the session raises it as error 4002 or 8009 (tm requests: 4002). Nothing
//! here panics on client bytes (the fuzz target in `fuzz/` checks that).

use crate::codec::{ucs2_decode, Input, Reader};
use crate::rpc;
use crate::tm;
use crate::tokens::Version;

pub fn decode_batch(payload: &[u8], version: Version) -> Result<String, String> {
    let mut r = Reader::new(payload);
    if version.wide() {
        rpc::skip_all_headers(&mut r).map_err(|e| e.to_string())?;
    }
    let rest = r.bytes(r.remaining()).unwrap_or(&[]);
    ucs2_decode(rest).map_err(|e| e.to_string())
}

pub fn decode_rpc(payload: &[u8], version: Version) -> Result<Vec<rpc::Call>, String> {
    decode_rpc_from(&mut Reader::new(payload), version)
}

/// [`decode_rpc`] of a request read as it arrives (`packet::PacketInput`): long values
/// go to spool files rather than memory.
pub fn decode_rpc_from(r: &mut (impl Input + ?Sized), version: Version) -> Result<Vec<rpc::Call>, String> {
    if version.wide() {
        rpc::skip_all_headers(r).map_err(|e| e.to_string())?;
    }
    rpc::parse_calls(r).map_err(|e| e.to_string())
}

pub fn decode_tm(payload: &[u8], version: Version) -> Result<tm::Request, String> {
    let mut r = Reader::new(payload);
    if version.wide() {
        rpc::skip_all_headers(&mut r).map_err(|e| format!("the transaction manager request: {e}"))?;
    }
    tm::parse(&mut r).map_err(|e| format!("the transaction manager request: {e}"))
}
