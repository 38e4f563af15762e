use saams::kll::Kll;
use saams::{Datum, Kind, Query, Synopsis, SynopsisError};

#[test]
fn counts_numbers_and_ignores_text_and_nan() {
    let mut s = Kll::new(200).unwrap();
    s.update(Datum::Num(1.0));
    s.update(Datum::Str("x"));
    s.update(Datum::Num(f64::NAN));
    s.update(Datum::Num(3.0));
    assert_eq!(s.n(), 2);
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(2.0));
    assert_eq!(s.estimate(&Query::Quantile(0.0)).unwrap().as_f64(), Some(1.0));
    assert_eq!(s.estimate(&Query::Quantile(1.0)).unwrap().as_f64(), Some(3.0));
}

#[test]
fn small_streams_are_exact() {
    let mut s = Kll::new(200).unwrap();
    for i in 1..=100 {
        s.update(Datum::Num(f64::from(i)));
    }
    assert_eq!(s.estimate(&Query::Rank(50.0)).unwrap().as_f64(), Some(0.5));
    assert_eq!(s.estimate(&Query::Quantile(0.25)).unwrap().as_f64(), Some(25.0));
}

#[test]
fn bad_and_unsupported_queries_are_errors() {
    let mut s = Kll::new(200).unwrap();
    assert!(matches!(s.estimate(&Query::Quantile(0.5)), Err(SynopsisError::NotYet { .. })));
    s.update(Datum::Num(1.0));
    assert!(matches!(s.estimate(&Query::Quantile(1.5)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Quantile(f64::NAN)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Rank(f64::NAN)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
}

#[test]
fn params_from_the_registry() {
    let s = saams::registry::construct(11, &[]).unwrap();
    assert_eq!(s.kind(), Kind::Kll);
    assert!(saams::registry::construct(11, &[serde_json::json!(4)]).is_err());
    assert!(saams::registry::construct(11, &[serde_json::json!(70000)]).is_err());
    assert!(saams::registry::construct(11, &[serde_json::json!(200), serde_json::json!(1)]).is_err());
    assert!(Kll::with_rank_error(0.0).is_err());
    let s = Kll::with_rank_error(0.005).unwrap();
    assert!(s.normalized_rank_error() <= 0.005);
}

/// Counts, per thread, the net heap bytes allocated, so a test can measure what a sketch
/// really holds while other tests run on other threads.
mod heap {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static NET: Cell<isize> = const { Cell::new(0) };
    }

    fn add(bytes: isize) {
        // A thread being torn down has no counter left; its allocations are not measured.
        let _ = NET.try_with(|c| c.set(c.get() + bytes));
    }

    pub struct Counting;

    // SAFETY: every call is forwarded unchanged to the system allocator; the counter only
    // does arithmetic on the sizes it is given and never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            add(layout.size() as isize);
            // SAFETY: forwarded with the caller's layout.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            add(layout.size() as isize);
            // SAFETY: forwarded with the caller's layout.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            add(-(layout.size() as isize));
            // SAFETY: forwarded with the caller's pointer and layout.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            add(new_size as isize - layout.size() as isize);
            // SAFETY: forwarded with the caller's pointer, layout and size.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// The value `build` returns and the heap bytes it holds (net allocations on this thread
    /// while it was built, minus nothing: everything else `build` allocated was freed).
    pub fn held<T>(build: impl FnOnce() -> T) -> (T, usize) {
        let before = NET.with(Cell::get);
        let value = build();
        (value, (NET.with(Cell::get) - before).max(0) as usize)
    }
}

#[global_allocator]
static COUNTING: heap::Counting = heap::Counting;

#[test]
fn size_bytes_is_the_real_heap() {
    // The wrapper follows the library's vectors; a counting allocator tells what they hold.
    for k in [8u64, 200, 268] {
        let stream = crate::common::zipf_stream(300_000, 1 << 20, 1.1, k);
        let mut last: Option<Kll> = None;
        for n in [0usize, 1, 2, 5, 100, 999, 1_000, 10_000, 54_321, 100_000, 300_000] {
            let (s, heap) = heap::held(|| {
                let mut s = Kll::new(k).unwrap();
                for x in &stream[..n] {
                    s.update(Datum::Num(*x as f64));
                }
                s
            });
            let real = heap + std::mem::size_of::<Kll>();
            assert_eq!(s.size_bytes(), real, "k {k}, n {n}: updated");

            // Fed in batches of any size, the size ends where item-by-item updates leave it (the
            // retained values differ: the library's compactions draw random offsets).
            let items: Vec<Datum> = stream[..n].iter().map(|x| Datum::Num(*x as f64)).collect();
            for batch in [1usize, 7, 1000, n.max(1)] {
                let (b, heap) = heap::held(|| {
                    let mut b = Kll::new(k).unwrap();
                    for chunk in items.chunks(batch) {
                        b.update_batch(chunk);
                    }
                    b
                });
                assert_eq!(b.size_bytes(), heap + std::mem::size_of::<Kll>(), "k {k}, n {n}, batch {batch}");
                assert_eq!(b.size_bytes(), s.size_bytes());
                assert_eq!(b.n(), s.n());
            }

            let (c, heap) = heap::held(|| s.clone());
            assert_eq!(c.size_bytes(), heap + std::mem::size_of::<Kll>(), "k {k}, n {n}: cloned");

            let bytes = s.encode();
            let (d, heap) = heap::held(|| saams::registry::decode(&bytes).unwrap());
            assert_eq!(d.size_bytes(), heap, "k {k}, n {n}: decoded");

            // Updates after a clone or a decode grow from the exact lengths those allocate.
            let (grown, heap) = heap::held(|| {
                let mut g = c.clone();
                for x in &stream[..n.min(5_000)] {
                    g.update(Datum::Num(*x as f64 + 0.5));
                }
                g
            });
            assert_eq!(grown.size_bytes(), heap + std::mem::size_of::<Kll>(), "k {k}, n {n}: cloned, updated");

            if let Some(prev) = &last {
                let (m, heap) = heap::held(|| {
                    let mut m = s.clone();
                    m.merge(prev).unwrap();
                    m
                });
                assert_eq!(m.size_bytes(), heap + std::mem::size_of::<Kll>(), "k {k}, n {n}: merged");
                let (mu, heap) = heap::held(|| {
                    let mut mu = m.clone();
                    for x in &stream[..n.min(3_000)] {
                        mu.update(Datum::Num(*x as f64 + 0.25));
                    }
                    mu
                });
                assert_eq!(mu.size_bytes(), heap + std::mem::size_of::<Kll>(), "k {k}, n {n}: merged, updated");
            }
            last = Some(s);
        }
    }
}
