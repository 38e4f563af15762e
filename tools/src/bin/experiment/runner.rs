//! Running `saams` (and `replay`) as child processes and reading their summaries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One process' summary line, as numbers.
pub type Fields = HashMap<String, f64>;

/// A setting's result: summed over processes (tuples, bytes), slowest process (seconds).
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub tuples: f64,
    pub seconds: f64,
    pub bytes_between_processes: f64,
    pub partial_bytes: f64,
    pub raw_bytes: f64,
    pub estimations: f64,
}

impl RunResult {
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 { self.tuples / self.seconds } else { 0.0 }
    }
}

/// The numbers of the last `summary` line of a `saams` process' stderr.
pub fn parse_summary(stderr: &str) -> Result<Fields, String> {
    let line = stderr
        .lines()
        .rfind(|l| l.starts_with("summary "))
        .ok_or_else(|| format!("no summary line in saams' stderr:\n{stderr}"))?;
    let mut fields = HashMap::new();
    for kv in line.split_whitespace().skip(1) {
        if let Some((k, v)) = kv.split_once('=') {
            let x: f64 = v.parse().map_err(|_| format!("summary field {kv:?} is not a number"))?;
            fields.insert(k.to_string(), x);
        }
    }
    Ok(fields)
}

/// How settings are run: the `saams` binary, the run's directory (hostfiles, answers, results)
/// and the runs per setting.
pub struct Runner {
    pub saams: PathBuf,
    pub dir: PathBuf,
    pub repeats: usize,
}

impl Runner {
    /// Run saams once on `processes` processes (loopback) and combine their summaries.
    fn once(&self, processes: usize, workers: usize, args: &[String]) -> Result<RunResult, String> {
        self.once_to(processes, workers, args, &vec![null_device(); processes])
    }

    /// [`once`](Self::once), process `p` writing its estimations to `outs[p]`.
    pub fn once_to(
        &self,
        processes: usize,
        workers: usize,
        args: &[String],
        outs: &[String],
    ) -> Result<RunResult, String> {
        if outs.len() != processes {
            return Err(format!("{} output files for {processes} processes", outs.len()));
        }
        let mut common: Vec<String> = vec!["-w".into(), workers.to_string()];
        common.extend(["--progress".into(), "0".into()]);
        common.extend(args.iter().cloned());
        let mut children = Vec::new();
        if processes > 1 {
            let hostfile = self.dir.join("hostfile.txt");
            let ports = free_ports(processes)?;
            let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
            std::fs::write(&hostfile, text).map_err(|e| format!("{}: {e}", hostfile.display()))?;
            for (p, out) in outs.iter().enumerate() {
                let mut c = Command::new(&self.saams);
                c.args(&common).args(["--out", out]);
                c.args(["-n", &processes.to_string(), "-p", &p.to_string(), "-h"]).arg(&hostfile);
                children.push(spawn(c)?);
            }
        } else {
            let mut c = Command::new(&self.saams);
            c.args(&common).args(["--out", &outs[0]]);
            children.push(spawn(c)?);
        }
        collect(children, &common)
    }

    /// `replay --validate` over the input file `data`: the line readers and the parser alone,
    /// nothing routed, updated or written. Its summary's tuples and seconds (first tuple to last).
    pub fn parse_only(&self, data: &str) -> Result<RunResult, String> {
        let replay = self.saams.with_file_name(format!("replay{}", std::env::consts::EXE_SUFFIX));
        let out = Command::new(&replay)
            .arg("--validate")
            .args(["--progress", "none", data])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", replay.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("replay --validate {data} failed ({}):\n{stderr}", out.status));
        }
        let line = stderr
            .lines()
            .rfind(|l| l.starts_with("replay: done "))
            .ok_or_else(|| format!("no summary line in replay's stderr:\n{stderr}"))?;
        let field = |k: &str| -> Result<f64, String> {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("replay's summary has no number {k}: {line}"))
        };
        Ok(RunResult { tuples: field("tuples")?, seconds: field("seconds")?, ..RunResult::default() })
    }

    /// Runs `outs.len()` independent single-process jobs of `workers` workers at once, each on the
    /// whole input of `args` and answering into its own file of `outs`: tuples add up, seconds
    /// are the slowest job's.
    pub fn independent_to(&self, workers: usize, args: &[String], outs: &[String]) -> Result<RunResult, String> {
        let mut common: Vec<String> = vec!["-w".into(), workers.to_string()];
        common.extend(["--progress".into(), "0".into()]);
        common.extend(args.iter().cloned());
        let mut children = Vec::new();
        for out in outs {
            let mut c = Command::new(&self.saams);
            c.args(&common).args(["--out", out]);
            children.push(spawn(c)?);
        }
        collect(children, &common)
    }
}

/// Waits for the `saams` processes `children` (run with `common`) and adds up their summaries.
fn collect(children: Vec<std::process::Child>, common: &[String]) -> Result<RunResult, String> {
    let mut r = RunResult::default();
    for child in children {
        let out = child.wait_with_output().map_err(|e| format!("saams: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("saams {} failed ({}):\n{stderr}", common.join(" "), out.status));
        }
        let f = parse_summary(&stderr)?;
        let get = |k: &str| f.get(k).copied().unwrap_or(0.0);
        r.tuples += get("tuples");
        r.seconds = r.seconds.max(get("seconds"));
        r.bytes_between_processes += get("bytes_between_processes");
        r.partial_bytes += get("partial_bytes");
        r.raw_bytes += get("raw_bytes");
        r.estimations += get("estimations");
    }
    Ok(r)
}

impl Runner {
    /// Repeat a setting and keep the run with the median throughput.
    pub fn median(&self, label: &str, processes: usize, workers: usize, args: &[String]) -> Result<RunResult, String> {
        let mut runs = Vec::new();
        for _ in 0..self.repeats {
            runs.push(self.once(processes, workers, args)?);
        }
        runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
        let m = runs[runs.len() / 2].clone();
        let rates: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.rate())).collect();
        eprintln!("experiment: {label}: median {:.0} tuples/s (runs {})", m.rate(), rates.join(", "));
        Ok(m)
    }
}

/// Where answers nobody reads go.
pub fn null_device() -> String {
    if cfg!(windows) { "NUL".into() } else { "/dev/null".into() }
}

/// Starts a `saams` process with its stderr piped (its summary is read from there).
pub fn spawn(mut c: Command) -> Result<std::process::Child, String> {
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("saams: {e}"))
}

/// Ports free right now on loopback (the OS picks them; released before saams binds them).
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("free port: {e}")))
        .collect::<Result<_, _>>()?;
    listeners.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(|e| format!("free port: {e}"))).collect()
}

/// Writes a result file, naming it in the error.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
