//! Device partials ([`crate::device_part`]) in the update operator: a spread group's partial is
//! merged on arrival into the window's partial (its merge is exact, so the order does not
//! matter); an owned group's waits for its window's close and is merged into the merged state
//! there, after the window's own values and before it is answered, so the answer counts them.
//! Either way the window counts the values they summarize.
//!
//! A device's *whole* states of an owned group (any kinds, order-dependent ones included: the
//! device is the only one reading the stream and fed them as this worker would) wait for the
//! window's close the same way and are installed there in place of the merged state, after
//! the window's own values (raw ones the device shipped earlier in the window: the whole state
//! covers them too) and before the window is answered.

use saams::Synopsis;

use super::{Gathered, State};
use crate::answer;
use crate::device_part::{DevicePart, refuse};
use crate::plan::{Mode, Plan};
use crate::record::{Rec, Val};
use crate::window::Held;

impl State {
    /// Take the device partials out of `batch` (the rest stays, in order).
    pub(super) fn take_device_parts(&mut self, plan: &Plan, batch: &mut Vec<Rec>) {
        let mut kept = Vec::with_capacity(batch.len());
        for rec in batch.drain(..) {
            match &rec.val {
                Val::Part(bytes) => match DevicePart::decode(bytes) {
                    Ok(part) => self.take_device_part(plan, &rec, part),
                    Err(e) => refuse(&format!("undecodable: {e}")),
                },
                _ => kept.push(rec),
            }
        }
        *batch = kept;
    }

    fn take_device_part(&mut self, plan: &Plan, rec: &Rec, part: DevicePart) {
        let Some(group) = plan.routing.groups.get(rec.group as usize) else {
            return refuse(&format!("no update group {}", rec.group));
        };
        let w = plan.window_of(rec.time);
        let key = (rec.group, plan.routing.bin(rec.group, rec.seq));
        let items = usize::try_from(part.items).unwrap_or(usize::MAX);
        match group.mode {
            Mode::Exact { .. } => {
                let gathered = Gathered::counted(&mut self.windows, w, key, group.synopses.len(), items);
                for (s, syn) in part.parts {
                    let Some(i) = group.synopses.iter().position(|&x| x == s) else {
                        refuse(&format!("synopsis {s} is not of update group {}", rec.group));
                        continue;
                    };
                    let fresh = || plan.routing.synopses[s as usize].fresh.clone();
                    if let Err(e) = gathered.parts[i].get_or_insert_with(fresh).merge(syn.as_ref()) {
                        refuse(&format!("synopsis {s}: {e}"));
                    }
                }
            }
            Mode::Owned if !group.ordered || part.whole.is_some() => {
                Gathered::counted(&mut self.windows, w, key, group.synopses.len(), items);
                self.device_parts.entry(w).or_default().push((key, part));
            }
            _ if part.whole.is_some() => refuse(&format!("update group {} is not owned by one worker", rec.group)),
            _ => refuse(&format!("update group {} does not merge exactly", rec.group)),
        }
    }

    /// Merge the device partials of owned groups waiting for window `w` into their merged states
    /// (opening `w`'s period first), before the window is answered.
    pub(super) fn merge_device_parts(&mut self, plan: &Plan, w: u64) {
        let Some(waiting) = self.device_parts.remove(&w) else { return };
        for (key, part) in waiting {
            let group = &plan.routing.groups[key.0 as usize];
            let Some(gathered) = self.windows.get_mut(&w).and_then(|g| g.get_mut(&key)) else { continue };
            for &s in &group.synopses {
                if plan.live.is_live(s, w) && !part.parts.iter().any(|(x, _)| *x == s) {
                    refuse(&format!("synopsis {s} is registered at window {w} but the device did not know it"));
                }
            }
            let whole = part.whole;
            for (s, syn) in part.parts {
                if !group.synopses.contains(&s) || !plan.live.is_live(s, w) {
                    continue;
                }
                let spec = &plan.routing.synopses[s as usize];
                let held = self.merged.entry(s).or_insert_with(|| Held::new(spec.initial.as_ref()));
                held.enter(spec.windowing(), w, &mut |span, state, items| {
                    answer::continuous(plan, s, state, items, span, &mut gathered.owed);
                });
                if let Some(period_items) = whole {
                    if syn.kind() == spec.kind {
                        held.state = syn;
                        held.items = period_items;
                    } else {
                        refuse(&format!(
                            "synopsis {s}: a whole {} where a {} is kept",
                            syn.kind().name(),
                            spec.kind.name()
                        ));
                    }
                    continue;
                }
                match held.state.merge(syn.as_ref() as &dyn Synopsis) {
                    Ok(()) => held.items += part.items,
                    Err(e) => refuse(&format!("synopsis {s}: {e}")),
                }
            }
        }
    }
}
