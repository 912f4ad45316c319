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
    let height = (TOP + ROW_HEIGHT * report.results.len().max(1) as i32 + BOTTOM) as u32;
    render(path, (WIDTH, height), |root| paint(root, report), |root| paint(root, report))
}

/// Writes the curves of `report.series` to `path`: one panel per distinct panel name, side
/// by side, both axes logarithmic.
pub fn draw_curves(report: &Report, path: &Path) -> Result<()> {
    let mut panels: Vec<&str> = Vec::new();
    for s in &report.series {
        if !panels.contains(&s.panel.as_str()) {
            panels.push(&s.panel);
        }
    }
    let size = (CURVE_PANEL_WIDTH * panels.len().max(1) as u32, CURVE_HEIGHT);
    render(path, size, |root| paint_curves(root, report, &panels), |root| paint_curves(root, report, &panels))
}

/// Draws with `bitmap` or `svg` by `path`'s extension.
fn render(
    path: &Path,
    size: (u32, u32),
    bitmap: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult<BitMapBackend<'static>>,
    svg: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult<SVGBackend<'static>>,
) -> Result<()> {
    register_fonts();
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let fail = |e: String| BenchError::new(format!("cannot draw chart {}: {e}", path.display()));
    match ext.as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            bitmap(&root).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Some("svg") => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            svg(&root).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        _ => Err(BenchError::new(format!("chart file {} must end in .png or .svg", path.display()))),
    }
}

const CURVE_PANEL_WIDTH: u32 = 760;
const CURVE_HEIGHT: u32 = 620;
const CURVE_COLORS: [RGBColor; 6] = [
    RGBColor(46, 139, 87),
    RGBColor(20, 110, 190),
    RGBColor(200, 80, 70),
    RGBColor(220, 150, 30),
    RGBColor(120, 70, 160),
    RGBColor(90, 90, 90),
];

fn paint_curves<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, report: &Report, panels: &[&str]) -> DrawResult<DB> {
    let grey = RGBColor(110, 110, 110);
    root.fill(&WHITE)?;
    let (body, caption) = root.split_vertically(CURVE_HEIGHT - 40);
    caption.draw(&Text::new(
        format!("tessera bench {}; machine: {}", report.benchmark, report.machine.summary()),
        (LABEL_X, 8),
        text_style(SANS, 13.0, grey, left(VPos::Top)),
    ))?;
    let names: Vec<&str> = report.series.iter().map(|s| s.name.as_str()).fold(Vec::new(), |mut v, n| {
        if !v.contains(&n) {
            v.push(n);
        }
        v
    });
    for (area, panel) in body.split_evenly((1, panels.len().max(1))).iter().zip(panels) {
        let series: Vec<_> = report.series.iter().filter(|s| s.panel == *panel).collect();
        let points = || series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0 > 0.0 && p.1 > 0.0);
        let (x0, x1) = points().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let (y0, y1) = points().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
        if x0 > x1 {
            continue;
        }
        let mut chart = ChartBuilder::on(area)
            .caption(*panel, (SANS, 20.0))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), (y0 * 0.5..y1 * 2.0).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(series.first().map_or("", |s| s.x_label.as_str()))
            .y_desc(series.first().map_or("", |s| s.y_label.as_str()))
            .label_style((SANS, 14.0))
            .draw()?;
        for s in &series {
            let color = CURVE_COLORS[names.iter().position(|n| *n == s.name).unwrap_or(0) % CURVE_COLORS.len()];
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.0 > 0.0 && p.1 > 0.0).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(grey)
            .label_font((SANS, 13.0))
            .draw()?;
    }
    Ok(())
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
