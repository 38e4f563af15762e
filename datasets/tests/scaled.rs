//! Scaled streams from the real files: distinct ids, constant per-replica shift and perturbation,
//! per-stream order kept, determinism by seed.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use saams::api::Tuple;
use saams_datasets::read_path;
use saams_datasets::scaled::{ScaleSpec, Scaler, collect_bases};

fn datasets() -> PathBuf {
    PathBuf::from(env!("SAAMS_DATASETS_DIR"))
}

fn minute_bars() -> Vec<Tuple> {
    read_path(&datasets().join("stocks/minute"), None).unwrap().map(|t| t.unwrap()).collect()
}

fn num(t: &Tuple, f: &str) -> f64 {
    t.field(f).and_then(|d| d.as_f64()).unwrap()
}

fn scale(tuples: &[Tuple], spec: &ScaleSpec) -> Vec<Tuple> {
    let bases = collect_bases(tuples.iter().cloned().map(Ok::<_, ()>));
    let scaler = Scaler::new(spec, bases).unwrap();
    scaler.scale(tuples.iter().cloned().map(Ok::<_, ()>)).map(|t| t.unwrap()).collect()
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn sixty_streams_from_six_instruments() {
    let base = minute_bars();
    let spec = ScaleSpec::new(60);
    let out = scale(&base, &spec);
    assert_eq!(out.len(), base.len() * 10);
    let ids: HashSet<(&str, &str)> = out.iter().map(|t| (t.dataset_key.as_str(), t.stream_id.as_str())).collect();
    assert_eq!(ids.len(), 60);

    // Group replicas with their base tuple: out is base-major, 10 copies per base tuple.
    let mut shift: HashMap<String, i64> = HashMap::new();
    let mut ratio: HashMap<String, (f64, f64)> = HashMap::new();
    for (b, copies) in base.iter().zip(out.chunks(10)) {
        assert_eq!(&copies[0], b, "copy 0 is the real tuple");
        for c in &copies[1..] {
            assert!(c.stream_id.starts_with(&format!("{}_r", b.stream_id)));
            assert_eq!(c.dataset_key, b.dataset_key);
            assert_eq!(num(c, "volume"), num(b, "volume"));
            let d = c.time_ms.unwrap() - b.time_ms.unwrap();
            assert!((0..60_000).contains(&d));
            assert_eq!(*shift.entry(c.stream_id.clone()).or_insert(d), d, "constant shift for {}", c.stream_id);
            let r = num(c, "price") / num(b, "price");
            assert!((0.99 - 1e-3..=1.01 + 1e-3).contains(&r), "{r}");
            let e = ratio.entry(c.stream_id.clone()).or_insert((r, r));
            *e = (e.0.min(r), e.1.max(r));
        }
    }
    // The factor is constant per replica up to the rounding of the price.
    assert!(ratio.values().all(|(lo, hi)| hi - lo < 2e-4), "{ratio:?}");
    // Each replica stream is in event-time order, as its base is.
    let mut last: HashMap<&str, i64> = HashMap::new();
    for t in &out {
        let prev = last.insert(t.stream_id.as_str(), t.time_ms.unwrap());
        assert!(prev.is_none_or(|p| p <= t.time_ms.unwrap()), "{}", t.stream_id);
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn replicas_are_deterministic_by_seed() {
    let base: Vec<Tuple> = minute_bars().into_iter().step_by(7).collect();
    let spec = ScaleSpec::new(24);
    let a = scale(&base, &spec);
    assert_eq!(a, scale(&base, &spec));
    let b = scale(&base, &ScaleSpec { seed: 99, ..spec });
    assert_eq!(a.len(), b.len());
    assert_ne!(a, b);
    // Copies 0 (the real streams) do not depend on the seed.
    let real = |v: &[Tuple]| v.iter().filter(|t| !t.stream_id.contains("_r")).cloned().collect::<Vec<_>>();
    assert_eq!(real(&a), real(&b));
    // Reading order does not matter: each base tuple gets the same replicas.
    let reversed: Vec<Tuple> = base.iter().rev().cloned().collect();
    let mut c = scale(&reversed, &spec);
    let mut a_sorted = a.clone();
    let key = |t: &Tuple| (t.stream_id.clone(), t.time_ms);
    c.sort_by_key(key);
    a_sorted.sort_by_key(key);
    assert_eq!(a_sorted, c);
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn five_hundred_vessels_out_of_the_ais_sample() {
    let ais: Vec<Tuple> = read_path(&datasets().join("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv"), None)
        .unwrap()
        .map(|t| t.unwrap())
        .collect();
    let bases = collect_bases(ais.iter().cloned().map(Ok::<_, ()>));
    assert_eq!(bases.len(), 8_469);
    let scaler = Scaler::new(&ScaleSpec::new(500), bases.clone()).unwrap();
    let kept: HashSet<&str> = bases[..500].iter().map(|(_, s)| s.as_str()).collect();
    let mut out = Vec::new();
    for t in &ais {
        scaler.replicate(t, &mut out);
    }
    assert_eq!(out.len(), ais.iter().filter(|t| kept.contains(t.stream_id.as_str())).count());
    let ids: HashSet<&str> = out.iter().map(|t| t.stream_id.as_str()).collect();
    assert_eq!(ids, kept);

    // 20 000 streams: every vessel twice or thrice; replica positions stay close to the real ones.
    let scaler = Scaler::new(&ScaleSpec::new(20_000), bases).unwrap();
    assert_eq!(scaler.streams().iter().collect::<HashSet<_>>().len(), 20_000);
    let mut out = Vec::new();
    scaler.replicate(&ais[0], &mut out);
    assert_eq!(out.len(), 3);
    for r in &out[1..] {
        assert!((num(r, "lat") - num(&ais[0], "lat")).abs() <= 0.05 + 1e-9);
        assert_eq!(r.field("shiptype"), ais[0].field("shiptype"));
    }
}

#[test]
fn bad_scale_specs_are_refused() {
    let bases = vec![("D".to_string(), "S".to_string())];
    assert!(Scaler::new(&ScaleSpec::new(0), bases.clone()).is_err());
    assert!(Scaler::new(&ScaleSpec { perturbation: 0.9, ..ScaleSpec::new(2) }, bases.clone()).is_err());
    assert!(Scaler::new(&ScaleSpec { max_shift_ms: -1, ..ScaleSpec::new(2) }, bases).is_err());
    assert!(Scaler::new(&ScaleSpec::new(2), Vec::new()).unwrap_err().to_string().contains("no base"));
}
