//! Compiling: the synopses applied since the last version join their update groups (new groups
//! get their routes and owners), and pair and set-valued queries find their participants. What
//! cannot be compiled (a pair query without a partner) becomes an error answer.

use saams::api::estimation::Estimation;
use saams::api::request::QuerySpec;

use super::data::{Group, Mode, PairQueryReg, QueryReg, is_set_valued};
use super::routing::{Routing, spread_hash};

impl Routing {
    /// Put every synopsis not compiled yet into its update group (a new group, with its route,
    /// for a new (dataset, stream, field, mode)). Groups only grow: routed values carry group
    /// indices, and a synopsis deleted while running stays in its group (the registry says from
    /// which window it no longer counts).
    pub(crate) fn compile(&mut self, answers: &mut Vec<Estimation>) {
        let mut index = std::mem::take(&mut self.group_index);
        for i in 0..self.synopses.len() {
            let s = &self.synopses[i];
            if s.deleted || s.group != u32::MAX {
                continue;
            }
            let key = (s.dataset.clone(), s.stream.clone(), s.field.clone(), s.mode);
            let g = match index.get(&key) {
                Some(&g) => g,
                None => {
                    let g = self.groups.len() as u32;
                    let owner = self.owner_of_stream(spread_hash(&[&key.0, &key.1]));
                    let s = &self.synopses[i];
                    self.groups.push(Group {
                        dataset: s.dataset.clone(),
                        stream: s.stream.clone(),
                        field: s.field.clone(),
                        mode: s.mode,
                        owner,
                        synopses: Vec::new(),
                        ordered: false,
                        numeric: false,
                    });
                    let routes = self.routes.entry(s.dataset.clone()).or_default();
                    if s.stream.is_empty() {
                        routes.wide.push(g);
                    } else {
                        routes.streams.entry(s.stream.clone()).or_default().push(g);
                    }
                    index.insert(key, g);
                    g
                }
            };
            let (kind, mode) = (self.synopses[i].kind, self.synopses[i].mode);
            let group = &mut self.groups[g as usize];
            group.synopses.push(i as u32);
            group.ordered |= !kind.updates_on_arrival();
            group.numeric |= kind.takes_numbers_only();
            if mode == Mode::Owned {
                // The owner holds the merged synopsis and answers it.
                let owner = group.owner;
                self.synopses[i].home = owner;
            }
            self.synopses[i].group = g;
        }
        self.group_index = index;
        self.compile_pairs(answers);
    }

    /// Move pair queries and continuous set-valued queries out of their synopses, resolve their
    /// participants, and tell each participant where to send its state.
    fn compile_pairs(&mut self, answers: &mut Vec<Estimation>) {
        let params: Vec<Vec<u8>> = self.synopses.iter().map(|s| s.fresh.encode()).collect();
        for i in 0..self.synopses.len() {
            if self.synopses[i].deleted {
                continue;
            }
            let mut regs = Vec::new();
            for continuous in [true, false] {
                let list = if continuous { &mut self.synopses[i].continuous } else { &mut self.synopses[i].adhoc };
                let (pairs, singles): (Vec<QueryReg>, Vec<QueryReg>) = list
                    .drain(..)
                    .partition(|q| !matches!(q.spec, QuerySpec::Single(_)) || continuous && is_set_valued(&q.spec));
                *list = singles;
                regs.extend(pairs.into_iter().map(|q| (q, continuous)));
            }
            for (reg, continuous) in regs {
                let me = &self.synopses[i];
                let alike = |j: usize| {
                    let o = &self.synopses[j];
                    !o.deleted
                        && o.kind == me.kind
                        && o.dataset == me.dataset
                        && o.field == me.field
                        && params[j] == params[i]
                };
                let mut participants = vec![i as u32];
                let error = match &reg.spec {
                    QuerySpec::PairsAbove { .. } => {
                        participants.extend((0..self.synopses.len()).filter(|&j| j != i && alike(j)).map(|j| j as u32));
                        None
                    }
                    QuerySpec::PairWith { other_stream, .. } => {
                        match (0..self.synopses.len()).find(|&j| alike(j) && &self.synopses[j].stream == other_stream) {
                            Some(j) => {
                                participants.push(j as u32);
                                None
                            }
                            None => Some(format!(
                                "no {} with the same parameters on stream {other_stream:?} of dataset {:?} field {:?}",
                                me.kind, me.dataset, me.field
                            )),
                        }
                    }
                    QuerySpec::Single(_) => None,
                };
                if let Some(msg) = error {
                    let mut e = Estimation::error(reg.request_id, reg.uid, me.synopsis_id, msg);
                    e.stream_id = me.stream.clone();
                    e.dataset_key = me.dataset.clone();
                    e.field = me.field.clone();
                    e.query = reg.args;
                    answers.push(e);
                    continue;
                }
                let home = me.home;
                for &p in &participants {
                    let to = &mut self.synopses[p as usize].snapshot_to;
                    if !to.contains(&home) {
                        to.push(home);
                    }
                }
                self.pair_queries.push(PairQueryReg { syn: i as u32, reg, continuous, participants, home });
            }
        }
    }
}
