//! The figures' PNGs: line charts and the ingest experiment's bars.

use std::path::Path;

use plotters::prelude::*;

/// One series of a chart: its name and points.
pub type Series = (String, Vec<(f64, f64)>);

/// A line chart with points (log-scaled y when asked), written as a PNG.
pub fn chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_y: bool,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Err(format!("{}: no points to draw", path.display()));
    }
    let pad = ((x1 - x0) * 0.05).max(0.5);
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let colors = [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut c = $chart;
            c.configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .x_label_formatter(&|x| human(*x))
                .y_label_formatter(&|y| human(*y))
                .draw()
                .map_err(|e| err(&e))?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let color = colors[i % colors.len()];
                c.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                    .map_err(|e| err(&e))?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                c.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(|e| err(&e))?;
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(if log_y { SeriesLabelPosition::LowerLeft } else { SeriesLabelPosition::LowerRight })
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    let mut builder = ChartBuilder::on(&root);
    let (xl, xh) = (x0 / 1.5, x1 * 1.5);
    builder.caption(title, ("sans-serif", 24)).margin(16).x_label_area_size(48).y_label_area_size(90);
    if log_y {
        // Log scales on both axes (the federated figure: windows 5 s → 600 s, bytes).
        let (lo, hi) = (y0.max(1.0) / 2.0, y1.max(2.0) * 2.0);
        draw!(builder.build_cartesian_2d((xl..xh).log_scale(), (lo..hi).log_scale()).map_err(|e| err(&e))?);
    } else {
        draw!(builder.build_cartesian_2d(x0 - pad..x1 + pad, 0.0..y1 * 1.15).map_err(|e| err(&e))?);
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// A number for an axis label: 1.2M, 350k, 12, 0.5.
fn human(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", x / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// Bars per ingest setting: wall-clock tuples/s and tuples per CPU-second, side by side.
pub fn ingest_chart(path: &Path, bars: &[(&str, f64, f64)]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let top = bars.iter().map(|&(_, a, b)| a.max(b)).fold(1.0, f64::max) * 1.15;
    let root = BitMapBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut c = ChartBuilder::on(&root)
        .caption("Ingest: paper workload, 100 streams (medians)", ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..bars.len() as f64 - 0.5, 0.0..top)
        .map_err(|e| err(&e))?;
    let names: Vec<&str> = bars.iter().map(|b| b.0).collect();
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).copied().unwrap_or("").to_string()
            } else {
                String::new()
            }
        })
        .y_desc("tuples per second")
        .y_label_formatter(&|y| human(*y))
        .draw()
        .map_err(|e| err(&e))?;
    let series =
        [("wall-clock tuples/s", RGBColor(31, 119, 180), -0.4), ("tuples per CPU-second", RGBColor(214, 39, 40), 0.0)];
    for (k, &(label, color, offset)) in series.iter().enumerate() {
        let rects = bars.iter().enumerate().map(|(i, b)| {
            let v = if k == 0 { b.1 } else { b.2 };
            let x = i as f64 + offset;
            Rectangle::new([(x, 0.0), (x + 0.38, v)], color.filled())
        });
        c.draw_series(rects)
            .map_err(|e| err(&e))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
