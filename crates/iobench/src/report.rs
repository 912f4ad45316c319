//! A run's outputs: the text report (diskspd's layout: CPU, per-thread tables for total, read
//! and write I/O, then a latency percentile table) and the JSON object (`--json`), which
//! carries the same fields.

use std::io::{self, Write};

use crate::params::{fmt_size, WriteData};
use crate::run::RunResult;
use crate::stats::{IoFigures, LatencySummary};

/// The run as one pretty-printed JSON object.
pub fn to_json(result: &RunResult) -> String {
    // Only strings, numbers and paths: serialising cannot fail.
    serde_json::to_string_pretty(result).expect("a run result serialises to JSON")
}

/// "1,234,567".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A latency in microseconds with enough digits for µs-scale and second-scale values.
fn fmt_us(us: f64) -> String {
    if us >= 100_000.0 {
        format!("{us:.0}")
    } else if us >= 100.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

fn describe_writes(data: WriteData) -> String {
    match data {
        WriteData::Zeros => "zeros".to_string(),
        WriteData::PerIoRandom => "fresh random bytes per write".to_string(),
        WriteData::RandomBuffer { size } => format!("slices of a {} random buffer", fmt_size(size)),
    }
}

/// Picks one direction's figures.
type Pick = fn(&crate::stats::Figures) -> &IoFigures;

/// Writes the text report.
pub fn write_text(r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let p = &r.params;
    writeln!(out, "{} {}, engine {}", r.tool, r.version, r.engine.name())?;
    let seed = match p.seed {
        Some(s) => s.to_string(),
        None => "from the clock".to_string(),
    };
    writeln!(out, "workload: {}; writes carry {}; seed {seed}", p.describe(), describe_writes(p.write_data))?;
    writeln!(out, "duration: {:.2} s measured ({} s warm-up, {} s cool-down)", r.duration_s, p.warmup, p.cooldown)?;
    for t in &r.targets {
        let filled = if t.filled { " (created or extended, filled with random data)" } else { "" };
        writeln!(
            out,
            "target '{}': {}, I/O within [{}, {}){filled}",
            t.path.display(),
            fmt_size(t.size),
            t.start,
            t.end
        )?;
    }
    writeln!(out)?;
    let c = &r.cpu;
    writeln!(
        out,
        "CPU, whole machine ({} CPUs): usage {:.1}%  user {:.1}%  kernel {:.1}%  idle {:.1}%",
        c.cpus, c.machine_usage_pct, c.machine_user_pct, c.machine_kernel_pct, c.machine_idle_pct
    )?;
    writeln!(
        out,
        "CPU, this process (% of one CPU): user {:.1}%  system {:.1}%",
        c.process_user_pct, c.process_sys_pct
    )?;

    let sections: [(&str, Pick); 3] =
        [("Total I/O", |f| &f.total), ("Read I/O", |f| &f.read), ("Write I/O", |f| &f.write)];
    for (title, pick) in sections {
        if title != "Total I/O" && pick(&r.total).ios == 0 {
            continue;
        }
        writeln!(out)?;
        writeln!(out, "{title}")?;
        let header = ["thread", "bytes", "I/Os", "MiB/s", "I/O per s", "AvgLat µs", "LatStdDev µs", "CPU %", "file"];
        let mut rows: Vec<[String; 9]> = Vec::new();
        let row = |label: String, f: &IoFigures, cpu: String, file: String| -> [String; 9] {
            let (avg, sd) = match f.latency_us {
                Some(l) => (fmt_us(l.avg), fmt_us(l.stddev)),
                None => ("-".to_string(), "-".to_string()),
            };
            [
                label,
                thousands(f.bytes),
                thousands(f.ios),
                format!("{:.2}", f.mib_per_s),
                format!("{:.2}", f.iops),
                avg,
                sd,
                cpu,
                file,
            ]
        };
        for t in &r.threads {
            rows.push(row(
                t.thread.to_string(),
                pick(&t.figures),
                format!("{:.1}", t.cpu_pct),
                t.target.display().to_string(),
            ));
        }
        let process_cpu = r.cpu.process_user_pct + r.cpu.process_sys_pct;
        rows.push(row("total".to_string(), pick(&r.total), format!("{process_cpu:.1}"), String::new()));
        write_table(out, &header, &rows, &[false, true, true, true, true, true, true, true, false])?;
    }

    writeln!(out)?;
    writeln!(out, "Latency (µs)")?;
    let mut columns: Vec<(&str, LatencySummary)> = Vec::new();
    for (name, f) in [("Read", &r.total.read), ("Write", &r.total.write), ("Total", &r.total.total)] {
        if let Some(l) = f.latency_us {
            columns.push((name, l));
        }
    }
    if columns.is_empty() {
        writeln!(out, "(no I/O completed in the measured interval)")?;
        return Ok(());
    }
    let mut header = vec!["%-ile"];
    header.extend(columns.iter().map(|(n, _)| *n));
    let labels = columns[0].1.rows().map(|(l, _)| l);
    let rows: Vec<Vec<String>> = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let mut row = vec![label.to_string()];
            row.extend(columns.iter().map(|(_, l)| fmt_us(l.rows()[i].1)));
            row
        })
        .collect();
    let right: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
    write_table(out, &header, &rows, &right)
}

fn write_table<R: AsRef<[String]>>(out: &mut dyn Write, header: &[&str], rows: &[R], right: &[bool]) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut s = String::new();
        for (i, cell) in cells.enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            if i > 0 {
                s.push_str(" | ");
            }
            if right[i] {
                s.push_str(&pad);
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&pad);
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", line(&mut header.iter().copied()))?;
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    writeln!(out, "{}", rule.join("-+-"))?;
    for row in rows {
        writeln!(out, "{}", line(&mut row.as_ref().iter().map(String::as_str)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(fmt_us(12.345), "12.35");
        assert_eq!(fmt_us(420.0), "420.0");
        assert_eq!(fmt_us(1_234_567.0), "1234567");
    }
}
