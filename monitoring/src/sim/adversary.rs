//! Adversarial streams for the simulator and the tests.

use saams::hash::SplitMix64;

use crate::error::MonitorError;
use crate::sim::Arrival;

/// The adversarial streams `monitor-sim --adversary` and the tests use, over `windows` windows
/// of `window` time units, about `rate` items per time unit over `k` sites, seeded. Each item
/// gets a delay in `[0, τ]` (for `late`: τ for most items), so out-of-order input is exercised.
///
/// * `uniform` — steady rate, a skewed item mix.
/// * `burst` — a low base rate with bursts of 50× the rate at single stamps on one site, heavy
///   on a few items.
/// * `expiry` — everything arrives in short pulses once per 1.5 windows, so the whole window
///   expires at once at the edge.
/// * `distinct` — almost every item distinct, plus one heavy item on and off.
/// * `late` — like `uniform` but items arrive exactly τ late, interleaved with on-time ones.
/// * `onoff` — a few items alternate between heavy and absent every half window (turning off
///   and on), over a background.
/// * `wave` — the rate swings between 1× and 4× every window.
/// * `mixed` — `burst`, `expiry` and `distinct` together.
///
/// ```
/// let s = saams_monitoring::sim::adversary("expiry", 3, 100, 10, 2, 4, 1).unwrap();
/// assert!(s.windows(2).all(|w| w[0].arrival <= w[1].arrival));
/// assert!(s.iter().all(|a| a.site < 3 && a.arrival - a.stamp <= 10));
/// assert!(saams_monitoring::sim::adversary("nope", 3, 100, 0, 2, 4, 1).is_err());
/// ```
///
/// # Errors
/// For an unknown name or parameters out of range.
pub fn adversary(
    name: &str,
    k: usize,
    window: i64,
    tardiness: i64,
    rate: u64,
    windows: i64,
    seed: u64,
) -> Result<Vec<Arrival>, MonitorError> {
    if k == 0 || window <= 0 || !(0..window).contains(&tardiness) || rate == 0 || windows <= 0 {
        return Err(MonitorError::BadParameter(format!(
            "adversary needs k ≥ 1, W > 0, 0 ≤ τ < W, rate ≥ 1, windows ≥ 1 (got k={k}, W={window}, τ={tardiness}, \
             rate={rate}, windows={windows})"
        )));
    }
    let mut rng = SplitMix64::new(seed);
    let horizon = window * windows;
    let mut out: Vec<(i64, i64, usize, u64)> = Vec::new();
    let skewed = |rng: &mut SplitMix64| -> u64 {
        // P(item = i) ∝ 1/(i+1)² roughly: a few heavy items and a long tail.
        let u = rng.next_f64();
        ((1.0 / (1.0 - u * 0.999)).powf(1.5) as u64).min(5000)
    };
    let mut push = |rng: &mut SplitMix64, stamp: i64, site: usize, item: u64, late: bool| {
        let delay = if tardiness == 0 {
            0
        } else if late {
            if rng.next_u64().is_multiple_of(4) { 0 } else { tardiness }
        } else {
            (rng.next_u64() % (tardiness as u64 + 1)) as i64
        };
        out.push((stamp, stamp + delay, site, item));
    };
    let site_of = |rng: &mut SplitMix64| (rng.next_u64() % k as u64) as usize;
    let uniform = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool), late: bool| {
        for t in 0..horizon {
            for _ in 0..rate {
                let s = site_of(rng);
                let j = skewed(rng);
                push(rng, t, s, j, late);
            }
        }
    };
    let burst = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool)| {
        for t in 0..horizon {
            if rng.next_u64().is_multiple_of(10) {
                let s = site_of(rng);
                let j = skewed(rng);
                push(rng, t, s, j, false);
            }
            if t % (window / 3).max(1) == window / 7 {
                let s = site_of(rng);
                for i in 0..50 * rate * (window as u64 / 10).max(1) {
                    let j = if i % 3 == 0 { skewed(rng) } else { i % 4 };
                    push(rng, t, s, j, false);
                }
            }
        }
    };
    let expiry = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool)| {
        let period = window + window / 2;
        for t in 0..horizon {
            if t % period < (window / 20).max(1) {
                for _ in 0..20 * rate {
                    let s = site_of(rng);
                    let j = skewed(rng);
                    push(rng, t, s, j, false);
                }
            }
        }
    };
    let distinct = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool)| {
        let mut next = 1_000_000u64;
        for t in 0..horizon {
            for _ in 0..rate {
                let s = site_of(rng);
                next += 1;
                push(rng, t, s, next, false);
            }
            if (t / window) % 2 == 0 {
                let s = site_of(rng);
                push(rng, t, s, 7, false);
            }
        }
    };
    match name {
        "uniform" => uniform(&mut rng, &mut push, false),
        "late" => uniform(&mut rng, &mut push, true),
        "burst" => burst(&mut rng, &mut push),
        "expiry" => expiry(&mut rng, &mut push),
        "distinct" => distinct(&mut rng, &mut push),
        "mixed" => {
            burst(&mut rng, &mut push);
            expiry(&mut rng, &mut push);
            distinct(&mut rng, &mut push);
        }
        "onoff" => {
            for t in 0..horizon {
                let phase = (2 * t / window) % 2;
                for _ in 0..rate {
                    let s = site_of(&mut rng);
                    let j = 100 + rng.next_u64() % 500;
                    push(&mut rng, t, s, j, false);
                }
                for j in 0..3u64 {
                    if (phase as u64 + j).is_multiple_of(2) {
                        for _ in 0..rate {
                            let s = site_of(&mut rng);
                            push(&mut rng, t, s, j, false);
                        }
                    }
                }
            }
        }
        "wave" => {
            for t in 0..horizon {
                let n = if (t / window) % 2 == 0 { rate } else { 4 * rate };
                for _ in 0..n {
                    let s = site_of(&mut rng);
                    let j = skewed(&mut rng);
                    push(&mut rng, t, s, j, false);
                }
            }
        }
        other => {
            return Err(MonitorError::BadParameter(format!(
                "unknown adversary {other:?} (uniform | burst | expiry | distinct | late | onoff | wave | mixed)"
            )));
        }
    }
    out.sort_by_key(|&(stamp, arrival, _, _)| (arrival, stamp));
    Ok(out.into_iter().map(|(stamp, arrival, site, item)| Arrival { site, stamp, arrival, item }).collect())
}
