//! `split_monitored`: the routed values of synopses and those of monitored streams
//! ([`crate::monitor`]) into two streams, whole containers where they hold only the former.
//!
//! Why not timely's `ok_err`: it moves every record into a new container, one at a time, and
//! cuts the output into its builder's ~200-record containers; a reader's container of one
//! worker's values ([`crate::plan::Routing::group_target`]) then reached the exchange in pieces,
//! and every record cost a push here. Monitored values are rare (a stream of the monitoring
//! kind): a container without any passes on as it is.

use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::progress::operate::FrontierInterest;

use crate::monitor::monitored_index;
use crate::record::Rec;

/// The two streams [`SplitMonitored::split_monitored`] makes: values, monitored values.
pub type Split<'scope> = (Stream<'scope, u64, Vec<Rec>>, Stream<'scope, u64, Vec<Rec>>);

/// Extension trait: split off the values of monitored streams.
pub trait SplitMonitored<'scope> {
    /// The records that are no monitored value (synopses' values, asks, fence markers), in the
    /// order they came, and the monitored values with their monitor index as group
    /// ([`monitored_index`]), in the order they came.
    fn split_monitored(self) -> Split<'scope>;
}

impl<'scope> SplitMonitored<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn split_monitored(self) -> Split<'scope> {
        let mut builder = OperatorBuilder::new("SplitMonitored".to_owned(), self.scope());
        let mut input = builder.new_input(self, Pipeline);
        builder.set_notify_for(0, FrontierInterest::Never);
        let (values, values_stream) = builder.new_output::<Vec<Rec>>();
        let (monitored, monitored_stream) = builder.new_output::<Vec<Rec>>();
        let mut values = OutputBuilder::<_, CapacityContainerBuilder<Vec<Rec>>>::from(values);
        let mut monitored = OutputBuilder::<_, CapacityContainerBuilder<Vec<Rec>>>::from(monitored);
        builder.build(move |_| {
            move |_frontiers| {
                let mut values = values.activate();
                let mut monitored = monitored.activate();
                input.for_each_stamp(|cap, data| {
                    let mut to_values = values.session(&cap);
                    let mut to_monitor = monitored.session(&cap);
                    for container in data {
                        if !container.iter().any(|r| monitored_index(r.group).is_some()) {
                            to_values.give_container(container);
                            continue;
                        }
                        let (mut kept, mut split) = (Vec::with_capacity(container.len()), Vec::new());
                        for r in container.drain(..) {
                            match monitored_index(r.group) {
                                None => kept.push(r),
                                Some(group) => split.push(Rec { group, ..r }),
                            }
                        }
                        if !kept.is_empty() {
                            to_values.give_container(&mut kept);
                        }
                        to_monitor.give_container(&mut split);
                    }
                });
            }
        });
        (values_stream, monitored_stream)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use timely::dataflow::operators::{Input, Inspect};

    use super::*;
    use crate::monitor::MONITOR_GROUP;
    use crate::record::Val;

    /// Containers without monitored values pass whole; a mixed one is split, each side in order.
    #[test]
    fn monitored_values_are_split_off_and_the_rest_passes_whole() {
        let (containers, monitored) = timely::execute_directly(|worker| {
            let seen: Rc<RefCell<Vec<Vec<Rec>>>> = Rc::default();
            let split: Rc<RefCell<Vec<Rec>>> = Rc::default();
            let (s1, s2) = (seen.clone(), split.clone());
            let mut input = worker.dataflow::<u64, _, _>(|scope| {
                let (input, stream) = scope.new_input::<Vec<Rec>>();
                let (values, monitored) = stream.split_monitored();
                values.inspect_core(move |event| {
                    if let Ok((_, c)) = event {
                        s1.borrow_mut().push(c.clone());
                    }
                });
                monitored.inspect(move |r: &Rec| s2.borrow_mut().push(r.clone()));
                input
            });
            let rec = |group: u32, seq: u64| Rec { group, time: 5, seq, val: Val::Num(seq as f64) };
            input.send_batch(&mut (0..500).map(|s| rec(3, s)).collect());
            input.send_batch(&mut vec![rec(1, 0), rec(MONITOR_GROUP | 2, 1), rec(1, 2), rec(MONITOR_GROUP, 3)]);
            drop(input);
            while worker.step() {}
            (seen.take(), split.take())
        });
        assert_eq!(containers[0].len(), 500, "passed whole, not cut into the builder's containers");
        let rest: Vec<(u32, u64)> = containers[1..].iter().flatten().map(|r| (r.group, r.seq)).collect();
        assert_eq!(rest, [(1, 0), (1, 2)]);
        let split: Vec<(u32, u64)> = monitored.iter().map(|r| (r.group, r.seq)).collect();
        assert_eq!(split, [(2, 1), (0, 3)]);
    }
}
