//! `tessera top`: the operator's live view of a server, over one TDS connection. Each
//! refresh compares two samples of the server's DMVs (`sample`) and shows (`render`) the
//! header (the server's uptime, batch requests and compilations per second, sessions,
//! running and blocked requests), the busiest databases, the active sessions, the
//! blocking chains and the top waits. On a terminal it redraws the screen (ANSI escape
//! codes, sized to the terminal; `q` quits); with `--batch`, or when stdout is not a
//! terminal, it prints each refresh as plain text. Exit status 1 when the login lacks
//! VIEW SERVER STATE, the connection fails or the server goes away.

mod render;
mod sample;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};
use crossterm::terminal;

use crate::sql_cmd::Login;
use render::Room;
use sample::{Sample, Sampler};

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Server: host, host,port, host\instance or tcp:host,port (sqlcmd's -S).
    #[arg(short = 'S')]
    pub server: String,
    /// Login options as for `tessera sql`; without -P the password comes from
    /// SQLCMDPASSWORD, else TESSERA_SA_PASSWORD.
    #[command(flatten)]
    pub login: Login,
    /// Seconds between refreshes (fractions allowed).
    #[arg(long = "interval", default_value_t = 1.0, value_parser = parse_interval)]
    pub interval: f64,
    /// Stop after this many refreshes (default: until `q` or Ctrl-C).
    #[arg(long = "iterations", value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// No screen control: print each refresh as plain text (as `top -b`).
    #[arg(long = "batch")]
    pub batch: bool,
}

fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.05..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds between 0.05 and 86400")),
    }
}

pub fn run(mut args: TopArgs) -> ExitCode {
    if args.login.password.is_none() {
        args.login.password =
            ["SQLCMDPASSWORD", tessera_server::config::SA_PASSWORD_ENV].iter().find_map(|v| std::env::var(v).ok());
    }
    if args.login.password.is_none() {
        eprintln!("tessera top: give the password with -P, SQLCMDPASSWORD or TESSERA_SA_PASSWORD.");
        return ExitCode::from(1);
    }
    let interval = Duration::from_secs_f64(args.interval);
    let outcome = Sampler::connect(&args.server, &args.login).and_then(|sampler| {
        let mut top = Top { sampler, server: args.server.clone(), interval, iterations: args.iterations };
        if args.batch || !std::io::stdout().is_terminal() {
            top.batch()
        } else {
            top.interactive()
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(1)
        }
    }
}

struct Top {
    sampler: Sampler,
    server: String,
    interval: Duration,
    iterations: Option<u64>,
}

impl Top {
    fn done(&self, refreshes: u64) -> bool {
        self.iterations.is_some_and(|n| refreshes >= n)
    }

    /// Plain text: each refresh after a line of its own, flushed at once.
    fn batch(&mut self) -> Result<(), String> {
        let mut before = self.sampler.sample()?;
        let mut refreshes = 0;
        let stdout = std::io::stdout();
        while !self.done(refreshes) {
            std::thread::sleep(self.interval);
            let now = self.sampler.sample()?;
            refreshes += 1;
            let room = Room { width: None, height: None };
            let mut out = stdout.lock();
            let mut text = format!("=== refresh {refreshes} ===\n");
            for line in render::render(&before, &now, &self.server, room) {
                text.push_str(&line);
                text.push('\n');
            }
            text.push('\n');
            if out.write_all(text.as_bytes()).and_then(|()| out.flush()).is_err() {
                // stdout closed (`| head`): nothing more to show.
                return Ok(());
            }
            before = now;
        }
        Ok(())
    }

    /// The alternate screen, redrawn at each refresh and when the terminal is resized;
    /// raw mode so that `q` (or Esc, or Ctrl-C) quits at once.
    fn interactive(&mut self) -> Result<(), String> {
        terminal::enable_raw_mode().map_err(|e| format!("tessera top: cannot control the terminal: {e}"))?;
        let mut out = std::io::stdout();
        // The alternate screen, cursor hidden.
        let _ = out.write_all(b"\x1b[?1049h\x1b[?25l");
        let result = self.screen(&mut out);
        let _ = out.write_all(b"\x1b[?25h\x1b[?1049l");
        let _ = out.flush();
        let _ = terminal::disable_raw_mode();
        result
    }

    fn screen(&mut self, out: &mut std::io::Stdout) -> Result<(), String> {
        let mut before = self.sampler.sample()?;
        let _ = out.write_all(format!("\x1b[H\x1b[2Jtessera top — {}: first sample taken…", self.server).as_bytes());
        let _ = out.flush();
        let mut shown: Option<(Sample, Sample)> = None;
        let mut refreshes = 0;
        loop {
            let deadline = Instant::now() + self.interval;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                if !event::poll(left).unwrap_or(false) {
                    break;
                }
                match event::read() {
                    Ok(Event::Key(key)) if quits(key) => return Ok(()),
                    Ok(Event::Resize(..)) => {
                        if let Some((b, n)) = &shown {
                            draw(out, b, n, &self.server);
                        }
                    }
                    _ => {}
                }
            }
            let now = self.sampler.sample()?;
            refreshes += 1;
            draw(out, &before, &now, &self.server);
            if self.done(refreshes) {
                return Ok(());
            }
            shown = Some((before, now.clone()));
            before = now;
        }
    }
}

fn quits(key: KeyEvent) -> bool {
    match key.code {
        KeyCode::Char('q' | 'Q') | KeyCode::Esc => true,
        KeyCode::Char('c') => key.modifiers.contains(KeyModifiers::CONTROL),
        _ => false,
    }
}

/// Clears the screen and draws a refresh cut to the terminal's size (raw mode: lines end
/// in CR LF).
fn draw(out: &mut std::io::Stdout, before: &Sample, now: &Sample, server: &str) {
    // A terminal that reports no size (0 × 0, as some serial consoles do) is taken as 80 × 24.
    let (width, height) = match terminal::size() {
        Ok((w, h)) if w > 0 && h > 0 => (usize::from(w), usize::from(h)),
        _ => (80, 24),
    };
    let room = Room { width: Some(width), height: Some(height.saturating_sub(1)) };
    let mut text = String::from("\x1b[H\x1b[2J");
    text.push_str(&render::render(before, now, server, room).join("\r\n"));
    text.push_str("\r\n\x1b[7mq quits\x1b[0m");
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}
