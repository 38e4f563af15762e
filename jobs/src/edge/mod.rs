//! The continuum: devices at the edge keep partial synopses next to their data and ship them to
//! the cloud job over Kafka, which merges them as one more source of partials.
//!
//! - [`shipment`]: the records of the partials topic (hello, a window's partials or raw values,
//!   goodbye), with a CRC;
//! - [`device`]: a device's open window and the choice, per window, of the smaller of its
//!   partials and its raw values (never more bytes than raw);
//! - [`intake`]: the cloud job's reader of the partials topic (exactly once per device, window
//!   and sequence; late, replayed and forged records refused);
//! - [`control`]: the control topic the job writes its live requests (with their fences) and
//!   its progress to, which devices follow;
//! - [`resident`]: groups whose states stay on their device, which ships their query views;
//! - [`asks`]: ad-hoc queries and SAVEs of resident synopses, answered by their device;
//! - [`snapshots`]: a device's snapshot store: the files the cloud sends for its LOADs, the
//!   states its SAVEs ship;
//! - [`resume`]: a device's state file, which makes its shipments exactly once across a
//!   restart, and [`kept`]: the states kept whole or resident it records, and [`site_state`]:
//!   the monitoring sites' copies;
//! - [`devices`]: the devices a cloud process hears from (`GET /devices`);
//! - [`monitor_site`]: the sites of monitored streams (`synopsisID` 14) a device runs, shipping
//!   the protocols' messages instead of the items;
//! - [`refusals`]: requests the cloud cannot carry out for its devices, refused on every path;
//! - [`reports`]: the processes' device tables, exchanged (`GET /devices` under `-n > 1`);
//! - [`relay`] and [`hops`]: a device's answer to an ask handed on as it comes, in the
//!   reader's process or across processes.
//!
//! Why a binary of its own rather than a `saams` subcommand: a device runs no timely dataflow,
//! takes none of the job's flags (workers, processes, checkpoints, HTTP) and has a few of its
//! own; `saams --help` stays the job's. Its loop (inputs, requests, the producer) is
//! [`crate::edge_device`].

pub mod asks;
pub mod budget;
pub mod control;
pub mod device;
pub mod devices;
pub mod hops;
pub mod intake;
pub mod kept;
pub mod monitor_site;
pub mod refusals;
pub mod relay;
pub mod reports;
pub mod resident;
pub mod resident_forms;
pub mod resume;
pub mod shipment;
pub mod site_state;
pub mod snapshots;
