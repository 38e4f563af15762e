//! Where each update group's value is in a parsed tuple, resolved once per plan version
//! ([`GroupFields`]).
//!
//! Why: the router took every record's value by the group's field name: it read the group from
//! the plan (a 160-byte `Group` per record, a different one for each tuple of a file that
//! interleaves its streams), compared the name with `streamID` and `dataSetKey`, then searched
//! the tuple's fields by name ([`Tuple::field`], an out-of-line call packing both names for
//! every field compared). With the paper's workload that was most of the ~35 ns a tuple by which
//! routing a parsed line cost more than the generator's path, which resolves its fields once per
//! stream. Here a group's field is a small dense entry: which of the three it is, whether its
//! synopses take numbers only, and its name packed once ([`pack_name`]), so finding it among a
//! tuple's fields compares integers.

use saams::Datum;
use saams::api::Tuple;
use saams::api::tuple::{PackedName, pack_name};
use saams_operators::Plan;
use saams_operators::plan::data::Group;

/// The groups' fields of one plan version, by group index.
#[derive(Default)]
pub(super) struct GroupFields {
    /// The [`Routing::version`](saams_operators::plan::Routing::version) they were taken from.
    version: u64,
    fields: Vec<GroupField>,
}

/// Which value of a tuple a group takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Of {
    /// The stream id (`streamID`: distinct streams of a dataset).
    Stream,
    /// The dataset key.
    Dataset,
    /// A value field, by name.
    Named,
}

/// One group's field ([`GroupFields`]).
#[derive(Debug)]
pub(super) struct GroupField {
    of: Of,
    /// Some synopsis of the group takes numbers only: text that reads as no number is refused.
    pub(super) numeric: bool,
    /// The field's name (for messages, and to compare names longer than 16 bytes).
    pub(super) name: Box<str>,
    /// The name packed, when it is at most 16 bytes long.
    packed: Option<PackedName>,
}

impl GroupField {
    fn of_group(group: &Group) -> GroupField {
        let of = match group.field.as_str() {
            "streamID" => Of::Stream,
            "dataSetKey" => Of::Dataset,
            _ => Of::Named,
        };
        GroupField { of, numeric: group.numeric, name: group.field.as_str().into(), packed: pack_name(&group.field) }
    }

    /// The group's value in `t`: what [`Tuple::field`] gives for the field's name (the first
    /// field of that name), or the stream id or dataset key; `None` when `t` has no such field.
    #[inline(always)]
    pub(super) fn value<'t>(&self, t: &'t Tuple) -> Option<Datum<'t>> {
        match self.of {
            Of::Stream => Some(Datum::Str(&t.stream_id)),
            Of::Dataset => Some(Datum::Str(&t.dataset_key)),
            Of::Named => {
                let found = match self.packed {
                    Some(name) => {
                        t.fields.iter().find(|(k, _)| k.len() == usize::from(name.2) && pack_name(k) == Some(name))
                    }
                    None => t.fields.iter().find(|(k, _)| **k == *self.name),
                };
                found.map(|(_, v)| v.as_datum())
            }
        }
    }
}

impl GroupFields {
    /// Take the groups' fields from `plan` again if its routing changed since.
    #[inline]
    pub(super) fn sync(&mut self, plan: &Plan) {
        let groups = &plan.routing.groups;
        if self.version != plan.routing.version || self.fields.len() != groups.len() {
            self.fields = groups.iter().map(GroupField::of_group).collect();
            self.version = plan.routing.version;
        }
    }

    /// Group `g`'s field (after [`GroupFields::sync`] with the plan that named `g`).
    #[inline(always)]
    pub(super) fn get(&self, g: u32) -> Option<&GroupField> {
        self.fields.get(g as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use saams::api::request::parse_requests;

    use super::*;
    use crate::sink::file::SnapshotDir;

    fn request(id: usize, field: &str) -> String {
        format!(
            r#"{{"dataSetKey":"Forex","noOfP":1,"param":["HyperLogLog","{field}","NotQueryable",0.02],"requestID":{id},"streamID":"","synopsisID":2}}"#
        )
    }

    /// Every group's value is the one the router took by name before: the first field of that
    /// name (`Tuple::field`), or the stream id or dataset key; short and long names, names of
    /// one length that differ in a byte, absent fields; and the fields follow the plan's
    /// versions.
    #[test]
    fn values_equal_the_lookup_by_name() {
        let long = "a-field-name-longer-than-sixteen";
        let names = ["price", "volume", "streamID", "dataSetKey", long, "pricf", "p", "absent"];
        let text: Vec<String> = names.iter().enumerate().map(|(i, f)| request(i + 1, f)).collect();
        let mut plan =
            Plan::build(&parse_requests(&format!("[{}]", text.join(","))), 1, 60_000, Arc::new(SnapshotDir::new(None)));
        let tuples = [
            r#"{"streamID":"EURTRY","dataSetKey":"Forex","price":1.5,"volume":2,"pricf":"x","p":3}"#,
            r#"{"streamID":"S","dataSetKey":"Forex","volume":"7","a-field-name-longer-than-sixteen":4}"#,
            r#"{"streamID":"S","dataSetKey":"Forex","price":1,"values":{"price":2,"pricf":5}}"#,
            r#"{"streamID":"S","dataSetKey":"Forex"}"#,
        ];
        let mut fields = GroupFields::default();
        let mut seen = 0;
        for round in 0..2 {
            fields.sync(&plan);
            assert_eq!(fields.fields.len(), plan.routing.groups.len());
            for line in tuples {
                let t = Tuple::from_json(line).unwrap();
                for (g, group) in plan.routing.groups.iter().enumerate() {
                    let expected = match group.field.as_str() {
                        "streamID" => Some(Datum::Str(&t.stream_id)),
                        "dataSetKey" => Some(Datum::Str(&t.dataset_key)),
                        f => t.field(f),
                    };
                    let field = fields.get(g as u32).unwrap();
                    assert_eq!(field.value(&t), expected, "{line} {}", group.field);
                    assert_eq!((&*field.name, field.numeric), (group.field.as_str(), group.numeric));
                    seen += usize::from(expected.is_some());
                }
            }
            // A live request adds a group: the fields are taken from the plan again.
            plan.routing_mut().version += 1;
            let mut group = plan.routing.groups[0].clone();
            group.field = format!("volume{round}");
            plan.routing_mut().groups.push(group);
        }
        assert!(seen > 20, "{seen}");
    }
}
