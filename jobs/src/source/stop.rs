//! Stopping a job that reads until told to (an unbounded `--generate`, Kafka, a long file): SIGINT
//! and SIGTERM raise one process-wide flag that the reading loops poll. A job that sees it stops
//! reading, closes its open windows (their answers are written) and exits normally with its
//! summary. A second signal ends the process at once with status 130, for a job that does not get
//! round to looking (e.g. blocked reading stdin).
//!
//! ```
//! use saams_jobs::source::stop::StopFlag;
//! let flag = StopFlag::new();
//! let seen_by_a_worker = flag.clone();
//! assert!(!seen_by_a_worker.raised());
//! flag.raise();
//! assert!(seen_by_a_worker.raised());
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A flag that, once raised, tells every reading loop holding a clone of it to stop.
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicBool>);

/// The process' signal-raised flag, or why its handlers could not be installed.
static SIGNALLED: OnceLock<Result<StopFlag, String>> = OnceLock::new();

impl StopFlag {
    /// A flag that only [`raise`](Self::raise) raises (no signal handler).
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// The process-wide flag raised by SIGINT and SIGTERM. The first call installs the handlers
    /// (the first signal raises the flag, a second one exits with status 130); later calls return
    /// the same flag, so every part of a job that stops on a signal can ask for it.
    ///
    /// # Errors
    /// When the operating system refuses the handlers.
    pub fn install() -> Result<StopFlag, String> {
        SIGNALLED
            .get_or_init(|| {
                let flag = StopFlag::new();
                for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                    // Registered first, so it sees the flag as the previous signal left it.
                    signal_hook::flag::register_conditional_shutdown(signal, 130, flag.0.clone())
                        .and_then(|_| signal_hook::flag::register(signal, flag.0.clone()))
                        .map_err(|e| format!("cannot install the signal handler: {e}"))?;
                }
                Ok(flag)
            })
            .clone()
    }

    /// Raise the flag (as a signal does).
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// True once the flag was raised.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_hands_out_one_flag_for_the_process() {
        let (a, b) = (StopFlag::install().expect("handlers"), StopFlag::install().expect("handlers"));
        assert!(Arc::ptr_eq(&a.0, &b.0), "every caller sees the same signal");
        // A private flag is not the process' flag: raising it stops nothing else.
        let private = StopFlag::new();
        private.raise();
        assert!(private.raised() && !Arc::ptr_eq(&private.0, &a.0));
    }
}
