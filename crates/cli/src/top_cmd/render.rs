//! What a refresh of `tessera top` shows, made from two samples as lines of text: the
//! header, the busiest databases, the sessions, the blocking chains and the top waits.
//! The same lines go to the terminal (cut to its size) and to `--batch`'s output.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use super::sample::{FileTotals, LockCounts, Sample};

/// How much room there is: `None` is no limit (batch mode).
#[derive(Clone, Copy, Debug)]
pub struct Room {
    pub width: Option<usize>,
    pub height: Option<usize>,
}

/// At most this many databases and wait types in a refresh.
const TOP_ROWS: usize = 10;

/// A table: a header and rows, each column as wide as its widest cell, numbers to the
/// right.
struct Table {
    headers: &'static [&'static str],
    /// Columns aligned right.
    right: &'static [usize],
    rows: Vec<Vec<String>>,
}

impl Table {
    fn lines(&self) -> Vec<String> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let mut out = String::new();
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    out.push_str("  ");
                }
                match self.right.contains(&i) {
                    true => out.push_str(&format!("{cell:>w$}")),
                    false => out.push_str(&format!("{cell:<w$}")),
                }
            }
            out.trim_end().to_string()
        };
        let mut out = vec![line(self.headers.to_vec())];
        out.extend(self.rows.iter().map(|r| line(r.iter().map(String::as_str).collect())));
        out
    }
}

fn per_second(n: i64, seconds: f64) -> String {
    format!("{:.1}", n as f64 / seconds)
}

/// The time of day in UTC, `HH:MM:SS`.
fn clock(now: SystemTime) -> String {
    let s = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// How long the server has been up: `3d 04:05:06`, or `04:05:06` in its first day.
fn uptime(seconds: i64) -> String {
    let s = seconds.max(0);
    let clock = format!("{:02}:{:02}:{:02}", s % 86_400 / 3600, s / 60 % 60, s % 60);
    match s / 86_400 {
        0 => clock,
        days => format!("{days}d {clock}"),
    }
}

/// One refresh's lines for the interval from `before` to `now`.
pub fn render(before: &Sample, now: &Sample, server: &str, room: Room) -> Vec<String> {
    let seconds = now.taken.duration_since(before.taken).as_secs_f64().max(0.001);
    let mut lines = header(before, now, server, seconds);
    lines.push(String::new());
    lines.extend(databases(before, now, seconds));
    let chains = chains(now);
    let waits = waits(before, now);
    let mut sessions = sessions(now);
    if let Some(height) = room.height {
        // Sessions get what the other sections leave (at least their title and header).
        let others = lines.len() + chains.len() + waits.len() + 3;
        let keep = height.saturating_sub(others).max(2);
        if sessions.len() > keep {
            let hidden = sessions.len() - keep + 1;
            sessions.truncate(keep - 1);
            sessions.push(format!("… {hidden} more"));
        }
    }
    for section in [sessions, chains, waits] {
        lines.push(String::new());
        lines.extend(section);
    }
    if let Some(width) = room.width {
        for line in &mut lines {
            if line.chars().count() > width {
                *line = line.chars().take(width).collect();
            }
        }
    }
    if let Some(height) = room.height {
        lines.truncate(height);
    }
    lines
}

fn header(before: &Sample, now: &Sample, server: &str, seconds: f64) -> Vec<String> {
    let delta = |name: &str| {
        let (b, n) = (before.statistics.get(name).copied(), now.statistics.get(name).copied());
        n.unwrap_or(0) - b.unwrap_or(0)
    };
    // Each sample is one batch of its own: the later one is in the count; leave it out.
    let requests = (delta("Batch Requests/sec") - 1).max(0);
    let compilations = delta("SQL Compilations/sec").max(0);
    let running = now.requests.len();
    let blocked = now.requests.iter().filter(|r| r.blocker != 0).count();
    let in_transaction = now.sessions.iter().filter(|s| s.open_transactions > 0).count();
    let open = now.databases.iter().filter(|d| d.is_open).count();
    let up = now.uptime_s.map_or(String::new(), |s| format!(", up {}", uptime(s)));
    vec![
        format!(
            "tessera top — {server} ({}), {} UTC{up}, interval {seconds:.1} s",
            now.server_name,
            clock(SystemTime::now())
        ),
        format!(
            "batch requests/s {}  compilations/s {}  sessions {}  running {running}  blocked {blocked}  \
             in a transaction {in_transaction}  databases {} ({open} open)",
            per_second(requests, seconds),
            per_second(compilations, seconds),
            now.sessions.len(),
            now.databases.len(),
        ),
    ]
}

/// The busiest databases: by I/O operations (reads + writes of its data and log files,
/// `sys.dm_io_virtual_file_stats`) in the interval, then requests running in it now, then
/// sessions in it; those with none of the three are left out.
fn databases(before: &Sample, now: &Sample, seconds: f64) -> Vec<String> {
    struct Busy<'a> {
        name: &'a str,
        io: FileTotals,
        requests: usize,
        blocked: usize,
        sessions: usize,
        is_open: bool,
        pool_kb: i64,
        size_kb: i64,
    }
    let mut busy: Vec<Busy> = now
        .databases
        .iter()
        .map(|d| Busy {
            name: &d.name,
            io: now.files.get(&d.id).map_or_else(FileTotals::default, |f| f.since(before.files.get(&d.id))),
            requests: now.requests.iter().filter(|r| r.database_id == d.id).count(),
            blocked: now.requests.iter().filter(|r| r.database_id == d.id && r.blocker != 0).count(),
            sessions: now.sessions.iter().filter(|s| s.database_id == d.id).count(),
            is_open: d.is_open,
            pool_kb: d.buffer_pool_kb,
            size_kb: d.file_size_kb,
        })
        .filter(|b| b.io.reads + b.io.writes > 0 || b.requests > 0 || b.sessions > 0)
        .collect();
    busy.sort_by(|a, b| {
        (b.io.reads + b.io.writes, b.requests, b.sessions)
            .cmp(&(a.io.reads + a.io.writes, a.requests, a.sessions))
            .then_with(|| a.name.cmp(b.name))
    });
    let shown = busy.len().min(TOP_ROWS);
    let mut out = vec![format!(
        "BUSIEST DATABASES (by I/O operations in the interval, then requests, then sessions; {shown} of {})",
        busy.len()
    )];
    if busy.is_empty() {
        out.push("(no activity)".to_string());
        return out;
    }
    let kb = |bytes: i64| per_second(bytes / 1024, seconds);
    let table = Table {
        headers: &[
            "DATABASE",
            "READS/S",
            "WRITES/S",
            "KB_READ/S",
            "KB_WRITTEN/S",
            "STALL_MS",
            "REQUESTS",
            "BLOCKED",
            "SESSIONS",
            "OPEN",
            "POOL_KB",
            "SIZE_KB",
        ],
        right: &[1, 2, 3, 4, 5, 6, 7, 8, 10, 11],
        rows: busy
            .iter()
            .take(TOP_ROWS)
            .map(|b| {
                vec![
                    b.name.to_string(),
                    per_second(b.io.reads, seconds),
                    per_second(b.io.writes, seconds),
                    kb(b.io.bytes_read),
                    kb(b.io.bytes_written),
                    b.io.stall_ms.to_string(),
                    b.requests.to_string(),
                    b.blocked.to_string(),
                    b.sessions.to_string(),
                    if b.is_open { "yes" } else { "no" }.to_string(),
                    b.pool_kb.to_string(),
                    b.size_kb.to_string(),
                ]
            })
            .collect(),
    };
    out.extend(table.lines());
    out
}

/// Who blocks whom now: blocked session → its blocker.
fn blockers(now: &Sample) -> BTreeMap<i64, i64> {
    now.requests.iter().filter(|r| r.blocker != 0).map(|r| (r.session_id, r.blocker)).collect()
}

/// The sessions doing something (a request, an open transaction, locks, or blocking
/// another), blocking ones first, then by CPU; idle ones are only counted.
fn sessions(now: &Sample) -> Vec<String> {
    let blocked_by = blockers(now);
    let blocking: BTreeSet<i64> = blocked_by.values().copied().collect();
    let no_locks = LockCounts::default();
    let mut shown: Vec<_> = now
        .sessions
        .iter()
        .map(|s| (s, now.request(s.id), now.locks.get(&s.id).unwrap_or(&no_locks)))
        .filter(|(s, r, l)| {
            r.is_some() || s.open_transactions > 0 || l.granted + l.waiting > 0 || blocking.contains(&s.id)
        })
        .collect();
    let in_chain = |id: i64| blocked_by.contains_key(&id) || blocking.contains(&id);
    shown.sort_by_key(|(s, r, _)| (!in_chain(s.id), -r.map_or(0, |r| r.cpu_ms), s.id));
    let idle = now.sessions.len() - shown.len();
    let mut out = vec![format!("SESSIONS ({} active, {idle} idle not shown)", shown.len())];
    let table = Table {
        headers: &[
            "SPID",
            "LOGIN",
            "DATABASE",
            "STATUS",
            "COMMAND",
            "WAIT_TYPE",
            "WAIT_MS",
            "CPU_MS",
            "ELAPSED_MS",
            "BLOCKED_BY",
            "TRAN",
            "LOCKS",
            "DONE%",
            "WAIT_RESOURCE",
        ],
        right: &[0, 6, 7, 8, 10, 11, 12],
        rows: shown
            .iter()
            .map(|(s, r, l)| {
                let database = now.database_name(r.map_or(s.database_id, |r| r.database_id));
                let blocker = match (blocked_by.get(&s.id), blocking.contains(&s.id)) {
                    (Some(b), _) => b.to_string(),
                    (None, true) => "head".to_string(),
                    (None, false) => String::new(),
                };
                let locks = match l.waiting {
                    0 => l.granted.to_string(),
                    w => format!("{}+{w}w", l.granted),
                };
                vec![
                    s.id.to_string(),
                    s.login.clone(),
                    database,
                    r.map_or(s.status.as_str(), |r| r.status.as_str()).to_string(),
                    r.map_or("", |r| r.command.as_str()).to_string(),
                    r.and_then(|r| r.wait_type.clone()).unwrap_or_default(),
                    r.filter(|r| r.wait_type.is_some()).map_or(String::new(), |r| r.wait_ms.to_string()),
                    r.map_or(String::new(), |r| r.cpu_ms.to_string()),
                    r.map_or(String::new(), |r| r.elapsed_ms.to_string()),
                    blocker,
                    s.open_transactions.to_string(),
                    locks,
                    r.filter(|r| r.percent_complete > 0.0)
                        .map_or(String::new(), |r| format!("{:.1}", r.percent_complete)),
                    r.map_or("", |r| r.wait_resource.as_str()).to_string(),
                ]
            })
            .collect(),
    };
    if !shown.is_empty() {
        out.extend(table.lines());
    }
    out
}

/// Blocking chains as trees: each head blocker (blocking others, blocked by none), the
/// sessions waiting for it beneath it, and theirs beneath them. Sessions blocking one
/// another in a circle have no head: the circle is shown from its lowest session id.
fn chains(now: &Sample) -> Vec<String> {
    let blocked_by = blockers(now);
    let mut children: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for (&blocked, &blocker) in &blocked_by {
        children.entry(blocker).or_default().push(blocked);
    }
    let mut out = vec![format!("BLOCKING CHAINS ({} blocked)", blocked_by.len())];
    if blocked_by.is_empty() {
        out.push("(none)".to_string());
        return out;
    }
    let logins: HashMap<i64, &str> = now.sessions.iter().map(|s| (s.id, s.login.as_str())).collect();
    let describe = |id: i64| {
        let login = logins.get(&id).copied().unwrap_or("?");
        let session = now.sessions.iter().find(|s| s.id == id);
        let mut text = format!("{id} {login}");
        match now.request(id) {
            Some(r) => {
                text.push_str(&format!(" [{}] {} {}", now.database_name(r.database_id), r.status, r.command));
                if let Some(w) = &r.wait_type {
                    text.push_str(&format!(" {w} {} ms", r.wait_ms));
                }
                if !r.wait_resource.is_empty() {
                    text.push_str(&format!(" on {}", r.wait_resource.trim_end()));
                }
            }
            None => {
                let database = session.map_or_else(String::new, |s| now.database_name(s.database_id));
                let status = session.map_or("gone", |s| s.status.as_str());
                text.push_str(&format!(" [{database}] {status}, no request"));
            }
        }
        if let Some(s) = session.filter(|s| s.open_transactions > 0) {
            text.push_str(&format!(", {} open transaction(s)", s.open_transactions));
        }
        if let Some(l) = now.locks.get(&id).filter(|l| l.granted > 0) {
            text.push_str(&format!(", holds {} lock(s)", l.granted));
        }
        text
    };
    let mut seen = BTreeSet::new();
    let heads: Vec<i64> = children.keys().copied().filter(|b| !blocked_by.contains_key(b)).collect();
    for head in heads {
        out.push(format!("{} (head blocker)", describe(head)));
        tree(head, "", &children, &describe, &mut seen, &mut out);
    }
    // What no head reached blocks in a circle.
    while let Some(&start) = blocked_by.keys().find(|id| !seen.contains(*id)) {
        seen.insert(start);
        out.push(format!("{} (in a circle of blocking sessions)", describe(start)));
        tree(start, "", &children, &describe, &mut seen, &mut out);
    }
    out
}

fn tree(
    id: i64,
    indent: &str,
    children: &BTreeMap<i64, Vec<i64>>,
    describe: &dyn Fn(i64) -> String,
    seen: &mut BTreeSet<i64>,
    out: &mut Vec<String>,
) {
    let Some(kids) = children.get(&id) else { return };
    for (i, &kid) in kids.iter().enumerate() {
        let last = i + 1 == kids.len();
        let again = !seen.insert(kid);
        let mark = if again { " (again: a circle)" } else { "" };
        out.push(format!("{indent}{}{}{mark}", if last { "└─ " } else { "├─ " }, describe(kid)));
        if !again {
            let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
            tree(kid, &deeper, children, describe, seen, out);
        }
    }
}

/// The wait types that took the most time in the interval (`sys.dm_os_wait_stats`
/// counts a wait when it ends), with the requests waiting now.
fn waits(before: &Sample, now: &Sample) -> Vec<String> {
    struct Row<'a> {
        kind: &'a str,
        waits: i64,
        wait_ms: i64,
        waiting_now: usize,
        longest_now_ms: i64,
    }
    let mut rows: Vec<Row> = now
        .waits
        .iter()
        .map(|(kind, n)| {
            // Counters cleared in between (DBCC SQLPERF): all of now's are new.
            let b = before.waits.get(kind).filter(|b| b.waits <= n.waits).copied().unwrap_or_default();
            let current: Vec<i64> =
                now.requests.iter().filter(|r| r.wait_type.as_deref() == Some(kind)).map(|r| r.wait_ms).collect();
            Row {
                kind,
                waits: n.waits - b.waits,
                wait_ms: (n.wait_ms - b.wait_ms).max(0),
                waiting_now: current.len(),
                longest_now_ms: current.iter().copied().max().unwrap_or(0),
            }
        })
        .filter(|r| r.waits > 0 || r.waiting_now > 0)
        .collect();
    rows.sort_by(|a, b| {
        (b.wait_ms, b.longest_now_ms, b.waits).cmp(&(a.wait_ms, a.longest_now_ms, a.waits)).then(a.kind.cmp(b.kind))
    });
    let mut out = vec!["TOP WAITS (ended in the interval, by wait time; and requests waiting now)".to_string()];
    if rows.is_empty() {
        out.push("(none)".to_string());
        return out;
    }
    let table = Table {
        headers: &["WAIT_TYPE", "WAITS", "WAIT_MS", "AVG_MS", "WAITING_NOW", "LONGEST_NOW_MS"],
        right: &[1, 2, 3, 4, 5],
        rows: rows
            .iter()
            .take(TOP_ROWS)
            .map(|r| {
                vec![
                    r.kind.to_string(),
                    r.waits.to_string(),
                    r.wait_ms.to_string(),
                    if r.waits > 0 { format!("{:.1}", r.wait_ms as f64 / r.waits as f64) } else { String::new() },
                    r.waiting_now.to_string(),
                    if r.waiting_now > 0 { r.longest_now_ms.to_string() } else { String::new() },
                ]
            })
            .collect(),
    };
    out.extend(table.lines());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top_cmd::sample::{RequestRow, SessionRow};

    fn waiting(session: i64, blocker: i64) -> RequestRow {
        RequestRow {
            session_id: session,
            status: "suspended".to_string(),
            command: "UPDATE".to_string(),
            database_id: 5,
            blocker,
            wait_type: Some("LCK_M_X".to_string()),
            wait_ms: 10,
            wait_resource: String::new(),
            cpu_ms: 0,
            elapsed_ms: 10,
            percent_complete: 0.0,
        }
    }

    fn with(requests: Vec<RequestRow>) -> Sample {
        let session = |id| SessionRow {
            id,
            login: "sa".to_string(),
            status: "sleeping".to_string(),
            database_id: 5,
            open_transactions: 1,
        };
        Sample {
            taken: std::time::Instant::now(),
            server_name: "s".to_string(),
            uptime_s: Some(90_061),
            statistics: HashMap::new(),
            databases: Vec::new(),
            files: HashMap::new(),
            waits: HashMap::new(),
            locks: HashMap::new(),
            sessions: (51..=56).map(session).collect(),
            requests,
        }
    }

    #[test]
    fn the_header_shows_the_uptime() {
        assert_eq!(uptime(0), "00:00:00");
        assert_eq!(uptime(3_725), "01:02:05");
        assert_eq!(uptime(90_061), "1d 01:01:01");
        assert_eq!(uptime(-5), "00:00:00", "a clock set back");
        let now = with(Vec::new());
        let first = header(&now, &now, "host", 1.0).remove(0);
        assert!(first.contains(" UTC, up 1d 01:01:01, interval 1.0 s"), "{first}");
    }

    #[test]
    fn chains_are_trees_under_their_heads_and_circles_end() {
        // 51 blocks 52 and 53, 52 blocks 54; 55 and 56 block each other.
        let now = with(vec![waiting(52, 51), waiting(53, 51), waiting(54, 52), waiting(55, 56), waiting(56, 55)]);
        let lines = chains(&now);
        let starts: Vec<String> = lines.iter().map(|l| l.split(" sa ").next().unwrap().to_string()).collect();
        assert_eq!(
            starts,
            ["BLOCKING CHAINS (5 blocked)", "51", "├─ 52", "│  └─ 54", "└─ 53", "55", "└─ 56", "   └─ 55"]
        );
        assert!(lines[1].ends_with("(head blocker)"), "{lines:?}");
        assert!(lines[5].ends_with("(in a circle of blocking sessions)"), "{lines:?}");
        assert!(lines[7].ends_with("(again: a circle)"), "{lines:?}");
    }
}
