//! Compiling: the synopses applied since the last version join their update groups (new groups
//! get their routes and owners), and pair and set-valued queries find their participants. What
//! cannot be compiled (a pair query without a partner) becomes an error answer.

use saams::api::estimation::Estimation;
use saams::api::request::QuerySpec;
use saams::api::window::WindowSpec;

use super::data::{Group, Mode, PairQueryReg, QueryReg, is_set_valued};
use super::routing::{Routing, spread_hash};

impl Routing {
    /// Put every synopsis not compiled yet into its update group (a new group, with its route,
    /// for a new (dataset, stream, field, mode)). Groups only grow: routed values carry group
    /// indices, and a synopsis deleted while running stays in its group (the registry says from
    /// which window it no longer counts).
    pub(crate) fn compile(&mut self, answers: &mut Vec<Estimation>) {
        let mut index = std::mem::take(&mut self.group_index);
        let new: Vec<u32> = (0..self.synopses.len() as u32)
            .filter(|&i| !self.synopses[i as usize].deleted && self.synopses[i as usize].group == u32::MAX)
            .collect();
        let registered = self.pair_queries.len();
        for i in 0..self.synopses.len() {
            let s = &self.synopses[i];
            if s.deleted || s.group != u32::MAX {
                continue;
            }
            // Window-based groups are built a window per worker: one unit per group.
            let (unit_ms, unit_origin) = match (s.mode, s.window) {
                (Mode::Windowed(_), WindowSpec::Tumbling { size }) => (size as u64, s.window_origin % size as u64),
                (Mode::Windowed(_), _) => (self.window_ms as u64, 0),
                _ => (0, 0),
            };
            let key = (s.dataset.clone(), s.stream.clone(), s.field.clone(), s.mode, (unit_ms, unit_origin));
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
                        unit_ms,
                        unit_origin,
                        owner,
                        moved: Vec::new(),
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
        self.join_pair_queries(registered, &new);
    }

    /// Move pair queries and continuous set-valued queries out of their synopses, resolve their
    /// participants, and tell each participant where to send its state.
    fn compile_pairs(&mut self, answers: &mut Vec<Estimation>) {
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
                let participants = match self.pair_participants(i, &reg.spec) {
                    Ok(participants) => participants,
                    Err(msg) => {
                        let me = &self.synopses[i];
                        let mut e = Estimation::error(reg.request_id, reg.uid, me.synopsis_id, msg);
                        e.stream_id = me.stream.clone();
                        e.dataset_key = me.dataset.clone();
                        e.field = me.field.clone();
                        e.query = reg.args;
                        answers.push(e);
                        continue;
                    }
                };
                let home = self.synopses[i].home;
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
