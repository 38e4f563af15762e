//! State, update (sliding DFT), merge (concatenation) and estimates of the DFT synopsis.

use std::collections::{HashMap, VecDeque};
use std::f64::consts::PI;
use std::sync::{Arc, Mutex, OnceLock};

use super::Spectrum;
use crate::params::Params;
use crate::{Datum, Estimate, Kind, PairQuery, Query, Synopsis, SynopsisError, downcast};

/// Largest accepted sliding window (points): the raw window is kept, so this bounds memory.
pub const MAX_WINDOW: usize = 1 << 20;

/// Exact recomputation (O(window · coefficients)) after this many window turnovers of sliding
/// updates: rounding in the sliding DFT grows about linearly, ~1e-16 per slide relative to the
/// window's energy, so 4 turnovers keep the drift near 1e-12 while costing O(coefficients / 4)
/// per point.
pub(crate) const RECOMPUTE_WINDOWS: usize = 4;

/// Sliding-window DFT synopsis.
///
/// Guarantees (deterministic, up to floating-point rounding of ~1e-12):
/// - `Vector` returns `X_1 … X_c` (re, im pairs) of the unitary DFT
///   `X_f = (1/√m) Σ_i x̂_i e^{−2πj f i/m}` of the z-normalized window `x̂ = (x − mean)/‖x − mean‖`
///   of the last `m = min(points, window)` committed points; `upper` is the energy fraction not
///   captured by the returned coefficients (their conjugates counted), `lower` is 0.
/// - `estimate_pair(Correlation)`: by Parseval the Pearson correlation ρ of two windows is the
///   inner product of their normalized spectra. The kept coefficients carry
///   `ρ̂ = 2 Σ_{f≤c} Re(X_f Ȳ_f)`; with `E_x, E_y` the dropped energies, Cauchy–Schwarz gives
///   `|ρ − ρ̂| ≤ √(E_x E_y)`, which is `[lower, upper]` (confidence 1). The value is the
///   correlation of the low-pass parts, `ρ̂ / √((1 − E_x)(1 − E_y))`, clamped into that interval:
///   identical windows give 1, as StatStream's `1 − d²/2` does (with `d` the distance of the
///   normalized coefficient vectors, conjugates counted; `1 − d²/2 = ρ̂ + (E_x + E_y)/2`).
/// - `merge(other)` equals feeding `other`'s items after `self`'s (raw window points are kept,
///   so the concatenation is exact); the coefficients after a merge are recomputed exactly.
#[derive(Clone, Debug)]
pub struct Dft {
    pub(crate) interval_s: f64,
    interval_ms: i64,
    pub(crate) basic: usize,
    pub(crate) window: usize,
    pub(crate) coeffs: usize,
    /// Points pushed in total.
    pub(crate) n: u64,
    /// `n mod basic`: points waiting for their basic window to complete.
    phase: usize,
    /// The last `min(n, window + basic)` points, oldest first.
    pub(crate) buf: VecDeque<f64>,
    /// The current (not yet closed) interval: (interval index, its last value).
    pub(crate) open: Option<(i64, f64)>,
    /// Interval index of the first timed item (how a merge knows where `self` continues).
    pub(crate) first_bucket: Option<i64>,
    state: State,
}

/// The DFT of the committed window, derived from `buf` and `n` (never encoded).
#[derive(Clone, Debug, Default)]
struct State {
    /// Committed window length.
    m: usize,
    /// Unnormalized `S_f = Σ_i x_i e^{−2πj f i/m}` for f = 1..=c.
    re: Vec<f64>,
    im: Vec<f64>,
    /// Σ (x − shift) and Σ (x − shift)² over the window; `shift` keeps them well conditioned.
    shift: f64,
    sum: f64,
    sumsq: f64,
    /// Points slid in since the last exact recomputation.
    slides: usize,
    /// `e^{+2πj f/window}`, the per-point rotation of coefficient f.
    rot_re: Vec<f64>,
    rot_im: Vec<f64>,
    /// cos/sin(2πk/window) for k < window, shared between synopses of the same window.
    twiddle: Option<Arc<[(f64, f64)]>>,
    /// Scratch: `new − old` of the points a commit slides in.
    diffs: Vec<f64>,
}

/// Coefficients updated side by side (kept in registers) by the slide and the recomputation.
const LANES: usize = 8;

type Twiddles = Arc<[(f64, f64)]>;

fn twiddles(w: usize) -> Twiddles {
    static CACHE: OnceLock<Mutex<HashMap<usize, Twiddles>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = match cache.lock() {
        Ok(m) => m,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.entry(w)
        .or_insert_with(|| (0..w).map(|k| (2.0 * PI * k as f64 / w as f64).sin_cos()).map(|(s, c)| (c, s)).collect())
        .clone()
}

/// Largest lane table (entries per cos/sin half) [`lane_table`] builds: 4 MiB in all.
const MAX_LANE_TABLE: usize = 1 << 18;

/// cos/sin(2π·i·f/m) for f = 1..=coeffs, per chunk of [`LANES`] coefficients, point i, lane
/// (zeros in lanes past the last coefficient); shared per (m, coeffs). The values are those of
/// [`twiddles`]`(m)` at index `i·f mod m`.
type LaneTable = Arc<(Vec<f64>, Vec<f64>)>;

fn lane_table(m: usize, coeffs: usize) -> LaneTable {
    static CACHE: OnceLock<Mutex<HashMap<(usize, usize), LaneTable>>> = OnceLock::new();
    let tw = twiddles(m);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = match cache.lock() {
        Ok(map) => map,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.entry((m, coeffs))
        .or_insert_with(|| {
            let chunks = coeffs.div_ceil(LANES);
            let (mut cos, mut sin) = (vec![0.0; chunks * m * LANES], vec![0.0; chunks * m * LANES]);
            for f in 0..coeffs {
                let (chunk, lane) = (f / LANES, f % LANES);
                for i in 0..m {
                    let (c, s) = tw[(i as u64 * (f as u64 + 1) % m as u64) as usize];
                    let at = (chunk * m + i) * LANES + lane;
                    cos[at] = c;
                    sin[at] = s;
                }
            }
            Arc::new((cos, sin))
        })
        .clone()
}

fn bad(reason: String) -> SynopsisError {
    SynopsisError::BadParameter { kind: Kind::Dft, reason }
}

impl Dft {
    /// A synopsis aggregating per `interval_s` seconds, advancing every `basic` points, over the
    /// last `window` points, keeping `coeffs` coefficients.
    ///
    /// ```
    /// use saams::dft::Dft;
    /// assert!(Dft::new(1.0, 500, 2000, 8).is_ok());
    /// assert!(Dft::new(1.0, 300, 2000, 8).is_err()); // window not a multiple of the basic window
    /// assert!(Dft::new(1.0, 500, 2000, 1000).is_err()); // 2·coefficients must stay below the window
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] unless `interval_s` is finite and ≥ 0.001, `basic ≥ 1`,
    /// `window` a multiple of `basic` up to [`MAX_WINDOW`], and `1 ≤ coeffs` with
    /// `2·coeffs < window` (coefficients beyond half the window mirror the first ones).
    pub fn new(interval_s: f64, basic: usize, window: usize, coeffs: usize) -> Result<Self, SynopsisError> {
        if !(0.001..=1e12).contains(&interval_s) {
            return Err(bad(format!("interval must be between 0.001 and 1e12 seconds, got {interval_s}")));
        }
        if basic == 0 || window == 0 || window > MAX_WINDOW || !window.is_multiple_of(basic) {
            return Err(bad(format!(
                "sliding window ({window}) must be a positive multiple of the basic window ({basic}), at most {MAX_WINDOW}"
            )));
        }
        if coeffs == 0 || 2 * coeffs >= window {
            return Err(bad(format!(
                "#coefficients must be in 1..{} for a window of {window}, got {coeffs}",
                window.div_ceil(2)
            )));
        }
        let mut s = Dft {
            interval_s,
            interval_ms: (interval_s * 1000.0).round() as i64,
            basic,
            window,
            coeffs,
            n: 0,
            phase: 0,
            buf: VecDeque::with_capacity((window + basic).min(4096)),
            open: None,
            first_bucket: None,
            state: State::default(),
        };
        let (rr, ri) =
            (0..coeffs).map(|f| (2.0 * PI * (f + 1) as f64 / window as f64).sin_cos()).map(|(sn, cs)| (cs, sn)).unzip();
        s.state.rot_re = rr;
        s.state.rot_im = ri;
        s.state.re = vec![0.0; coeffs];
        s.state.im = vec![0.0; coeffs];
        Ok(s)
    }

    /// Build from the reference parameters `[interval s, basic window, sliding window, #coefficients]`.
    ///
    /// ```
    /// use saams::{dft::Dft, params::Params, Kind};
    /// let raw = serde_json::json!([1, 500, 2000, 8]);
    /// let s = Dft::from_params(&Params::new(Kind::Dft, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(s.window(), 2000);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong count or values out of range (see [`Dft::new`]).
    pub fn from_params(p: &Params) -> Result<Self, SynopsisError> {
        p.arity(4, 4)?;
        let interval = p.number(0, "interval s")?;
        let basic = p.integer(1, "basic window", 1)?;
        let window = p.integer(2, "sliding window", 1)?;
        let coeffs = p.integer(3, "#coefficients", 1)?;
        let cap = MAX_WINDOW as u64;
        if basic > cap || window > cap || coeffs > cap {
            return Err(bad(format!("windows and coefficients must be at most {MAX_WINDOW}")));
        }
        Dft::new(interval, basic as usize, window as usize, coeffs as usize)
    }

    /// The sliding window length in points.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Points added so far (closed intervals, carried-forward gaps, or plain updates).
    pub fn points(&self) -> u64 {
        self.n
    }

    /// Length of the committed window the coefficients describe (`window` once full).
    pub fn window_len(&self) -> usize {
        self.state.m
    }

    /// The committed window's raw points, oldest first (what the coefficients describe).
    pub fn window_points(&self) -> Vec<f64> {
        let pending = self.pending();
        let end = self.buf.len() - pending;
        self.buf.range(end - self.state.m..end).copied().collect()
    }

    fn pending(&self) -> usize {
        self.phase
    }

    /// Re-derive the phase after `n` changed by more than one point.
    fn sync_phase(&mut self) {
        self.phase = (self.n % self.basic as u64) as usize;
    }

    fn cap(&self) -> usize {
        self.window + self.basic
    }

    #[inline]
    fn push_raw(&mut self, x: f64) {
        if self.buf.len() == self.cap() {
            self.buf.pop_front();
        }
        self.buf.push_back(x);
    }

    /// Add one point; commit a basic window when it completes.
    #[inline]
    fn push(&mut self, x: f64) {
        self.push_raw(x);
        self.n += 1;
        self.phase += 1;
        if self.phase == self.basic {
            self.phase = 0;
            self.commit();
        }
    }

    /// Add `count` copies of `x` (a gap carried forward); only the last `window + basic` matter.
    fn push_repeat(&mut self, x: f64, count: u64) {
        let cap = self.cap();
        if count > cap as u64 {
            // The whole kept history becomes `x`: rebuild it directly and recompute.
            self.buf.clear();
            self.buf.extend(std::iter::repeat_n(x, cap));
            self.n += count;
            self.sync_phase();
            self.recompute();
            return;
        }
        for _ in 0..count {
            self.push(x);
        }
    }

    /// A basic window completed: slide its points in, or recompute while the window fills.
    fn commit(&mut self) {
        let (w, b) = (self.window, self.basic);
        if self.state.m != w {
            self.recompute();
            return;
        }
        let len = self.buf.len();
        let st = &mut self.state;
        let shift = st.shift;
        let leaving = self.buf.range(len - b - w..len - w);
        let entering = self.buf.range(len - b..len);
        st.diffs.clear();
        for (&old, &new) in leaving.zip(entering) {
            let d = new - old;
            st.diffs.push(d);
            st.sum += d;
            st.sumsq += (new - shift) * (new - shift) - (old - shift) * (old - shift);
        }
        // Each coefficient sees the same operations in the same order as one point at a time;
        // only the loops are swapped, so a lane's values stay in registers over the block.
        for f0 in (0..self.coeffs).step_by(LANES) {
            let n = (self.coeffs - f0).min(LANES);
            let (mut re, mut im, mut cr, mut ci) = ([0.0; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
            re[..n].copy_from_slice(&st.re[f0..f0 + n]);
            im[..n].copy_from_slice(&st.im[f0..f0 + n]);
            cr[..n].copy_from_slice(&st.rot_re[f0..f0 + n]);
            ci[..n].copy_from_slice(&st.rot_im[f0..f0 + n]);
            for &d in &st.diffs {
                for j in 0..LANES {
                    let a = re[j] + d;
                    let b = im[j];
                    re[j] = a * cr[j] - b * ci[j];
                    im[j] = a * ci[j] + b * cr[j];
                }
            }
            st.re[f0..f0 + n].copy_from_slice(&re[..n]);
            st.im[f0..f0 + n].copy_from_slice(&im[..n]);
        }
        self.state.slides += b;
        if self.state.slides >= RECOMPUTE_WINDOWS * w {
            self.recompute();
        }
    }

    /// Exact O(m·c) computation of the window's coefficients and sums (bounds floating drift).
    pub(crate) fn recompute(&mut self) {
        let committed = self.n - self.pending() as u64;
        let m = committed.min(self.window as u64) as usize;
        let pending = self.pending();
        let end = self.buf.len() - pending;
        let start = end - m;
        let st = &mut self.state;
        st.m = m;
        st.slides = 0;
        st.re.iter_mut().for_each(|v| *v = 0.0);
        st.im.iter_mut().for_each(|v| *v = 0.0);
        if m == 0 {
            st.shift = 0.0;
            st.sum = 0.0;
            st.sumsq = 0.0;
            return;
        }
        let shift = self.buf.range(start..end).sum::<f64>() / m as f64;
        let (mut sum, mut sumsq) = (0.0, 0.0);
        for x in self.buf.range(start..end) {
            let v = x - shift;
            sum += v;
            sumsq += v * v;
        }
        st.shift = shift;
        st.sum = sum;
        st.sumsq = sumsq;
        // LANES coefficients per pass over the window (independent sums side by side); each
        // coefficient's sum still adds its terms in window order.
        self.buf.make_contiguous();
        let (points, _) = self.buf.as_slices();
        let points = &points[start..end];
        let chunks = self.coeffs.div_ceil(LANES);
        if m.is_multiple_of(self.basic) && m * chunks * LANES <= MAX_LANE_TABLE {
            // The twiddle of each (point, coefficient) laid out in lane order: the inner loop
            // is plain multiply-adds over contiguous rows (the same values as the stepping
            // below, which reads them from the cos/sin table by index).
            let table = lane_table(m, self.coeffs);
            for (chunk, f0) in (0..self.coeffs).step_by(LANES).enumerate() {
                let n = (self.coeffs - f0).min(LANES);
                let rows = chunk * m * LANES..(chunk + 1) * m * LANES;
                let (cos, sin) = (&table.0[rows.clone()], &table.1[rows]);
                let (mut re, mut im) = ([0.0; LANES], [0.0; LANES]);
                for ((x, c), s) in points.iter().zip(cos.chunks_exact(LANES)).zip(sin.chunks_exact(LANES)) {
                    let v = x - shift;
                    for j in 0..LANES {
                        re[j] += v * c[j];
                        im[j] -= v * s[j];
                    }
                }
                st.re[f0..f0 + n].copy_from_slice(&re[..n]);
                st.im[f0..f0 + n].copy_from_slice(&im[..n]);
            }
            return;
        }
        // The twiddles cos/sin(2πk/m): shared per window length while the window is full or
        // filling in whole basic windows (a handful of lengths), built locally otherwise. Either
        // way each is computed once per recomputation, not once per coefficient and point.
        let tw: Twiddles = if m == self.window {
            st.twiddle.get_or_insert_with(|| twiddles(self.window)).clone()
        } else if m.is_multiple_of(self.basic) {
            twiddles(m)
        } else {
            (0..m).map(|k| (2.0 * PI * k as f64 / m as f64).sin_cos()).map(|(s, c)| (c, s)).collect()
        };
        for f0 in (0..self.coeffs).step_by(LANES) {
            let n = (self.coeffs - f0).min(LANES);
            let (mut k, mut step, mut re, mut im) = ([0usize; LANES], [0usize; LANES], [0.0; LANES], [0.0; LANES]);
            for (j, s) in step.iter_mut().enumerate().take(n) {
                *s = (f0 + j + 1) % m;
            }
            for x in points {
                let v = x - shift;
                for j in 0..LANES {
                    let (c, s) = tw[k[j]];
                    re[j] += v * c;
                    im[j] -= v * s;
                    k[j] += step[j];
                    if k[j] >= m {
                        k[j] -= m;
                    }
                }
            }
            st.re[f0..f0 + n].copy_from_slice(&re[..n]);
            st.im[f0..f0 + n].copy_from_slice(&im[..n]);
        }
    }

    /// `‖x − mean‖²` of the window, or `None` when the window is empty or constant.
    fn centered_energy(&self) -> Option<f64> {
        let st = &self.state;
        if st.m == 0 {
            return None;
        }
        let e = st.sumsq - st.sum * st.sum / st.m as f64;
        let scale = (st.shift * st.shift + 1.0) * st.m as f64;
        if e > 1e-24 * scale { Some(e) } else { None }
    }

    /// The normalized coefficients `X_1..X_c` as (re, im), zeros for a constant window.
    pub fn coefficients(&self) -> Vec<(f64, f64)> {
        match self.centered_energy() {
            None => vec![(0.0, 0.0); self.coeffs],
            Some(e) => {
                let k = 1.0 / (self.state.m as f64 * e).sqrt();
                self.state.re.iter().zip(&self.state.im).map(|(r, i)| (r * k, i * k)).collect()
            }
        }
    }

    /// Energy fraction of the normalized window outside the kept coefficients (and their
    /// conjugates): `1 − 2 Σ |X_f|²`, clamped at 0.
    pub fn dropped_energy(&self) -> f64 {
        self.spectrum().dropped_energy()
    }

    /// What the queries read of the state ([`Spectrum`]): they are answered from it.
    pub fn spectrum(&self) -> Spectrum {
        Spectrum {
            n: self.n,
            m: self.state.m,
            centered: self.centered_energy().is_some(),
            coefficients: self.coefficients(),
        }
    }

    fn same_params(&self, other: &Dft) -> bool {
        self.interval_s.to_bits() == other.interval_s.to_bits()
            && self.basic == other.basic
            && self.window == other.window
            && self.coeffs == other.coeffs
    }

    fn params_text(&self) -> String {
        format!("[{}, {}, {}, {}]", self.interval_s, self.basic, self.window, self.coeffs)
    }

    /// The incrementally updated DFT of the committed window: (committed length, shift, sum,
    /// sum of squares, slides since the exact recomputation, re, im).
    pub(crate) fn derived(&self) -> (usize, [f64; 3], usize, &[f64], &[f64]) {
        let st = &self.state;
        (st.m, [st.shift, st.sum, st.sumsq], st.slides, &st.re, &st.im)
    }

    /// Replace the recomputed DFT by one carried over exactly (lengths checked by the caller).
    pub(crate) fn with_derived(
        mut self,
        m: usize,
        [shift, sum, sumsq]: [f64; 3],
        slides: usize,
        re: Vec<f64>,
        im: Vec<f64>,
    ) -> Self {
        let st = &mut self.state;
        (st.m, st.shift, st.sum, st.sumsq, st.slides, st.re, st.im) = (m, shift, sum, sumsq, slides, re, im);
        self
    }

    /// Rebuild from decoded raw state (the derived DFT is recomputed).
    pub(crate) fn with_raw_state(
        mut self,
        n: u64,
        buf: VecDeque<f64>,
        open: Option<(i64, f64)>,
        first_bucket: Option<i64>,
    ) -> Self {
        self.n = n;
        self.buf = buf;
        self.open = open;
        self.first_bucket = first_bucket;
        self.sync_phase();
        self.recompute();
        self
    }

    /// [`Synopsis::update_at`] for an item outside the open interval (or the first item).
    #[inline(never)]
    fn update_at_new_interval(&mut self, x: f64, time_ms: i64) {
        let bucket = self.bucket_of(time_ms);
        self.first_bucket.get_or_insert(bucket);
        match self.open {
            None => self.open = Some((bucket, x)),
            Some((ob, _)) if bucket <= ob => self.open = Some((ob, x)),
            Some((ob, ov)) => {
                self.push(ov);
                self.push_repeat(ov, bucket.abs_diff(ob) - 1);
                self.open = Some((bucket, x));
            }
        }
    }

    /// `time_ms.div_euclid(interval_ms)`, without the division when the time falls in the open
    /// interval or the next one (in-order items almost always do).
    #[inline]
    fn bucket_of(&self, time_ms: i64) -> i64 {
        let i = self.interval_ms;
        if let Some((ob, _)) = self.open
            && let Some(start) = ob.checked_mul(i)
            && let Some(d) = time_ms.checked_sub(start)
            && d >= 0
        {
            if d < i {
                return ob;
            }
            if d - i < i {
                return ob + 1;
            }
        }
        time_ms.div_euclid(i)
    }
}

impl Synopsis for Dft {
    fn kind(&self) -> Kind {
        Kind::Dft
    }

    /// One point per call (non-numeric and non-finite values are ignored).
    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        if let Datum::Num(x) = item
            && x.is_finite()
        {
            self.push(x);
        }
    }

    /// Aggregate into `interval`-second points by event time: last value per interval, empty
    /// intervals carry the previous point forward.
    fn update_at(&mut self, item: Datum<'_>, time_ms: i64) {
        let Datum::Num(x) = item else { return };
        if !x.is_finite() {
            return;
        }
        // Most items fall in the open interval: only its value changes.
        if let (Some((ob, _)), Some(_)) = (self.open, self.first_bucket)
            && ob.checked_mul(self.interval_ms).is_some_and(|start| {
                time_ms >= start && time_ms.checked_sub(start).is_some_and(|d| d < self.interval_ms)
            })
        {
            self.open = Some((ob, x));
            return;
        }
        self.update_at_new_interval(x, time_ms);
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<Dft>(Kind::Dft, other)?;
        if !self.same_params(other) {
            return Err(SynopsisError::Incompatible {
                kind: Kind::Dft,
                reason: format!("parameters differ: {} vs {}", self.params_text(), other.params_text()),
            });
        }
        let cap = self.cap() as u64;
        // Close self's open interval where other's items continue in a later interval.
        if let (Some((ob, ov)), Some(fb)) = (self.open, other.first_bucket) {
            if fb > ob {
                let gap = fb.abs_diff(ob) - 1;
                for _ in 0..(gap + 1).min(cap) {
                    self.push_raw(ov);
                }
                self.n += gap + 1;
            }
            // fb ≤ ob: other's first interval supersedes self's open one (last value wins).
            self.open = None;
        }
        for x in &other.buf {
            self.push_raw(*x);
        }
        self.n += other.n;
        if other.open.is_some() {
            self.open = other.open;
        }
        self.first_bucket = self.first_bucket.or(other.first_bucket);
        self.sync_phase();
        self.recompute();
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Vector => self.spectrum().vector(),
            Query::Total => Ok(self.spectrum().total()),
            q => Err(SynopsisError::UnsupportedQuery { kind: Kind::Dft, query: format!("{q:?}") }),
        }
    }

    fn estimate_pair(&self, other: &dyn Synopsis, query: &PairQuery) -> Result<Estimate, SynopsisError> {
        if *query != PairQuery::Correlation {
            return Err(SynopsisError::UnsupportedQuery { kind: Kind::Dft, query: format!("{query:?}") });
        }
        let other = downcast::<Dft>(Kind::Dft, other)?;
        if !self.same_params(other) {
            return Err(SynopsisError::Incompatible {
                kind: Kind::Dft,
                reason: format!("parameters differ: {} vs {}", self.params_text(), other.params_text()),
            });
        }
        self.spectrum().correlation(&other.spectrum())
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.buf.capacity() * 8 + self.coeffs * 4 * 8
    }
}

#[cfg(test)]
mod tests;
