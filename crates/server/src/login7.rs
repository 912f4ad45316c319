//! LOGIN7 (MS-TDS 2.2.6.4): the fixed header, the offset/length table of UCS-2 strings and
//! the password's de-obfuscation. Feature extensions (fExtension) are located but not
//! acknowledged: a client that asked for one sees no FEATUREEXTACK entry and carries on
//! without it, which every client here accepts.
//!
//! Invariant: every offset/length pair is checked against the message before use; a
//! malformed LOGIN7 is a decode error (the connection ends), never a panic.

use bytes::{BufMut, BytesMut};

use crate::codec::{bad, ucs2_decode, DecodeResult, Input, Reader};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Login7 {
    pub tds_version: u32,
    pub packet_size: u32,
    pub client_pid: u32,
    pub option_flags1: u8,
    pub option_flags2: u8,
    pub type_flags: u8,
    pub option_flags3: u8,
    pub host_name: String,
    pub user_name: String,
    pub password: String,
    pub app_name: String,
    pub server_name: String,
    pub library_name: String,
    pub language: String,
    pub database: String,
    /// Integrated (SSPI) authentication was requested; this server supports SQL logins only.
    pub sspi: bool,
}

/// fIntSecurity in OptionFlags2.
const INTEGRATED_SECURITY: u8 = 0x80;

/// Undoes LOGIN7's password obfuscation: each byte had its nibbles swapped and was XORed
/// with 0xA5.
pub fn deobfuscate(b: &[u8]) -> Vec<u8> {
    b.iter().map(|&x| (x ^ 0xA5).rotate_left(4)).collect()
}

/// The client side of the obfuscation (for tests and a future `tessera sql -S` client).
pub fn obfuscate(b: &[u8]) -> Vec<u8> {
    b.iter().map(|&x| x.rotate_left(4) ^ 0xA5).collect()
}

pub fn parse(payload: &[u8]) -> DecodeResult<Login7> {
    let mut r = Reader::new(payload);
    let length = r.u32()? as usize;
    if length > payload.len() || length < 94 {
        return bad(format!("LOGIN7 length {length} does not match the message ({} bytes)", payload.len()));
    }
    let mut l = Login7 { tds_version: r.u32()?, packet_size: r.u32()?, ..Login7::default() };
    r.skip(4)?; // client program version
    l.client_pid = r.u32()?;
    r.skip(4)?; // connection id
    l.option_flags1 = r.u8()?;
    l.option_flags2 = r.u8()?;
    l.type_flags = r.u8()?;
    l.option_flags3 = r.u8()?;
    r.skip(8)?; // time zone, LCID
    let body = &payload[..length];
    let field = |r: &mut Reader, chars: bool| -> DecodeResult<&[u8]> {
        let off = usize::from(r.u16()?);
        let len = usize::from(r.u16()?) * if chars { 2 } else { 1 };
        match body.get(off..off + len) {
            Some(b) => Ok(b),
            None if len == 0 => Ok(&[]),
            None => bad("LOGIN7 field beyond the message"),
        }
    };
    l.host_name = ucs2_decode(field(&mut r, true)?)?;
    l.user_name = ucs2_decode(field(&mut r, true)?)?;
    l.password = ucs2_decode(&deobfuscate(field(&mut r, true)?))?;
    l.app_name = ucs2_decode(field(&mut r, true)?)?;
    l.server_name = ucs2_decode(field(&mut r, true)?)?;
    // Extension (feature ext offset) or unused: read as bytes, not interpreted.
    field(&mut r, false)?;
    l.library_name = ucs2_decode(field(&mut r, true)?)?;
    l.language = ucs2_decode(field(&mut r, true)?)?;
    l.database = ucs2_decode(field(&mut r, true)?)?;
    r.skip(6)?; // client id (MAC address)
    let sspi = field(&mut r, false)?;
    l.sspi = !sspi.is_empty() || l.option_flags2 & INTEGRATED_SECURITY != 0;
    Ok(l)
}

/// Builds a LOGIN7 as a client sends it (TDS 7.4, SQL authentication, packet size 4096):
/// for tests and the coming `tessera sql -S` client.
pub fn build(user: &str, password: &str, database: &str) -> BytesMut {
    let strings: [(&str, bool); 9] = [
        ("host", false),
        (user, false),
        (password, true),
        ("app", false),
        ("server", false),
        ("", false),
        ("lib", false),
        ("", false),
        (database, false),
    ];
    let mut data = BytesMut::new();
    let mut table = BytesMut::new();
    let base = 94;
    for (i, (s, obf)) in strings.iter().enumerate() {
        let mut b: Vec<u8> = s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        if *obf {
            b = obfuscate(&b);
        }
        table.put_u16_le((base + data.len()) as u16);
        table.put_u16_le(if i == 5 { 0 } else { (b.len() / 2) as u16 });
        data.put_slice(&b);
        if i == 8 {
            table.put_slice(&[0; 6]);
            table.put_u16_le(0);
            table.put_u16_le(0);
            table.put_u16_le(0);
            table.put_u16_le(0);
            table.put_u16_le(0);
            table.put_u16_le(0);
            table.put_u32_le(0);
        }
    }
    let mut out = BytesMut::new();
    out.put_u32_le((base + data.len()) as u32);
    out.put_u32_le(0x7400_0004);
    out.put_u32_le(4096);
    out.put_slice(&[0; 12]);
    out.put_slice(&[0xE0, 0x03, 0, 0]);
    out.put_slice(&[0; 8]);
    out.put_slice(&table);
    debug_assert_eq!(out.len(), base);
    out.put_slice(&data);
    out
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_a_client_sends() {
        let b = build("sa", "S3cret!\u{e9}", "master");
        let l = parse(&b).unwrap();
        assert_eq!((l.user_name.as_str(), l.password.as_str(), l.database.as_str()), ("sa", "S3cret!\u{e9}", "master"));
        assert_eq!(l.tds_version, 0x7400_0004);
        assert_eq!(l.packet_size, 4096);
        assert!(!l.sspi);
        for cut in 0..b.len() {
            // Any truncation is an error or a shorter, well-formed login; never a panic.
            let _ = parse(&b[..cut]);
        }
        assert_eq!(deobfuscate(&obfuscate(b"xyz")), b"xyz");
    }
}
