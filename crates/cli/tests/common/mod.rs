//! A `tessera serve` started as users start it, for the tests of this crate.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const PASSWORD: &str = "Str0ng!pass";

pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Server {
    /// `-S` for it: `127.0.0.1,port`.
    pub fn address(&self) -> String {
        format!("127.0.0.1,{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tessera serve --port 0` on a data directory of its own and learns its port from
/// the ERRORLOG line on stderr ("Server is listening on [ 127.0.0.1 <ipv4> N]."), so tests
/// running at once can never race for a port; the rest of stderr is passed through.
pub fn start() -> Server {
    start_in_with(tempfile::tempdir().unwrap(), &[])
}

impl Server {
    /// Kills the server (SIGKILL: no shutdown, no checkpoint) and starts it again on the
    /// same data directory.
    pub fn kill_and_restart(self) -> Server {
        self.restart_with(&[])
    }

    /// Kills the server (SIGKILL), its data directory kept for [`Server::restart_with`].
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server if it runs, and starts it again on the same data directory with
    /// `extra` flags.
    pub fn restart_with(mut self, extra: &[String]) -> Server {
        self.kill();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        start_in_with(dir, extra)
    }
}

/// [`start`] with more flags for `tessera serve`.
pub fn start_with(extra: &[String]) -> Server {
    start_in_with(tempfile::tempdir().unwrap(), extra)
}

fn start_in_with(dir: tempfile::TempDir, extra: &[String]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["serve", "--port", "0", "--memory-mb", "64", "--data-dir"])
        .arg(dir.path())
        .args(extra)
        .env("TESSERA_SA_PASSWORD", PASSWORD)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let port = listening_port(&mut child, "Server is listening on [ 127.0.0.1 <ipv4> ");
    Server { child, port, dir }
}

/// The port a child process says it listens on: the digits after `marker` in the first
/// line of its stderr that has it. The rest of stderr is passed through.
pub fn listening_port(child: &mut Child, marker: &str) -> u16 {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("the process exited before listening").unwrap();
        eprintln!("{line}");
        if let Some(rest) = line.split(marker).nth(1) {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            break digits.parse::<u16>().expect("a port number");
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| eprintln!("{l}")));
    port
}

impl Server {
    /// `tessera sql -Q query` against this server: its output, with headers and padding
    /// off (the query must succeed).
    pub fn sql(&self, query: &str) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sql", "-S", &self.address(), "-U", "sa", "-P", PASSWORD, "-h", "-1", "-W", "-Q", query])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{query}: {text}");
        text
    }

    /// The same, left running in the background.
    pub fn sql_in_background(&self, query: &str) -> Child {
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sql", "-S", &self.address(), "-U", "sa", "-P", PASSWORD, "-Q", query])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}
