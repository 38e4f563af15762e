//! Benches for the order-sensitive series kinds (DFT, LSH) and the DataSketches wrappers (KLL,
//! CPC, FrequentItems), each wrapper measured beside the raw `datasketches` type in the same
//! group so the wrapper's overhead reads as a ratio from one run.
//!
//! Streams: 1 M keys of a seeded Zipf(1.1) over a 1 M domain per iteration batch (the issue's
//! 10 M keys scaled down to keep the bench short), SPY tick prices for the series kinds.
//! Wrapper parameters are issue 15's: KLL k = 268, CPC lgK = 12, FrequentItems 2^13 map.
//! `saams` feeds the wrapper through `update_batch` (what the update operator calls, in batches
//! of [`BATCH`]); `saams_per_item` through one `update` call per item on a `dyn Synopsis`.
//!
//! `cargo bench --bench series_and_wrapped -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use datasketches::cpc::{CpcSketch, CpcUnion};
use datasketches::frequencies::FrequentItemsSketch;
use datasketches::kll::{KllFloat, KllSketch};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::hash::{SplitMix64, canonical_bits};
use saams::{Cpc, Datum, Dft, FrequentItems, Kll, Lsh, PairQuery, Query, Synopsis};

const N: usize = 1_000_000;
/// Items per `update_batch` call.
const BATCH: usize = 1024;
const KLL_K: u16 = 268;
const CPC_LG_K: u8 = 12;
const FI_LG_MAP: u8 = 13;

fn zipf(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let z = Zipf::<f64>::new(1_000_000.0, 1.1).expect("valid Zipf");
    (0..n).map(|_| z.sample(&mut rng).floor()).collect()
}

fn walk(n: usize, seed: u64) -> Vec<f64> {
    let mut r = SplitMix64::new(seed);
    let mut x = 100.0;
    (0..n)
        .map(|_| {
            x += 0.01 * r.next_gaussian();
            x
        })
        .collect()
}

fn feed(s: &mut dyn Synopsis, data: &[f64]) {
    for x in data {
        s.update(Datum::Num(*x));
    }
}

fn feed_batches(s: &mut dyn Synopsis, data: &[Datum<'_>]) {
    for chunk in data.chunks(BATCH) {
        s.update_batch(chunk);
    }
}

fn datums(data: &[f64]) -> Vec<Datum<'static>> {
    data.iter().map(|x| Datum::Num(*x)).collect()
}

fn series(c: &mut Criterion) {
    let data = walk(N, 1);
    let mut g = c.benchmark_group("dft");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("update_1M_points_[1,500,2000,8]", |b| {
        b.iter(|| {
            let mut s = Dft::new(1.0, 500, 2000, 8).unwrap();
            feed(&mut s, &data);
            black_box(s.points())
        })
    });
    g.bench_function("update_at_1M_ticks_4_per_interval", |b| {
        b.iter(|| {
            let mut s = Dft::new(1.0, 500, 2000, 8).unwrap();
            for (i, x) in data.iter().enumerate() {
                s.update_at(Datum::Num(*x), i as i64 * 250);
            }
            black_box(s.points())
        })
    });
    g.finish();

    let (mut a, mut b2) = (Dft::new(1.0, 500, 2000, 8).unwrap(), Dft::new(1.0, 500, 2000, 8).unwrap());
    feed(&mut a, &data[..100_000]);
    feed(&mut b2, &walk(100_000, 2));
    let mut g = c.benchmark_group("dft_ops");
    g.bench_function("merge_full_windows", |b| {
        b.iter_batched(|| a.clone(), |mut x| x.merge(&b2).map(|_| x.points()), BatchSize::SmallInput)
    });
    g.bench_function("correlation", |b| b.iter(|| a.estimate_pair(&b2, &PairQuery::Correlation)));
    g.bench_function("encode", |b| b.iter(|| a.encode()));
    let bytes = a.encode();
    g.bench_function("decode", |b| b.iter(|| saams::registry::decode(&bytes).map(|s| s.kind())));
    g.finish();

    let mut g = c.benchmark_group("lsh");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("update_1M_[100,500,20]", |b| {
        b.iter(|| {
            let mut s = Lsh::new(100, 500, 20, 1).unwrap();
            feed(&mut s, &data);
            black_box(s.len())
        })
    });
    g.finish();
    let mut s = Lsh::new(100, 500, 20, 1).unwrap();
    feed(&mut s, &data[..1000]);
    let mut t = Lsh::new(100, 500, 20, 1).unwrap();
    feed(&mut t, &data[1000..2000]);
    let mut g = c.benchmark_group("lsh_ops");
    g.bench_function("signature_[100,500,20]", |b| b.iter(|| s.signature()));
    g.bench_function("band_keys", |b| b.iter(|| s.band_keys()));
    g.bench_function("similarity", |b| b.iter(|| s.estimate_pair(&t, &PairQuery::Similarity)));
    g.bench_function("merge", |b| {
        b.iter_batched(|| s.clone(), |mut x| x.merge(&t).map(|_| x.len()), BatchSize::SmallInput)
    });
    g.bench_function("encode", |b| b.iter(|| s.encode()));
    g.finish();
}

fn kll(c: &mut Criterion) {
    let data = zipf(N, 42);
    let other = zipf(N, 43);
    let items = datums(&data);
    let mut g = c.benchmark_group("kll_update_1M_zipf");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        b.iter(|| {
            let mut s = Kll::new(u64::from(KLL_K)).unwrap();
            feed_batches(&mut s, &items);
            black_box(s.n())
        })
    });
    g.bench_function("saams_per_item", |b| {
        b.iter(|| {
            let mut s = Kll::new(u64::from(KLL_K)).unwrap();
            feed(&mut s, &data);
            black_box(s.n())
        })
    });
    g.bench_function("datasketches_raw", |b| {
        b.iter(|| {
            let mut s = KllSketch::<KllFloat<f64>>::new(KLL_K).unwrap();
            for x in &data {
                s.update(KllFloat::<f64>::new(*x).unwrap());
            }
            black_box(s.n())
        })
    });
    g.finish();

    let (mut a, mut b2) = (Kll::new(u64::from(KLL_K)).unwrap(), Kll::new(u64::from(KLL_K)).unwrap());
    feed(&mut a, &data);
    feed(&mut b2, &other);
    let (ra, rb) = (a.inner().clone(), b2.inner().clone());
    let mut g = c.benchmark_group("kll_merge");
    g.bench_function("saams", |b| {
        b.iter_batched(|| a.clone(), |mut x| x.merge(&b2).map(|_| x.n()), BatchSize::SmallInput)
    });
    g.bench_function("datasketches_raw", |b| {
        b.iter_batched(|| ra.clone(), |mut x| x.merge(&rb).map(|_| x.n()), BatchSize::SmallInput)
    });
    g.finish();
    let mut g = c.benchmark_group("kll_encode");
    g.bench_function("saams", |b| b.iter(|| a.encode()));
    g.bench_function("datasketches_raw", |b| b.iter(|| ra.serialize()));
    g.finish();
    let (ours, raw) = (a.encode(), ra.serialize());
    let mut g = c.benchmark_group("kll_decode");
    g.bench_function("saams", |b| b.iter(|| saams::registry::decode(&ours).map(|s| s.kind())));
    g.bench_function("datasketches_raw", |b| b.iter(|| KllSketch::<KllFloat<f64>>::deserialize(&raw).map(|s| s.n())));
    g.finish();
    let mut g = c.benchmark_group("kll_quantile");
    g.bench_function("saams", |b| b.iter(|| a.estimate(&Query::Quantile(0.5))));
    g.finish();
}

fn cpc(c: &mut Criterion) {
    let data = zipf(N, 42);
    let other = zipf(N, 43);
    let items = datums(&data);
    let mut g = c.benchmark_group("cpc_update_1M_zipf");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        b.iter(|| {
            let mut s = Cpc::new(u64::from(CPC_LG_K)).unwrap();
            feed_batches(&mut s, &items);
            black_box(s.estimate(&Query::Distinct).map(|e| e.lower))
        })
    });
    g.bench_function("saams_per_item", |b| {
        b.iter(|| {
            let mut s = Cpc::new(u64::from(CPC_LG_K)).unwrap();
            feed(&mut s, &data);
            black_box(s.estimate(&Query::Distinct).map(|e| e.lower))
        })
    });
    g.bench_function("datasketches_raw", |b| {
        b.iter(|| {
            let mut s = CpcSketch::new(CPC_LG_K).unwrap();
            for x in &data {
                s.update(canonical_bits(*x));
            }
            black_box(s.estimate())
        })
    });
    g.finish();

    let (mut a, mut b2) = (Cpc::new(u64::from(CPC_LG_K)).unwrap(), Cpc::new(u64::from(CPC_LG_K)).unwrap());
    feed(&mut a, &data);
    feed(&mut b2, &other);
    let (ra, rb) = (a.inner().clone(), b2.inner().clone());
    let mut g = c.benchmark_group("cpc_merge");
    g.bench_function("saams", |b| {
        b.iter_batched(|| a.clone(), |mut x| x.merge(&b2).map(|_| x.lg_k()), BatchSize::SmallInput)
    });
    g.bench_function("datasketches_raw_union", |b| {
        b.iter(|| {
            let mut u = CpcUnion::new(CPC_LG_K).unwrap();
            u.update(&ra).unwrap();
            u.update(&rb).unwrap();
            u.to_sketch()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("cpc_encode");
    g.bench_function("saams", |b| b.iter(|| a.encode()));
    g.bench_function("datasketches_raw", |b| b.iter(|| ra.serialize()));
    g.finish();
    let (ours, raw) = (a.encode(), ra.serialize());
    let mut g = c.benchmark_group("cpc_decode");
    g.bench_function("saams", |b| b.iter(|| saams::registry::decode(&ours).map(|s| s.kind())));
    g.bench_function("datasketches_raw", |b| b.iter(|| CpcSketch::deserialize(&raw).map(|s| s.lg_k())));
    g.finish();
}

fn frequent_items(c: &mut Criterion) {
    let data = zipf(N, 42);
    let other = zipf(N, 43);
    let items = datums(&data);
    let mut g = c.benchmark_group("frequent_items_update_1M_zipf");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        b.iter(|| {
            let mut s = FrequentItems::new(u64::from(FI_LG_MAP)).unwrap();
            feed_batches(&mut s, &items);
            black_box(s.total())
        })
    });
    g.bench_function("saams_per_item", |b| {
        b.iter(|| {
            let mut s = FrequentItems::new(u64::from(FI_LG_MAP)).unwrap();
            feed(&mut s, &data);
            black_box(s.total())
        })
    });
    g.bench_function("datasketches_raw_u64", |b| {
        b.iter(|| {
            let mut s = FrequentItemsSketch::<u64>::new(1 << FI_LG_MAP).unwrap();
            for x in &data {
                s.update(canonical_bits(*x));
            }
            black_box(s.total_weight())
        })
    });
    g.finish();

    let (mut a, mut b2) =
        (FrequentItems::new(u64::from(FI_LG_MAP)).unwrap(), FrequentItems::new(u64::from(FI_LG_MAP)).unwrap());
    feed(&mut a, &data);
    feed(&mut b2, &other);
    let (mut ra, mut rb) = (
        FrequentItemsSketch::<u64>::new(1 << FI_LG_MAP).unwrap(),
        FrequentItemsSketch::<u64>::new(1 << FI_LG_MAP).unwrap(),
    );
    data.iter().for_each(|x| ra.update(canonical_bits(*x)));
    other.iter().for_each(|x| rb.update(canonical_bits(*x)));
    println!(
        "frequent_items memory (2^{FI_LG_MAP} map, after 1M zipf): saams size_bytes {} B, datasketches_raw_u64 estimated_size {} B",
        a.size_bytes(),
        ra.estimated_size()
    );
    let mut g = c.benchmark_group("frequent_items_merge");
    g.bench_function("saams", |b| {
        b.iter_batched(|| a.clone(), |mut x| x.merge(&b2).map(|_| x.total()), BatchSize::SmallInput)
    });
    g.bench_function("datasketches_raw_u64", |b| {
        b.iter_batched(
            || ra.clone(),
            |mut x| {
                x.merge(&rb);
                x.total_weight()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
    let mut g = c.benchmark_group("frequent_items_encode");
    g.bench_function("saams", |b| b.iter(|| a.encode()));
    g.bench_function("datasketches_raw_u64", |b| b.iter(|| ra.serialize()));
    g.finish();
    let (ours, raw) = (a.encode(), ra.serialize());
    let mut g = c.benchmark_group("frequent_items_decode");
    g.bench_function("saams", |b| b.iter(|| saams::registry::decode(&ours).map(|s| s.kind())));
    g.bench_function("datasketches_raw_u64", |b| {
        b.iter(|| FrequentItemsSketch::<u64>::deserialize(&raw).map(|s| s.total_weight()))
    });
    g.finish();
}

criterion_group!(benches, series, kll, cpc, frequent_items);
criterion_main!(benches);
