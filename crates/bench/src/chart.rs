//! Draws a report's chart with plotters, PNG or SVG. Text uses fonts compiled into the binary
//! (registered with plotters' ab_glyph backend), so no system font is needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::{BenchError, Result};
use crate::report::{Report, ResultRow};

const WIDTH: u32 = 1200;
const TOP: i32 = 96;
const ROW_HEIGHT: i32 = 58;
const BOTTOM: i32 = 112;
const LABEL_X: i32 = 24;
const BAR_X0: i32 = 400;
const BAR_X1: i32 = 900;
const VALUE_X: i32 = 915;
/// Bars longer than this many goals are cut at the edge (and marked).
const MAX_SCALE: f64 = 5.0;

const SANS: &str = "sans-serif";
const MONO: &str = "monospace";

static FONTS: Once = Once::new();

fn register_fonts() {
    FONTS.call_once(|| {
        // The fonts are well-formed TrueType files; a failure here would show as missing text.
        let _ = plotters::style::register_font(SANS, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT);
        let _ = plotters::style::register_font(MONO, FontStyle::Normal, epaint_default_fonts::HACK_REGULAR);
    });
}

/// Writes `report`'s chart to `path`: PNG for `.png`, SVG for `.svg`.
pub fn draw(report: &Report, path: &Path) -> Result<()> {
    register_fonts();
    let height = (TOP + ROW_HEIGHT * report.results.len().max(1) as i32 + BOTTOM) as u32;
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let fail = |e: String| BenchError::new(format!("cannot draw chart {}: {e}", path.display()));
    match ext.as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
            paint(&root, report).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Some("svg") => {
            let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
            paint(&root, report).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        _ => Err(BenchError::new(format!("chart file {} must end in .png or .svg", path.display()))),
    }
}

type DrawResult<DB> = std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn text_style(family: &str, size: f64, color: RGBColor, pos: Pos) -> TextStyle<'_> {
    TextStyle { font: (family, size).into_font(), color: color.to_backend_color(), pos }
}

fn left(v: VPos) -> Pos {
    Pos::new(HPos::Left, v)
}

/// The scale's right end, in goals: a little past the longest bar, at least 1.25 goals.
fn scale_max(rows: &[ResultRow]) -> f64 {
    let longest = rows.iter().map(ResultRow::goal_fraction).filter(|v| v.is_finite()).fold(0.0, f64::max);
    (longest * 1.1).clamp(1.25, MAX_SCALE)
}

/// A tick step giving four to ten ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    if max <= 2.0 {
        0.25
    } else if max <= 4.0 {
        0.5
    } else {
        1.0
    }
}

fn paint<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, report: &Report) -> DrawResult<DB> {
    let ink = RGBColor(30, 30, 30);
    let grey = RGBColor(110, 110, 110);
    let light = RGBColor(225, 225, 225);
    let good = RGBColor(46, 139, 87);
    let bad = RGBColor(200, 80, 70);
    let goal_color = RGBColor(20, 60, 160);

    root.fill(&WHITE)?;
    let rows = &report.results;
    let n = rows.len().max(1) as i32;
    let plot_top = TOP;
    let plot_bottom = TOP + ROW_HEIGHT * n;
    let max = scale_max(rows);
    let x_of = |v: f64| BAR_X0 + ((v.clamp(0.0, max) / max) * (BAR_X1 - BAR_X0) as f64).round() as i32;

    // Title.
    root.draw(&Text::new(
        format!("tessera bench {}: result against goal", report.benchmark),
        (LABEL_X, 18),
        text_style(SANS, 26.0, ink, left(VPos::Top)),
    ))?;
    root.draw(&Text::new(
        "bar = result ÷ goal (ratio to the peer, or own figure); the line at 1.0 is the goal; green meets it",
        (LABEL_X, 54),
        text_style(SANS, 16.0, grey, left(VPos::Top)),
    ))?;

    // Grid and scale.
    let step = tick_step(max);
    let mut tick = 0.0;
    while tick <= max + 1e-9 {
        let x = x_of(tick);
        root.draw(&PathElement::new(vec![(x, plot_top), (x, plot_bottom)], light.stroke_width(1)))?;
        root.draw(&Text::new(
            format!("{tick}"),
            (x, plot_bottom + 6),
            text_style(SANS, 14.0, grey, Pos::new(HPos::Center, VPos::Top)),
        ))?;
        tick += step;
    }

    // Bars.
    for (i, row) in rows.iter().enumerate() {
        let y0 = plot_top + ROW_HEIGHT * i as i32;
        let mid = y0 + ROW_HEIGHT / 2;
        let label = if row.has_peer() { format!("{} (vs {})", row.metric, row.peer) } else { row.metric.clone() };
        root.draw(&Text::new(label, (LABEL_X, mid - 9), text_style(SANS, 17.0, ink, left(VPos::Center))))?;
        root.draw(&Text::new(row.unit.clone(), (LABEL_X, mid + 11), text_style(SANS, 13.0, grey, left(VPos::Center))))?;
        let value = row.goal_fraction();
        let color = if row.meets_goal() { good } else { bad };
        let x1 = x_of(value).max(BAR_X0 + 1);
        root.draw(&Rectangle::new([(BAR_X0, y0 + 12), (x1, y0 + ROW_HEIGHT - 12)], color.filled()))?;
        if !value.is_finite() || value > max {
            // Cut bar: a white notch at its end.
            root.draw(&Rectangle::new([(x1 - 10, y0 + 10), (x1 - 6, y0 + ROW_HEIGHT - 10)], WHITE.filled()))?;
        }
        root.draw(&Text::new(
            format!("{}  (goal {})", row.achieved_text(), row.goal_text()),
            (VALUE_X, mid),
            text_style(MONO, 14.0, ink, left(VPos::Center)),
        ))?;
    }
    if rows.is_empty() {
        root.draw(&Text::new(
            "no results",
            (BAR_X0 + 10, plot_top + ROW_HEIGHT / 2),
            text_style(SANS, 18.0, grey, left(VPos::Center)),
        ))?;
    }

    // Axis and goal line (dashed), over the bars.
    root.draw(&PathElement::new(vec![(BAR_X0, plot_top), (BAR_X0, plot_bottom)], ink.stroke_width(1)))?;
    let gx = x_of(1.0);
    let mut y = plot_top - 6;
    while y < plot_bottom + 2 {
        root.draw(&PathElement::new(vec![(gx, y), (gx, (y + 7).min(plot_bottom + 2))], goal_color.stroke_width(2)))?;
        y += 12;
    }
    root.draw(&Text::new(
        "goal",
        (gx, plot_top - 8),
        text_style(SANS, 14.0, goal_color, Pos::new(HPos::Center, VPos::Bottom)),
    ))?;

    // Caption: machine, date, parameters.
    let caption_y = plot_bottom + 36;
    root.draw(&Text::new(
        format!("machine: {}", report.machine.summary()),
        (LABEL_X, caption_y),
        text_style(SANS, 14.0, grey, left(VPos::Top)),
    ))?;
    let mut params = format!("params: {}", report.params);
    if params.chars().count() > 170 {
        params = params.chars().take(167).collect::<String>() + "...";
    }
    root.draw(&Text::new(params, (LABEL_X, caption_y + 22), text_style(SANS, 14.0, grey, left(VPos::Top))))?;
    root.draw(&Text::new(
        "same run, same machine; ratios > 1 mean tessera did better than the peer",
        (LABEL_X, caption_y + 44),
        text_style(SANS, 14.0, grey, left(VPos::Top)),
    ))?;
    Ok(())
}
