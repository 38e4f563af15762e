//! Linear sketches against the best crates we know, on the same seeded streams, one criterion
//! group per operation so every figure is a ratio from one run.
//!
//! Streams: 1 M keys per iteration (Zipf(1.1) over a 1 M domain for CountMin, HyperLogLog and
//! AMS; 1 M distinct keys for the Bloom filter at its design capacity). Throughput is in
//! elements, so criterion's time per iteration / 1 M is the ns per update.
//!
//! Run: `cargo bench --bench linear_sketches -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::ams::Ams;
use saams::bloom_filter::BloomFilter;
use saams::count_min::CountMin;
use saams::hyper_log_log::HyperLogLog;
use saams::{Datum, Query, Synopsis, Value};

const N: usize = 1_000_000;

fn zipf_keys(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(1_000_000.0, 1.1).expect("valid Zipf parameters");
    (0..n).map(|_| zipf.sample(&mut rng) as u64).collect()
}

fn datums(keys: &[u64]) -> Vec<Datum<'static>> {
    keys.iter().map(|k| Datum::Num(*k as f64)).collect()
}

fn count_min(c: &mut Criterion) {
    let keys = zipf_keys(N, 1);
    let items = datums(&keys);
    let (eps, confidence) = (0.002, 0.99);
    let buckets = datasketches::countmin::CountMinSketch::<u64>::suggest_num_buckets(eps).unwrap();
    let hashes = datasketches::countmin::CountMinSketch::<u64>::suggest_num_hashes(confidence).unwrap();

    let mut g = c.benchmark_group("count_min_update_1M");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        let mut cm = CountMin::with_accuracy(eps, confidence, 12345).unwrap();
        b.iter(|| cm.update_batch(black_box(&items)))
    });
    g.bench_function("datasketches", |b| {
        let mut cm = datasketches::countmin::CountMinSketch::<u64>::with_seed(hashes, buckets, 12345).unwrap();
        b.iter(|| {
            for k in black_box(&keys) {
                cm.update(k);
            }
        })
    });
    g.finish();

    let mut ours = (
        CountMin::with_accuracy(eps, confidence, 12345).unwrap(),
        CountMin::with_accuracy(eps, confidence, 12345).unwrap(),
    );
    ours.0.update_batch(&items[..N / 2]);
    ours.1.update_batch(&items[N / 2..]);
    let mut theirs = (
        datasketches::countmin::CountMinSketch::<u64>::with_seed(hashes, buckets, 12345).unwrap(),
        datasketches::countmin::CountMinSketch::<u64>::with_seed(hashes, buckets, 12345).unwrap(),
    );
    for k in &keys[..N / 2] {
        theirs.0.update(k);
    }
    for k in &keys[N / 2..] {
        theirs.1.update(k);
    }
    let mut g = c.benchmark_group("count_min_merge");
    g.bench_function("saams", |b| {
        b.iter_batched_ref(|| ours.0.clone(), |cm| cm.merge(black_box(&ours.1)).unwrap(), BatchSize::SmallInput)
    });
    g.bench_function("datasketches", |b| {
        b.iter_batched_ref(|| theirs.0.clone(), |cm| cm.merge(black_box(&theirs.1)).unwrap(), BatchSize::SmallInput)
    });
    g.finish();

    let mut g = c.benchmark_group("count_min_codec");
    let bytes = ours.0.encode();
    g.bench_function("saams_encode", |b| b.iter(|| black_box(&ours.0).encode()));
    g.bench_function("saams_decode", |b| b.iter(|| saams::registry::decode(black_box(&bytes)).unwrap()));
    g.bench_function("datasketches_serialize", |b| b.iter(|| black_box(&theirs.0).serialize()));
    g.finish();

    let mut g = c.benchmark_group("count_min_query");
    g.bench_function("saams", |b| b.iter(|| ours.0.count(black_box(Datum::Num(17.0)))));
    g.bench_function("saams_with_bound", |b| {
        b.iter(|| ours.0.estimate(black_box(&Query::Count(Value::Num(17.0)))).unwrap())
    });
    g.bench_function("datasketches", |b| b.iter(|| theirs.0.estimate(black_box(17u64))));
    g.finish();
}

fn hyper_log_log(c: &mut Criterion) {
    let keys = zipf_keys(N, 2);
    let items = datums(&keys);
    let mut g = c.benchmark_group("hll_p12_update_1M");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        let mut h = HyperLogLog::with_rsd(0.02).unwrap();
        b.iter(|| h.update_batch(black_box(&items)))
    });
    g.bench_function("streaming_algorithms", |b| {
        let mut h = streaming_algorithms::HyperLogLog::<u64>::with_p(12);
        b.iter(|| {
            for k in black_box(&keys) {
                h.push(k);
            }
        })
    });
    g.finish();

    let mut ours = (HyperLogLog::with_rsd(0.02).unwrap(), HyperLogLog::with_rsd(0.02).unwrap());
    ours.0.update_batch(&items[..N / 2]);
    ours.1.update_batch(&items[N / 2..]);
    let mut theirs =
        (streaming_algorithms::HyperLogLog::<u64>::with_p(12), streaming_algorithms::HyperLogLog::<u64>::with_p(12));
    for k in &keys[..N / 2] {
        theirs.0.push(k);
    }
    for k in &keys[N / 2..] {
        theirs.1.push(k);
    }
    let mut g = c.benchmark_group("hll_p12_merge");
    g.bench_function("saams", |b| {
        b.iter_batched_ref(|| ours.0.clone(), |h| h.merge(black_box(&ours.1)).unwrap(), BatchSize::SmallInput)
    });
    g.bench_function("streaming_algorithms", |b| {
        b.iter_batched_ref(|| theirs.0.clone(), |h| h.union(black_box(&theirs.1)), BatchSize::SmallInput)
    });
    g.finish();

    let mut g = c.benchmark_group("hll_p12_estimate");
    g.bench_function("saams", |b| b.iter(|| black_box(&ours.0).distinct()));
    g.bench_function("streaming_algorithms", |b| b.iter(|| black_box(&theirs.0).len()));
    g.finish();

    let mut g = c.benchmark_group("hll_p12_codec");
    let bytes = ours.0.encode();
    g.bench_function("saams_encode", |b| b.iter(|| black_box(&ours.0).encode()));
    g.bench_function("saams_decode", |b| b.iter(|| saams::registry::decode(black_box(&bytes)).unwrap()));
    g.finish();
}

fn bloom_filter(c: &mut Criterion) {
    let keys: Vec<u64> = (0..N as u64).collect();
    let items = datums(&keys);
    // Half inserted, half not.
    let probe_keys: Vec<u64> = (N as u64 / 2..3 * N as u64 / 2).collect();
    let probes = datums(&probe_keys);

    let mut g = c.benchmark_group("bloom_1M_1pct_insert_1M");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        let mut f = BloomFilter::with_capacity(N as u64, 0.01).unwrap();
        b.iter(|| f.update_batch(black_box(&items)))
    });
    g.bench_function("fastbloom", |b| {
        let mut f = fastbloom::BloomFilter::with_false_pos(0.01).expected_items(N);
        b.iter(|| {
            for k in black_box(&keys) {
                f.insert(k);
            }
        })
    });
    g.finish();

    let mut ours = BloomFilter::with_capacity(N as u64, 0.01).unwrap();
    ours.update_batch(&items);
    let mut theirs = fastbloom::BloomFilter::with_false_pos(0.01).expected_items(N);
    for k in &keys {
        theirs.insert(k);
    }
    let mut g = c.benchmark_group("bloom_1M_1pct_query_1M");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| b.iter(|| black_box(&probes).iter().filter(|p| ours.contains(**p)).count()));
    g.bench_function("fastbloom", |b| b.iter(|| black_box(&probe_keys).iter().filter(|k| theirs.contains(*k)).count()));
    g.finish();

    let mut other = BloomFilter::with_capacity(N as u64, 0.01).unwrap();
    other.update_batch(&probes);
    let mut theirs_other = fastbloom::BloomFilter::with_false_pos(0.01).expected_items(N);
    for k in &probe_keys {
        theirs_other.insert(k);
    }
    let mut g = c.benchmark_group("bloom_1M_1pct_merge");
    g.bench_function("saams", |b| {
        b.iter_batched_ref(|| ours.clone(), |f| f.merge(black_box(&other)).unwrap(), BatchSize::LargeInput)
    });
    g.bench_function("fastbloom", |b| {
        b.iter_batched_ref(|| theirs.clone(), |f| f.union(black_box(&theirs_other)), BatchSize::LargeInput)
    });
    g.finish();

    let mut g = c.benchmark_group("bloom_1M_1pct_codec");
    let bytes = ours.encode();
    g.bench_function("saams_encode", |b| b.iter(|| black_box(&ours).encode()));
    g.bench_function("saams_decode", |b| b.iter(|| saams::registry::decode(black_box(&bytes)).unwrap()));
    g.finish();
}

fn ams(c: &mut Criterion) {
    let keys = zipf_keys(N, 3);
    let items = datums(&keys);
    let mut g = c.benchmark_group("ams_10x10000_update_1M");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("saams", |b| {
        let mut a = Ams::new(10, 10_000, 1).unwrap();
        b.iter(|| a.update_batch(black_box(&items)))
    });
    g.finish();

    let mut parts = (Ams::new(10, 10_000, 1).unwrap(), Ams::new(10, 10_000, 1).unwrap());
    parts.0.update_batch(&items[..N / 2]);
    parts.1.update_batch(&items[N / 2..]);
    let mut g = c.benchmark_group("ams_10x10000_ops");
    g.bench_function("merge", |b| {
        b.iter_batched_ref(|| parts.0.clone(), |a| a.merge(black_box(&parts.1)).unwrap(), BatchSize::SmallInput)
    });
    g.bench_function("f2", |b| b.iter(|| black_box(&parts.0).estimate(&Query::F2).unwrap()));
    g.bench_function("count", |b| b.iter(|| black_box(&parts.0).estimate(&Query::Count(Value::Num(3.0))).unwrap()));
    let bytes = parts.0.encode();
    g.bench_function("encode", |b| b.iter(|| black_box(&parts.0).encode()));
    g.bench_function("decode", |b| b.iter(|| saams::registry::decode(black_box(&bytes)).unwrap()));
    g.finish();
}

criterion_group!(benches, count_min, hyper_log_log, bloom_filter, ams);
criterion_main!(benches);
