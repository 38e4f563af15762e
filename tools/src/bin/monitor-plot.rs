//! `monitor-plot`: draws `scripts/monitor-table.sh`'s TSV — words per window over forwarding
//! every item (naive), per grid setting, one panel per data set and one line per run (the
//! seed's protocol alone, and each protocol with the forwarding fallback), with the line
//! "= naive" the fallback must stay under.
//!
//! ```text
//! monitor-plot --tsv docs/monitor/monitor.tsv --out docs/monitor/monitor.png
//! ```
#![deny(missing_docs)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use plotters::prelude::*;

/// Command-line options.
#[derive(Parser, Debug)]
#[command(name = "monitor-plot", about = "Plot the monitoring table: words over naive per setting")]
struct Args {
    /// The TSV `scripts/monitor-table.sh` wrote.
    #[arg(long)]
    tsv: PathBuf,
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
}

/// One TSV row: the data set, the setting's label, the run's label and words / naive.
struct Row {
    data: String,
    setting: String,
    run: String,
    ratio: f64,
}

fn parse(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty TSV")?.split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("no column {name:?}"));
    let (data, k, eps, tau, protocol, fallback, ratio) = (
        col("data")?,
        col("k")?,
        col("epsilon")?,
        col("tau")?,
        col("protocol")?,
        col("fallback")?,
        col("words_over_naive")?,
    );
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let get = |c: usize| f.get(c).copied().ok_or(format!("row {}: too few columns", i + 2));
        let value: f64 = get(ratio)?.parse().map_err(|_| format!("row {}: bad words_over_naive", i + 2))?;
        let tau = if get(tau)? == "0" { "0" } else { "W/2" };
        let fb = if get(fallback)? == "on" { "+ fallback" } else { "alone" };
        rows.push(Row {
            data: get(data)?.to_string(),
            setting: format!("k{} ε{} τ{}", get(k)?, get(eps)?, tau),
            run: format!("{} {fb}", get(protocol)?),
            ratio: value,
        });
    }
    Ok(rows)
}

fn plot(args: &Args, rows: &[Row]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", args.out.display());
    let mut datas: Vec<&str> = rows.iter().map(|r| r.data.as_str()).collect();
    datas.dedup();
    let mut runs: Vec<&str> = rows.iter().map(|r| r.run.as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    let colors = [RGBColor(200, 60, 40), RGBColor(30, 90, 200), RGBColor(30, 150, 60), RGBColor(120, 60, 160)];
    let root = BitMapBackend::new(&args.out, (1100, 420 * datas.len().max(1) as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled("sliding-window monitoring: words / forwarding every item", ("sans-serif", 24))
        .map_err(|e| err(&e))?;
    for (area, data) in root.split_evenly((datas.len().max(1), 1)).iter().zip(&datas) {
        let mut settings: Vec<&str> = Vec::new();
        for r in rows.iter().filter(|r| r.data == *data) {
            if !settings.contains(&r.setting.as_str()) {
                settings.push(&r.setting);
            }
        }
        let y_max = rows.iter().filter(|r| r.data == *data).map(|r| r.ratio).fold(1.0, f64::max) * 1.1;
        let n = settings.len().max(1);
        let mut c = ChartBuilder::on(area)
            .caption(*data, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(60)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..y_max)
            .map_err(|e| err(&e))?;
        let labels = settings.clone();
        c.configure_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).map_or(String::new(), |s| s.to_string())
                } else {
                    String::new()
                }
            })
            .y_desc("words / naive")
            .draw()
            .map_err(|e| err(&e))?;
        c.draw_series(LineSeries::new([(-0.5, 1.0), (n as f64 - 0.5, 1.0)], BLACK.stroke_width(1)))
            .map_err(|e| err(&e))?
            .label("= naive")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
        for (ri, run) in runs.iter().enumerate() {
            let color = colors[ri % colors.len()];
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.data == *data && r.run == *run)
                .filter_map(|r| settings.iter().position(|s| *s == r.setting).map(|i| (i as f64, r.ratio)))
                .collect();
            c.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(|e| err(&e))?
                .label(*run)
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
            c.draw_series(LineSeries::new(points, color.stroke_width(1))).map_err(|e| err(&e))?;
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.tsv).map_err(|e| format!("{}: {e}", args.tsv.display()))?;
    let rows = parse(&text).map_err(|e| format!("{}: {e}", args.tsv.display()))?;
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "the embedded DejaVu Sans font did not load".to_string())?;
    plot(args, &rows)
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("monitor-plot: {e}");
            ExitCode::FAILURE
        }
    }
}
