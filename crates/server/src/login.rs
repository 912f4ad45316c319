//! PRELOGIN and LOGIN7: the handshake.

use std::io;

use crate::packet::Reader;

/// PRELOGIN option tokens.
const OPT_VERSION: u8 = 0x00;
const OPT_ENCRYPTION: u8 = 0x01;
const OPT_INSTOPT: u8 = 0x02;
const OPT_THREADID: u8 = 0x03;
const OPT_MARS: u8 = 0x04;
const OPT_TERMINATOR: u8 = 0xFF;

/// Encryption bytes of PRELOGIN.
pub const ENCRYPT_OFF: u8 = 0x00;
pub const ENCRYPT_ON: u8 = 0x01;
pub const ENCRYPT_NOT_SUP: u8 = 0x02;
pub const ENCRYPT_REQ: u8 = 0x03;

/// What a client's PRELOGIN asked for.
#[derive(Debug, Default)]
pub struct PreLogin {
    pub encryption: Option<u8>,
}

pub fn parse_prelogin(payload: &[u8]) -> io::Result<PreLogin> {
    let mut r = Reader::new(payload);
    let mut pre = PreLogin::default();
    loop {
        let token = r.u8()?;
        if token == OPT_TERMINATOR {
            break;
        }
        let offset = usize::from(u16::from_be_bytes(r.bytes(2)?.try_into().expect("2 bytes")));
        let len = usize::from(u16::from_be_bytes(r.bytes(2)?.try_into().expect("2 bytes")));
        if offset + len > payload.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "PRELOGIN option outside the message"));
        }
        if token == OPT_ENCRYPTION && len >= 1 {
            pre.encryption = Some(payload[offset]);
        }
    }
    Ok(pre)
}

/// The server's PRELOGIN answer: version, encryption, instance, thread id, MARS off.
pub fn prelogin_response(encryption: u8) -> Vec<u8> {
    let options: [(u8, Vec<u8>); 5] = [
        (OPT_VERSION, vec![16, 0, 0x03, 0xE8, 0, 0]),
        (OPT_ENCRYPTION, vec![encryption]),
        (OPT_INSTOPT, vec![0]),
        (OPT_THREADID, Vec::new()),
        (OPT_MARS, vec![0]),
    ];
    let header_len = options.len() * 5 + 1;
    let mut head = Vec::new();
    let mut data = Vec::new();
    for (token, value) in &options {
        head.push(*token);
        head.extend_from_slice(&((header_len + data.len()) as u16).to_be_bytes());
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        data.extend_from_slice(value);
    }
    head.push(OPT_TERMINATOR);
    head.extend_from_slice(&data);
    head
}

/// What LOGIN7 carries that the server uses.
#[derive(Debug, Default, PartialEq)]
pub struct Login {
    pub tds_version: u32,
    pub packet_size: u32,
    pub host_name: String,
    pub user_name: String,
    pub password: String,
    pub app_name: String,
    pub database: String,
    pub language: String,
}

/// LOGIN7 passwords are UCS-2 with each byte's nibbles swapped and then XORed with 0xA5.
fn unscramble(bytes: &[u8]) -> String {
    let plain: Vec<u8> = bytes.iter().map(|b| (b ^ 0xA5).rotate_left(4)).collect();
    let units: Vec<u16> = plain.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    String::from_utf16_lossy(&units)
}

pub fn parse_login7(payload: &[u8]) -> io::Result<Login> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut r = Reader::new(payload);
    let length = r.u32()? as usize;
    if length > payload.len() || length < 94 {
        return Err(bad("LOGIN7 length out of range"));
    }
    let tds_version = r.u32()?;
    let packet_size = r.u32()?;
    r.bytes(4 * 3 + 4 + 4 + 4)?; // client version, pid, connection id, flags, time zone, lcid
    let field = |r: &mut Reader| -> io::Result<(usize, usize)> { Ok((usize::from(r.u16()?), usize::from(r.u16()?))) };
    let host = field(&mut r)?;
    let user = field(&mut r)?;
    let password = field(&mut r)?;
    let app = field(&mut r)?;
    let _server = field(&mut r)?;
    let _extension = field(&mut r)?;
    let _library = field(&mut r)?;
    let language = field(&mut r)?;
    let database = field(&mut r)?;
    let text = |(offset, chars): (usize, usize)| -> io::Result<String> {
        let end = offset + chars * 2;
        if end > length {
            return Err(bad("LOGIN7 field outside the message"));
        }
        let mut fr = Reader::new(&payload[offset..end]);
        fr.ucs2(chars)
    };
    let pw = {
        let (offset, chars) = password;
        let end = offset + chars * 2;
        if end > length {
            return Err(bad("LOGIN7 password outside the message"));
        }
        unscramble(&payload[offset..end])
    };
    Ok(Login {
        tds_version,
        packet_size,
        host_name: text(host)?,
        user_name: text(user)?,
        password: pw,
        app_name: text(app)?,
        database: text(database)?,
        language: text(language)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelogin_round_trip_and_password_scrambling() {
        let response = prelogin_response(ENCRYPT_NOT_SUP);
        assert_eq!(parse_prelogin(&response).unwrap().encryption, Some(ENCRYPT_NOT_SUP));
        // "a" = 0x61 0x00 scrambled: swap nibbles (0x16, 0x00) then XOR 0xA5 → (0xB3, 0xA5).
        assert_eq!(unscramble(&[0xB3, 0xA5]), "a");
        assert!(parse_login7(&[1, 2, 3]).is_err());
        assert!(parse_prelogin(&[0x01, 0x00, 0x50, 0x00, 0x01, 0xFF]).is_err(), "offset past the end");
    }
}
