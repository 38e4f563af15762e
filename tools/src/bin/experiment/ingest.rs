//! The ingest experiment (`--only ingest`): file, generator and Kafka input at the same
//! workload, in alternating rounds, with every setting's answers checked.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cpu::{children_cpu_seconds, clock_ticks, load_average, process_cpu_seconds, read_pid};
use crate::plots::ingest_chart;
use crate::runner::{Runner, write};
use crate::settings::Args;

/// The estimation lines of a run's output files, sorted (processes write their own files; the
/// order of lines within and across files depends on the workers' scheduling, their set does not).
fn sorted_estimations(outs: &[String]) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for o in outs {
        let text = std::fs::read_to_string(o).map_err(|e| format!("{o}: {e}"))?;
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort_unstable();
    Ok(lines)
}

/// The first line two sorted answer sets differ in, for the failure message.
fn first_difference(a: &[String], b: &[String]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("line {i} of the sorted answers: {:?} against {:?}", a[i], b[i]),
        None => format!("{} lines against {}", a.len(), b.len()),
    }
}

/// One setting of the ingest experiment.
struct IngestSetting {
    /// Short name (TSV `setting` column).
    name: &'static str,
    /// generator, file or kafka.
    input: &'static str,
    processes: usize,
    workers: usize,
    /// saams' input flags (and `--no-synopses`).
    args: Vec<String>,
    /// Compared with the `-w 1` file run's answers (the generator's are reported, not required).
    checked: bool,
    /// Seconds of the summary that are no ingest: the wait of `--exit-when-idle` (Kafka).
    idle_seconds: f64,
    /// The processes are independent jobs started at once (each reads the whole input), not one
    /// cluster of `-n processes`.
    independent: bool,
}

/// One run of a setting: the summary, the children's CPU seconds, the processes' wall time, the
/// load before it and, for Kafka, the broker's CPU seconds during it.
#[derive(Clone, Debug, Default)]
struct IngestRun {
    tuples: f64,
    /// The summary's seconds (first tuple read to last window closed), less the idle wait.
    seconds: f64,
    cpu_seconds: f64,
    process_seconds: f64,
    load: f64,
    broker_cpu_seconds: Option<f64>,
}

impl IngestRun {
    fn rate(&self) -> f64 {
        if self.seconds > 0.0 { self.tuples / self.seconds } else { 0.0 }
    }

    fn per_cpu_second(&self) -> f64 {
        if self.cpu_seconds > 0.0 { self.tuples / self.cpu_seconds } else { 0.0 }
    }
}

/// The median of some numbers (the upper one of an even count); 0 for none.
fn median_of(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// Ingest (`--only ingest`, issue 15): the paper's workload from a JSON-lines file of the
/// generator's tuples against the generator itself, in alternating rounds of the same run, at
/// `-w 1`, `-w 1 --no-synopses`, `-w 2` and `-n 2 -w 1`, and from a Kafka topic of the same
/// tuples at `-w 2` when `--kafka-brokers` is given. Every setting's answers must equal the `-w 1`
/// file run's, sorted, byte for byte (the experiment fails otherwise). `ingest.tsv` has one row
/// per setting (medians of the rounds); `ingest-targets.tsv` the ratios against its
/// targets, each with the load average during the runs it compares.
pub fn ingest(r: &Runner, a: &Args, tuples_per_stream: u64) -> Result<(), String> {
    let ticks = clock_ticks();
    let requests = a.requests.display().to_string();
    let generate = format!("stocks:100:{tuples_per_stream}");
    let replay = r.saams.with_file_name(format!("replay{}", std::env::consts::EXE_SUFFIX));
    if !replay.is_file() {
        return Err(format!("{} not found: build it with `cargo build --release -p saams-jobs`", replay.display()));
    }
    let file = r.dir.join("ingest-tuples.jsonl");
    load_tuples(&replay, &generate, &["--output", &file.display().to_string()])?;
    let data = file.display().to_string();
    let mut settings = file_settings(&requests, &generate, &data);
    let ais_file = r.dir.join("ingest-ais.csv");
    settings.extend(ais_setting(a, &ais_file)?);
    let broker_pid = a.kafka_pidfile.as_deref().map(read_pid).transpose()?;
    let mut topic = None;
    if let Some(brokers) = &a.kafka_brokers {
        let topic = topic.insert(format!("saams-ingest-{}-{tuples_per_stream}", std::process::id()));
        eprintln!("experiment: ingest: loading {generate} into topic {topic} at {brokers}");
        load_tuples(&replay, &generate, &["--brokers", brokers, "--topic", topic, "--partitions", "4"])?;
        settings.push(kafka_setting(&requests, brokers, topic));
    }
    let result = ingest_rounds(r, &settings, broker_pid, ticks);
    if let Some(brokers) = &a.kafka_brokers
        && let Some(topic) = &topic
    {
        // The broker may keep records in memory: drop this run's copy (≈ 130 bytes a tuple).
        let opts = saams_jobs::kafka::KafkaOptions::new(brokers, "saams-experiment");
        if let Err(e) = saams_jobs::kafka::delete_topics(&opts, &[topic]) {
            eprintln!("experiment: ingest: topic {topic} not deleted: {e}");
        }
    }
    std::fs::remove_file(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    if ais_file.exists() {
        std::fs::remove_file(&ais_file).map_err(|e| format!("{}: {e}", ais_file.display()))?;
    }
    let (runs, generator_answers_equal) = result?;
    ingest_report(r, &settings, &runs, generator_answers_equal)
}

/// Runs `replay` on the generator's `generate` tuples with `extra` flags (where they go).
fn load_tuples(replay: &Path, generate: &str, extra: &[&str]) -> Result<(), String> {
    let out = Command::new(replay)
        .args(["--generate", generate, "--progress", "none"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("replay: {e}"))?;
    if !out.status.success() {
        return Err(format!("replay {extra:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// Owned copies of some flags.
fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// The settings on the generator and on the file `data` of its tuples (`requests` the workload).
fn file_settings(requests: &str, generate: &str, data: &str) -> Vec<IngestSetting> {
    let on_file = |extra: &[&str]| [strings(&["--requests", requests, "--data", data]), strings(extra)].concat();
    // A setting on the file: (name, processes, workers, extra flags, answers checked).
    let on_file_setting = |name, processes, workers, extra: &[&str], checked| IngestSetting {
        name,
        input: "file",
        processes,
        workers,
        args: on_file(extra),
        checked,
        idle_seconds: 0.0,
        independent: false,
    };
    vec![
        IngestSetting {
            name: "generator-w1",
            input: "generator",
            processes: 1,
            workers: 1,
            args: strings(&["--requests", requests, "--generate", generate]),
            checked: false,
            idle_seconds: 0.0,
            independent: false,
        },
        on_file_setting("file-w1", 1, 1, &[], true),
        on_file_setting("file-w1-no-synopses", 1, 1, &["--no-synopses"], false),
        on_file_setting("file-w2", 1, 2, &[], true),
        on_file_setting("file-n2-w1", 2, 1, &[], true),
        // What two cores give two jobs that share nothing: -w 2 and -n 2 can at best match it.
        IngestSetting { independent: true, ..on_file_setting("two-file-w1-jobs", 2, 1, &[], true) },
        // The parser's pace: the same file through the same line reader and parser, nothing else.
        IngestSetting {
            name: "parse-only",
            input: "parse-only",
            processes: 1,
            workers: 1,
            args: strings(&["--data", data]),
            checked: false,
            idle_seconds: 0.0,
            independent: false,
        },
    ]
}

/// The AIS CSV setting, on `ais_file` written from the shared sample (`None`, said on stderr,
/// when there is no sample).
fn ais_setting(a: &Args, ais_file: &Path) -> Result<Option<IngestSetting>, String> {
    let Some(rows) = write_ais_rows(&a.datasets.join("ais"), ais_file, 5_000_000)? else {
        eprintln!(
            "experiment: ingest: no AIS sample under {}: the AIS CSV setting is skipped (set SAAMS_DATASETS)",
            a.datasets.join("ais").display()
        );
        return Ok(None);
    };
    eprintln!("experiment: ingest: {rows} AIS rows in {}", ais_file.display());
    let args = [("--requests", a.ais_requests.as_path()), ("--data", ais_file)]
        .iter()
        .flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()])
        .chain(["--format".to_string(), "ais-csv".to_string()])
        .collect();
    Ok(Some(IngestSetting {
        name: "ais-csv-w1",
        input: "ais-csv",
        processes: 1,
        workers: 1,
        args,
        checked: false,
        idle_seconds: 0.0,
        independent: false,
    }))
}

/// The Kafka setting: the tuples loaded into `topic` at `brokers`, read at `-w 2` until idle.
fn kafka_setting(requests: &str, brokers: &str, topic: &str) -> IngestSetting {
    let idle = 2.0;
    IngestSetting {
        name: "kafka-w2",
        input: "kafka",
        processes: 1,
        workers: 2,
        args: strings(&[
            "--requests",
            requests,
            "--brokers",
            brokers,
            "--data-topic",
            topic,
            "--from",
            "earliest",
            "--exit-when-idle",
            &format!("{idle}s"),
        ]),
        checked: true,
        idle_seconds: idle,
        independent: false,
    }
}

/// The file a setting reads (`--data FILE`), if it reads one.
fn data_file(args: &[String]) -> Option<&str> {
    args.windows(2).find(|w| w[0] == "--data").map(|w| w[1].as_str())
}

/// Read `path` once, start to end, so that the run after it finds the file in the page cache.
///
/// Why: the machines this runs on drop file pages from the page cache within minutes, with
/// gigabytes free and no reclaim counted (`/proc/vmstat`: `pgscan_*` and `drop_pagecache`
/// unchanged), so without this a file run read part of its 640 MB input from the virtual disk,
/// more of it in later rounds, and paid for it in CPU: four alternating runs of `-w 1` on the
/// same file took 2.36–2.81 CPU-s with the file evicted (`POSIX_FADV_DONTNEED`) against
/// 1.83–2.22 read just before. The settings compare ingest from a file, not the disk: every file
/// setting now starts from the same cache state. The read is this process's, outside the
/// children's CPU seconds and wall time the figures count.
fn warm_page_cache(path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::io::copy(&mut file, &mut std::io::sink()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// An AIS CSV of at least `rows` data rows at `out`: the first `.csv` sample under `dir` (the
/// NOAA MarineCadastre one) repeated, each copy one day after the previous one (its
/// `BaseDateTime` dates shifted), so event time moves forward as in a longer recording and no
/// row is late. `None` when there is no sample.
fn write_ais_rows(dir: &Path, out: &Path, rows: u64) -> Result<Option<u64>, String> {
    use std::io::Write as _;
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
    let mut samples: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    samples.sort();
    let Some(sample) = samples.first() else { return Ok(None) };
    let text = std::fs::read_to_string(sample).map_err(|e| format!("{}: {e}", sample.display()))?;
    let (header, body) = text.split_once('\n').ok_or_else(|| format!("{}: no data rows", sample.display()))?;
    let per_copy = body.lines().filter(|l| !l.trim().is_empty()).count() as u64;
    // The sample's date, from its first row's second column (`BaseDateTime`, `yyyy-mm-ddThh:mm:ss`).
    let date = body.lines().next().and_then(|l| l.split(',').nth(1)).and_then(|t| t.get(..10)).unwrap_or("");
    let ymd: Vec<u32> = date.split('-').filter_map(|x| x.parse().ok()).collect();
    let [y, m, d] = ymd[..] else {
        return Err(format!("{}: first row's time is not yyyy-mm-dd…: {date:?}", sample.display()));
    };
    if per_copy == 0 {
        return Err(format!("{}: no data rows", sample.display()));
    }
    let day0 = saams::api::time::days_from_civil(i64::from(y), m, d);
    let mut w = std::io::BufWriter::new(std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?);
    let io = |e: std::io::Error| format!("{}: {e}", out.display());
    writeln!(w, "{header}").map_err(io)?;
    let copies = rows.div_ceil(per_copy);
    for k in 0..copies {
        let (cy, cm, cd) = saams::api::time::civil_from_days(day0 + k as i64);
        let shifted = body.replace(&format!(",{date}T"), &format!(",{cy:04}-{cm:02}-{cd:02}T"));
        w.write_all(shifted.as_bytes()).map_err(io)?;
        if !shifted.ends_with('\n') {
            writeln!(w).map_err(io)?;
        }
    }
    w.flush().map_err(io)?;
    Ok(Some(copies * per_copy))
}

/// The alternating rounds of the ingest settings: every setting's runs (by setting), and whether
/// the generator's answers equal the file's. Fails when a checked setting's answers differ from
/// the `-w 1` file run's.
fn ingest_rounds(
    r: &Runner,
    settings: &[IngestSetting],
    broker_pid: Option<u32>,
    ticks: f64,
) -> Result<(Vec<Vec<IngestRun>>, bool), String> {
    let mut reference: Option<Vec<String>> = None;
    let mut generator_answers_equal = true;
    let mut runs: Vec<Vec<IngestRun>> = vec![Vec::new(); settings.len()];
    for round in 0..r.repeats {
        // file-w1 first: its answers are the reference the others are checked against.
        let order = std::iter::once(1).chain((0..settings.len()).filter(|&i| i != 1));
        for i in order {
            let s = &settings[i];
            let (run, outs) = run_setting(r, s, round, broker_pid, ticks)?;
            let parse_only = s.input == "parse-only";
            // Independent jobs each answer the whole input: checked one by one. A parse-only
            // pass answers nothing.
            let answered = if parse_only {
                0
            } else if s.independent {
                1
            } else {
                outs.len()
            };
            let answers = sorted_estimations(&outs[..answered])?;
            if s.independent
                && let Some(base) = &reference
            {
                for o in &outs[1..] {
                    let other = sorted_estimations(std::slice::from_ref(o))?;
                    if *base != other {
                        return Err(format!("ingest: {} answers differ from file-w1's in {o}", s.name));
                    }
                }
            }
            // Answers equal to file-w1's (or none) are not kept: one copy is (≈ 50 MB at 5 M tuples).
            let mut keep = s.name == "file-w1";
            match (&reference, s.name) {
                (None, "file-w1") => reference = Some(answers),
                (Some(base), _) if s.checked && *base != answers => {
                    return Err(format!(
                        "ingest: {} answers differ from file-w1's ({}); they are in {}",
                        s.name,
                        first_difference(base, &answers),
                        outs.join(", ")
                    ));
                }
                (Some(base), "generator-w1") => {
                    keep = *base != answers;
                    generator_answers_equal &= !keep;
                }
                _ => {}
            }
            if !keep && !parse_only {
                for o in &outs {
                    std::fs::remove_file(o).map_err(|e| format!("{o}: {e}"))?;
                }
            }
            eprintln!(
                "experiment: ingest round {round} {}: {:.0} tuples/s, {:.0} tuples per CPU-second (load {:.2})",
                s.name,
                run.rate(),
                run.per_cpu_second(),
                run.load
            );
            runs[i].push(run);
        }
    }
    Ok((runs, generator_answers_equal))
}

/// One run of setting `s` in round `round`: its figures and the files its processes answered
/// into (`ingest-<setting>-p<process>.json` in the run's directory).
fn run_setting(
    r: &Runner,
    s: &IngestSetting,
    round: usize,
    broker_pid: Option<u32>,
    ticks: f64,
) -> Result<(IngestRun, Vec<String>), String> {
    let outs: Vec<String> =
        (0..s.processes).map(|p| r.dir.join(format!("ingest-{}-p{p}.json", s.name)).display().to_string()).collect();
    let mut args = s.args.clone();
    if s.input == "kafka" {
        // A group of its own per run: no offsets committed by an earlier run are met.
        args.extend(["--group-id".into(), format!("saams-ingest-{}-{round}", std::process::id())]);
    }
    if let Some(path) = data_file(&s.args) {
        warm_page_cache(Path::new(path))?;
    }
    let load = load_average().unwrap_or(f64::NAN);
    let broker_before = broker_pid.and_then(|p| process_cpu_seconds(p, ticks));
    let cpu_before = children_cpu_seconds(ticks);
    let started = std::time::Instant::now();
    let m = if s.input == "parse-only" {
        let data = data_file(&s.args).ok_or("ingest: the parse-only setting names no --data file")?;
        r.parse_only(data)?
    } else if s.independent {
        r.independent_to(s.workers, &args, &outs)?
    } else {
        r.once_to(s.processes, s.workers, &args, &outs)?
    };
    let process_seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_before.zip(children_cpu_seconds(ticks)).map(|(b, a)| a - b).unwrap_or(0.0);
    let broker = if s.input == "kafka" {
        broker_before.zip(broker_pid.and_then(|p| process_cpu_seconds(p, ticks))).map(|(b, a)| a - b)
    } else {
        None
    };
    let run = IngestRun {
        tuples: m.tuples,
        seconds: (m.seconds - s.idle_seconds).max(0.0),
        cpu_seconds: cpu,
        process_seconds,
        load,
        broker_cpu_seconds: broker,
    };
    Ok((run, outs))
}

/// `ingest.tsv`, `ingest-targets.tsv` and `ingest.png` from the runs of every setting.
fn ingest_report(
    r: &Runner,
    settings: &[IngestSetting],
    runs: &[Vec<IngestRun>],
    generator_answers_equal: bool,
) -> Result<(), String> {
    let medians: Vec<IngestRun> = runs.iter().map(|rs| median_run(rs)).collect();
    write(&r.dir.join("ingest.tsv"), &ingest_tsv(settings, runs, &medians, generator_answers_equal))?;
    let targets = ingest_targets(settings, runs, &medians);
    write(&r.dir.join("ingest-targets.tsv"), &targets)?;
    let bars: Vec<(&str, f64, f64)> =
        settings.iter().enumerate().map(|(i, s)| (s.name, rate(runs, i), per_cpu(runs, i))).collect();
    ingest_chart(&r.dir.join("ingest.png"), &bars)?;
    if !generator_answers_equal {
        eprintln!("experiment: ingest: the generator's answers differ from the file's (reported, not required)");
    }
    Ok(())
}

/// A setting's figures over its runs: the median of each (the broker's only when every run has it).
fn median_run(rs: &[IngestRun]) -> IngestRun {
    let col = |f: &dyn Fn(&IngestRun) -> f64| median_of(rs.iter().map(f).collect());
    IngestRun {
        tuples: col(&|x| x.tuples),
        seconds: col(&|x| x.seconds),
        cpu_seconds: col(&|x| x.cpu_seconds),
        process_seconds: col(&|x| x.process_seconds),
        load: col(&|x| x.load),
        broker_cpu_seconds: rs
            .iter()
            .all(|x| x.broker_cpu_seconds.is_some())
            .then(|| median_of(rs.iter().filter_map(|x| x.broker_cpu_seconds).collect())),
    }
}

/// Setting `i`'s wall-clock tuples/s: the median of its runs' own rates, not the ratio of the
/// median tuples and seconds.
fn rate(runs: &[Vec<IngestRun>], i: usize) -> f64 {
    median_of(runs[i].iter().map(IngestRun::rate).collect())
}

/// Setting `i`'s tuples per CPU-second: the median of its runs' figures.
fn per_cpu(runs: &[Vec<IngestRun>], i: usize) -> f64 {
    median_of(runs[i].iter().map(IngestRun::per_cpu_second).collect())
}

/// `ingest.tsv`: one row per setting, with the medians of its runs.
fn ingest_tsv(
    settings: &[IngestSetting],
    runs: &[Vec<IngestRun>],
    medians: &[IngestRun],
    generator_answers_equal: bool,
) -> String {
    let rate = |i| rate(runs, i);
    let per_cpu = |i| per_cpu(runs, i);
    let mut tsv = String::from(
        "experiment\tsetting\tinput\tprocesses\tworkers_per_process\ttuples\tseconds\ttuples_per_s\tcpu_seconds\ttuples_per_cpu_s\tprocess_wall_s\tload1\tbroker_cpu_s\tanswers\n",
    );
    for (i, (s, m)) in settings.iter().zip(medians).enumerate() {
        let answers = match (s.checked, s.name) {
            (true, _) => "equal to file-w1",
            (false, "generator-w1") if generator_answers_equal => "equal to file-w1",
            (false, "generator-w1") => "differ from file-w1",
            (false, "ais-csv-w1") => "own workload (not compared)",
            (false, "parse-only") => "none (parsed only)",
            _ => "none (no synopses)",
        };
        let _ = writeln!(
            tsv,
            "ingest\t{}\t{}\t{}\t{}\t{:.0}\t{:.3}\t{:.0}\t{:.3}\t{:.0}\t{:.3}\t{:.2}\t{}\t{answers}",
            s.name,
            s.input,
            s.processes,
            s.workers,
            m.tuples,
            m.seconds,
            rate(i),
            m.cpu_seconds,
            per_cpu(i),
            m.process_seconds,
            m.load,
            m.broker_cpu_seconds.map(|b| format!("{b:.3}")).unwrap_or_default()
        );
    }
    tsv
}

/// `ingest-targets.tsv`: the ratios against its targets, each with the load average of
/// the runs it compares (also told on stderr), and the engine's pace against the parser's.
fn ingest_targets(settings: &[IngestSetting], runs: &[Vec<IngestRun>], medians: &[IngestRun]) -> String {
    let rate = |i| rate(runs, i);
    let per_cpu = |i| per_cpu(runs, i);
    let index = |name: &str| settings.iter().position(|s| s.name == name);
    let (gen1, file1, bare, w2, n2) = (0, 1, 2, 3, 4);
    let load_of = |is: &[usize]| is.iter().map(|&i| medians[i].load).fold(0.0, f64::max);
    let mut targets = String::from("measure\tvalue\ttarget\tmet\tload1\n");
    let mut target = |name: &str, value: f64, goal: f64, is: &[usize]| {
        let met = if value >= goal { "yes" } else { "no" };
        let load = load_of(is);
        let _ = writeln!(targets, "{name}\t{value:.3}\t{goal}\t{met}\t{load:.2}");
        eprintln!("experiment: ingest {name} = {value:.3} (target >= {goal}: {met}; load {load:.2})");
    };
    target("file_w1_tuples_per_cpu_s_millions", per_cpu(file1) / 1e6, 3.0, &[file1]);
    target("file_w1_over_generator_w1_wall", rate(file1) / rate(gen1), 0.8, &[file1, gen1]);
    target("file_w1_over_generator_w1_per_cpu_s", per_cpu(file1) / per_cpu(gen1), 0.8, &[file1, gen1]);
    target("file_no_synopses_tuples_per_cpu_s_millions", per_cpu(bare) / 1e6, 6.0, &[bare]);
    target("file_w2_over_w1_wall", rate(w2) / rate(file1), 1.8, &[w2, file1]);
    // With the cores to itself, -w 2 at 1.8x the wall rate of -w 1 spends at most 2/1.8 as much
    // CPU per tuple: 0.9 of -w 1's tuples per CPU-second.
    target("file_w2_over_w1_per_cpu_s", per_cpu(w2) / per_cpu(file1), 0.9, &[w2, file1]);
    target("file_n2w1_over_w1_wall", rate(n2) / rate(file1), 1.7, &[n2, file1]);
    target("file_n2w1_over_w1_per_cpu_s", per_cpu(n2) / per_cpu(file1), 0.85, &[n2, file1]);
    // The machine's ceiling for the two ratios above: two jobs sharing nothing against one. When
    // it is below a target, no engine meets that target on this machine.
    if let Some(two) = index("two-file-w1-jobs") {
        let ceiling = rate(two) / rate(file1);
        target("machine_two_w1_jobs_over_one_wall", ceiling, 1.8, &[two, file1]);
        target("file_w2_over_w1_wall_of_machine_ceiling", rate(w2) / rate(file1) / ceiling, 0.9, &[w2, two, file1]);
        target("file_n2w1_over_w1_wall_of_machine_ceiling", rate(n2) / rate(file1) / ceiling, 0.85, &[n2, two, file1]);
    }
    if let Some(ais) = index("ais-csv-w1") {
        target("ais_csv_w1_rows_per_cpu_s_millions", per_cpu(ais) / 1e6, 2.0, &[ais]);
    }
    if let Some(k) = index("kafka-w2") {
        target("kafka_w2_over_file_w2_wall", rate(k) / rate(w2), 0.8, &[k, w2]);
        target("kafka_w2_over_file_w2_per_cpu_s", per_cpu(k) / per_cpu(w2), 0.8, &[k, w2]);
        if let Some(b) = medians[k].broker_cpu_seconds {
            let with_broker = medians[k].tuples / (medians[k].cpu_seconds + b);
            target("kafka_w2_with_broker_over_file_w2_per_cpu_s", with_broker / per_cpu(w2), 0.8, &[k, w2]);
        }
    }
    // How close the engine comes to the parser's pace (the title), measured in the same
    // run: no target of their own, so `target` and `met` are left empty.
    if let Some(parse) = index("parse-only") {
        let pace = [
            ("parse_only_tuples_per_cpu_s_millions", per_cpu(parse) / 1e6, vec![parse]),
            ("file_w1_over_parse_only_per_cpu_s", per_cpu(file1) / per_cpu(parse), vec![file1, parse]),
            ("file_no_synopses_over_parse_only_per_cpu_s", per_cpu(bare) / per_cpu(parse), vec![bare, parse]),
        ];
        for (name, value, is) in pace {
            let load = load_of(&is);
            let _ = writeln!(targets, "{name}\t{value:.3}\t\t\t{load:.2}");
            eprintln!("experiment: ingest {name} = {value:.3} (load {load:.2})");
        }
    }
    targets
}
