//! `soak-plot`: the verdict and the figure of a soak run (`scripts/soak.sh`).
//!
//! ```text
//! soak-plot target/soak/soak.tsv target/soak/soak.png
//! ```
//!
//! Reads the samples `scripts/soak.sh` took once a second from `/proc/<pid>` of a running `saams`
//! (a TSV with the header `seconds rss_kb hwm_kb fds threads tuples queries_ok queries_failed`),
//! draws resident memory, open files, threads and the ingest rate over time into a PNG and judges
//! the run against the soak targets of issue 14:
//!
//! * **RSS flat**: after the warm-up (the first 20 % of the run) the 10 s moving median of VmRSS
//!   stays within ±10 % of its value at the end of the warm-up (its minimum and maximum are both
//!   checked, so a leak and a collapse both show);
//! * **no growth of open files or threads**: their 10 s moving median at the end of the run is at
//!   most its value at the end of the warm-up. Medians rather than single samples because an HTTP
//!   connection being served at the moment of a sample is one more descriptor for a second; a
//!   leak lasts.
//!
//! Prints the figures and the verdict; exits 0 when every target is met, 1 when one is missed and
//! 2 when the TSV cannot be read (a malformed file is an error naming the line, never a verdict).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use plotters::prelude::*;

/// Judge and plot a soak run's samples (from scripts/soak.sh).
#[derive(Debug, Parser)]
#[command(name = "soak-plot", version)]
struct Args {
    /// The samples: a TSV written by scripts/soak.sh.
    tsv: PathBuf,
    /// The figure to write (PNG).
    png: PathBuf,
    /// Fraction of the run counted as warm-up (not judged).
    #[arg(long, default_value_t = 0.2)]
    warmup: f64,
    /// Allowed deviation of the RSS median after the warm-up from its value at the warm-up's end.
    #[arg(long, default_value_t = 0.10)]
    tolerance: f64,
    /// Width of the trailing moving median in seconds.
    #[arg(long, default_value_t = 10.0)]
    median_seconds: f64,
}

/// The TSV's header, column for column.
const COLUMNS: [&str; 8] = ["seconds", "rss_kb", "hwm_kb", "fds", "threads", "tuples", "queries_ok", "queries_failed"];

/// One sample of the running job.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    /// Seconds since the job started.
    seconds: f64,
    /// VmRSS.
    rss_kb: u64,
    /// VmHWM (peak RSS so far).
    hwm_kb: u64,
    /// Entries of /proc/<pid>/fd.
    fds: u64,
    /// Threads of the process.
    threads: u64,
    /// Tuples read so far (the job's metrics), `None` where the sample has none (`-`).
    tuples: Option<u64>,
    /// Ad-hoc queries answered so far.
    queries_ok: u64,
    /// Ad-hoc queries that failed so far.
    queries_failed: u64,
}

/// Parse the samples strictly: the exact header, eight fields per line, numbers where numbers
/// belong, time strictly increasing, counters never decreasing.
fn parse_tsv(text: &str) -> Result<Vec<Sample>, String> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l).ok_or("the file is empty (expected a header line)")?;
    if header.split('\t').ne(COLUMNS) {
        return Err(format!("line 1: expected the header {:?}, found {header:?}", COLUMNS.join("\t")));
    }
    let mut samples: Vec<Sample> = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != COLUMNS.len() {
            return Err(format!("line {n}: expected {} tab-separated fields, found {}", COLUMNS.len(), fields.len()));
        }
        let int = |c: usize| -> Result<u64, String> {
            fields[c]
                .parse::<u64>()
                .map_err(|_| format!("line {n}, column {}: {:?} is not a non-negative integer", COLUMNS[c], fields[c]))
        };
        let seconds: f64 = fields[0]
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| format!("line {n}, column seconds: {:?} is not a non-negative number", fields[0]))?;
        let tuples = if fields[5] == "-" { None } else { Some(int(5)?) };
        let s = Sample {
            seconds,
            rss_kb: int(1)?,
            hwm_kb: int(2)?,
            fds: int(3)?,
            threads: int(4)?,
            tuples,
            queries_ok: int(6)?,
            queries_failed: int(7)?,
        };
        if let Some(p) = samples.last() {
            if s.seconds <= p.seconds {
                return Err(format!("line {n}: seconds {} does not follow {} (must increase)", s.seconds, p.seconds));
            }
            if s.queries_ok < p.queries_ok || s.queries_failed < p.queries_failed {
                return Err(format!("line {n}: a query counter decreased (they count since the start)"));
            }
            let last_tuples = samples.iter().rev().find_map(|p| p.tuples);
            if let (Some(t), Some(before)) = (s.tuples, last_tuples)
                && t < before
            {
                return Err(format!("line {n}: tuples {t} is below an earlier {before} (it counts since the start)"));
            }
        }
        samples.push(s);
    }
    Ok(samples)
}

/// The median of some numbers (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

/// For each sample, the median of `value` over the samples of the trailing `width` seconds
/// (`(t − width, t]`, the sample itself included).
fn moving_median(samples: &[Sample], value: impl Fn(&Sample) -> u64, width: f64) -> Vec<f64> {
    let mut start = 0;
    samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            while samples[start].seconds <= s.seconds - width {
                start += 1;
            }
            median(samples[start..=i].iter().map(|x| value(x) as f64).collect())
        })
        .collect()
}

/// How the verdict is reached.
#[derive(Clone, Copy, Debug)]
struct Targets {
    /// Fraction of the run that is warm-up.
    warmup: f64,
    /// Allowed relative deviation of the RSS median.
    tolerance: f64,
    /// Moving-median width in seconds.
    median_seconds: f64,
}

/// A quantity that must not grow: its moving median at the warm-up's end and at the run's end.
#[derive(Clone, Debug, PartialEq)]
struct NoGrowth {
    at_warmup_end: f64,
    at_end: f64,
    max_after_warmup: u64,
    ok: bool,
}

/// The judged run.
#[derive(Clone, Debug, PartialEq)]
struct Verdict {
    /// Seconds at which the judged part starts (the first sample at or after the warm-up).
    warmup_end_s: f64,
    /// Index of that sample.
    warmup_end: usize,
    /// RSS moving median at the warm-up's end (kB): the reference.
    rss_ref_kb: f64,
    /// Smallest and largest RSS moving median after the warm-up (kB).
    rss_min_kb: f64,
    rss_max_kb: f64,
    rss_ok: bool,
    fds: NoGrowth,
    threads: NoGrowth,
}

impl Verdict {
    fn ok(&self) -> bool {
        self.rss_ok && self.fds.ok && self.threads.ok
    }
}

/// Judge the samples against the targets. An error when the run is too short to judge.
fn judge(samples: &[Sample], t: Targets) -> Result<Verdict, String> {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !(0.0..1.0).contains(&t.warmup) || !positive(t.tolerance) || !positive(t.median_seconds) {
        return Err(format!(
            "bad targets: warm-up {}, tolerance {}, median {} s",
            t.warmup, t.tolerance, t.median_seconds
        ));
    }
    let (first, last) = match samples {
        [first, .., last] => (first, last),
        _ => return Err(format!("{} samples: too few to judge", samples.len())),
    };
    let run = last.seconds - first.seconds;
    let warmup_end_at = first.seconds + t.warmup * run;
    let w = samples.iter().position(|s| s.seconds >= warmup_end_at).expect("the last sample is past the warm-up");
    if last.seconds - samples[w].seconds < t.median_seconds {
        return Err(format!(
            "the run after the warm-up ({:.1} s of {:.1} s) is shorter than the {} s moving median: too short to judge",
            last.seconds - samples[w].seconds,
            run,
            t.median_seconds
        ));
    }
    let rss = moving_median(samples, |s| s.rss_kb, t.median_seconds);
    let after = &rss[w..];
    let rss_ref_kb = rss[w];
    let rss_min_kb = after.iter().copied().fold(f64::INFINITY, f64::min);
    let rss_max_kb = after.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let rss_ok = rss_max_kb <= rss_ref_kb * (1.0 + t.tolerance) && rss_min_kb >= rss_ref_kb * (1.0 - t.tolerance);
    let no_growth = |value: fn(&Sample) -> u64| {
        let m = moving_median(samples, value, t.median_seconds);
        let (at_warmup_end, at_end) = (m[w], m[m.len() - 1]);
        let max_after_warmup = samples[w..].iter().map(value).max().unwrap_or(0);
        NoGrowth { at_warmup_end, at_end, max_after_warmup, ok: at_end <= at_warmup_end }
    };
    Ok(Verdict {
        warmup_end_s: samples[w].seconds,
        warmup_end: w,
        rss_ref_kb,
        rss_min_kb,
        rss_max_kb,
        rss_ok,
        fds: no_growth(|s| s.fds),
        threads: no_growth(|s| s.threads),
    })
}

fn mark(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

/// The figures and the verdict, as printed.
fn report(samples: &[Sample], v: &Verdict, t: Targets) -> String {
    let last = samples.last().expect("judged samples are not empty");
    let pct = |x: f64| (x / v.rss_ref_kb - 1.0) * 100.0;
    let mib = |kb: f64| kb / 1024.0;
    let mut out = format!(
        "soak: {:.0} s, {} samples, warm-up until {:.0} s ({:.0} %)\n",
        last.seconds,
        samples.len(),
        v.warmup_end_s,
        t.warmup * 100.0
    );
    out += &format!(
        "rss: {:.0} s median {:.1} MiB at warm-up end; after it min {:.1} MiB ({:+.1} %), max {:.1} MiB ({:+.1} %); \
         target ±{:.0} %: {}\n",
        t.median_seconds,
        mib(v.rss_ref_kb),
        mib(v.rss_min_kb),
        pct(v.rss_min_kb),
        mib(v.rss_max_kb),
        pct(v.rss_max_kb),
        t.tolerance * 100.0,
        mark(v.rss_ok)
    );
    out += &format!("hwm: {:.1} MiB at the end (peak RSS)\n", last.hwm_kb as f64 / 1024.0);
    for (name, g) in [("fds", &v.fds), ("threads", &v.threads)] {
        out += &format!(
            "{name}: {} at warm-up end, {} at the end ({:.0} s medians; max after warm-up {}); no growth: {}\n",
            g.at_warmup_end,
            g.at_end,
            t.median_seconds,
            g.max_after_warmup,
            mark(g.ok)
        );
    }
    let judged = &samples[v.warmup_end..];
    match (
        judged.iter().find_map(|s| s.tuples.map(|n| (s.seconds, n))),
        judged.iter().rev().find_map(|s| s.tuples.map(|n| (s.seconds, n))),
    ) {
        (Some((t0, n0)), Some((t1, n1))) if t1 > t0 => {
            out += &format!(
                "tuples: {n1} read; {:.2} M/s after the warm-up\n",
                n1.saturating_sub(n0) as f64 / (t1 - t0) / 1e6
            )
        }
        _ => out += "tuples: not measured\n",
    }
    out += &format!("queries: {} answered, {} failed\n", last.queries_ok, last.queries_failed);
    let missed: Vec<&str> = [("rss", v.rss_ok), ("fds", v.fds.ok), ("threads", v.threads.ok)]
        .iter()
        .filter(|t| !t.1)
        .map(|t| t.0)
        .collect();
    if missed.is_empty() {
        out += "verdict: every target met\n";
    } else {
        out += &format!("verdict: MISSED {}\n", missed.join(", "));
    }
    out
}

/// One line of a panel: its name, colour and points.
type Line = (&'static str, RGBColor, Vec<(f64, f64)>);

/// One panel of the figure: a caption, the y unit, its lines and an optional band (low, high)
/// drawn from the warm-up's end on.
struct Panel {
    title: &'static str,
    unit: &'static str,
    lines: Vec<Line>,
    band: Option<(f64, f64)>,
}

/// The four panels' lines (and the RSS panel's band) from the samples.
fn panels(samples: &[Sample], v: &Verdict, t: Targets) -> [Panel; 4] {
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    let green = RGBColor(44, 160, 44);
    let pts = |f: &dyn Fn(&Sample) -> f64| samples.iter().map(|s| (s.seconds, f(s))).collect::<Vec<_>>();
    let mut rate = Vec::new();
    let mut prev: Option<(f64, u64)> = None;
    for s in samples {
        if let Some(n) = s.tuples {
            if let Some((t0, n0)) = prev {
                rate.push((s.seconds, n.saturating_sub(n0) as f64 / (s.seconds - t0) / 1e6));
            }
            prev = Some((s.seconds, n));
        }
    }
    let band = (v.rss_ref_kb * (1.0 - t.tolerance) / 1024.0, v.rss_ref_kb * (1.0 + t.tolerance) / 1024.0);
    [
        Panel {
            title: "resident memory (grey: ±tolerance around the warm-up-end median)",
            unit: "MiB",
            // The peak first, so the current value is drawn over it where they coincide.
            lines: vec![
                ("VmHWM (peak)", red, pts(&|s| s.hwm_kb as f64 / 1024.0)),
                ("VmRSS", blue, pts(&|s| s.rss_kb as f64 / 1024.0)),
            ],
            band: Some(band),
        },
        Panel { title: "open files", unit: "fds", lines: vec![("fds", blue, pts(&|s| s.fds as f64))], band: None },
        Panel {
            title: "threads",
            unit: "threads",
            lines: vec![("threads", blue, pts(&|s| s.threads as f64))],
            band: None,
        },
        Panel { title: "ingest rate", unit: "M tuples/s", lines: vec![("tuples/s", green, rate)], band: None },
    ]
}

/// Four panels over time: RSS (with the HWM and the ±tolerance band), open files, threads and
/// the ingest rate; a dashed line marks the warm-up's end.
fn plot(path: &Path, samples: &[Sample], v: &Verdict, t: Targets) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let grey = RGBColor(150, 150, 150);
    let panels = panels(samples, v, t);
    let x_max = samples.last().map_or(1.0, |s| s.seconds).max(1.0);
    let root = BitMapBackend::new(path, (1000, 1100)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let verdict = if v.ok() { "every target met" } else { "a target MISSED" };
    let root = root.titled(&format!("saams soak: {verdict}"), ("sans-serif", 26)).map_err(|e| err(&e))?;
    for (area, Panel { title, unit, lines, band }) in root.split_evenly((4, 1)).iter().zip(panels) {
        let y_max = lines.iter().flat_map(|l| l.2.iter().map(|p| p.1)).chain(band.map(|b| b.1)).fold(0.0, f64::max);
        let y_max = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
        let mut c = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(|e| err(&e))?;
        c.configure_mesh()
            .x_desc("seconds")
            .y_desc(unit)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| if y_max >= 10.0 { format!("{y:.0}") } else { format!("{y:.1}") })
            .draw()
            .map_err(|e| err(&e))?;
        c.draw_series(DashedLineSeries::new([(v.warmup_end_s, 0.0), (v.warmup_end_s, y_max)], 6, 4, grey.into()))
            .map_err(|e| err(&e))?
            .label("warm-up end")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
        if let Some((lo, hi)) = band {
            for y in [lo, hi] {
                c.draw_series(LineSeries::new([(v.warmup_end_s, y), (x_max, y)], grey.stroke_width(1)))
                    .map_err(|e| err(&e))?;
            }
        }
        for (name, color, points) in lines {
            c.draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

fn run(a: &Args) -> Result<bool, String> {
    let text = std::fs::read_to_string(&a.tsv).map_err(|e| format!("{}: {e}", a.tsv.display()))?;
    let samples = parse_tsv(&text).map_err(|e| format!("{}: {e}", a.tsv.display()))?;
    let targets = Targets { warmup: a.warmup, tolerance: a.tolerance, median_seconds: a.median_seconds };
    let verdict = judge(&samples, targets).map_err(|e| format!("{}: {e}", a.tsv.display()))?;
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "the embedded DejaVu Sans font did not load".to_string())?;
    plot(&a.png, &samples, &verdict, targets)?;
    print!("{}", report(&samples, &verdict, targets));
    println!("plot: {}", a.png.display());
    Ok(verdict.ok())
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak-plot: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGETS: Targets = Targets { warmup: 0.2, tolerance: 0.10, median_seconds: 10.0 };

    /// A run of `n` one-second samples with RSS, fds and threads given per second.
    fn run_of(
        n: usize,
        rss: impl Fn(usize) -> u64,
        fds: impl Fn(usize) -> u64,
        threads: impl Fn(usize) -> u64,
    ) -> Vec<Sample> {
        (0..n)
            .map(|i| Sample {
                seconds: (i + 1) as f64,
                rss_kb: rss(i),
                hwm_kb: 200_000,
                fds: fds(i),
                threads: threads(i),
                tuples: Some(i as u64 * 1000),
                queries_ok: i as u64,
                queries_failed: 0,
            })
            .collect()
    }

    fn tsv(samples: &[Sample]) -> String {
        let mut s = COLUMNS.join("\t") + "\n";
        for x in samples {
            let tuples = x.tuples.map_or("-".to_string(), |t| t.to_string());
            s += &format!(
                "{}\t{}\t{}\t{}\t{}\t{tuples}\t{}\t{}\n",
                x.seconds, x.rss_kb, x.hwm_kb, x.fds, x.threads, x.queries_ok, x.queries_failed
            );
        }
        s
    }

    #[test]
    fn a_flat_run_meets_every_target() {
        // Growth in the first 10 s is not judged (the reference is the trailing 10 s median at
        // the warm-up's end, 21 s); then up to +6 % of noise.
        let samples = run_of(
            100,
            |i| if i < 10 { 10_000 * i as u64 } else { 100_000 + (i as u64 * 37 % 7) * 1000 },
            |_| 12,
            |_| 5,
        );
        let v = judge(&samples, TARGETS).unwrap();
        assert!(v.ok(), "{v:?}");
        assert_eq!(v.warmup_end, samples.iter().position(|s| s.seconds >= 1.0 + 0.2 * 99.0).unwrap());
        assert!(report(&samples, &v, TARGETS).contains("verdict: every target met"));
    }

    #[test]
    fn a_leak_of_memory_misses_the_rss_target() {
        // +0.2 % a second: after 80 s the median is ~15 % above its warm-up-end value.
        let samples = run_of(100, |i| 100_000 + 200 * i as u64, |_| 12, |_| 5);
        let v = judge(&samples, TARGETS).unwrap();
        assert!(!v.rss_ok && v.fds.ok && v.threads.ok, "{v:?}");
        assert!(v.rss_max_kb > v.rss_ref_kb * 1.1);
        assert!(report(&samples, &v, TARGETS).contains("verdict: MISSED rss"));
    }

    #[test]
    fn a_drop_in_memory_also_misses_the_rss_target() {
        let samples = run_of(100, |i| if i < 50 { 100_000 } else { 80_000 }, |_| 12, |_| 5);
        let v = judge(&samples, TARGETS).unwrap();
        assert!(!v.rss_ok);
        assert_eq!((v.rss_ref_kb, v.rss_min_kb, v.rss_max_kb), (100_000.0, 80_000.0, 100_000.0));
    }

    #[test]
    fn single_spikes_are_smoothed_by_the_moving_median() {
        // One sample in ten at +50 % (a burst) and one fd more now and then (a connection being
        // served at the moment of the sample), also at the very end.
        let samples =
            run_of(100, |i| if i % 10 == 3 { 150_000 } else { 100_000 }, |i| if i % 10 == 9 { 13 } else { 12 }, |_| 5);
        let v = judge(&samples, TARGETS).unwrap();
        assert!(v.ok(), "{v:?}");
        assert_eq!(v.fds.max_after_warmup, 13);
    }

    #[test]
    fn leaked_files_or_threads_miss_their_targets() {
        let samples = run_of(100, |_| 100_000, |i| 12 + i as u64 / 10, |_| 5);
        let v = judge(&samples, TARGETS).unwrap();
        assert!(v.rss_ok && !v.fds.ok && v.threads.ok, "{v:?}");
        assert!(v.fds.at_end > v.fds.at_warmup_end);
        let samples = run_of(100, |_| 100_000, |_| 12, |i| if i < 90 { 5 } else { 6 });
        let v = judge(&samples, TARGETS).unwrap();
        assert!(!v.threads.ok && v.fds.ok);
        assert!(report(&samples, &v, TARGETS).contains("verdict: MISSED threads"));
    }

    #[test]
    fn fewer_files_at_the_end_is_no_growth() {
        let samples = run_of(100, |_| 100_000, |i| if i < 60 { 14 } else { 12 }, |_| 5);
        assert!(judge(&samples, TARGETS).unwrap().fds.ok);
    }

    #[test]
    fn too_short_a_run_is_an_error_not_a_verdict() {
        assert!(judge(&run_of(1, |_| 1, |_| 1, |_| 1), TARGETS).unwrap_err().contains("too few"));
        assert!(judge(&run_of(12, |_| 1, |_| 1, |_| 1), TARGETS).unwrap_err().contains("too short"));
    }

    #[test]
    fn moving_median_covers_the_trailing_window() {
        let samples = run_of(6, |i| [5, 1, 9, 3, 7, 2][i], |_| 0, |_| 0);
        // Width 3 s: (t-3, t], i.e. the sample and the two before it.
        assert_eq!(moving_median(&samples, |s| s.rss_kb, 3.0), vec![5.0, 3.0, 5.0, 3.0, 7.0, 3.0]);
    }

    #[test]
    fn the_tsv_round_trips() {
        let mut samples = run_of(30, |i| 100 + i as u64, |_| 9, |_| 4);
        samples[3].tuples = None;
        assert_eq!(parse_tsv(&tsv(&samples)).unwrap(), samples);
    }

    #[test]
    fn a_bad_tsv_is_a_clear_error() {
        let good = tsv(&run_of(3, |_| 100, |_| 9, |_| 4));
        let cases = [
            ("", "empty"),
            ("seconds\trss\n", "line 1: expected the header"),
            (&good.replace("\t9\t4\t", "\t9\t")[..], "line 2: expected 8 tab-separated fields, found 7"),
            (
                &good.replacen("\t100\t", "\t1e5\t", 1)[..],
                "line 2, column rss_kb: \"1e5\" is not a non-negative integer",
            ),
            (&good.replacen("2\t100", "0.5\t100", 1)[..], "line 3: seconds 0.5 does not follow 1"),
            (
                &good.replacen("1\t100", "NaN\t100", 1)[..],
                "line 2, column seconds: \"NaN\" is not a non-negative number",
            ),
            (&good.replacen("\t2000\t", "\t0\t", 1)[..], "line 4: tuples 0 is below an earlier 1000"),
            (&(good.clone() + "\n"), "line 5: expected 8 tab-separated fields, found 1"),
        ];
        for (text, want) in cases {
            let e = parse_tsv(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e:?} lacks {want:?}");
        }
    }
}
