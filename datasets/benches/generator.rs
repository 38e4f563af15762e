//! Generator throughput: ticks and reports per second on one core (no tuple allocation), and the
//! cost of turning them into `Tuple`s.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use saams_datasets::generator::{AisStream, GeneratorSpec, StockStream};

const N: u64 = 100_000;

fn generator(c: &mut Criterion) {
    let mut g = c.benchmark_group("generator");
    g.throughput(Throughput::Elements(N));
    let stocks = GeneratorSpec::parse(&format!("stocks:10:{N}")).expect("valid spec");
    g.bench_function("stock_ticks", |b| {
        b.iter(|| StockStream::new(&stocks, 4).fold(0.0, |acc, t| acc + t.price + t.volume as f64))
    });
    let ais = GeneratorSpec::parse(&format!("ais:10:{N}")).expect("valid spec");
    g.bench_function("ais_reports", |b| b.iter(|| AisStream::new(&ais, 4).fold(0.0, |acc, r| acc + r.lat + r.speed)));
    g.bench_function("stock_tuples", |b| {
        b.iter(|| {
            let mut s = StockStream::new(&stocks, 4);
            let mut n = 0usize;
            while let Some(t) = s.next() {
                n += s.to_tuple(&t).fields.len();
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, generator);
criterion_main!(benches);
