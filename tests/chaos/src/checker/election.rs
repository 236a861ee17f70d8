//! Elections: at most one leader per term (the leadership fencing token),
//! across campaign answers, leader reads and observed changes; and every
//! observer saw terms in increasing order.

use std::collections::{BTreeMap, BTreeSet};

use super::Verdict;
use crate::history::{History, Op, Operation, Value};

/// One leader per term.
pub fn one_leader_per_term(history: &History) -> Verdict {
    let mut leaders: BTreeMap<(&str, u64), BTreeSet<&str>> = BTreeMap::new();
    let mut witness: BTreeMap<(&str, u64), Vec<&Operation>> = BTreeMap::new();
    for o in &history.ops {
        let seen = match (&o.op, o.ok()) {
            (Op::Campaign { name, owner, .. }, Some(Value::Granted { fence, .. })) => {
                Some((name.as_str(), *fence, owner.as_str()))
            }
            (
                Op::Leader { name },
                Some(Value::Leader {
                    owner: Some(owner),
                    fence,
                }),
            ) => Some((name.as_str(), *fence, owner.as_str())),
            _ => None,
        };
        if let Some((name, term, owner)) = seen {
            leaders.entry((name, term)).or_default().insert(owner);
            witness.entry((name, term)).or_default().push(o);
        }
    }
    for ob in &history.observations {
        if let Some(owner) = &ob.owner {
            leaders
                .entry((ob.name.as_str(), ob.fence))
                .or_default()
                .insert(owner);
        }
    }
    let mut v = Verdict::new(
        "one leader per term",
        format!("{} terms seen", leaders.len()),
    );
    for ((name, term), owners) in &leaders {
        if owners.len() > 1 {
            let ops = witness
                .get(&(*name, *term))
                .map(|w| w.iter().map(|o| (*o).clone()).collect())
                .unwrap_or_default();
            v.violate(format!("{name}: term {term} had leaders {owners:?}"), ops);
        }
    }
    v
}

/// (client, stream number, election name).
type StreamKey<'a> = (u32, u32, &'a str);

/// Each Observe stream saw terms in increasing order.
pub fn observers_see_increasing_terms(history: &History) -> Verdict {
    let mut streams: BTreeMap<StreamKey, Vec<(u64, u64)>> = BTreeMap::new();
    for ob in &history.observations {
        if ob.owner.is_some() {
            streams
                .entry((ob.client, ob.stream, ob.name.as_str()))
                .or_default()
                .push((ob.t, ob.fence));
        }
    }
    let items: usize = streams.values().map(Vec::len).sum();
    let mut v = Verdict::new(
        "observers see increasing terms",
        format!("{} streams, {items} leader items", streams.len()),
    );
    for ((client, stream, name), seen) in &streams {
        for w in seen.windows(2) {
            if w[1].1 < w[0].1 {
                v.violate(
                    format!(
                        "{name}: client {client} stream {stream} saw term {} after term {}",
                        w[1].1, w[0].1
                    ),
                    Vec::new(),
                );
                break;
            }
        }
    }
    v
}
