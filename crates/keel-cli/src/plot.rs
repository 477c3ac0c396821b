//! The benches' plots: line charts with named series, one panel above the
//! other, written as one SVG file (`--svg FILE`).

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
}

/// One chart: a title, axes whose labels name their units, and lines.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The caption.
    pub title: String,
    /// The x axis, with its unit (`tasks`, `loop instance`).
    pub x_label: String,
    /// The y axis, with its unit (`time (ms)`, `S = t_rr / t`).
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
}

/// The data's extent over `panel`, padded so that lines do not sit on the
/// frame; `(0, 1)` for an axis without data.
fn ranges(panel: &Panel) -> ((f64, f64), (f64, f64)) {
    let finite = panel
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|(x, y)| x.is_finite() && y.is_finite());
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
    let pad = |lo: f64, hi: f64| {
        if !lo.is_finite() {
            (0.0, 1.0)
        } else if hi - lo < 1e-12 {
            let d = (lo.abs() * 0.05).max(0.5);
            (lo - d, hi + d)
        } else {
            let d = (hi - lo) * 0.05;
            (lo - d, hi + d)
        }
    };
    (pad(x0, x1), pad(y0, y1))
}

/// Writes `panels`, one above the other, to the SVG file `path`.
pub fn write_svg(path: &Path, panels: &[Panel]) -> Result<(), CliError> {
    let svg_error =
        |e: &dyn std::fmt::Display| CliError::Usage(format!("svg {}: {e}", path.display()));
    if panels.is_empty() {
        return Err(CliError::Usage(format!(
            "svg {}: nothing to plot",
            path.display()
        )));
    }
    let root = SVGBackend::new(path, (900, 320 * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| svg_error(&e))?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let ((x0, x1), (y0, y1)) = ranges(panel);
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| svg_error(&e))?;
        chart
            .configure_mesh()
            .x_desc(panel.x_label.as_str())
            .y_desc(panel.y_label.as_str())
            .draw()
            .map_err(|e| svg_error(&e))?;
        for s in &panel.series {
            let color = Palette99::pick(s.color).to_rgba();
            let points: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            // Marks as well as lines: a series of one point (one size,
            // one step) is still seen.
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 2, color.filled())))
                .map_err(|e| svg_error(&e))?;
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| svg_error(&e))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| svg_error(&e))?;
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
            series: vec![Series {
                name: "only-series".into(),
                points,
                color: 0,
            }],
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
