//! Decoding request messages after login: SQL batch text, RPC calls and transaction
//! manager requests, each behind the ALL_HEADERS block of TDS 7.2+. A malformed body is
//! an error message for that request (the connection goes on); nothing here panics on
//! client bytes (the fuzz target in `fuzz/` checks that).

use crate::codec::{ucs2_decode, Reader};
use crate::rpc;
use crate::tm;
use crate::tokens::Version;

pub fn decode_batch(payload: &[u8], version: Version) -> Result<String, String> {
    let mut r = Reader::new(payload);
    if version.wide() {
        rpc::skip_all_headers(&mut r)
            .map_err(|e| format!("The incoming tabular data stream (TDS) protocol stream is incorrect: {e}."))?;
    }
    let rest = r.bytes(r.remaining()).unwrap_or(&[]);
    ucs2_decode(rest).map_err(|e| format!("The incoming tabular data stream (TDS) protocol stream is incorrect: {e}."))
}

pub fn decode_rpc(payload: &[u8], version: Version) -> Result<Vec<rpc::Call>, String> {
    let mut r = Reader::new(payload);
    if version.wide() {
        rpc::skip_all_headers(&mut r).map_err(|e| {
            format!(
                "The incoming tabular data stream (TDS) remote procedure call (RPC) protocol stream is incorrect: {e}."
            )
        })?;
    }
    rpc::parse_calls(&mut r).map_err(|e| {
        format!("The incoming tabular data stream (TDS) remote procedure call (RPC) protocol stream is incorrect: {e}.")
    })
}

pub fn decode_tm(payload: &[u8], version: Version) -> Result<tm::Request, String> {
    let mut r = Reader::new(payload);
    if version.wide() {
        rpc::skip_all_headers(&mut r).map_err(|e| format!("The transaction manager request is incorrect: {e}."))?;
    }
    tm::parse(&mut r).map_err(|e| format!("The transaction manager request is incorrect: {e}."))
}
