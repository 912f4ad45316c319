//! The result model of every `tessera bench <name>` and its three outputs: a readable table,
//! one JSON object, and a chart (PNG or SVG).
//!
//! The JSON shape is the project's benchmark convention: a `results` list whose rows are
//! `{"metric", "unit", "ours", "peer", "peer_value", "ratio", "goal"}`, with `ratio` oriented so
//! that > 1 means tessera did better than the peer (peer / ours for times, ours / peer for rates),
//! and `goal` the ratio asked for. Rows with no peer carry `peer: "none"`, no ratio, and the goal
//! in the metric's own unit.

use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::machine::Machine;

/// The peers a row may be compared with.
pub const PEERS: &[&str] = &["sqlite", "lmdb", "postgresql", "fio", "cp", "seed", "none"];

/// Units whose smaller values are better — times and amounts of memory: a goal in one of
/// them is a ceiling.
const CEILING_UNITS: &[&str] = &["s", "ms", "µs", "us", "ns", "min", "h", "B", "KiB", "MiB", "GiB"];

/// The whole result of one benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub benchmark: String,
    pub params: serde_json::Value,
    pub machine: Machine,
    pub results: Vec<ResultRow>,
    pub notes: Vec<String>,
    /// Curves for a line chart (figure against a parameter), drawn instead of the bars
    /// when there are any; absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
}

/// One curve of a report's line chart: `points` (x, y) of `name`, in the chart's panel
/// `panel` (one panel per distinct name, side by side), axes labelled `x_label`/`y_label`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub panel: String,
    pub name: String,
    pub x_label: String,
    pub y_label: String,
    pub points: Vec<(f64, f64)>,
}

/// One figure of tessera's, with the peer's figure it is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    pub metric: String,
    pub unit: String,
    pub ours: f64,
    pub peer: String,
    pub peer_value: Option<f64>,
    pub ratio: Option<f64>,
    pub goal: f64,
}

impl ResultRow {
    /// A rate (more is better) compared with a peer: ratio = ours / peer.
    pub fn rate(
        metric: impl Into<String>,
        unit: impl Into<String>,
        ours: f64,
        peer: impl Into<String>,
        peer_value: f64,
        goal: f64,
    ) -> ResultRow {
        ResultRow::compared(metric.into(), unit.into(), ours, peer.into(), peer_value, safe_div(ours, peer_value), goal)
    }

    /// A time, latency or amount of memory (less is better) compared with a peer: ratio =
    /// peer / ours.
    pub fn time(
        metric: impl Into<String>,
        unit: impl Into<String>,
        ours: f64,
        peer: impl Into<String>,
        peer_value: f64,
        goal: f64,
    ) -> ResultRow {
        ResultRow::compared(metric.into(), unit.into(), ours, peer.into(), peer_value, safe_div(peer_value, ours), goal)
    }

    fn compared(metric: String, unit: String, ours: f64, peer: String, peer_value: f64, ratio: f64, goal: f64) -> Self {
        ResultRow { metric, unit, ours, peer, peer_value: Some(peer_value), ratio: Some(ratio), goal }
    }

    /// A figure with no peer (`peer: "none"`): the goal is in the metric's unit. For time units
    /// (s, ms, µs, us, ns, …) and memory (B, KiB, MiB, GiB) the goal is a ceiling, for every
    /// other unit a floor.
    pub fn own(metric: impl Into<String>, unit: impl Into<String>, ours: f64, goal: f64) -> ResultRow {
        ResultRow {
            metric: metric.into(),
            unit: unit.into(),
            ours,
            peer: "none".to_string(),
            peer_value: None,
            ratio: None,
            goal,
        }
    }

    pub fn has_peer(&self) -> bool {
        self.peer != "none"
    }

    /// For a row with no peer: whether smaller values of `ours` are better (a time or memory
    /// unit).
    pub fn lower_is_better(&self) -> bool {
        !self.has_peer() && CEILING_UNITS.contains(&self.unit.as_str())
    }

    /// Whether the row meets its goal: ratio ≥ goal with a peer; with none, `ours` ≥ goal, or
    /// `ours` ≤ goal for times and memory.
    pub fn meets_goal(&self) -> bool {
        if self.has_peer() {
            self.ratio.is_some_and(|r| r >= self.goal)
        } else if self.lower_is_better() {
            self.ours <= self.goal
        } else {
            self.ours >= self.goal
        }
    }

    /// How far the row is from its goal: 1.0 exactly meets it, more is better. Used to draw
    /// every row on one scale.
    pub fn goal_fraction(&self) -> f64 {
        let value = if self.has_peer() {
            safe_div(self.ratio.unwrap_or(0.0), self.goal)
        } else if self.lower_is_better() {
            if self.ours > 0.0 {
                self.goal / self.ours
            } else {
                f64::INFINITY
            }
        } else {
            safe_div(self.ours, self.goal)
        };
        if value.is_nan() {
            0.0
        } else {
            value
        }
    }

    /// The goal as text: "≥ 1.50× sqlite", "≤ 0.5 s", "≥ 4 ×".
    pub fn goal_text(&self) -> String {
        if self.has_peer() {
            format!("≥ {:.2}×", self.goal)
        } else if self.lower_is_better() {
            format!("≤ {}", with_unit(self.goal, &self.unit))
        } else {
            format!("≥ {}", with_unit(self.goal, &self.unit))
        }
    }

    /// What was achieved, as text: "1.62× sqlite" or "0.31 s".
    pub fn achieved_text(&self) -> String {
        match self.ratio {
            Some(r) if self.has_peer() => format!("{r:.2}× {}", self.peer),
            _ => with_unit(self.ours, &self.unit),
        }
    }
}

/// "0.31 s", "4.50×": a figure and its unit, a multiplier sign written close.
fn with_unit(x: f64, unit: &str) -> String {
    match unit {
        "×" | "%" => format!("{}{unit}", fmt_value(x)),
        _ => format!("{} {unit}", fmt_value(x)),
    }
}

fn safe_div(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        if a == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        a / b
    }
}

/// A figure for a table: thousands separators for large values, a few significant digits for
/// small ones.
pub fn fmt_value(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() { "n/a".to_string() } else { "∞".to_string() };
    }
    let a = x.abs();
    if a >= 1000.0 {
        let digits = format!("{:.0}", a);
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if x < 0.0 {
            out.insert(0, '-');
        }
        out
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3e}")
    }
}

impl Report {
    pub fn new(benchmark: impl Into<String>, params: serde_json::Value, machine: Machine) -> Report {
        Report {
            benchmark: benchmark.into(),
            params,
            machine,
            results: Vec::new(),
            notes: Vec::new(),
            series: Vec::new(),
        }
    }

    pub fn push(&mut self, row: ResultRow) {
        self.results.push(row);
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// Whether every row meets its goal (true for a report with no rows).
    pub fn all_goals_met(&self) -> bool {
        self.results.iter().all(ResultRow::meets_goal)
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> String {
        // A Report holds only strings, numbers and a JSON value: serialising it cannot fail.
        serde_json::to_string_pretty(self).expect("a report serialises to JSON")
    }

    pub fn from_json(text: &str) -> Result<Report> {
        Ok(serde_json::from_str(text)?)
    }

    /// Prints the readable table on stdout.
    pub fn print_table(&self) {
        let stdout = io::stdout();
        let mut out = stdout.lock();
        // A closed stdout (a pipe into `head`) is not worth a panic.
        let _ = self.write_table(&mut out);
    }

    /// Writes the readable table: a header with the machine and parameters, one line per row
    /// with a "meets goal" column, then the notes.
    pub fn write_table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "tessera bench {}", self.benchmark)?;
        writeln!(out, "machine: {}", self.machine.summary())?;
        writeln!(out, "params:  {}", self.params)?;
        writeln!(out)?;
        let header = ["metric", "unit", "tessera", "peer", "peer value", "ratio", "goal", "meets goal"];
        let rows: Vec<[String; 8]> = self
            .results
            .iter()
            .map(|r| {
                [
                    r.metric.clone(),
                    r.unit.clone(),
                    fmt_value(r.ours),
                    r.peer.clone(),
                    r.peer_value.map(fmt_value).unwrap_or_else(|| "-".to_string()),
                    r.ratio.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".to_string()),
                    r.goal_text(),
                    if r.meets_goal() { "yes" } else { "NO" }.to_string(),
                ]
            })
            .collect();
        let mut widths = header.map(|h| h.chars().count());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        // Text columns align left, figures right.
        let right = [false, false, true, false, true, true, false, false];
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let pad = " ".repeat(widths[i] - cell.chars().count());
                if i > 0 {
                    s.push_str("  ");
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
        writeln!(out, "{}", line(&header.map(String::from)))?;
        let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
        writeln!(out, "{}", "-".repeat(total))?;
        for row in &rows {
            writeln!(out, "{}", line(row))?;
        }
        if rows.is_empty() {
            writeln!(out, "(no results)")?;
        }
        if !self.notes.is_empty() {
            writeln!(out)?;
            writeln!(out, "notes:")?;
            for note in &self.notes {
                writeln!(out, "  - {note}")?;
            }
        }
        Ok(())
    }

    /// Draws the report's chart, PNG or SVG by `path`'s extension: one horizontal bar per row
    /// showing how the result compares with its goal (ratio ÷ goal, so the goal is the line at
    /// 1.0 for every row), labelled with the real figures; the title, machine and date in the
    /// caption. A report with [`Series`] gets their curves instead.
    pub fn write_chart(&self, path: &Path) -> Result<()> {
        if self.series.is_empty() {
            crate::chart::draw(self, path)
        } else {
            crate::chart::draw_curves(self, path)
        }
    }
}

impl std::str::FromStr for Report {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<Report> {
        Report::from_json(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_formatting() {
        assert_eq!(fmt_value(612_345.4), "612,345");
        assert_eq!(fmt_value(1_000_000.0), "1,000,000");
        assert_eq!(fmt_value(4321.0), "4,321");
        assert_eq!(fmt_value(321.4), "321");
        assert_eq!(fmt_value(0.5), "0.50");
        assert_eq!(fmt_value(12.34), "12.3");
        assert_eq!(fmt_value(0.0), "0.00");
        assert_eq!(fmt_value(f64::NAN), "n/a");
    }

    #[test]
    fn own_row_direction_follows_unit() {
        let t = ResultRow::own("release", "s", 0.3, 0.5);
        assert!(t.lower_is_better() && t.meets_goal());
        assert!((t.goal_fraction() - 0.5 / 0.3).abs() < 1e-12);
        let r = ResultRow::own("32 ÷ 1", "×", 3.0, 4.0);
        assert!(!r.lower_is_better() && !r.meets_goal());
    }
}
