//! PRELOGIN (MS-TDS 2.2.6.5): the client's options and the server's reply, and the
//! encryption decision.
//!
//! Encryption bytes: 0 = OFF (the client can encrypt; encrypt the login only), 1 = ON,
//! 2 = NOT_SUP, 3 = REQ. The server's answer, when it has a certificate:
//!
//! | client | server answers | traffic |
//! |---|---|---|
//! | NOT_SUP | NOT_SUP | plaintext |
//! | OFF | OFF if `encrypt_login`, else NOT_SUP | login packet in TLS, rest plaintext / all plaintext |
//! | ON, REQ | ON | everything in TLS |
//!
//! Inside a TDS 8.0 strict connection (TLS before PRELOGIN) the client's value is ignored,
//! as MS-TDS 2.2.6.5 says (the TLS session is already established; go-mssqldb sends 4,
//! tedious 0), and the reply says [`STRICT_ENCRYPTION`]: no handshake follows it.
//!
//! The reply always carries VERSION, ENCRYPTION, INSTOPT, THREADID and MARS = 0 (FreeTDS
//! falls back to TDS 7.1 without MARS).

use bytes::{BufMut, BytesMut};

use crate::codec::{bad, DecodeResult, Input, Reader};

pub const ENCRYPT_OFF: u8 = 0;
pub const ENCRYPT_ON: u8 = 1;
pub const ENCRYPT_NOT_SUP: u8 = 2;
pub const ENCRYPT_REQ: u8 = 3;

/// The reply's ENCRYPTION in a strict connection: ON, the whole connection is in TLS.
pub const STRICT_ENCRYPTION: u8 = ENCRYPT_ON;

const OPT_VERSION: u8 = 0;
const OPT_ENCRYPTION: u8 = 1;
const OPT_INSTOPT: u8 = 2;
const OPT_THREADID: u8 = 3;
const OPT_MARS: u8 = 4;
const OPT_TERMINATOR: u8 = 0xFF;

/// What the client's PRELOGIN said (the options this server looks at).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientPrelogin {
    pub encryption: Option<u8>,
    pub mars: bool,
}

pub fn parse(payload: &[u8]) -> DecodeResult<ClientPrelogin> {
    let mut r = Reader::new(payload);
    let mut out = ClientPrelogin::default();
    for _ in 0..64 {
        let token = r.u8()?;
        if token == OPT_TERMINATOR {
            return Ok(out);
        }
        let mut be = Reader::new(r.bytes(4)?);
        let offset = usize::from(u16::from_be_bytes([be.u8()?, be.u8()?]));
        let len = usize::from(u16::from_be_bytes([be.u8()?, be.u8()?]));
        let Some(data) = payload.get(offset..offset + len) else {
            return bad("PRELOGIN option beyond the message");
        };
        match token {
            OPT_ENCRYPTION if len >= 1 => out.encryption = Some(data[0]),
            OPT_MARS if len >= 1 => out.mars = data[0] != 0,
            _ => {}
        }
    }
    bad("PRELOGIN without terminator")
}

/// The server's answer for what the client asked (see the module table). `tls` says
/// whether the server has a certificate.
pub fn negotiate(client: Option<u8>, tls: bool, encrypt_login: bool) -> Result<u8, &'static str> {
    match (client.unwrap_or(ENCRYPT_NOT_SUP), tls) {
        (ENCRYPT_ON | ENCRYPT_REQ, true) => Ok(ENCRYPT_ON),
        (ENCRYPT_ON | ENCRYPT_REQ, false) => Err("the client requires encryption and the server has no certificate"),
        (ENCRYPT_OFF, true) if encrypt_login => Ok(ENCRYPT_OFF),
        _ => Ok(ENCRYPT_NOT_SUP),
    }
}

/// The server's PRELOGIN reply payload.
pub fn reply(version: [u8; 4], encryption: u8) -> BytesMut {
    let options: [(u8, Vec<u8>); 5] = [
        (OPT_VERSION, vec![version[0], version[1], version[2], version[3], 0, 0]),
        (OPT_ENCRYPTION, vec![encryption]),
        (OPT_INSTOPT, vec![0]),
        (OPT_THREADID, vec![]),
        (OPT_MARS, vec![0]),
    ];
    let mut out = BytesMut::new();
    let mut offset = options.len() * 5 + 1;
    for (token, data) in &options {
        out.put_u8(*token);
        out.put_u16(offset as u16);
        out.put_u16(data.len() as u16);
        offset += data.len();
    }
    out.put_u8(OPT_TERMINATOR);
    for (_, data) in &options {
        out.put_slice(data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_parses_back() {
        let r = reply([16, 0, 0, 1], ENCRYPT_NOT_SUP);
        let p = parse(&r).unwrap();
        assert_eq!(p.encryption, Some(ENCRYPT_NOT_SUP));
        assert!(!p.mars);
        assert!(parse(&r[..7]).is_err());
        assert!(parse(&[0, 0, 200, 0, 1, 0xFF]).is_err());
    }

    #[test]
    fn encryption_table() {
        assert_eq!(negotiate(Some(ENCRYPT_NOT_SUP), true, true), Ok(ENCRYPT_NOT_SUP));
        assert_eq!(negotiate(Some(ENCRYPT_OFF), true, true), Ok(ENCRYPT_OFF));
        assert_eq!(negotiate(Some(ENCRYPT_OFF), true, false), Ok(ENCRYPT_NOT_SUP));
        assert_eq!(negotiate(Some(ENCRYPT_REQ), true, true), Ok(ENCRYPT_ON));
        assert!(negotiate(Some(ENCRYPT_ON), false, true).is_err());
        assert_eq!(negotiate(None, true, true), Ok(ENCRYPT_NOT_SUP));
    }
}
