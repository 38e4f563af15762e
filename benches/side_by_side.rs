//! Issue 15's table, measured side by side: for each synopsis that trailed a library, ours and
//! the library's run alternately, round after round, in one process, and the medians are
//! compared. On a shared machine a criterion group measures one function for seconds, then the
//! next, so load that comes and goes shows up as a ratio; alternating per round cancels it.
//!
//! A counting global allocator also measures real heap: the KLL row checks `size_bytes`
//! against the bytes the sketch really holds.
//!
//! Streams: 1 M keys of a seeded Zipf(1.1) over a 1 M domain (the 10 M scaled down so a
//! round stays short), 1 M distinct keys for the Bloom filter at its design capacity.
//!
//! `cargo bench --bench side_by_side` (all rows) or `cargo bench --bench side_by_side -- bloom`
//! (rows whose name contains the word; `-- --rounds 31` for more rounds).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use datasketches::cpc::CpcSketch;
use datasketches::frequencies::FrequentItemsSketch;
use datasketches::kll::{KllFloat, KllSketch};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::hash::canonical_bits;
use saams::{BloomFilter, Cpc, Datum, FrequentItems, Kll, LossyCounting, Query, StickySampling, Synopsis};

/// Net bytes allocated on the heap by this process.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is only
// arithmetic on the sizes it was given.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap bytes `build` leaves allocated in the value it returns.
fn heap_of<T>(build: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    let value = build();
    (value, (LIVE.load(Ordering::Relaxed) - before).max(0) as usize)
}

const N: usize = 1_000_000;

fn zipf(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let z = Zipf::<f64>::new(1_000_000.0, 1.1).expect("valid Zipf");
    (0..n).map(|_| z.sample(&mut rng).floor()).collect()
}

fn datums(xs: &[f64]) -> Vec<Datum<'static>> {
    xs.iter().map(|x| Datum::Num(*x)).collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

/// Run `ours` and `theirs` alternately `rounds` times each; each returns the time of one pass.
fn alternate(
    rounds: usize,
    mut ours: impl FnMut() -> Duration,
    mut theirs: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    ours();
    theirs();
    let (mut a, mut b) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        a.push(ours());
        b.push(theirs());
    }
    (median(a), median(b))
}

fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn row(name: &str, ops: usize, (ours, theirs): (Duration, Duration), baseline: &str) {
    let per = |d: Duration| d.as_secs_f64() * 1e9 / ops as f64;
    let (o, t) = (per(ours), per(theirs));
    let unit = if o > 1e5 { format!("{:.1} us", o / 1e3) } else { format!("{o:.1} ns") };
    let unit_t = if t > 1e5 { format!("{:.1} us", t / 1e3) } else { format!("{t:.1} ns") };
    println!("| {name} | {unit} | {baseline} {unit_t} | {:.2}x |", o / t);
}

fn bloom(rounds: usize) {
    let keys: Vec<u64> = (0..N as u64).collect();
    let items: Vec<Datum<'static>> = keys.iter().map(|k| Datum::Num(*k as f64)).collect();
    let probe_keys: Vec<u64> = (N as u64 / 2..3 * N as u64 / 2).collect();
    let probes: Vec<Datum<'static>> = probe_keys.iter().map(|k| Datum::Num(*k as f64)).collect();
    let insert = alternate(
        rounds,
        || {
            let mut f = BloomFilter::with_capacity(N as u64, 0.01).unwrap();
            timed(|| f.update_batch(black_box(&items)))
        },
        || {
            let mut f = fastbloom::BloomFilter::with_false_pos(0.01).expected_items(N);
            timed(|| {
                for k in black_box(&keys) {
                    f.insert(k);
                }
            })
        },
    );
    row("Bloom insert (1 M items, 1 %)", N, insert, "fastbloom");
    let mut ours = BloomFilter::with_capacity(N as u64, 0.01).unwrap();
    ours.update_batch(&items);
    let mut theirs = fastbloom::BloomFilter::with_false_pos(0.01).expected_items(N);
    keys.iter().for_each(|k| {
        theirs.insert(k);
    });
    let query = alternate(
        rounds,
        || timed(|| assert!(black_box(&probes).iter().filter(|p| ours.contains(**p)).count() >= N / 2)),
        || timed(|| assert!(black_box(&probe_keys).iter().filter(|k| theirs.contains(*k)).count() >= N / 2)),
    );
    row("Bloom query (half present)", N, query, "fastbloom");
    let fp = |hits: usize| (hits - N / 2) as f64 / (N / 2) as f64;
    println!(
        "bloom: bits/item ours {:.2}, fastbloom {:.2}; measured FPR ours {:.4}, fastbloom {:.4}; k ours {}, fastbloom {}",
        ours.num_bits() as f64 / N as f64,
        theirs.num_bits() as f64 / N as f64,
        fp(probes.iter().filter(|p| ours.contains(**p)).count()),
        fp(probe_keys.iter().filter(|k| theirs.contains(*k)).count()),
        ours.hashes(),
        theirs.num_hashes()
    );
}

fn frequent_items(rounds: usize) {
    let data = zipf(N, 42);
    let items = datums(&data);
    let t = alternate(
        rounds,
        || {
            let mut s = FrequentItems::new(13).unwrap();
            timed(|| {
                for chunk in black_box(&items).chunks(1024) {
                    s.update_batch(chunk);
                }
            })
        },
        || {
            let mut s = FrequentItemsSketch::<u64>::new(1 << 13).unwrap();
            timed(|| {
                for x in black_box(&data) {
                    s.update(canonical_bits(*x));
                }
            })
        },
    );
    row("FrequentItems update (2^13 map)", N, t, "datasketches u64");
    let (ours, heap) = heap_of(|| {
        let mut s = FrequentItems::new(13).unwrap();
        s.update_batch(&items);
        s
    });
    let (theirs, raw_heap) = heap_of(|| {
        let mut s = FrequentItemsSketch::<u64>::new(1 << 13).unwrap();
        data.iter().for_each(|x| s.update(canonical_bits(*x)));
        s
    });
    println!(
        "frequent_items: size_bytes {} (heap {heap}), datasketches u64 estimated_size {} (heap {raw_heap})",
        ours.size_bytes(),
        theirs.estimated_size()
    );
}

fn cpc(rounds: usize) {
    let data = zipf(N, 42);
    let items = datums(&data);
    let t = alternate(
        rounds,
        || {
            let mut s = Cpc::new(12).unwrap();
            timed(|| {
                for chunk in black_box(&items).chunks(1024) {
                    s.update_batch(chunk);
                }
            })
        },
        || {
            let mut s = CpcSketch::new(12).unwrap();
            timed(|| {
                for x in black_box(&data) {
                    s.update(canonical_bits(*x));
                }
            })
        },
    );
    row("CPC update (lgK 12)", N, t, "datasketches");
}

fn kll(rounds: usize) {
    let data = zipf(N, 42);
    let items = datums(&data);
    let t = alternate(
        rounds,
        || {
            let mut s = Kll::new(268).unwrap();
            timed(|| {
                for chunk in black_box(&items).chunks(1024) {
                    s.update_batch(chunk);
                }
            })
        },
        || {
            let mut s = KllSketch::<KllFloat<f64>>::new(268).unwrap();
            timed(|| {
                for x in black_box(&data) {
                    s.update(KllFloat::<f64>::new(*x).unwrap());
                }
            })
        },
    );
    row("KLL update (k 268)", N, t, "datasketches");
    let (s, heap) = heap_of(|| {
        let mut s = Kll::new(268).unwrap();
        s.update_batch(&items);
        s
    });
    println!("kll: size_bytes {} vs real heap {} + inline {}", s.size_bytes(), heap, std::mem::size_of::<Kll>());
}

fn sticky(rounds: usize) {
    let data = zipf(N, 42);
    let (h1, h2) = data.split_at(N / 2);
    let build_s = |xs: &[f64]| {
        let mut s = StickySampling::with_accuracy(0.001, 2e-4, 0.01, 7).unwrap();
        s.update_batch(&datums(xs));
        s
    };
    let build_l = |xs: &[f64]| {
        let mut s = LossyCounting::with_epsilon(2e-4).unwrap();
        s.update_batch(&datums(xs));
        s
    };
    let (s, l) = (build_s(&data), build_l(&data));
    let q = Query::FrequentItems { support: 0.001 };
    let reps = 20;
    let t = alternate(
        rounds,
        || {
            timed(|| {
                for _ in 0..reps {
                    black_box(s.estimate(black_box(&q)).unwrap());
                }
            })
        },
        || {
            timed(|| {
                for _ in 0..reps {
                    black_box(l.estimate(black_box(&q)).unwrap());
                }
            })
        },
    );
    row("Sticky Sampling query (0.001, 2e-4, 0.01)", reps, t, "Lossy Counting 2e-4");
    let (sa, sb, la, lb) = (build_s(h1), build_s(h2), build_l(h1), build_l(h2));
    let t = alternate(
        rounds,
        || {
            let mut a = sa.clone();
            timed(|| a.merge(black_box(&sb)).unwrap())
        },
        || {
            let mut a = la.clone();
            timed(|| a.merge(black_box(&lb)).unwrap())
        },
    );
    row("Sticky Sampling merge (two halves)", 1, t, "Lossy Counting 2e-4");
    // Partials of different lengths sample at different rates: the one at the higher rate is
    // thinned (sorted by id, coins tossed) before the counts are summed.
    let (u1, u2) = data.split_at(N / 5);
    let (sa, sb, la, lb) = (build_s(u1), build_s(u2), build_l(u1), build_l(u2));
    let t = alternate(
        rounds,
        || {
            let mut a = sa.clone();
            timed(|| a.merge(black_box(&sb)).unwrap())
        },
        || {
            let mut a = la.clone();
            timed(|| a.merge(black_box(&lb)).unwrap())
        },
    );
    row(
        &format!(
            "Sticky Sampling merge (1/5 + 4/5, rates 1/{} and 1/{})",
            sa.sampling_divisor(),
            sb.sampling_divisor()
        ),
        1,
        t,
        "Lossy Counting 2e-4",
    );
    println!(
        "sticky: size_bytes {} ({} tracked), lossy counting size_bytes {} ({} tracked)",
        s.size_bytes(),
        s.tracked(),
        l.size_bytes(),
        l.tracked()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let words: Vec<&String> = args.iter().filter(|a| !a.starts_with("--") && a.parse::<usize>().is_err()).collect();
    let wanted = |name: &str| words.is_empty() || words.iter().any(|w| name.contains(w.as_str()));
    println!("| kind | ours | best library | ratio |\n|---|---:|---:|---:|");
    type Row = (&'static str, fn(usize));
    let rows: [Row; 5] =
        [("bloom", bloom), ("frequent_items", frequent_items), ("cpc", cpc), ("kll", kll), ("sticky", sticky)];
    for (name, run) in rows {
        if wanted(name) {
            run(rounds);
        }
    }
}
