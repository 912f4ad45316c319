//! The latency distribution of a run as a chart (PNG or SVG): latency against percentile on a
//! "nines" axis (0 %, 90 %, 99 %, 99.9 % …), one line each for reads and writes, as HDR
//! histogram plots draw it. Text uses fonts compiled into the binary (registered with
//! plotters' ab_glyph backend), so no system font is needed.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::run::RunResult;
use crate::stats::Latency;

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 700;
const SANS: &str = "sans-serif";
const POINTS_PER_NINE: usize = 40;

static FONTS: Once = Once::new();

fn register_fonts() {
    FONTS.call_once(|| {
        // The font is a well-formed TrueType file; a failure would only show as missing text.
        let _ = plotters::style::register_font(SANS, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT);
    });
}

/// The percentile at `nines` = -log10(1 - q) as a label: 0 → "0%", 2 → "99%", 3.5 → "99.97%".
pub fn nines_label(nines: f64) -> String {
    let q = 1.0 - 10f64.powf(-nines);
    let pct = q * 100.0;
    let decimals = if nines <= 2.0 { 0 } else { (nines - 2.0).ceil() as usize };
    let text = format!("{pct:.decimals$}");
    format!("{text}%")
}

/// Draws `result`'s latency distribution into `path` (`.png` or `.svg`).
pub fn draw(result: &RunResult, path: &Path) -> Result<()> {
    register_fonts();
    let fail = |e: String| Error::new(format!("cannot draw the chart '{}': {e}", path.display()));
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
            paint(&root, result).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Some("svg") => {
            let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
            paint(&root, result).map_err(|e| fail(e.to_string()))?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        _ => Err(Error::new(format!("the chart file '{}' must end in .png or .svg", path.display()))),
    }
}

type DrawResult<DB> = std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn paint<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &RunResult) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let read_color = RGBColor(31, 119, 180);
    let write_color = RGBColor(214, 39, 40);
    let grey = RGBColor(100, 100, 100);
    let series: Vec<(&str, &Latency, RGBColor)> =
        [("read", &r.stats.read, read_color), ("write", &r.stats.write, write_color)]
            .into_iter()
            .filter(|(_, h, _)| !h.is_empty())
            .collect();
    let curves: Vec<Vec<(f64, f64)>> = series.iter().map(|(_, h, _)| h.curve(POINTS_PER_NINE)).collect();
    let max_nines = curves.iter().filter_map(|c| c.last().map(|p| p.0)).fold(1.0, f64::max);
    let lo = curves.iter().flatten().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = curves.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > 0.0 { ((lo * 0.8).max(0.01), hi * 1.25) } else { (1.0, 1000.0) };

    let (title_area, rest) = root.split_vertically(70);
    title_area.draw(&Text::new(
        format!("tessera iobench: latency distribution ({})", r.engine.name()),
        (20, 12),
        (SANS, 24).into_font().color(&BLACK),
    ))?;
    title_area.draw(&Text::new(
        format!("{}; {:.1} s measured; {} I/Os", r.params.describe(), r.duration_s, r.total.total.ios),
        (20, 44),
        (SANS, 16).into_font().color(&grey),
    ))?;
    let (plot_area, footer) = rest.split_vertically(HEIGHT as i32 - 70 - 40);

    let mut chart = ChartBuilder::on(&plot_area)
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..max_nines, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_labels((max_nines.ceil() as usize) + 1)
        .x_label_formatter(&|x| nines_label(*x))
        .y_labels(12)
        .y_label_formatter(&|y| {
            if *y >= 100.0 {
                format!("{y:.0}")
            } else if *y >= 1.0 {
                format!("{y:.1}")
            } else {
                format!("{y:.2}")
            }
        })
        .x_desc("percentile")
        .y_desc("latency (µs, log scale)")
        .label_style((SANS, 15))
        .axis_desc_style((SANS, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for ((name, hist, color), curve) in series.iter().zip(&curves) {
        let label = match hist.summary() {
            Some(s) => format!("{name}: p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs", s.p50, s.p99, s.p99_9),
            None => name.to_string(),
        };
        let color = *color;
        chart
            .draw_series(LineSeries::new(curve.iter().copied(), color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3)));
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(grey)
            .label_font((SANS, 15))
            .draw()?;
    }
    let names: Vec<String> = r.targets.iter().map(|t| t.path.display().to_string()).collect();
    footer.draw(&Text::new(
        format!(
            "targets: {}   IOPS {:.0}   {:.1} MiB/s   CPU {:.0}% of one core",
            names.join(", "),
            r.total.total.iops,
            r.total.total.mib_per_s,
            r.cpu.process_user_pct + r.cpu.process_sys_pct
        ),
        (20, 8),
        (SANS, 14).into_font().color(&grey),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_labels() {
        assert_eq!(nines_label(0.0), "0%");
        assert_eq!(nines_label(1.0), "90%");
        assert_eq!(nines_label(2.0), "99%");
        assert_eq!(nines_label(3.0), "99.9%");
        assert_eq!(nines_label(4.0), "99.99%");
        assert_eq!(nines_label(std::f64::consts::LOG10_2), "50%");
    }
}
