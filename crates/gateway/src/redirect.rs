//! The gateway's redirect policy (`tessera gateway --connection-policy redirect`), as
//! Azure SQL Database's gateway redirects: the client's login is proxied to the server
//! that holds its database as usual, and when the server accepts it the gateway adds a
//! routing ENVCHANGE (type 20) to the answer. A client that follows routing (TDS 7.4
//! drivers: JDBC, ODBC, tedious, go-mssqldb, Microsoft.Data.SqlClient) closes the
//! connection and logs in again at the server itself, so its queries no longer pass
//! through the gateway; one that does not carries on through the gateway's proxy.

use bytes::BytesMut;
use tessera_server::tokens::{self, Version};

/// The tokens of a login answer, walked to its end: whether the server acknowledged the
/// login, and where its final DONE starts. None for a token this walk does not know (the
/// answer then passes unchanged).
fn final_done(answer: &[u8]) -> Option<(bool, usize)> {
    let mut at = 0;
    let mut logged_in = false;
    let u16_at = |i: usize| Some(u16::from_le_bytes(answer.get(i..i + 2)?.try_into().ok()?) as usize);
    let u32_at = |i: usize| Some(u32::from_le_bytes(answer.get(i..i + 4)?.try_into().ok()?) as usize);
    while at < answer.len() {
        let token = answer[at];
        at += 1;
        match token {
            tokens::DONE => {
                // TDS 7.2 and later: status, current command, a 64-bit row count.
                let end = at + 12;
                return (end == answer.len()).then_some((logged_in, at - 1));
            }
            tokens::LOGINACK | tokens::ENVCHANGE | tokens::INFO | tokens::ERROR | SSPI => {
                logged_in |= token == tokens::LOGINACK;
                at += 2 + u16_at(at)?;
            }
            SESSIONSTATE | FEDAUTHINFO => at += 4 + u32_at(at)?,
            FEATUREEXTACK => loop {
                let feature = *answer.get(at)?;
                at += 1;
                if feature == 0xFF {
                    break;
                }
                at += 4 + u32_at(at)?;
            },
            _ => return None,
        }
    }
    None
}

const SSPI: u8 = 0xED;
const SESSIONSTATE: u8 = 0xE4;
const FEDAUTHINFO: u8 = 0xEE;
const FEATUREEXTACK: u8 = 0xAE;

/// The server's answer to a client's LOGIN7 with a routing ENVCHANGE to `host`:`port`
/// before its final DONE — if the server accepted the login and the client speaks TDS
/// 7.4 (routing is not defined before it); otherwise None, and the answer passes as it
/// came.
pub fn routed(answer: &[u8], client_version: u32, host: &str, port: u16) -> Option<Vec<u8>> {
    if Version::negotiate(client_version)? < Version::V7_4 {
        return None;
    }
    let (logged_in, done) = final_done(answer)?;
    if !logged_in {
        return None;
    }
    let mut routing = BytesMut::new();
    tokens::env_change_routing(&mut routing, host, port);
    let mut out = Vec::with_capacity(answer.len() + routing.len());
    out.extend_from_slice(&answer[..done]);
    out.extend_from_slice(&routing);
    out.extend_from_slice(&answer[done..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    fn answer(with_ack: bool) -> Vec<u8> {
        let mut out = BytesMut::new();
        tokens::env_change_text(&mut out, tokens::ENV_DATABASE, "shop", "master");
        if with_ack {
            tokens::login_ack(&mut out, Version::V7_4, "tessera", [16, 0, 0, 0]);
        }
        out.put_u8(FEATUREEXTACK);
        out.put_u8(0x0A);
        out.put_u32_le(1);
        out.put_u8(1);
        out.put_u8(0xFF);
        out.put_u8(tokens::DONE);
        out.put_slice(&[0; 12]);
        out.to_vec()
    }

    #[test]
    fn an_accepted_login_gets_its_routing_before_the_final_done() {
        let plain = answer(true);
        let routed = routed(&plain, 0x7400_0004, "10.0.0.7", 14331).expect("routed");
        let mut token = BytesMut::new();
        tokens::env_change_routing(&mut token, "10.0.0.7", 14331);
        let done = plain.len() - 13;
        assert_eq!(&routed[..done], &plain[..done]);
        assert_eq!(&routed[done..done + token.len()], &token[..]);
        assert_eq!(&routed[done + token.len()..], &plain[done..]);
        // The token: type 20, value length, protocol 0, port, the name in UTF-16, empty old value.
        assert_eq!(token[3], 20);
        assert_eq!(u16::from_le_bytes([token[4], token[5]]) as usize, 1 + 2 + 2 + 2 * 8);
        assert_eq!(u16::from_le_bytes([token[7], token[8]]), 14331);
    }

    #[test]
    fn refused_logins_old_clients_and_unknown_tokens_pass_unchanged() {
        assert!(routed(&answer(false), 0x7400_0004, "h", 1).is_none(), "no LOGINACK");
        assert!(routed(&answer(true), 0x7300_000B, "h", 1).is_none(), "TDS 7.3");
        let mut odd = answer(true);
        odd.insert(0, 0x42);
        assert!(routed(&odd, 0x7400_0004, "h", 1).is_none());
        assert!(routed(&answer(true)[..20], 0x7400_0004, "h", 1).is_none(), "cut short");
    }
}
