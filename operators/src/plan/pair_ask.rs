//! Which synopses a pair query needs: the partners of a pair query ([`Routing::pair_participants`],
//! for queries compiled into the plan and for ad-hoc ones asked while the job runs), and the
//! synopses constructed while the job runs joining the continuous pair queries over their
//! dataset ([`Routing::join_pair_queries`]).

use saams::api::request::QuerySpec;
use saams::api::window::WindowSpec;

use super::routing::Routing;

impl Routing {
    /// True when synopsis `j` can be compared with synopsis `i` in a pair query: live, of the
    /// same kind, dataset, field and window, constructed with the same parameters (a pair answer
    /// needs states of the same shape).
    fn alike(&self, i: usize, j: usize) -> bool {
        let (me, o) = (&self.synopses[i], &self.synopses[j]);
        !o.deleted
            && o.kind == me.kind
            && o.dataset == me.dataset
            && o.field == me.field
            && o.window == me.window
            && o.fresh.encode() == me.fresh.encode()
    }

    /// The synopses a pair query of synopsis `i` needs, `i` first: every alike synopsis of the
    /// dataset for a threshold query (correlated or similar pairs), the other stream's for a
    /// query with one other stream (inner product); an error naming what is missing.
    pub(crate) fn pair_participants(&self, i: usize, spec: &QuerySpec) -> Result<Vec<u32>, String> {
        let me = &self.synopses[i];
        if me.window != WindowSpec::Landmark {
            return Err(format!(
                "pair queries and continuous set-valued queries answer landmark synopses only; this synopsis has window {}",
                me.window
            ));
        }
        let mut participants = vec![i as u32];
        match spec {
            QuerySpec::PairsAbove { .. } => {
                participants.extend((0..self.synopses.len()).filter(|&j| j != i && self.alike(i, j)).map(|j| j as u32));
            }
            QuerySpec::PairWith { other_stream, .. } => {
                let Some(j) =
                    (0..self.synopses.len()).find(|&j| self.alike(i, j) && &self.synopses[j].stream == other_stream)
                else {
                    let me = &self.synopses[i];
                    return Err(format!(
                        "no {} with the same parameters on stream {other_stream:?} of dataset {:?} field {:?}",
                        me.kind, me.dataset, me.field
                    ));
                };
                participants.push(j as u32);
            }
            QuerySpec::Single(_) => {}
        }
        Ok(participants)
    }

    /// Synopses compiled just now (`new`) join the continuous threshold pair queries of the
    /// first `registered` ones (those compiled before them) over alike synopses: their states go
    /// to the query's home from their own fence on, and the query compares them from then on.
    /// The request script compiles once, after every construct: nothing joins there.
    pub(crate) fn join_pair_queries(&mut self, registered: usize, new: &[u32]) {
        for q in 0..registered {
            let query = &self.pair_queries[q];
            if !query.continuous || !matches!(query.reg.spec, QuerySpec::PairsAbove { .. }) {
                continue;
            }
            let (named, home) = (query.syn as usize, query.home);
            let joining: Vec<u32> = new
                .iter()
                .copied()
                .filter(|&j| j as usize != named && !query.participants.contains(&j) && self.alike(named, j as usize))
                .collect();
            for j in joining {
                self.pair_queries[q].participants.push(j);
                let to = &mut self.synopses[j as usize].snapshot_to;
                if !to.contains(&home) {
                    to.push(home);
                }
            }
        }
    }
}
