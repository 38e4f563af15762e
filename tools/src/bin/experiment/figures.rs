//! The paper's figures 9–11: horizontal and vertical scaling, and the federated bytes.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::plots::{Series, chart};
use crate::requests::per_stream_requests;
use crate::runner::{Runner, write};
use crate::settings::Args;

/// Figure 9 (`horizontal.tsv`, `fig9-horizontal.png`): the paper's workload at 1, 2, 4 workers in
/// one process and 1, 2 workers in each of 2 processes on loopback (fewer with `--quick`).
pub fn horizontal(r: &Runner, a: &Args, tuples_per_stream: u64) -> Result<(), String> {
    let settings: &[(usize, usize)] =
        if a.quick { &[(1, 1), (1, 2), (2, 1)] } else { &[(1, 1), (1, 2), (1, 4), (2, 1), (2, 2)] };
    let gen_spec = format!("stocks:100:{tuples_per_stream}");
    let args: Vec<String> =
        vec!["--requests".into(), a.requests.display().to_string(), "--generate".into(), gen_spec.clone()];
    let mut tsv = String::from(
        "experiment\tprocesses\tworkers_per_process\tworkers\tstreams\tgenerate\twindow\ttuples\tseconds\ttuples_per_s\tbytes_between_processes\tspeedup_vs_1\n",
    );
    let mut base = None;
    let mut by_procs: HashMap<usize, Vec<(f64, f64)>> = HashMap::new();
    for &(n, w) in settings {
        let m = r.median(&format!("horizontal n={n} w={w}"), n, w, &args)?;
        let base_rate = *base.get_or_insert(m.rate());
        let _ = writeln!(
            tsv,
            "horizontal\t{n}\t{w}\t{}\t100\t{gen_spec}\t60s\t{:.0}\t{:.3}\t{:.0}\t{:.0}\t{:.2}",
            n * w,
            m.tuples,
            m.seconds,
            m.rate(),
            m.bytes_between_processes,
            m.rate() / base_rate
        );
        by_procs.entry(n).or_default().push(((n * w) as f64, m.rate()));
    }
    write(&r.dir.join("horizontal.tsv"), &tsv)?;
    let mut series: Vec<Series> = by_procs
        .into_iter()
        .map(|(n, pts)| (format!("{n} process{}", if n > 1 { "es (loopback)" } else { "" }), pts))
        .collect();
    series.sort_by(|a, b| a.0.cmp(&b.0));
    chart(
        &r.dir.join("fig9-horizontal.png"),
        "Horizontal: 100 streams x CM+HLL+DFT",
        "workers in total",
        "tuples/s (median)",
        &series,
        false,
    )
}

/// Figure 10 (`vertical.tsv`, `fig10-vertical.png`): 10 → 500 streams at 2 workers, the same
/// number of tuples in total.
pub fn vertical(r: &Runner, a: &Args, total: u64) -> Result<(), String> {
    let streams: &[usize] = if a.quick { &[10, 100] } else { &[10, 50, 100, 200, 500] };
    let workers = 2;
    let mut tsv = String::from(
        "experiment\tprocesses\tworkers\tstreams\tsynopses\tgenerate\twindow\ttuples\tseconds\ttuples_per_s\testimations\n",
    );
    let mut pts = Vec::new();
    for &n in streams {
        let req = r.dir.join(format!("requests-{n}-streams.json"));
        write(&req, &per_stream_requests(n))?;
        let gen_spec = format!("stocks:{n}:{}", (total / n as u64).max(1));
        let args = vec!["--requests".into(), req.display().to_string(), "--generate".into(), gen_spec.clone()];
        let m = r.median(&format!("vertical streams={n}"), 1, workers, &args)?;
        let _ = writeln!(
            tsv,
            "vertical\t1\t{workers}\t{n}\t{}\t{gen_spec}\t60s\t{:.0}\t{:.3}\t{:.0}\t{:.0}",
            3 * n,
            m.tuples,
            m.seconds,
            m.rate(),
            m.estimations
        );
        pts.push((n as f64, m.rate()));
    }
    write(&r.dir.join("vertical.tsv"), &tsv)?;
    chart(
        &r.dir.join("fig10-vertical.png"),
        "Vertical: streams x CM+HLL+DFT at 2 workers",
        "streams",
        "tuples/s (median)",
        &[("1 process, 2 workers".into(), pts)],
        false,
    )
}
