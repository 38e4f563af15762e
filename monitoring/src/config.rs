//! The parameters every site and the root share, and the protocol they run.

use crate::error::MonitorError;
use crate::message::Channel;

/// Which protocol the sites and the root run for counts and frequent items (quantiles always
/// use the seed's summaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Protocol {
    /// The seed paper's BC / AC-with-turn-off / FI.
    Seed,
    /// Cormode & Yi's forward/backward tracking.
    ForwardBackward,
}

impl Protocol {
    /// Parse `seed` or `forward-backward`.
    ///
    /// ```
    /// use saams_monitoring::Protocol;
    /// assert_eq!(Protocol::parse("seed").unwrap(), Protocol::Seed);
    /// assert_eq!(Protocol::parse("forward-backward").unwrap(), Protocol::ForwardBackward);
    /// assert!(Protocol::parse("fb2").is_err());
    /// ```
    ///
    /// # Errors
    /// For any other name.
    pub fn parse(s: &str) -> Result<Protocol, MonitorError> {
        match s {
            "seed" => Ok(Protocol::Seed),
            "forward-backward" | "fb" => Ok(Protocol::ForwardBackward),
            other => Err(MonitorError::BadParameter(format!("unknown protocol {other:?} (seed | forward-backward)"))),
        }
    }

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Seed => "seed",
            Protocol::ForwardBackward => "forward-backward",
        }
    }
}

/// The parameters every site and the root share.
///
/// ```
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(4, 1000, 500, 0.1, Protocol::ForwardBackward).unwrap();
/// assert_eq!(cfg.phase_of(cfg.phase_start(3)), 3);
/// assert_eq!(cfg.phase_of(cfg.phase_start(3) - 1), 2);
/// assert!(Config::new(4, 1000, 1000, 0.1, Protocol::Seed).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// Number of sites `k`.
    pub sites: usize,
    /// Window length `W` in time units.
    pub window: i64,
    /// Tardiness `τ < W`.
    pub tardiness: i64,
    /// The error ε of every query.
    pub epsilon: f64,
    /// The protocol for counts and frequent items.
    pub protocol: Protocol,
    /// The error target of the count half of frequent items, `ε_c ∈ (0, 7ε/16]`; the item half
    /// gets `ε/2 − ε_c`. The seed uses `ε/24` (and `11ε/24`); [`Config::new`] picks that for
    /// [`Protocol::Seed`] and `ε/5` for [`Protocol::ForwardBackward`], whose cost is about
    /// `a/ε_c + b/ε_a` with the item side dearer (item ids), so it gets the larger share. Any split with `ε_c + ε_a ≤ ε/2` is correct: if `j`
    /// is returned, `c_j ≥ (φ − ε/2)(1 − ε_c)c − ε_a·c ≥ (φ − ε)c`; if not,
    /// `c_j < (φ − ε/2)(1 + ε_c)c + ε_a·c ≤ φc` (using `φ ≤ 1`).
    pub frequent_count_epsilon: f64,
}

impl Config {
    /// A validated configuration.
    ///
    /// # Errors
    /// When `sites` is 0, `window ≤ 0`, `tardiness ∉ [0, W)`, or `epsilon ∉ (0, 1)`.
    pub fn new(
        sites: usize,
        window: i64,
        tardiness: i64,
        epsilon: f64,
        protocol: Protocol,
    ) -> Result<Config, MonitorError> {
        let frequent_count_epsilon = match protocol {
            Protocol::Seed => epsilon / 24.0,
            Protocol::ForwardBackward => epsilon / 5.0,
        };
        let cfg = Config { sites, window, tardiness, epsilon, protocol, frequent_count_epsilon };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Check the ranges (see [`Config::new`]).
    ///
    /// # Errors
    /// As [`Config::new`].
    pub fn validate(&self) -> Result<(), MonitorError> {
        if self.sites == 0 {
            return Err(MonitorError::BadParameter("sites must be at least 1".into()));
        }
        if self.window <= 0 {
            return Err(MonitorError::BadParameter(format!("window must be positive, got {}", self.window)));
        }
        if !(0..self.window).contains(&self.tardiness) {
            return Err(MonitorError::BadParameter(format!(
                "tardiness must be in [0, window) = [0, {}), got {}",
                self.window, self.tardiness
            )));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(MonitorError::BadParameter(format!("epsilon must be in (0, 1), got {}", self.epsilon)));
        }
        let f = self.frequent_count_epsilon;
        if !(f > 0.0 && f <= 7.0 * self.epsilon / 16.0) {
            return Err(MonitorError::BadParameter(format!(
                "frequent_count_epsilon must be in (0, 7ε/16] = (0, {}], got {f}",
                7.0 * self.epsilon / 16.0
            )));
        }
        Ok(())
    }

    /// The error target of one channel.
    pub fn channel_epsilon(&self, channel: Channel) -> f64 {
        match channel {
            Channel::Count | Channel::Items | Channel::Quantiles => self.epsilon,
            Channel::FrequentTotal => self.frequent_count_epsilon,
            Channel::FrequentItems => self.epsilon / 2.0 - self.frequent_count_epsilon,
        }
    }

    /// The send threshold θ of one channel (half its target; for quantiles the discrepancy
    /// allowed between the root's and the site's group weights, 0.22ε of the site's count).
    pub fn theta(&self, channel: Channel) -> f64 {
        match channel {
            Channel::Quantiles => 0.22 * self.epsilon,
            ch => self.channel_epsilon(ch) / 2.0,
        }
    }

    /// Forward/backward: the share θ of the channel's target given to each of the backward and
    /// the forward part, relative to the reference total `R`: `(ε' − δ)/2` with `δ` the local
    /// counters' relative error, so `δ + θ + θ ≤ ε'` (a hair below, against rounding).
    pub fn fb_theta(&self, channel: Channel) -> f64 {
        let delta = match channel {
            Channel::Count | Channel::FrequentTotal => self.delta_total(),
            _ => self.delta_item(),
        };
        (self.channel_epsilon(channel) - delta) / 2.0 * (1.0 - 1e-9)
    }

    /// The cap `g` on a quantile group's interior (its weight apart from its boundary value), as
    /// a fraction of the site's count (0.25ε).
    pub fn quantile_group(&self) -> f64 {
        0.25 * self.epsilon
    }

    /// Relative error of a site's window count: `min(ε/72, ε_c/3)` (a third of the
    /// frequent-items count target, which a count tracker with `θ = ε'/2` allows:
    /// `θ(1 + δ_t) + δ_t ≤ ε'/2 + ε'²/6 + ε'/3 ≤ ε'`). The total counter's memory is
    /// proportional to `1/δ_t`.
    pub fn delta_total(&self) -> f64 {
        (self.epsilon / 72.0).min(self.frequent_count_epsilon / 3.0)
    }

    /// Error of a site's item counts, as a fraction of the site's count after the cut:
    /// `min(ε/16, ε_a/4)` with `ε_a = ε/2 − ε_c` the frequent-items item target, so at most a
    /// quarter of every item tracker's target (`ε_a ≤ ε`). Memory of the item records is
    /// proportional to `1/δ_i`.
    pub fn delta_item(&self) -> f64 {
        (self.epsilon / 16.0).min((self.epsilon / 2.0 - self.frequent_count_epsilon) / 4.0)
    }

    /// Rank error of the quantile sender's [`QuantileWindow`], as a fraction of the site's
    /// window count: `0.15ε`, so that `2(θ_q + δ_q) + g = 0.99ε ≤ ε` (module docs).
    pub fn delta_quantile(&self) -> f64 {
        0.15 * self.epsilon
    }

    /// Forward/backward phase length `W − τ`.
    pub fn phase_len(&self) -> i64 {
        self.window - self.tardiness
    }

    /// The phase running at time `t`.
    pub fn phase_of(&self, t: i64) -> i64 {
        (t - self.tardiness).div_euclid(self.phase_len())
    }

    /// When phase `i` starts: `i·(W − τ) + τ`.
    pub fn phase_start(&self, i: i64) -> i64 {
        i * self.phase_len() + self.tardiness
    }

    /// The split stamp `p_i = i·(W − τ)` of phase `i`.
    pub fn split(&self, i: i64) -> i64 {
        i * self.phase_len()
    }
}
