//! The wall clock in Unix milliseconds, as the job's files and reports record it (checkpoint
//! manifests, hand-off requests, the writer lock's holder, the autoscaler's last decision).
//!
//! Why one function: six places computed it inline, three ways, and for a clock set before 1970
//! all gave 0 but a test, which panicked. Here it is 0, as the files that store it read an unset
//! time; and a value past `u64` milliseconds (half a billion years) saturates instead of
//! wrapping.

/// Now, in milliseconds since the Unix epoch (0 if the clock is set before it).
///
/// ```
/// use saams_jobs::clock::now_unix_ms;
/// let (a, b) = (now_unix_ms(), now_unix_ms());
/// assert!(a > 1_600_000_000_000, "after September 2020: {a}");
/// assert!(b >= a || a - b < 1_000, "a clock stepped back by a second or more between two reads");
/// ```
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
