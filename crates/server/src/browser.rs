//! The SQL Server Browser: the SQL Server Resolution Protocol ([MC-SQLR], SSRP) on UDP
//! port 1434, through which clients given `host\INSTANCE` learn the instance's TCP port.
//!
//! Every named instance with the browser on tries to bind UDP 1434 on its listen address;
//! the one that holds it answers for every live instance in the host's instances directory
//! (`instance::live`), and the others retry the bind every second, so when the holder stops
//! another takes over. Requests answered (MC-SQLR 2.2):
//!
//! - CLNT_BCAST_EX (`02`) and CLNT_UCAST_EX (`03`): every instance;
//! - CLNT_UCAST_INST (`04` name, NUL-terminated, at most 32 bytes): that instance only,
//!   and no answer when it is not running (as SQL Server's Browser);
//! - CLNT_UCAST_DAC (`0F` `01` name) is not answered: tessera has no dedicated
//!   administrator connection endpoint to point a client at.
//!
//! Each answer is SVR_RESP: `05`, the length as a little-endian u16, then per instance
//! `ServerName;HOST;InstanceName;NAME;IsClustered;No;Version;16.0.1000.6;tcp;PORT;;`.
//!
//! Invariant: a datagram that is not exactly one of the requests above is dropped without a
//! reply; nothing a datagram holds can fail or stop the browser or the server.

use std::net::UdpSocket as StdUdpSocket;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::sync::watch;

use crate::errorlog::ErrorLog;
use crate::instance::{self, Entry};

/// The SQL Server Browser's well-known port.
pub const SSRP_PORT: u16 = 1434;

/// How often an instance that does not hold the port tries to bind it again.
pub const RETRY: Duration = Duration::from_secs(1);

/// The version the browser reports (SERVERPROPERTY('ProductVersion')).
use tessera_execution::runtime::PRODUCT_VERSION as VERSION;

const SVR_RESP: u8 = 0x05;
/// MC-SQLR 2.2.5: the most RESP_DATA for one instance, and for all of them.
const MAX_INSTANCE_DATA: usize = 1024;
const MAX_ALL_DATA: usize = 65_535;
/// CLNT_UCAST_INST's instance name, its terminating NUL included (MC-SQLR 2.2.3).
const MAX_INSTANCE_NAME: usize = 32;

/// A request the browser answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// CLNT_BCAST_EX or CLNT_UCAST_EX: every instance.
    All,
    /// CLNT_UCAST_INST: the named one.
    Instance(String),
}

/// Decodes a datagram; `None` for anything that is not a request the browser answers.
pub fn parse_request(datagram: &[u8]) -> Option<Request> {
    match datagram {
        [0x02] | [0x03] => Some(Request::All),
        [0x04, name @ ..] if !name.is_empty() && name.len() <= MAX_INSTANCE_NAME => {
            // The NUL is required by the specification; some clients leave it out.
            let name = name.strip_suffix(&[0]).unwrap_or(name);
            let name = std::str::from_utf8(name).ok()?;
            (!name.is_empty() && !name.contains('\0')).then(|| Request::Instance(name.to_string()))
        }
        _ => None,
    }
}

/// One instance's part of RESP_DATA.
pub fn describe(host: &str, entry: &Entry) -> String {
    format!("ServerName;{host};InstanceName;{};IsClustered;No;Version;{VERSION};tcp;{};;", entry.name, entry.port)
}

/// SVR_RESP around `data`.
fn svr_resp(data: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(3 + data.len());
    out.push(SVR_RESP);
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(data.as_bytes());
    out
}

/// The reply to `datagram` from a host named `host` running `entries`, if it gets one.
pub fn answer(datagram: &[u8], host: &str, entries: &[Entry]) -> Option<Vec<u8>> {
    match parse_request(datagram)? {
        Request::All => {
            let mut data = String::new();
            for e in entries {
                let part = describe(host, e);
                if data.len() + part.len() > MAX_ALL_DATA {
                    break;
                }
                data.push_str(&part);
            }
            (!data.is_empty()).then(|| svr_resp(&data))
        }
        Request::Instance(name) => {
            let e = entries.iter().find(|e| e.name.eq_ignore_ascii_case(&name))?;
            let data = describe(host, e);
            (data.len() <= MAX_INSTANCE_DATA).then(|| svr_resp(&data))
        }
    }
}

/// Decodes an SVR_RESP into (instance name, TCP port) pairs (instances without TCP are
/// left out); `None` if it is not one.
pub fn parse_response(datagram: &[u8]) -> Option<Vec<(String, u16)>> {
    let [SVR_RESP, lo, hi, data @ ..] = datagram else { return None };
    let data = data.get(..usize::from(u16::from_le_bytes([*lo, *hi])))?;
    let text = std::str::from_utf8(data).ok()?;
    let mut found = Vec::new();
    for instance in text.split(";;").filter(|s| !s.is_empty()) {
        let fields: Vec<&str> = instance.split(';').collect();
        let value = |key: &str| fields.chunks(2).find(|kv| kv[0].eq_ignore_ascii_case(key)).and_then(|kv| kv.get(1));
        if let (Some(name), Some(port)) = (value("InstanceName"), value("tcp").and_then(|p| p.parse().ok())) {
            found.push((name.to_string(), port));
        }
    }
    Some(found)
}

/// The client side, as sqlcmd does it: asks `host`'s browser for `instance`'s TCP port
/// with CLNT_UCAST_INST, waiting at most `timeout` for the reply.
pub fn resolve(host: &str, instance: &str, timeout: Duration) -> std::io::Result<u16> {
    let not_found = || {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no SQL Server Browser on {host} answered for the instance {instance}"),
        )
    };
    let target = std::net::ToSocketAddrs::to_socket_addrs(&(host, SSRP_PORT))?.next().ok_or_else(not_found)?;
    let local: std::net::SocketAddr = if target.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let socket = StdUdpSocket::bind(local)?;
    socket.set_read_timeout(Some(timeout))?;
    let mut request = vec![0x04];
    request.extend_from_slice(instance.as_bytes());
    request.push(0);
    socket.send_to(&request, target)?;
    let mut buf = vec![0u8; 4096];
    let n = socket.recv(&mut buf).map_err(|_| not_found())?;
    parse_response(&buf[..n])
        .and_then(|list| list.into_iter().find(|(name, _)| name.eq_ignore_ascii_case(instance)))
        .map(|(_, port)| port)
        .ok_or_else(not_found)
}

/// This machine's name, as the browser reports it.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into the buffer it is given.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match (rc, std::str::from_utf8(&buf[..end])) {
        (0, Ok(name)) if !name.is_empty() => name.split('.').next().unwrap_or(name).to_uppercase(),
        _ => "LOCALHOST".to_string(),
    }
}

/// The browser task of one instance: holds UDP 1434 on `listen` when it can (retrying every
/// [`RETRY`] while another process has it) and answers from `instances_dir` until
/// `shutdown` turns true.
pub async fn run(listen: String, instances_dir: PathBuf, log: Arc<ErrorLog>, mut shutdown: watch::Receiver<bool>) {
    let host = host_name();
    let mut waiting_logged = false;
    loop {
        match UdpSocket::bind((listen.as_str(), SSRP_PORT)).await {
            Ok(socket) => {
                log.server(&format!(
                    "SQL Server Browser {} UDP port {SSRP_PORT} on {listen}, answering for the instances registered in '{}'.",
                    if waiting_logged { "took over" } else { "is listening on" },
                    instances_dir.display()
                ));
                serve(&socket, &host, &instances_dir, &mut shutdown).await;
                return;
            }
            Err(e) if !waiting_logged => {
                log.server(&format!(
                    "SQL Server Browser: UDP port {SSRP_PORT} on {listen} is held by another process ({e}); the instance holding it answers for this one. Trying again every {} s.",
                    RETRY.as_secs()
                ));
                waiting_logged = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            r = shutdown.changed() => if r.is_err() || *shutdown.borrow() { return },
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}

async fn serve(socket: &UdpSocket, host: &str, dir: &std::path::Path, shutdown: &mut watch::Receiver<bool>) {
    let mut buf = vec![0u8; 2048];
    loop {
        tokio::select! {
            r = shutdown.changed() => if r.is_err() || *shutdown.borrow() { return },
            received = socket.recv_from(&mut buf) => {
                // An error here is about one datagram (e.g. ICMP port unreachable for an
                // earlier reply): go on.
                let Ok((n, peer)) = received else { continue };
                let entries = instance::live(dir);
                if let Some(reply) = answer(&buf[..n], host, &entries) {
                    let _ = socket.send_to(&reply, peer).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        vec![Entry { name: "ALPHA".into(), port: 50001, pid: 1 }, Entry { name: "BETA".into(), port: 50002, pid: 2 }]
    }

    #[test]
    fn answers_the_three_requests() {
        let all = answer(&[0x03], "H", &entries()).unwrap();
        let data = "ServerName;H;InstanceName;ALPHA;IsClustered;No;Version;16.0.1000.6;tcp;50001;;\
                    ServerName;H;InstanceName;BETA;IsClustered;No;Version;16.0.1000.6;tcp;50002;;";
        assert_eq!(all[0], 0x05);
        assert_eq!(u16::from_le_bytes([all[1], all[2]]) as usize, data.len());
        assert_eq!(&all[3..], data.as_bytes());
        assert_eq!(answer(&[0x02], "H", &entries()), Some(all.clone()));
        assert_eq!(parse_response(&all).unwrap(), [("ALPHA".to_string(), 50001), ("BETA".to_string(), 50002)]);
        let one = answer(b"\x04beta\0", "H", &entries()).unwrap();
        assert_eq!(parse_response(&one).unwrap(), [("BETA".to_string(), 50002)]);
        assert_eq!(answer(b"\x04BETA", "H", &entries()), Some(one));
        assert_eq!(answer(b"\x04GAMMA\0", "H", &entries()), None);
        assert_eq!(answer(&[0x03], "H", &[]), None);
    }

    #[test]
    fn malformed_datagrams_get_no_answer() {
        let long = [&[0x04][..], &[b'A'; 40]].concat();
        for bad in [
            &[][..],
            &[0x00],
            &[0x05],
            &[0x02, 0x00],
            &[0x03, 0x03],
            &[0x04],
            &[0x04, 0x00],
            b"\x04A\0B\0",
            &[0x04, 0xFF, 0xFE],
            &long,
            &[0x0F, 0x01, b'A', 0],
        ] {
            assert_eq!(answer(bad, "H", &entries()), None, "{bad:?}");
        }
        assert_eq!(parse_response(&[0x05, 0x10, 0x00, b'a']), None);
        assert_eq!(parse_response(&[0x04]), None);
    }
}
