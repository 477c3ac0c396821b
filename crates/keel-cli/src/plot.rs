//! Every plot of the `keel` command (`--svg FILE`): line charts with named
//! series, one panel above the other, in one SVG file. Axes may be
//! logarithmic and have fixed ranges; a reference series (a model, an
//! expert chunk) is a thin black line without marks.

use std::path::Path;

use plotters::prelude::*;

use crate::error::CliError;

/// One named line.
#[derive(Debug, Clone)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// Points in drawing order; non-finite ones are left out.
    pub points: Vec<(f64, f64)>,
    /// Its colour's index in the palette, so that one name keeps one colour
    /// across panels.
    pub color: usize,
    /// A reference line (a model, a bound): thin, black, no marks.
    pub reference: bool,
}

impl Series {
    /// A measured series: coloured line with marks.
    pub fn new(name: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color,
            reference: false,
        }
    }

    /// A reference line drawn thin and black, without marks.
    pub fn reference(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color: 0,
            reference: true,
        }
    }
}

/// How an axis maps its values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Axis {
    /// Logarithmic rather than linear.
    pub log: bool,
    /// Fixed bounds; `None` fits the data (padded by 5 %).
    pub range: Option<(f64, f64)>,
}

/// One chart: a title, axes whose labels name their units, and lines.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    /// The caption.
    pub title: String,
    /// The x axis, with its unit (`tasks`, `loop instance`).
    pub x_label: String,
    /// The y axis, with its unit (`time (ms)`, `S = t_rr / t`).
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// The x axis's scale and range.
    pub x_axis: Axis,
    /// The y axis's scale and range.
    pub y_axis: Axis,
}

/// An axis tick: three significant digits, trailing zeros dropped
/// (`0.3`, not `0.30000000000000004`; `10000`, not `10000.0`).
fn tick(value: &f64) -> String {
    let v = *value;
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Whether a point can be drawn on `panel`'s axes: finite, and positive
/// on a logarithmic axis.
fn drawable(panel: &Panel, x: f64, y: f64) -> bool {
    x.is_finite()
        && y.is_finite()
        && (!panel.x_axis.log || x > 0.0)
        && (!panel.y_axis.log || y > 0.0)
}

/// The data's extent over `panel`, padded so that lines do not sit on the
/// frame; `(0, 1)` for an axis without data.
fn ranges(panel: &Panel) -> ((f64, f64), (f64, f64)) {
    let finite = panel
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|&&(x, y)| drawable(panel, x, y));
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in finite {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    let pad = |lo: f64, hi: f64, axis: Axis| {
        if let Some(range) = axis.range {
            range
        } else if axis.log {
            if !(lo.is_finite() && lo > 0.0) {
                (1.0, 10.0)
            } else {
                (lo / 1.1, hi * 1.1)
            }
        } else if !lo.is_finite() {
            (0.0, 1.0)
        } else if hi - lo < 1e-12 {
            let d = (lo.abs() * 0.05).max(0.5);
            (lo - d, hi + d)
        } else {
            let d = (hi - lo) * 0.05;
            (lo - d, hi + d)
        }
    };
    (pad(x0, x1, panel.x_axis), pad(y0, y1, panel.y_axis))
}

/// Draws one panel on `area` with the given x and y coordinate specs; a
/// macro because plotters gives linear and logarithmic axes different
/// types.
macro_rules! draw {
    ($area:expr, $panel:expr, $x:expr, $y:expr, $svg_error:ident) => {{
        let panel: &Panel = $panel;
        let mut chart = ChartBuilder::on($area)
            .caption(&panel.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d($x, $y)
            .map_err(|e| $svg_error(&e))?;
        chart
            .configure_mesh()
            .x_desc(panel.x_label.as_str())
            .y_desc(panel.y_label.as_str())
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()
            .map_err(|e| $svg_error(&e))?;
        for s in &panel.series {
            let points: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| drawable(panel, x, y))
                .collect();
            if s.reference {
                chart
                    .draw_series(LineSeries::new(points, BLACK.stroke_width(1)))
                    .map_err(|e| $svg_error(&e))?
                    .label(s.name.as_str())
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
                continue;
            }
            let color = Palette99::pick(s.color).to_rgba();
            // Marks as well as lines: a series of one point (one size,
            // one step) is still seen.
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 2, color.filled())))
                .map_err(|e| $svg_error(&e))?;
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| $svg_error(&e))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| $svg_error(&e))?;
    }};
}

/// Writes `panels`, one above the other, to the SVG file `path`.
pub fn write_svg(path: &Path, panels: &[Panel]) -> Result<(), CliError> {
    let svg_error =
        |e: &dyn std::fmt::Display| CliError::Runtime(format!("svg {}: {e}", path.display()));
    if panels.is_empty() {
        return Err(CliError::Usage(format!(
            "svg {}: nothing to plot",
            path.display()
        )));
    }
    // A lone chart gets more height than each of a stack.
    let height = if panels.len() == 1 {
        480
    } else {
        320 * panels.len() as u32
    };
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| svg_error(&e))?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let ((x0, x1), (y0, y1)) = ranges(panel);
        match (panel.x_axis.log, panel.y_axis.log) {
            (false, false) => draw!(area, panel, x0..x1, y0..y1, svg_error),
            (true, false) => draw!(area, panel, (x0..x1).log_scale(), y0..y1, svg_error),
            (false, true) => draw!(area, panel, x0..x1, (y0..y1).log_scale(), svg_error),
            (true, true) => draw!(
                area,
                panel,
                (x0..x1).log_scale(),
                (y0..y1).log_scale(),
                svg_error
            ),
        }
    }
    root.present().map_err(|e| svg_error(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(points: Vec<(f64, f64)>) -> Panel {
        Panel {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y (s)".into(),
            series: vec![Series::new("only-series", 0, points)],
            ..Panel::default()
        }
    }

    #[test]
    fn ranges_pad_and_survive_empty_and_flat_data() {
        assert_eq!(ranges(&panel(vec![])), ((0.0, 1.0), (0.0, 1.0)));
        let ((x0, x1), (y0, y1)) = ranges(&panel(vec![(1.0, 2.0), (1.0, 2.0), (f64::NAN, 9.0)]));
        assert_eq!((x0, x1, y0, y1), (0.5, 1.5, 1.5, 2.5));
        let ((x0, x1), _) = ranges(&panel(vec![(0.0, 0.0), (10.0, 1.0)]));
        assert!(x0 < 0.0 && x1 > 10.0);
    }

    #[test]
    fn ticks_have_three_significant_digits_at_most() {
        assert_eq!(tick(&0.30000000000000004), "0.3");
        assert_eq!(tick(&10000.0), "10000");
        assert_eq!(tick(&1.0), "1");
        assert_eq!(tick(&0.004), "0.004");
        assert_eq!(tick(&2.25), "2.25");
        assert_eq!(tick(&0.0), "0");
    }

    #[test]
    fn writes_an_svg_with_the_series_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.svg");
        write_svg(&path, &[panel(vec![(0.0, 1.0), (1.0, 3.0)])]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("only-series"));
        assert!(write_svg(&path, &[]).is_err());
    }
}
