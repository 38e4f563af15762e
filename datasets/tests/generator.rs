//! The seeded generator: determinism by seed, distinct names, monotone times, plausible values.

use std::collections::HashSet;

use saams_datasets::generator::{AIS_AREAS, AisStream, GeneratorKind, GeneratorSpec, START_MS, StockStream};

#[test]
fn same_seed_same_ticks_other_seed_other_ticks() {
    let spec = GeneratorSpec::parse("stocks:6:500:42").unwrap();
    for i in 0..6 {
        let a: Vec<_> = StockStream::new(&spec, i).collect();
        let b: Vec<_> = StockStream::new(&spec, i).collect();
        assert_eq!(a, b);
        let c: Vec<_> = StockStream::new(&spec.with_seed(43), i).collect();
        assert_ne!(a, c, "stream {i} must change with the seed");
    }
    let spec = GeneratorSpec::parse("ais:6:500:42").unwrap();
    for i in 0..6 {
        let a: Vec<_> = AisStream::new(&spec, i).collect();
        assert_eq!(a, AisStream::new(&spec, i).collect::<Vec<_>>());
        assert_ne!(a, AisStream::new(&spec.with_seed(43), i).collect::<Vec<_>>());
    }
}

#[test]
fn a_stream_does_not_depend_on_the_number_of_streams_or_workers() {
    let small = GeneratorSpec::parse("stocks:10:300").unwrap();
    let large = GeneratorSpec::parse("stocks:500:300").unwrap();
    for i in 0..10 {
        assert_eq!(StockStream::new(&small, i).collect::<Vec<_>>(), StockStream::new(&large, i).collect::<Vec<_>>());
        assert_eq!(small.stream_id(i), large.stream_id(i));
    }
    // Workers partition the streams exactly.
    let mut seen: Vec<usize> = (0..3).flat_map(|w| large.streams_for_worker(w, 3)).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..500).collect::<Vec<_>>());
}

#[test]
fn names_are_distinct_and_stable() {
    let spec = GeneratorSpec::parse("stocks:5000").unwrap();
    let ids: HashSet<String> = (0..spec.streams).map(|i| spec.stream_id(i)).collect();
    assert_eq!(ids.len(), 5000);
    let first: Vec<_> = (0..6).map(|i| (spec.dataset_key(i), spec.stream_id(i))).collect();
    let expect = [("Forex", "EURTRY"), ("Equity", "SPY"), ("Crypto", "BTCUSD"), ("Forex", "XAUUSD"), ("Equity", "IBM")];
    for (got, want) in first.iter().zip(expect) {
        assert_eq!((got.0, got.1.as_str()), want);
    }
    // Every stocks:100 stream has a plain symbol, no suffix.
    assert!((0..100).all(|i| !spec.stream_id(i).contains('_')));

    let ais = GeneratorSpec::parse("ais:100000:1").unwrap();
    let ids: HashSet<String> = (0..ais.streams).map(|i| ais.stream_id(i)).collect();
    assert_eq!(ids.len(), 100_000);
    assert!(ids.iter().all(|id| id.len() == 9 && id.bytes().all(|b| b.is_ascii_digit())));
    assert!(GeneratorSpec::parse("ais:1000001").is_err());
}

#[test]
fn times_increase_from_the_start_date() {
    let spec = GeneratorSpec::parse("stocks:9:2000").unwrap();
    for i in 0..9 {
        let t: Vec<i64> = StockStream::new(&spec, i).map(|t| t.time_ms).collect();
        assert!(t[0] >= START_MS);
        assert!(t.windows(2).all(|w| w[0] < w[1]), "stream {i}");
    }
    let spec = GeneratorSpec::parse("ais:12:2000").unwrap();
    for i in 0..12 {
        let t: Vec<i64> = AisStream::new(&spec, i).map(|r| r.time_ms).collect();
        assert!(t[0] >= START_MS && t.iter().all(|t| t % 1000 == 0));
        assert!(t.windows(2).all(|w| w[0] < w[1]), "vessel {i}");
    }
}

#[test]
fn stock_values_are_plausible() {
    let spec = GeneratorSpec::parse("stocks:30:5000").unwrap();
    let mut volumes = Vec::new();
    for i in 0..30 {
        let ticks: Vec<_> = StockStream::new(&spec, i).collect();
        assert_eq!(ticks.len(), 5000);
        let p0 = ticks[0].price;
        for w in ticks.windows(2) {
            let r = w[1].price / w[0].price;
            assert!(r > 0.98 && r < 1.02, "stream {i}: jump {} -> {}", w[0].price, w[1].price);
        }
        let last = ticks[ticks.len() - 1].price;
        assert!(last / p0 > 0.5 && last / p0 < 2.0, "stream {i}: {p0} -> {last}");
        // Prices are rounded to a tick, so values repeat (as real prices do).
        let distinct: HashSet<u64> = ticks.iter().map(|t| t.price.to_bits()).collect();
        assert!(distinct.len() < ticks.len(), "stream {i}");
        volumes.extend(ticks.iter().map(|t| t.volume));
    }
    assert!(volumes.iter().all(|&v| v >= 1));
    // Heavy tail: the largest volume is far above the median.
    volumes.sort_unstable();
    let (median, max) = (volumes[volumes.len() / 2], volumes[volumes.len() - 1]);
    assert!(max > 50 * median, "median {median}, max {max}");
}

#[test]
fn ais_values_are_plausible() {
    let spec = GeneratorSpec::parse("ais:60:1000").unwrap();
    let mut moving = 0;
    for i in 0..60 {
        let area = AIS_AREAS[i % AIS_AREAS.len()];
        let r: Vec<_> = AisStream::new(&spec, i).collect();
        for p in &r {
            assert!((0.0..360.0).contains(&p.course) && (0.0..360.0).contains(&p.heading));
            assert!((0.0..40.0).contains(&p.speed));
            // Vessels stay near their area (they turn back when they leave it).
            assert!(p.lat > area.lat_min - 1.0 && p.lat < area.lat_max + 1.0, "vessel {i} lat {}", p.lat);
            assert!(p.lon > area.lon_min - 1.5 && p.lon < area.lon_max + 1.5, "vessel {i} lon {}", p.lon);
            assert_eq!(p.shiptype, r[0].shiptype);
        }
        // Smooth tracks: speed and position change little between consecutive reports.
        for w in r.windows(2) {
            let dt_h = (w[1].time_ms - w[0].time_ms) as f64 / 3_600_000.0;
            assert!((w[1].speed - w[0].speed).abs() < 3.0);
            let dist_nm =
                ((w[1].lat - w[0].lat).powi(2) + ((w[1].lon - w[0].lon) * w[0].lat.to_radians().cos()).powi(2)).sqrt()
                    * 60.0;
            assert!(dist_nm <= 40.0 * dt_h + 0.01, "vessel {i} jumped {dist_nm} nm in {dt_h} h");
        }
        if r.iter().map(|p| p.speed).sum::<f64>() / r.len() as f64 > 3.0 {
            moving += 1;
        }
    }
    assert!(moving > 20 && moving < 60, "{moving} of 60 vessels under way");
}

#[test]
fn tuples_carry_the_reference_fields() {
    let spec = GeneratorSpec::parse("stocks:2:3").unwrap();
    let mut s = StockStream::new(&spec, 1);
    let tick = s.next().unwrap();
    let t = s.to_tuple(&tick);
    assert_eq!((t.stream_id.as_str(), t.dataset_key.as_str(), t.time_ms), ("SPY", "Equity", Some(tick.time_ms)));
    let back = saams::api::Tuple::from_json(&t.to_json()).unwrap();
    assert_eq!(back, t);

    let spec = GeneratorSpec::parse("ais:2:3").unwrap();
    let mut s = AisStream::new(&spec, 1);
    let r = s.next().unwrap();
    let t = s.to_tuple(&r);
    let names: Vec<&str> = t.fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["lat", "lon", "speed", "course", "heading", "shiptype"]);
    // JSON objects do not keep the field order: compare the fields as sets.
    let mut back = saams::api::Tuple::from_json(&t.to_json()).unwrap();
    let mut t = t;
    back.fields.sort_by(|a, b| a.0.cmp(&b.0));
    t.fields.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(back, t);
}

#[test]
fn malformed_specs_are_refused_with_a_reason() {
    for (bad, needle) in [
        ("", "unknown kind"),
        ("stocks", "missing the number"),
        ("stocks:0", "at least 1"),
        ("stocks:-3", "non-negative integer"),
        ("stocks:10:x", "tuples per stream"),
        ("stocks:abc", "number of streams"),
        ("stocks:3:abc", "`unbounded`"),
        ("trades:10", "unknown kind"),
        ("ais:1:2:3:4", "too many"),
    ] {
        let err = GeneratorSpec::parse(bad).unwrap_err().to_string();
        assert!(err.contains(needle), "{bad:?}: {err}");
    }
    let s = GeneratorSpec::parse("AIS:8_000:1_000").unwrap();
    assert_eq!((s.kind, s.streams, s.tuples_per_stream), (GeneratorKind::Ais, 8000, Some(1000)));
    assert_eq!(GeneratorSpec::parse(&s.to_string()).unwrap(), s);
    let unbounded = GeneratorSpec::parse("stocks:3").unwrap();
    assert_eq!(unbounded.to_string(), "stocks:3:unbounded:12345");
    assert_eq!(GeneratorSpec::parse(&unbounded.to_string()).unwrap(), unbounded);
}

#[test]
fn an_unbounded_stream_starts_with_the_bounded_streams_tuples_and_goes_on() {
    let bounded = GeneratorSpec::parse("stocks:4:300:9").unwrap();
    let unbounded = GeneratorSpec::parse("stocks:4:unbounded:9").unwrap();
    for i in 0..4 {
        let a: Vec<_> = StockStream::new(&bounded, i).collect();
        let b: Vec<_> = StockStream::new(&unbounded, i).take(900).collect();
        assert_eq!((a.len(), b.len()), (300, 900), "stream {i}: an unbounded stream goes on past T");
        assert_eq!(a[..], b[..300], "stream {i}");
    }
    let bounded = GeneratorSpec::parse("ais:4:300:9").unwrap();
    let unbounded = GeneratorSpec::parse("ais:4:unbounded:9").unwrap();
    for i in 0..4 {
        let a: Vec<_> = AisStream::new(&bounded, i).collect();
        let b: Vec<_> = AisStream::new(&unbounded, i).take(900).collect();
        assert_eq!((a.len(), b.len()), (300, 900), "vessel {i}");
        assert_eq!(a[..], b[..300], "vessel {i}");
    }
    assert_eq!(unbounded.interleaved(1, 2).take(5000).count(), 5000);
    let mut s = StockStream::new(&GeneratorSpec::parse("stocks:1").unwrap(), 0);
    assert_eq!((s.remaining(), s.size_hint().1), (None, None));
    assert_eq!(s.by_ref().take(100_000).count(), 100_000);
    assert_eq!(AisStream::new(&GeneratorSpec::parse("ais:1").unwrap(), 0).remaining(), None);
}
