//! `set_changes`: continuous set-valued answers — correlated or similar stream pairs (DFT, LSH),
//! frequent items (Lossy Counting, Sticky Sampling, FrequentItems) — emitted as changes of the
//! set, changelog style, through differential dataflow.
//!
//! Every continuous set-valued query is a differential collection of its members (`(query,
//! member)`), timestamped by window (its [`Plan::close_time`]): the members of the set answered at
//! window `w` enter with +1 at `w` and the members of the query's previous answered set leave with
//! −1 at `w`, so the
//! collection's content at any window is the latest answered set. A query is answered at the
//! windows in which one of its synopses changed (otherwise its set stands); a window whose answer
//! is an error (an error line) answers the empty set. `consolidate()` cancels the members that
//! stayed; what is left at `w` are exactly the set's changes at that window's close, which become
//! one estimation line per change at the query's home worker:
//!
//! - `"change":"+"`, `"member"`, `"estimate"`: the member entered the set; the estimate is its
//!   value at that window (the pair's correlation or similarity, the item's count);
//! - `"change":"-"`, `"member"`: the member left the set.
//!
//! A member that stays yields no line, so a consumer rebuilds the current set by applying the
//! changes in window order, as with a Kafka Streams or Flink changelog keyed by the member.
//! Only these small answer sets go through differential, never tuples. Ad-hoc set-valued queries
//! answer their whole set once (as [`Answered::Line`]s, which pass through).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use differential_dataflow::AsCollection;
use saams::Value;
use saams::api::estimation::Answer;
use saams::api::window::{Span, WindowType};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Capability, Concat, OkErr};

use crate::plan::Plan;

/// A continuous set-valued query's answer at one window close, with the previous answered set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetAnswer {
    /// The query ([`crate::plan::Routing::pair_queries`] index).
    pub query: u32,
    /// The window (start, ms) whose close produced it.
    pub window: u64,
    /// The first window the answer covers (its synopsis' first window: landmark synopses only).
    pub since: u64,
    /// Items the query's synopsis has summarized.
    pub tuples: u64,
    /// The set: members as JSON text with their values, sorted by member, no duplicates.
    pub members: Vec<(String, f64)>,
    /// The members of the query's previous answered set (empty at its first answer).
    pub previous: Vec<String>,
}

/// What [`crate::pairs::AnswerPairs::answer_pairs`] emits: finished lines, and set answers that
/// still have to become changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Answered {
    /// One estimation, as a JSON line (no newline).
    Line(String),
    /// A continuous set-valued answer.
    Set(SetAnswer),
}

/// A set member (an item) as JSON text: whole numbers without a fraction, as estimation lines
/// write them, so a member reads the same in whole-set answers and in changes.
///
/// ```
/// use saams::Value;
/// use saams_operators::changes::member_text;
/// assert_eq!(member_text(&Value::Num(100.0)), "100");
/// assert_eq!(member_text(&Value::Num(6.0654)), "6.0654");
/// assert_eq!(member_text(&Value::Str("a\"b".into())), r#""a\"b""#);
/// ```
pub fn member_text(v: &Value) -> String {
    match v {
        Value::Num(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => (*x as i64).to_string(),
        Value::Num(x) => serde_json::Number::from_f64(*x).map_or_else(|| "null".to_string(), |n| n.to_string()),
        Value::Str(s) => Json::String(s.clone()).to_string(),
    }
}

/// One consolidated change: `((query, member), window, +1 | −1)`.
type Change = ((u32, String), u64, isize);

/// Changes and set answers of one window, waiting for both inputs to pass it.
type Waiting = (Capability<u64>, Vec<((u32, String), isize)>, HashMap<u32, SetAnswer>);

fn change_line(plan: &Plan, w: u64, (query, member): (u32, String), diff: isize, set: Option<&SetAnswer>) -> String {
    let q = &plan.routing.pair_queries[query as usize];
    let s = &plan.routing.synopses[q.syn as usize];
    let value = match set {
        Some(a) if diff > 0 => a.members.binary_search_by(|(m, _)| m.cmp(&member)).ok().map(|i| a.members[i].1),
        _ => None,
    };
    let answer = Answer::Change { added: diff > 0, member, value };
    let start = set.map_or(w, |a| a.since) as i64;
    let span = Span::new(WindowType::Landmark, start, w as i64 + plan.routing.window_ms);
    crate::answer::query_line(s, &q.reg, Some(span), set.map(|a| a.tuples), &answer)
}

/// Extension trait: turn continuous set answers into changes.
pub trait SetChanges<'scope> {
    /// Pass answer lines through and replace every continuous set answer by the lines of the
    /// set's changes at that window (none when the set did not change).
    fn set_changes(self, plan: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<String>>;
}

impl<'scope> SetChanges<'scope> for Stream<'scope, u64, Vec<Answered>> {
    fn set_changes(self, plan: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<String>> {
        let (lines, sets) = self.ok_err::<Vec<String>, _, Vec<SetAnswer>, _, _>(|a| match a {
            Answered::Line(l) => Ok(l),
            Answered::Set(s) => Err(s),
        });
        // The collection of every query's members: the new set enters, the previous one leaves.
        // At the window's close time: the timestamp the answers travel at.
        let at = plan.clone();
        let changes = sets
            .clone()
            .flat_map(move |s: SetAnswer| {
                let (q, w) = (s.query, at.borrow().close_time(s.window));
                let entered = s.members.into_iter().map(move |(m, _)| ((q, m), w, 1isize));
                entered.chain(s.previous.into_iter().map(move |m| ((q, m), w, -1isize)))
            })
            .as_collection()
            .consolidate()
            .inner;
        let (home1, home2) = (plan.clone(), plan.clone());
        let to_home1 = Exchange::new(move |c: &Change| home1.borrow().routing.pair_queries[c.0.0 as usize].home as u64);
        let to_home2 =
            Exchange::new(move |s: &SetAnswer| home2.borrow().routing.pair_queries[s.query as usize].home as u64);
        let rendered = changes.binary_frontier::<_, CapacityContainerBuilder<Vec<String>>, _, _, _, _>(
            sets,
            to_home1,
            to_home2,
            "SetChanges",
            move |_cap, _info| {
                let mut waiting: BTreeMap<u64, Waiting> = BTreeMap::new();
                move |(changes, changes_frontier), (sets, sets_frontier), output| {
                    let plan = plan.borrow();
                    let plan = &*plan;
                    changes.for_each_stamp(|stamp, data| {
                        for batch in data {
                            for (key, t, diff) in batch.drain(..) {
                                let w = plan.window_of(t as i64);
                                let entry = waiting.entry(w).or_insert_with(|| {
                                    (stamp.delayed(&plan.close_time(w), 0), Vec::new(), HashMap::new())
                                });
                                entry.1.push((key, diff));
                            }
                        }
                    });
                    sets.for_each_stamp(|stamp, data| {
                        for batch in data {
                            for s in batch.drain(..) {
                                let w = s.window;
                                let entry = waiting.entry(w).or_insert_with(|| {
                                    (stamp.delayed(&plan.close_time(w), 0), Vec::new(), HashMap::new())
                                });
                                entry.2.insert(s.query, s);
                            }
                        }
                    });
                    while let Some((&w, _)) = waiting.first_key_value() {
                        let t = plan.close_time(w);
                        if changes_frontier.less_equal(&t) || sets_frontier.less_equal(&t) {
                            break;
                        }
                        let Some((_, (cap, mut changes, sets))) = waiting.pop_first() else { break };
                        changes.sort_unstable();
                        let lines: Vec<String> = changes
                            .into_iter()
                            .filter(|(_, diff)| *diff != 0)
                            .map(|(key, diff)| {
                                let set = sets.get(&key.0);
                                change_line(plan, w, key, diff, set)
                            })
                            .collect();
                        output.session(&cap).give_iterator(lines.into_iter());
                    }
                }
            },
        );
        lines.concat(rendered)
    }
}
