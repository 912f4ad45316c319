//! TLS that passes through the gateway (`tessera gateway --tls passthrough`): a TDS 8.0
//! strict connection opens with a TLS ClientHello on the bare socket, and the login —
//! with the database it names — comes only inside the TLS that follows. Rather than
//! terminate it, the gateway reads the ClientHello's server name (SNI) without answering
//! it, takes its first label as the database (`shop.fleet.example.com` → `shop`, a
//! wildcard DNS name pointing at the gateways), and hands the connection, ClientHello
//! and all, to the server that holds that database, which completes the handshake with
//! its own certificate: the gateway never sees the plaintext. Connections that open with
//! PRELOGIN (TDS 7.x) are terminated as before.

use std::io;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The most a ClientHello may take before the gateway gives up on it.
const CLIENT_HELLO_LIMIT_BYTES: usize = 16 * 1024;

/// Reads the connection's ClientHello: (the bytes read, which the server must get first;
/// the server name it asks for, if any).
pub async fn client_hello(tcp: &mut TcpStream) -> io::Result<(Vec<u8>, Option<String>)> {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut read = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tcp.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the client left during its ClientHello"));
        }
        read.extend_from_slice(&chunk[..n]);
        acceptor.read_tls(&mut &chunk[..n])?;
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                let name = accepted.client_hello().server_name().map(str::to_string);
                return Ok((read, name));
            }
            Ok(None) if read.len() < CLIENT_HELLO_LIMIT_BYTES => {}
            Ok(None) => return Err(io::Error::other("a ClientHello larger than 16 KiB")),
            Err((e, _)) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, format!("not a TLS ClientHello: {e}")))
            }
        }
    }
}

/// The database a server name routes to: its first label (None for a name of one label,
/// which names a host rather than a tenant).
pub fn database_of(server_name: &str) -> Option<&str> {
    let (first, rest) = server_name.split_once('.')?;
    (!first.is_empty() && !rest.is_empty()).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_label_of_the_server_name_is_the_database() {
        assert_eq!(database_of("shop.fleet.example.com"), Some("shop"));
        assert_eq!(database_of("r1.fleet"), Some("r1"));
        assert_eq!(database_of("localhost"), None);
        assert_eq!(database_of(".fleet"), None);
        assert_eq!(database_of("shop."), None);
    }
}
