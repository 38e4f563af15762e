//! Timely operators that maintain saams synopses, one operator per file:
//!
//! - [`split_monitored::SplitMonitored::split_monitored`]: values of monitored streams split off
//!   the routed values, whole containers passed on;
//! - [`registry_join::JoinRegistry::join_registry`]: routed values meet the registry (a
//!   differential collection arranged by dataset and stream) at their window;
//! - [`update::UpdateSynopses::update_synopses`]: routing pacts (key-, partition- and
//!   window-based), per-window buffering in event-time order, synopsis updates;
//! - [`merge_tree::MergeTree::merge_stage`]: one stage of the log2(W) tree merge of partials;
//! - [`fold::FoldPartials::fold_partials`]: merged state and answers at each synopsis' home;
//! - [`pairs::AnswerPairs::answer_pairs`]: queries over pairs of synopses (correlation, similarity,
//!   inner product) and continuous set-valued queries;
//! - [`changes::SetChanges::set_changes`]: continuous set-valued answers as changes (+member /
//!   −member) of a differential collection.
//!
//! [`plan::Plan`] is what every worker compiles from the broadcast request script; which of its
//! synopses are registered at which window comes from the registry collection.
//!
//! Modules depend one way: plain data ([`record`], [`ask`], [`out`], [`registry`],
//! [`window`], [`checkpoint`]) below [`plan`], the plan below the operators and the answer formatting
//! ([`answer`]) they share; no module uses one above it. What a synopsis kind can do (merge
//! exactly, take numbers only, reduce at every merge stage) is asked of the kind
//! ([`saams::Kind`]), never decided here by matching its variants.
//!
//! A whole pipeline on one worker: a Count-Min on stream `A`, three values in the first minute.
//!
//! ```
//! use std::{cell::RefCell, rc::Rc, sync::Arc};
//! use saams_operators::{plan::SnapshotStore, *};
//! use timely::dataflow::operators::{Input, Inspect};
//!
//! struct NoFiles;
//! impl SnapshotStore for NoFiles {
//!     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
//!     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
//!     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
//! }
//! let requests = saams::api::request::parse_requests(
//!     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
//!        {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","Continues"],"requestID":9}"#,
//! );
//! let lines = timely::execute_directly(move |worker| {
//!     let plan = Rc::new(RefCell::new(Plan::build(&requests, 1, 60_000, Arc::new(NoFiles))));
//!     let out = Rc::new(RefCell::new(Vec::new()));
//!     let sink = out.clone();
//!     let mut input = worker.dataflow::<u64, _, _>(|scope| {
//!         let (input, stream) = scope.new_input::<Vec<Rec>>();
//!         stream
//!             .update_synopses(plan.clone())
//!             .fold_partials(plan.clone())
//!             .answer_pairs(plan.clone())
//!             .set_changes(plan.clone())
//!             .inspect(move |line: &String| sink.borrow_mut().push(line.clone()));
//!         input
//!     });
//!     let per_stream = plan.borrow().routes("F", "A").0.to_vec();
//!     for (seq, x) in [2.5, 2.5, 7.0].into_iter().enumerate() {
//!         input.send(Rec { group: per_stream[0], time: 1_000 * seq as i64, seq: seq as u64, val: Val::Num(x) });
//!     }
//!     drop(input);
//!     while worker.step() {}
//!     out.take()
//! });
//! assert_eq!(lines.len(), 1);
//! assert!(lines[0].starts_with(r#"{"requestID":9,"synopsisID":1,"kind":"CountMin","streamID":"A""#));
//! assert!(lines[0].contains(r#""estimate":2,"#) && lines[0].contains(r#""tuples":3}"#));
//! ```
#![deny(missing_docs)]

pub mod answer;
pub mod ask;
pub mod changes;
pub mod checkpoint;
pub mod device_part;
pub mod device_replies;
pub mod fold;
pub mod introspection;
pub mod merge_tree;
pub mod monitor;
pub mod out;
pub mod pair_ask;
pub mod pairs;
pub mod plan;
pub mod query_view;
pub mod record;
pub mod registry;
pub mod registry_join;
pub mod split_monitored;
pub mod update;
pub mod window;

pub use changes::SetChanges;
pub use fold::FoldPartials;
pub use merge_tree::MergeTree;
pub use out::Out;
pub use pairs::AnswerPairs;
pub use plan::routing::merge_stages;
pub use plan::{Plan, SnapshotStore};
pub use record::{Partial, Rec, RecBatch, Snapshot, SynBox, Val};
pub use registry_join::JoinRegistry;
pub use split_monitored::SplitMonitored;
pub use update::UpdateSynopses;
