//! Unit tests of the DFT sketch's internals: the recomputed coefficients and sums against the
//! incrementally updated ones, and the bucket of an event time.

use super::*;

#[test]
fn recompute_sums_each_coefficient_in_window_order_with_the_shared_twiddles() {
    // 11 coefficients: one full chunk of lanes and one padded one.
    let mut s = Dft::new(1.0, 50, 200, 11).expect("valid parameters");
    let mut rng = crate::hash::SplitMix64::new(3);
    let mut checked = 0;
    for i in 0..1_234 {
        s.update(Datum::Num((rng.next_u64() % 100_000) as f64 / 7.0 - 5_000.0));
        if i % 97 != 0 {
            continue;
        }
        s.recompute();
        let (m, shift) = (s.state.m, s.state.shift);
        if m == 0 {
            continue;
        }
        let (points, tw) = (s.window_points(), twiddles(m));
        for f in 0..s.coeffs {
            let (mut re, mut im) = (0.0f64, 0.0f64);
            for (i, x) in points.iter().enumerate() {
                let (c, sn) = tw[i * (f + 1) % m];
                re += (x - shift) * c;
                im -= (x - shift) * sn;
            }
            assert_eq!((re.to_bits(), im.to_bits()), (s.state.re[f].to_bits(), s.state.im[f].to_bits()));
        }
        checked += 1;
    }
    assert!(checked > 10);
}

#[test]
fn bucket_of_equals_the_euclidean_division_whatever_the_open_interval() {
    let mut rng = crate::hash::SplitMix64::new(5);
    for interval_s in [0.001, 1.0, 2.5, 60.0, 1e9] {
        let mut s = Dft::new(interval_s, 2, 8, 1).expect("valid parameters");
        let i = s.interval_ms;
        let times = [0, 1, -1, i - 1, i, 2 * i - 1, 2 * i, 3 * i + 1, -i, -i - 1, i64::MAX, i64::MIN, i64::MIN + 1];
        for &open in &[None, Some(0), Some(-1), Some(1), Some(i64::MAX / i), Some(i64::MIN / i), Some(i64::MAX)] {
            s.open = open.map(|b| (b, 0.0));
            let random = (0..2_000).map(|_| {
                let base = open.unwrap_or(0).saturating_mul(i);
                base.saturating_add((rng.next_u64() % (4 * i as u64 + 4)) as i64 - i - 2)
            });
            for t in times.into_iter().chain(random) {
                assert_eq!(s.bucket_of(t), t.div_euclid(i), "interval {i} ms, open {open:?}, time {t}");
            }
        }
    }
}
