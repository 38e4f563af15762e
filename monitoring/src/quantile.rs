//! A site's sliding-window rank structure for the quantile sender: additive rank error
//! `δ_q·c_σ` over the window (`c_σ` the site's window count), independent of per-item counts.
//!
//! # Blocks
//! The site's items are kept in *blocks* over disjoint stamp ranges `[lo, hi]`, oldest first,
//! exponential-histogram style, each with a mergeable value summary: a list of entries
//! `(v, n_v)` sorted by value and a one-sided uncertainty `u`, such that for every `x` the
//! block's count of items `≤ x` lies in `[est(x), est(x) + u]` with `est(x) = Σ_{v ≤ x} n_v`
//! (likewise for `< x`). A fresh block is exact (`u = 0`). Merging two blocks merge-sorts their
//! entries and adds their `u`. Compressing moves the counts of a run of consecutive entries to
//! the run's last value: `est` only drops, by at most the moved count at any `x` (only the run
//! containing `x` moves items across it), so a run whose moved count is `≤ b` adds `b` to `u`,
//! and the runs of a greedy pass each hold more than `b` items (`≤ n/b + 1` entries).
//! Every block keeps `u ≤ ⌊η·n⌋` (a merge compresses with half the remaining slack).
//!
//! # Caps and the window edge
//! A multi-stamp block holds at most `⌊2γL⌋` items, `L` = one plus the items of the newer
//! blocks at the last compaction (a lower bound of the site's items stamped `≥ hi`, which only
//! grows while the block is in the window); blocks that may still receive late items
//! (`hi ≥ now − τ`) are merged only to `⌊γL⌋` and only while their stamp span stays below
//! `W − τ`, so such a block never straddles the window edge. A late item joins the block
//! covering its stamp while that holds fewer items than its cap and is not packed (*Memory*
//! below), else an exact single-stamp *overlay* (weight 2, as the block's: the block is inside
//! the window), moved into its block by a later compaction where the cap allows; a single-stamp
//! block has no cap (it is never straddled). Blocks whose range straddles the edge are never
//! merged.
//!
//! # The estimate and its error
//! The estimate counts every block inside the window with weight 2 and the one block straddling
//! the edge `s = t − W` with weight 1 (half its items), in *half-item* units:
//! `R̂₂(x) = 2·Σ_inside est_b(x) + est_straddle(x)`. Errors in items, at every `x` and for both
//! `≤ x` and `< x`: an inside block at most `u_b ≤ η·n_b` (sum `≤ η·c_σ`); the straddling block
//! (`n` items, `t` of them after the cut) contributes `est/2` where the truth is in
//! `[0, est + u]`: at most `n/2 + u ≤ γL + η·2γL ≤ (γ + 2ηγ)·c_σ` as `L ≤ c_σ` (the newer items
//! and the block's item at `hi > s` are all in the window). Total: `(η + γ + 2ηγ)·c_σ ≤ δ_q·c_σ`
//! with `γ = 0.95·δ_q`, `η = 0.03·δ_q` (`0.03 + 0.95·(1 + 2η) ≤ 0.998` as `δ_q ≤ 0.3`). On the
//! monitored data the blocks are small enough that `η·n_b` rarely allows a compression, so the
//! budget goes almost all to `γ`, which sets the number of blocks.
//!
//! # Memory
//! `O((1/γ)·log n)` blocks (as [`crate::SlidingCounter`]), each holding at most
//! `min(distinct values, ⌊η·n⌋-compressed entries)` entries: an exact block costs its distinct
//! values, a compressed one `O(1/η)` entries per halving of its slack. On streams with few
//! distinct values per block (prices, ids of a steady population) that is far below the window.
//! Every compaction *packs* the blocks where that saves words: LEB128 varints of `hi − lo`, `n` and
//! `u`, then of the first value, then of each value's gap to the previous one, each followed by its
//! count (a block's values are sorted, so the gaps of `m` values spread over a span `D` take about
//! `log₁₂₈(D/m) + 1` bytes each); `lo` stays a word (blocks are searched by range). A packed block
//! changes only by a merge or an overlay stamp moving in (unpack, rebuild, pack); arrivals for it
//! wait in the overlay, and a compaction runs after every `blocks/8 + 16` arrivals as well as when
//! the blocks grew by a quarter, so at most that many entries are plain beyond the blocks that do
//! not gain by packing. Memory counts a packed block as `lo`, one length word and its bytes rounded
//! up to words, a plain one 2 words per entry plus 4 for the header; packing is kept only where it
//! is smaller (the header's three varints take at most 30 bytes against 3 words, an entry at most
//! 11 bytes against 16). This is a constant factor, not a change of the asymptotics: the entries
//! are still `min(distinct values, n_b)` per uncompressed block. On the monitored data it is 3–6
//! times smaller (ship ids and prices in cents are dense in their span: about 0.4 words per window
//! item with all values distinct, against 2 plain), and bounds in [`crate::sim`] keep the plain
//! cost. Compression with a larger `η` does not pay on these windows: a block compresses only once
//! `2γL > 2/η`, i.e. `L > 1/(γη) ≥ 4/δ_q²` (`1.8·10⁴` items at ε = 0.1), and moving budget from `γ`
//! to `η` multiplies the blocks (measured: `γ = 0.7δ_q, η = 0.2δ_q` and `0.84/0.1` both cost 5–20%
//! more than `0.95/0.03`).
//!
//! The sender reads changes of `R̂₂` as `(value, Δ)` pairs ([`QuantileWindow::drain_changes`]):
//! an arrival, a compression, a block starting to straddle or leaving the window.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::error::{MonitorError, check_window};

/// The straddle share `γ` and the summary share `η` of `δ_q` (module docs).
const GAMMA_SHARE: f64 = 0.95;
const ETA_SHARE: f64 = 0.03;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Block {
    lo: i64,
    /// The cap `⌊2γL⌋` at the last compaction (multi-stamp blocks).
    cap: u64,
    /// The weight the sender holds for this block: 2 inside the window, 1 straddling its edge.
    mult: u64,
    /// The rest of the range, the counts and the value summary.
    body: Body,
}

/// A block's newest stamp `hi`, its item count `n`, its one-sided rank uncertainty `u` (module
/// docs) and its `(value, count)` entries ascending by value: plain, or packed where that is
/// smaller (module docs, *Memory*) as LEB128 varints of `hi − lo`, `n`, `u`, then the first
/// value, then each value's gap to the previous one, each followed by its count. A packed block
/// only changes by a merge or an overlay stamp moving in, which unpack, rebuild and pack again.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
enum Body {
    Plain { hi: i64, n: u64, u: u64, entries: Vec<(u64, u64)> },
    Packed(Vec<u8>),
}

fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8 & 0x7f) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Reads what [`Block::pack`] wrote; stops at the end of the bytes.
struct Unpack<'a> {
    bytes: &'a [u8],
    pos: usize,
    prev: Option<u64>,
}

impl Unpack<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut x = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = *self.bytes.get(self.pos)?;
            self.pos += 1;
            x |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte & 0x80 == 0 {
                return Some(x);
            }
            shift += 7;
        }
    }

    /// The header `(hi − lo, n, u)`, leaving the reader at the first entry.
    fn header(bytes: &[u8]) -> (Unpack<'_>, [u64; 3]) {
        let mut r = Unpack { bytes, pos: 0, prev: None };
        let h = [r.varint().unwrap_or(0), r.varint().unwrap_or(0), r.varint().unwrap_or(0)];
        (r, h)
    }
}

impl Iterator for Unpack<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let gap = self.varint()?;
        let v = match self.prev {
            None => gap,
            Some(p) => p.wrapping_add(gap),
        };
        let c = self.varint()?;
        self.prev = Some(v);
        Some((v, c))
    }
}

impl Block {
    fn plain(lo: i64, hi: i64, n: u64, u: u64, cap: u64, mult: u64, entries: Vec<(u64, u64)>) -> Block {
        Block { lo, cap, mult, body: Body::Plain { hi, n, u, entries } }
    }

    fn header(&self) -> (i64, u64, u64) {
        match &self.body {
            Body::Plain { hi, n, u, .. } => (*hi, *n, *u),
            Body::Packed(bytes) => {
                let [span, n, u] = Unpack::header(bytes).1;
                (self.lo.saturating_add(span as i64), n, u)
            }
        }
    }

    fn hi(&self) -> i64 {
        self.header().0
    }

    fn n(&self) -> u64 {
        self.header().1
    }

    fn u(&self) -> u64 {
        self.header().2
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match &self.body {
            Body::Plain { entries, .. } => Box::new(entries.iter().copied()),
            Body::Packed(bytes) => Box::new(Unpack::header(bytes).0),
        }
    }

    fn to_vec(&self) -> Vec<(u64, u64)> {
        self.iter().collect()
    }

    fn is_packed(&self) -> bool {
        matches!(self.body, Body::Packed(_))
    }

    /// Make the body plain (if packed) and give access to it.
    fn plain_mut(&mut self) -> (&mut u64, &mut Vec<(u64, u64)>) {
        if self.is_packed() {
            let (hi, n, u) = self.header();
            self.body = Body::Plain { hi, n, u, entries: self.to_vec() };
        }
        match &mut self.body {
            Body::Plain { n, entries, .. } => (n, entries),
            Body::Packed(_) => unreachable!("unpacked above"),
        }
    }

    /// Pack the body where that takes fewer words.
    fn pack(&mut self) {
        let Body::Plain { hi, n, u, entries } = &self.body else { return };
        let mut out = Vec::with_capacity(entries.len() * 4 + 6);
        put_varint(&mut out, hi.abs_diff(self.lo));
        put_varint(&mut out, *n);
        put_varint(&mut out, *u);
        let mut prev: Option<u64> = None;
        for &(v, c) in entries {
            put_varint(&mut out, prev.map_or(v, |p| v - p));
            put_varint(&mut out, c);
            prev = Some(v);
        }
        out.shrink_to_fit();
        let packed = Body::Packed(out);
        if Block::body_words(&packed) < Block::body_words(&self.body) {
            self.body = packed;
        }
    }

    /// Words held besides the cap: `lo`, `hi`, `n`, `u` and 2 per entry when plain; `lo`, the
    /// byte length and the bytes rounded up to words when packed.
    fn body_words(body: &Body) -> usize {
        match body {
            Body::Plain { entries, .. } => 4 + 2 * entries.len(),
            Body::Packed(bytes) => 2 + bytes.len().div_ceil(8),
        }
    }

    /// Add `weight·c` for every entry with value in `range` to `acc`.
    fn add_weights(&self, range: &impl std::ops::RangeBounds<u64>, weight: u64, acc: &mut BTreeMap<u64, u64>) {
        match &self.body {
            Body::Plain { entries, .. } => add_plain_weights(entries, range, weight, acc),
            Body::Packed(_) => {
                let it = self.iter().skip_while(|&(v, _)| match range.start_bound() {
                    std::ops::Bound::Included(&x) => v < x,
                    std::ops::Bound::Excluded(&x) => v <= x,
                    std::ops::Bound::Unbounded => false,
                });
                add_run(it, range, weight, acc);
            }
        }
    }
}

/// Add `weight·c` for the entries of `it` while their values stay in `range`.
fn add_run(
    it: impl Iterator<Item = (u64, u64)>,
    range: &impl std::ops::RangeBounds<u64>,
    weight: u64,
    acc: &mut BTreeMap<u64, u64>,
) {
    for (v, c) in it {
        if !range.contains(&v) {
            break;
        }
        *acc.entry(v).or_insert(0) += weight * c;
    }
}

/// [`Entries::add_weights`] for plain pairs (binary search to the range's start).
fn add_plain_weights(
    e: &[(u64, u64)],
    range: &impl std::ops::RangeBounds<u64>,
    weight: u64,
    acc: &mut BTreeMap<u64, u64>,
) {
    let start = match range.start_bound() {
        std::ops::Bound::Included(&x) => e.partition_point(|&(v, _)| v < x),
        std::ops::Bound::Excluded(&x) => e.partition_point(|&(v, _)| v <= x),
        std::ops::Bound::Unbounded => 0,
    };
    add_run(e[start..].iter().copied(), range, weight, acc);
}

fn add_entry(entries: &mut Vec<(u64, u64)>, v: u64, c: u64) {
    match entries.binary_search_by_key(&v, |&(x, _)| x) {
        Ok(i) => entries[i].1 += c,
        Err(i) => entries.insert(i, (v, c)),
    }
}

fn merge_entries(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let take_a = j >= b.len() || (i < a.len() && a[i].0 <= b[j].0);
        let e = if take_a {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        match out.last_mut() {
            Some(last) if last.0 == e.0 => last.1 += e.1,
            _ => out.push(e),
        }
    }
    out
}

/// Greedy compression with budget `b`: runs of consecutive entries whose counts, all but the
/// last, sum to at most `b` become one entry at the run's last value; every run but the last
/// holds more than `b` items. Returns the largest moved count (the added uncertainty) and logs
/// the moves (times `mult`) into `log`.
fn compress(entries: &mut Vec<(u64, u64)>, b: u64, mult: u64, log: &mut HashMap<u64, i64>) -> u64 {
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(entries.len());
    let mut moved_max = 0u64;
    let mut i = 0;
    while i < entries.len() {
        let (mut moved, mut j) = (0u64, i);
        while j + 1 < entries.len() && moved + entries[j].1 <= b {
            moved += entries[j].1;
            j += 1;
        }
        let last = entries[j].0;
        if moved > 0 {
            for &(v, c) in &entries[i..j] {
                *log.entry(v).or_insert(0) -= (mult * c) as i64;
            }
            *log.entry(last).or_insert(0) += (mult * moved) as i64;
        }
        out.push((last, moved + entries[j].1));
        moved_max = moved_max.max(moved);
        i = j + 1;
    }
    *entries = out;
    moved_max
}

/// The sliding-window rank structure of one site (module docs): insert arrivals, expire at
/// the times [`QuantileWindow::next_change`] names, and read the estimate's changes.
///
/// ```
/// use saams_monitoring::QuantileWindow;
/// let mut q = QuantileWindow::new(100, 0, 0.05).unwrap();
/// for t in 0..300 {
///     q.insert(t, t, (t % 10) as u64).unwrap();
/// }
/// q.expire(299);
/// // The window (199, 299] holds 10 copies of each value 0..10: 50 items are ≤ 4.
/// let est = q.rank2(4) as f64 / 2.0;
/// assert!((est - 50.0).abs() <= 0.05 * 100.0);
/// assert!(q.blocks() < 100, "old stamps were merged");
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct QuantileWindow {
    window: i64,
    tardiness: i64,
    gamma: f64,
    eta: f64,
    blocks: VecDeque<Block>,
    overlay: BTreeMap<i64, Vec<(u64, u64)>>,
    compact_at: usize,
    /// Arrivals since the last compaction (each may have left a block unpacked).
    since_compact: usize,
    changes: HashMap<u64, i64>,
    /// The latest time seen (for the memory count of unsealed blocks).
    now: i64,
}

impl QuantileWindow {
    /// A structure for a window of `window` time units, items at most `tardiness` late, and
    /// rank error `delta` times the window count.
    ///
    /// # Errors
    /// When `window ≤ 0`, `tardiness ∉ [0, window)`, or `delta ∉ (0, 0.3]`.
    pub fn new(window: i64, tardiness: i64, delta: f64) -> Result<Self, MonitorError> {
        check_window(window, tardiness)?;
        if !(delta > 0.0 && delta <= 0.3) {
            return Err(MonitorError::BadParameter(format!("delta must be in (0, 0.3], got {delta}")));
        }
        Ok(QuantileWindow {
            window,
            tardiness,
            gamma: GAMMA_SHARE * delta,
            eta: ETA_SHARE * delta,
            blocks: VecDeque::new(),
            overlay: BTreeMap::new(),
            compact_at: 16,
            since_compact: 0,
            changes: HashMap::new(),
            now: i64::MIN,
        })
    }

    fn log(&mut self, v: u64, d: i64) {
        *self.changes.entry(v).or_insert(0) += d;
    }

    /// Count `item` stamped `stamp`, arriving at `now` (after [`QuantileWindow::expire`] at
    /// `now`).
    ///
    /// # Errors
    /// When the stamp is in the future or more than the tardiness late.
    pub fn insert(&mut self, now: i64, stamp: i64, item: u64) -> Result<(), MonitorError> {
        if stamp > now || stamp < now - self.tardiness {
            return Err(MonitorError::BadInput(format!(
                "item stamped {stamp} arriving at {now} breaks the tardiness {}",
                self.tardiness
            )));
        }
        self.expire(now);
        let fresh = Block::plain(stamp, stamp, 1, 0, 1, 2, vec![(item, 1)]);
        let mult = match self.blocks.back_mut() {
            None => {
                self.blocks.push_back(fresh);
                2
            }
            Some(b) if b.hi() < stamp => {
                self.blocks.push_back(fresh);
                2
            }
            Some(_) => {
                let idx = self.blocks.partition_point(|b| b.hi() < stamp);
                let b = &mut self.blocks[idx];
                if b.lo > stamp {
                    self.blocks.insert(idx, fresh);
                    2
                } else if (b.lo == b.hi() || b.n() < b.cap) && !(b.is_packed() && b.mult == 2) {
                    let (n, entries) = b.plain_mut();
                    *n += 1;
                    add_entry(entries, item, 1);
                    b.mult
                } else {
                    // No room, or packed: an exact overlay stamp (weight 2 like the block's) until a
                    // compaction moves it into its block.
                    add_entry(self.overlay.entry(stamp).or_default(), item, 1);
                    2
                }
            }
        };
        self.log(item, mult as i64);
        let units = self.blocks.len() + self.overlay.len();
        self.since_compact += 1;
        if units > self.compact_at || self.since_compact > self.blocks.len() / 8 + 16 {
            self.since_compact = 0;
            self.compact(now);
            let units = self.blocks.len() + self.overlay.len();
            self.compact_at = units + units / 4 + 16;
        }
        Ok(())
    }

    /// Apply the window edge at `now`: blocks (and overlay stamps) stamped `≤ now − W` leave,
    /// and the oldest block starts straddling when its `lo` leaves.
    pub fn expire(&mut self, now: i64) {
        self.now = self.now.max(now);
        let edge = now - self.window;
        while self.blocks.front().is_some_and(|b| b.hi() <= edge) {
            let b = self.blocks.pop_front().expect("checked");
            for (v, c) in b.iter() {
                self.log(v, -((b.mult * c) as i64));
            }
        }
        if let Some(b) = self.blocks.front_mut()
            && b.lo <= edge
            && b.mult == 2
        {
            b.mult = 1;
            let entries = b.to_vec();
            for (v, c) in entries {
                self.log(v, -(c as i64));
            }
        }
        while let Some((&s, _)) = self.overlay.first_key_value() {
            if s > edge {
                break;
            }
            let (_, entries) = self.overlay.pop_first().expect("checked");
            for (v, c) in entries {
                self.log(v, -2 * c as i64);
            }
        }
    }

    /// The next time the estimate changes without an arrival.
    pub fn next_change(&self, now: i64) -> Option<i64> {
        let b = self
            .blocks
            .front()
            .map(|b| if b.lo + self.window > now { b.lo + self.window } else { b.hi() + self.window });
        let o = self.overlay.first_key_value().map(|(&s, _)| s + self.window);
        match (b, o) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    /// Merge blocks newest first under the caps (module docs), then move overlay stamps into
    /// their blocks where there is room.
    fn compact(&mut self, now: i64) {
        if self.blocks.is_empty() {
            return;
        }
        let (seal, edge) = (now - self.tardiness, now - self.window);
        let span = self.window - self.tardiness;
        let (gamma, eta) = (self.gamma, self.eta);
        let mut log = std::mem::take(&mut self.changes);
        let mut newer = 0u64;
        let mut out: Vec<Block> = Vec::with_capacity(self.blocks.len());
        let mut cur = self.blocks.pop_back().expect("non-empty");
        while let Some(b) = self.blocks.pop_back() {
            let l = (newer + 1) as f64;
            let (cur_hi, cur_n, cur_u) = cur.header();
            let (b_n, b_u) = (b.n(), b.u());
            let sealed = cur_hi < seal;
            let limit = if sealed { (2.0 * gamma * l).floor() } else { (gamma * l).floor() } as u64;
            let ok =
                b.lo > edge && cur.mult == 2 && b.mult == 2 && cur_n + b_n <= limit && (sealed || cur_hi - b.lo < span);
            if ok {
                let n = cur_n + b_n;
                let mut entries = merge_entries(&b.to_vec(), &cur.to_vec());
                let mut u = cur_u + b_u;
                let allowed = (eta * n as f64).floor() as u64;
                let slack = allowed.saturating_sub(u);
                if slack >= 2 && entries.len() > 4 {
                    u += compress(&mut entries, slack / 2, 2, &mut log);
                }
                cur = Block::plain(b.lo, cur_hi, n, u, (2.0 * gamma * l).floor() as u64, 2, entries);
            } else {
                cur.cap = cur.cap.max((2.0 * gamma * l).floor() as u64);
                newer += cur_n;
                out.push(cur);
                cur = b;
            }
        }
        let l = (newer + 1) as f64;
        cur.cap = cur.cap.max((2.0 * gamma * l).floor() as u64);
        out.push(cur);
        self.blocks.extend(out.into_iter().rev());
        // Pack every block where that saves words (late arrivals for a packed block wait in the
        // overlay, moved in below).
        for b in self.blocks.iter_mut() {
            b.pack();
        }
        self.changes = log;
        if !self.overlay.is_empty() {
            let overlay = std::mem::take(&mut self.overlay);
            for (stamp, entries) in overlay {
                let o: u64 = entries.iter().map(|&(_, c)| c).sum();
                let idx = self.blocks.partition_point(|b| b.hi() < stamp);
                match self.blocks.get_mut(idx) {
                    Some(b) if b.lo <= stamp && b.mult == 2 && (b.lo == b.hi() || b.n() + o <= b.cap) => {
                        let was_packed = b.is_packed();
                        let (n, old) = b.plain_mut();
                        *n += o;
                        *old = merge_entries(old, &entries);
                        if was_packed {
                            b.pack();
                        }
                    }
                    _ => {
                        self.overlay.insert(stamp, entries);
                    }
                }
            }
        }
    }

    /// The changes of the estimate `R̂₂` since the last call, as `(value, Δ in half items)`
    /// ascending by value (zero changes left out).
    pub fn drain_changes(&mut self) -> Vec<(u64, i64)> {
        let mut out: Vec<(u64, i64)> = self.changes.drain().filter(|&(_, d)| d != 0).collect();
        out.sort_unstable();
        out
    }

    /// `R̂₂` restricted to the values in `range`, aggregated by value, ascending: the weight in
    /// half items at which the estimate steps at each value.
    pub fn weights(&self, range: impl std::ops::RangeBounds<u64> + Clone) -> Vec<(u64, u64)> {
        let mut acc: BTreeMap<u64, u64> = BTreeMap::new();
        for b in &self.blocks {
            b.add_weights(&range, b.mult, &mut acc);
        }
        for entries in self.overlay.values() {
            add_plain_weights(entries, &range, 2, &mut acc);
        }
        acc.into_iter().filter(|&(_, w)| w > 0).collect()
    }

    /// `R̂₂(x)`: the estimated number of window items `≤ x`, in half items, as of the last
    /// [`QuantileWindow::expire`] (error `δ_q` times the window count, module docs).
    pub fn rank2(&self, x: u64) -> u64 {
        self.weights(..=x).iter().map(|&(_, w)| w).sum()
    }

    /// Blocks held (overlay stamps not included).
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Memory in words: per plain block its range, count and uncertainty (4) and 2 per entry,
    /// per packed block its `lo`, its byte length and its bytes rounded up to words (module
    /// docs); per block its cap while it may still receive late items (newest stamp
    /// `≥ now − τ`); per overlay stamp 1 plus 2 per entry. (Whether a block straddles the edge
    /// follows from its range.)
    pub fn memory_words(&self) -> usize {
        let seal = self.now.saturating_sub(self.tardiness);
        self.blocks.iter().map(|b| usize::from(b.hi() >= seal) + Block::body_words(&b.body)).sum::<usize>()
            + self.overlay.values().map(|e| 1 + 2 * e.len()).sum::<usize>()
    }
}
