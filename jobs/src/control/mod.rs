//! The control plane: how requests enter the job.
//!
//! - [`intake`]: requests as read from files, stdin and the request topic, vetted against the
//!   reference's request class (unknown fields warned about once and counted, or refused with
//!   `--strict-requests`).

pub mod intake;
