//! A real `tessera serve` process for the campaigns that talk TDS to it (the soak, the
//! storm): started on a port of its own, learned from its ERRORLOG line on stderr.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The sa password of the campaigns' servers.
pub const PASSWORD: &str = "Torture-0nly!";

/// A running server and the port it listens on.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Starts `binary serve` on `data` with 64 MB of buffer pool and the `extra`
    /// arguments (a `--config` file, say), on a free port.
    pub fn start(binary: &Path, data: &Path, extra: &[&str]) -> Result<Server, String> {
        let mut child = Command::new(binary)
            .args(["serve", "--port", "0", "--memory-mb", "64"])
            .args(extra)
            .arg("--data-dir")
            .arg(data)
            .env("TESSERA_SA_PASSWORD", PASSWORD)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
        let port = loop {
            let Some(Ok(line)) = lines.next() else { return Err("the server exited before listening".into()) };
            if let Some(rest) = line.split("Server is listening on [ 127.0.0.1 <ipv4> ").nth(1) {
                break rest.trim_end_matches("].").parse::<u16>().map_err(|e| format!("{line}: {e}"))?;
            }
        };
        // Drained, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Ok(Server { child, port })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self) -> Result<(u64, u64), String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).map_err(|e| e.to_string())?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .ok_or_else(|| format!("no {name} in /proc/{}/status", self.pid()))
        };
        Ok((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// CPU time the process has used, user and system, in seconds.
    pub fn cpu_seconds(&self) -> Result<f64, String> {
        cpu_seconds(&format!("/proc/{}/stat", self.pid()))
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// CPU time (user and system) of the process whose `/proc/…/stat` is at `stat`, in seconds.
pub fn cpu_seconds(stat: &str) -> Result<f64, String> {
    let text = std::fs::read_to_string(stat).map_err(|e| format!("{stat}: {e}"))?;
    // Fields after the command name (which may hold spaces) in parentheses: utime and
    // stime are the 12th and 13th of them.
    let after = text.rsplit_once(')').map(|(_, rest)| rest).ok_or_else(|| format!("{stat}: no command name"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks =
        |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).ok_or_else(|| format!("{stat}: field {i}"));
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Ok((ticks(11)? + ticks(12)?) as f64 / per_second)
}
