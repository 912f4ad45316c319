//! Connections that never log in hold a place among `max_pending_logins` only until their
//! `login_timeout_secs` runs out: past the limit a new connection is closed at once, the
//! ERRORLOG says why, and once the silent ones
//! are gone logins work again. Logged-in connections never count.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::tds::{connect_as, connect_to, count};
use common::{TestServer, PASSWORD};

#[test]
fn clients_that_never_log_in_cannot_take_every_place() {
    let server = TestServer::start_with(|c| {
        c.max_pending_logins = 2;
        c.login_timeout_secs = 3;
    });
    let port = server.port();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // A logged-in connection does not hold a place.
    let mut held = rt.block_on(connect_as(port, "sa", PASSWORD));
    let silent: Vec<std::net::TcpStream> =
        (0..2).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let mut third = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut sink = [0u8; 16];
    third.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert!(matches!(third.read(&mut sink), Ok(0) | Err(_)));
    assert!(started.elapsed() < Duration::from_secs(2), "closed at once, not at the login timeout");
    assert!(rt.block_on(connect_to(port, "sa", PASSWORD, "master")).is_err(), "no place for a login now");
    assert_eq!(rt.block_on(count(&mut held, "SELECT 7")), 7, "a logged-in connection goes on");

    // The silent ones are closed at their login timeout; then logins work again.
    for mut s in silent {
        s.set_read_timeout(Some(Duration::from_secs(6))).unwrap();
        assert!(matches!(s.read(&mut sink), Ok(0) | Err(_)));
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut again = rt.block_on(connect_to(port, "sa", PASSWORD, "master")).expect("a login once places are free");
    assert_eq!(rt.block_on(count(&mut again, "SELECT 8")), 8);
    let log = server.errorlog();
    let refusals = log.matches("connections are already waiting to log in (max_pending_logins)").count();
    assert_eq!(refusals, 2, "a line for each refusal (a flood of them is sampled):\n{log}");
    assert!(log.contains("Login timeout for the connection from"), "{log}");
}
