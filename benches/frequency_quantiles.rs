//! Lossy Counting, Sticky Sampling, GK and window quantiles against the best crates we know
//! (`datasketches::frequencies`, `quantiles::greenwald_khanna`), on the seeded Zipf(1.1) stream:
//! 1 M keys over a 1 M domain per iteration (the issue's 10 M-key update figures scale linearly;
//! bytes and error on 10 M keys come from `cargo run --release --example frequency_quantiles_report`).
//! Sticky Sampling's table, and so its query and merge times, grow with the stream until the
//! sampling thins it out: `frequency/issue15_10m` measures them on the issue's 10 M keys.
//!
//! Frequency parameters: support φ = 0.001; Lossy Counting at ε = φ/5 (the tightest count bound
//! whose table stays under 100 KB at its peak on 10 M keys; precision = recall = 1 above φN at
//! φ/10, φ/5 and φ/2 alike, since items are listed by their upper bound `f + Δ`) and at the
//! textbook ε = φ/10; Sticky Sampling at the reference [0.001, 1e-4, 0.001];
//! datasketches at max map size 8192 (ε = 3.5/8192 ≈ 4.3e-4, 213 KB).
//!
//! Run: `cargo bench --bench frequency_quantiles -- --warm-up-time 1 --measurement-time 3`

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, black_box, criterion_group, criterion_main};
use datasketches::frequencies::FrequentItemsSketch;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::gk_quantiles::GkQuantiles;
use saams::lossy_counting::LossyCounting;
use saams::sticky_sampling::{DEFAULT_SEED, StickySampling};
use saams::window_sketch_quantiles::WindowSketchQuantiles;
use saams::{Datum, Query, Synopsis};

const N: usize = 1_000_000;

fn keys() -> Vec<u64> {
    keys_n(N)
}

/// `n` seeded Zipf(1.1) keys over a 1 M domain (the first `N` are [`keys`]).
fn keys_n(n: usize) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(1);
    let z = Zipf::new(1_000_000.0, 1.1).expect("valid Zipf parameters");
    (0..n).map(|_| z.sample(&mut rng) as u64).collect()
}

fn lossy(eps: f64, xs: &[f64]) -> LossyCounting {
    let mut s = LossyCounting::with_epsilon(eps).expect("valid");
    for x in xs {
        s.update(Datum::Num(*x));
    }
    s
}

fn sticky(xs: &[f64]) -> StickySampling {
    let mut s = StickySampling::with_accuracy(0.001, 1e-4, 0.001, DEFAULT_SEED).expect("valid");
    for x in xs {
        s.update(Datum::Num(*x));
    }
    s
}

fn ds(ks: &[u64]) -> FrequentItemsSketch<u64> {
    let mut s = FrequentItemsSketch::<u64>::new(8192).expect("power of two");
    for k in ks {
        s.update(*k);
    }
    s
}

fn gk(xs: &[f64]) -> GkQuantiles {
    let mut s = GkQuantiles::with_epsilon(0.01).expect("valid");
    for x in xs {
        s.insert(*x);
    }
    s
}

fn window(xs: &[f64]) -> WindowSketchQuantiles {
    let mut s = WindowSketchQuantiles::with_accuracy(0.01, 40_000).expect("valid");
    for x in xs {
        s.insert(*x);
    }
    s
}

fn frequency(c: &mut Criterion) {
    let ks = keys();
    let xs: Vec<f64> = ks.iter().map(|k| *k as f64).collect();
    let (h1, h2) = xs.split_at(N / 2);
    let (k1, k2) = ks.split_at(N / 2);

    let mut g = c.benchmark_group("frequency/update");
    g.throughput(Throughput::Elements(N as u64)).sample_size(20);
    for eps in [2e-4, 1e-4] {
        g.bench_function(BenchmarkId::new("lossy_counting", eps), |b| b.iter(|| black_box(lossy(eps, &xs).tracked())));
    }
    g.bench_function("sticky_sampling", |b| b.iter(|| black_box(sticky(&xs).tracked())));
    g.bench_function("datasketches_frequencies_8192", |b| b.iter(|| black_box(ds(&ks).num_active_items())));
    g.finish();

    let mut g = c.benchmark_group("frequency/merge");
    let (la, lb) = (lossy(2e-4, h1), lossy(2e-4, h2));
    g.bench_function("lossy_counting", |b| {
        b.iter_batched(|| la.clone(), |mut a| a.merge(&lb).map(|()| a.tracked()), BatchSize::LargeInput)
    });
    let (sa, sb) = (sticky(h1), sticky(h2));
    g.bench_function("sticky_sampling", |b| {
        b.iter_batched(|| sa.clone(), |mut a| a.merge(&sb).map(|()| a.tracked()), BatchSize::LargeInput)
    });
    let (da, db) = (ds(k1), ds(k2));
    g.bench_function("datasketches_frequencies_8192", |b| {
        b.iter_batched(
            || da.clone(),
            |mut a| {
                a.merge(&db);
                a.num_active_items()
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();

    // Issue 15's Sticky Sampling row: (s, ε, δ) = (0.001, 2e-4, 0.01) beside Lossy Counting at
    // the same ε, FrequentItems at s = 0.001 and a merge of the two halves.
    let issue = |xs: &[f64]| {
        let mut s = StickySampling::with_accuracy(0.001, 2e-4, 0.01, DEFAULT_SEED).expect("valid");
        xs.iter().for_each(|x| s.update(Datum::Num(*x)));
        s
    };
    let (s, l) = (issue(&xs), lossy(2e-4, &xs));
    println!(
        "issue 15 memory: sticky_sampling(0.001, 2e-4, 0.01) {} B ({} tracked), lossy_counting(2e-4) {} B",
        s.size_bytes(),
        s.tracked(),
        l.size_bytes()
    );
    let q = Query::FrequentItems { support: 0.001 };
    let mut g = c.benchmark_group("frequency/issue15_query");
    g.bench_function("sticky_sampling", |b| b.iter(|| s.estimate(black_box(&q)).map(|e| e.upper)));
    g.bench_function("lossy_counting", |b| b.iter(|| l.estimate(black_box(&q)).map(|e| e.upper)));
    g.finish();
    let (sa, sb) = (issue(h1), issue(h2));
    let mut g = c.benchmark_group("frequency/issue15_merge");
    g.bench_function("sticky_sampling", |b| {
        b.iter_batched(|| sa.clone(), |mut a| a.merge(&sb).map(|()| a.tracked()), BatchSize::LargeInput)
    });
    g.bench_function("lossy_counting", |b| {
        b.iter_batched(|| la.clone(), |mut a| a.merge(&lb).map(|()| a.tracked()), BatchSize::LargeInput)
    });
    g.finish();

    // The same row on the issue's own stream, 10 M Zipf(1.1) keys (the table is larger and the
    // sampling sparser than on 1 M): the query on the whole stream, the merge of its two halves.
    let ks10 = keys_n(10 * N);
    let xs10: Vec<f64> = ks10.iter().map(|k| *k as f64).collect();
    let (x1, x2) = xs10.split_at(5 * N);
    let s10 = issue(&xs10);
    let (sa, sb) = (issue(x1), issue(x2));
    println!(
        "issue 15 memory, 10 M keys: sticky_sampling(0.001, 2e-4, 0.01) {} B ({} tracked); halves {} B, {} B",
        s10.size_bytes(),
        s10.tracked(),
        sa.size_bytes(),
        sb.size_bytes()
    );
    let mut g = c.benchmark_group("frequency/issue15_10m");
    g.bench_function("sticky_sampling/query", |b| b.iter(|| s10.estimate(black_box(&q)).map(|e| e.upper)));
    g.bench_function("sticky_sampling/merge", |b| {
        b.iter_batched(|| sa.clone(), |mut a| a.merge(&sb).map(|()| a.tracked()), BatchSize::LargeInput)
    });
    // Partials of unequal length sample at different rates: merging the first 4/5 (rate 1/128)
    // with the last 1/5 (rate 1/32) thins the latter with coin tosses before adding it.
    let (y1, y2) = xs10.split_at(8 * N);
    let (s4, s1) = (issue(y1), issue(y2));
    g.bench_function("sticky_sampling/merge_4_1", |b| {
        b.iter_batched(|| s4.clone(), |mut a| a.merge(&s1).map(|()| a.tracked()), BatchSize::LargeInput)
    });
    g.finish();
    drop((ks10, xs10, s10, sa, sb, s4, s1));

    let mut g = c.benchmark_group("frequency/codec");
    let l = lossy(2e-4, &xs);
    let lbytes = l.encode();
    g.bench_function("lossy_counting/encode", |b| b.iter(|| black_box(l.encode().len())));
    g.bench_function("lossy_counting/decode", |b| b.iter(|| saams::registry::decode(black_box(&lbytes)).is_ok()));
    let s = sticky(&xs);
    let sbytes = s.encode();
    g.bench_function("sticky_sampling/encode", |b| b.iter(|| black_box(s.encode().len())));
    g.bench_function("sticky_sampling/decode", |b| b.iter(|| saams::registry::decode(black_box(&sbytes)).is_ok()));
    let d = ds(&ks);
    let dbytes = d.serialize();
    g.bench_function("datasketches_frequencies_8192/encode", |b| b.iter(|| black_box(d.serialize().len())));
    g.bench_function("datasketches_frequencies_8192/decode", |b| {
        b.iter(|| FrequentItemsSketch::<u64>::deserialize(black_box(&dbytes)).is_ok())
    });
    g.finish();
}

fn quantile(c: &mut Criterion) {
    let ks = keys();
    let xs: Vec<f64> = ks.iter().map(|k| *k as f64).collect();
    let (h1, h2) = xs.split_at(N / 2);

    let mut g = c.benchmark_group("quantiles/update");
    g.throughput(Throughput::Elements(N as u64)).sample_size(10);
    g.bench_function("gk_quantiles", |b| b.iter(|| black_box(gk(&xs).tuples())));
    g.bench_function("quantiles_greenwald_khanna", |b| {
        b.iter(|| {
            let mut s = quantiles::greenwald_khanna::Stream::<u64>::new(0.01);
            for k in &ks {
                s.insert(*k);
            }
            black_box(s.s())
        })
    });
    g.bench_function("window_sketch_quantiles", |b| b.iter(|| black_box(window(&xs).stored_values())));
    g.finish();

    let mut g = c.benchmark_group("quantiles/merge");
    let (ga, gb) = (gk(h1), gk(h2));
    g.bench_function("gk_quantiles", |b| {
        b.iter_batched(|| ga.clone(), |mut a| a.merge(&gb).map(|()| a.tuples()), BatchSize::SmallInput)
    });
    let (wa, wb) = (window(&h1[h1.len() - 30_000..]), window(&h2[..25_000]));
    g.bench_function("window_sketch_quantiles", |b| {
        b.iter_batched(|| wa.clone(), |mut a| a.merge(&wb).map(|()| a.stored_values()), BatchSize::SmallInput)
    });
    g.finish();

    let mut g = c.benchmark_group("quantiles/codec");
    let q = gk(&xs);
    let qbytes = q.encode();
    g.bench_function("gk_quantiles/encode", |b| b.iter(|| black_box(q.encode().len())));
    g.bench_function("gk_quantiles/decode", |b| b.iter(|| saams::registry::decode(black_box(&qbytes)).is_ok()));
    let w = window(&xs);
    let wbytes = w.encode();
    g.bench_function("window_sketch_quantiles/encode", |b| b.iter(|| black_box(w.encode().len())));
    g.bench_function("window_sketch_quantiles/decode", |b| {
        b.iter(|| saams::registry::decode(black_box(&wbytes)).is_ok())
    });
    g.finish();
}

criterion_group!(benches, frequency, quantile);
criterion_main!(benches);
