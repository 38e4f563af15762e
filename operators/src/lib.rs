//! Timely operators that maintain saams synopses: one operator per file.
#![deny(missing_docs)]
