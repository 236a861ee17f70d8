//! Checks on the grants themselves, in the service's own order (fencing
//! tokens are the slot of the granting request in the log, so sorting
//! grants by token is sorting them as the service applied them):
//!
//! - fence order: a grant that was answered before another was asked for
//!   has the smaller token, and two owners of an exclusive lock never
//!   share one;
//! - no overlap: when a grant was made, no earlier incompatible hold was
//!   still live — "live" proven by something the earlier holder did after
//!   the new grant was answered (a successful release, a valid check, a
//!   leader read naming it, or a keep-alive of its lease before it
//!   released);
//! - no grant to a dead lease: no lease was granted anything after a
//!   client had been told it was gone.

use std::collections::{BTreeMap, BTreeSet};

use super::lock_model::proves_dead;
use super::Verdict;
use crate::history::{History, Mode, Op, Operation, Value};

/// One new grant (not a re-entry).
struct Grant<'a> {
    op: &'a Operation,
    name: &'a str,
    owner: &'a str,
    lease: u64,
    mode: Mode,
    fence: u64,
}

fn grants(history: &History) -> Vec<Grant<'_>> {
    let mut out = Vec::new();
    for o in &history.ops {
        let (name, owner, lease, mode) = match &o.op {
            Op::Acquire {
                name,
                owner,
                lease,
                mode,
                ..
            } => (name, owner, *lease, *mode),
            Op::Campaign { name, owner, lease } => (name, owner, *lease, Mode::Exclusive),
            _ => continue,
        };
        if let Some(Value::Granted { fence, count: 1 }) = o.ok() {
            out.push(Grant {
                op: o,
                name,
                owner,
                lease,
                mode,
                fence: *fence,
            });
        }
    }
    out
}

fn by_name<'a>(all: &'a [Grant<'a>]) -> BTreeMap<&'a str, Vec<&'a Grant<'a>>> {
    let mut map: BTreeMap<&str, Vec<&Grant>> = BTreeMap::new();
    for g in all {
        map.entry(g.name).or_default().push(g);
    }
    map
}

/// Tokens grow in real-time order; exclusive owners never share one.
pub fn fence_order(history: &History) -> Verdict {
    let all = grants(history);
    let mut v = Verdict::new("fencing tokens increase", format!("{} grants", all.len()));
    for (name, gs) in by_name(&all) {
        let mut by_complete: Vec<&&Grant> = gs.iter().collect();
        by_complete.sort_by_key(|g| g.op.complete_or_max());
        let mut by_invoke: Vec<&&Grant> = gs.iter().collect();
        by_invoke.sort_by_key(|g| g.op.invoke);
        let mut max: Option<&Grant> = None;
        let mut k = 0;
        for b in by_invoke {
            while k < by_complete.len() && by_complete[k].op.complete_or_max() < b.op.invoke {
                if max.is_none_or(|m| by_complete[k].fence > m.fence) {
                    max = Some(by_complete[k]);
                }
                k += 1;
            }
            if let Some(a) = max {
                if a.fence >= b.fence {
                    v.violate(
                        format!(
                            "{name}: grant with token {} answered before a grant with token {} was asked for",
                            a.fence, b.fence
                        ),
                        vec![a.op.clone(), b.op.clone()],
                    );
                }
            }
        }
        let mut seen: BTreeMap<u64, &Grant> = BTreeMap::new();
        for g in gs {
            if let Some(other) = seen.insert(g.fence, g) {
                let exclusive = g.mode == Mode::Exclusive || other.mode == Mode::Exclusive;
                if exclusive && other.owner != g.owner {
                    v.violate(
                        format!("{name}: token {} granted to two owners", g.fence),
                        vec![other.op.clone(), g.op.clone()],
                    );
                }
            }
        }
    }
    v
}

/// When grants were made, no incompatible earlier hold was provably live.
pub fn no_overlap(history: &History) -> Verdict {
    let all = grants(history);
    let mut v = Verdict::new("no overlapping holds", format!("{} grants", all.len()));
    // Evidence per (name, owner): latest invoke of a proof the hold lived,
    // and the first give-back invoke.
    let mut strong: BTreeMap<(&str, &str), (u64, Option<&Operation>)> = BTreeMap::new();
    let mut give_back: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut keep_alive: BTreeMap<u64, (u64, &Operation)> = BTreeMap::new();
    let owner_of_fence: BTreeMap<(&str, u64), &str> =
        all.iter().map(|g| ((g.name, g.fence), g.owner)).collect();
    for o in &history.ops {
        let proof: Option<(&str, &str)> = match (&o.op, o.ok()) {
            (Op::Release { name, owner }, Some(Value::Remaining { .. })) => Some((name, owner)),
            (Op::Check { name, fence }, Some(Value::Valid { valid: true })) => owner_of_fence
                .get(&(name.as_str(), *fence))
                .map(|w| (name.as_str(), *w)),
            (
                Op::Leader { name },
                Some(Value::Leader {
                    owner: Some(owner), ..
                }),
            ) => Some((name, owner)),
            (Op::KeepAlive { lease }, Some(_)) => {
                let e = keep_alive.entry(*lease).or_insert((0, o));
                if o.invoke >= e.0 {
                    *e = (o.invoke, o);
                }
                None
            }
            _ => None,
        };
        if let Some(key) = proof {
            let e = strong.entry(key).or_insert((0, None));
            if o.invoke >= e.0 {
                *e = (o.invoke, Some(o));
            }
        }
        if let Op::Release { name, owner } | Op::Resign { name, owner } = &o.op {
            give_back.entry((name, owner)).or_insert(o.invoke);
        }
    }
    // The proof of `a` that a grant answered at `answered` would have to
    // beat: the latest proof its hold lived past then, if any.
    let proof_of = |a: &Grant, answered: u64| -> Option<&Operation> {
        let key = (a.name, a.owner);
        let released_after = give_back.get(&key).is_none_or(|t| *t > answered);
        match strong.get(&key) {
            Some((t, Some(p))) if *t > answered => Some(*p),
            _ => match keep_alive.get(&a.lease) {
                Some((t, p)) if *t > answered && released_after => Some(*p),
                _ => None,
            },
        }
    };
    // The latest time at which `a` is proven live: `proof_of(a, t)` is
    // `Some` exactly when `t` is before this. Earlier grants are indexed by
    // it, so each grant visits only the holds proven live after its answer
    // (few in a correct history) instead of every earlier grant.
    let live_until = |a: &Grant| -> u64 {
        let key = (a.name, a.owner);
        let strong_until = match strong.get(&key) {
            Some((t, Some(_))) => *t,
            _ => 0,
        };
        let kept_until = keep_alive.get(&a.lease).map_or(0, |(t, _)| *t);
        let given_back = give_back.get(&key).copied().unwrap_or(u64::MAX);
        strong_until.max(kept_until.min(given_back))
    };
    for (name, mut gs) in by_name(&all) {
        gs.sort_by_key(|g| g.fence);
        let mut earlier: BTreeSet<(u64, usize)> = BTreeSet::new();
        for (j, b) in gs.iter().enumerate() {
            let answered = b.op.complete_or_max();
            let mut live: Vec<(&Grant, &Operation)> = Vec::new();
            let after = (answered.saturating_add(1), 0)..;
            for &(_, i) in earlier.range(after).take_while(|_| answered < u64::MAX) {
                let a = gs[i];
                if a.owner == b.owner || a.fence == b.fence {
                    continue;
                }
                if let Some(p) = proof_of(a, answered) {
                    live.push((a, p));
                }
            }
            earlier.insert((live_until(b), j));
            if !compatible(b.mode, live.iter().map(|(a, _)| a.mode)) {
                let mut ops: Vec<Operation> = Vec::new();
                for (a, p) in &live {
                    ops.push(a.op.clone());
                    ops.push((*p).clone());
                }
                ops.push(b.op.clone());
                ops.sort_by_key(|o| o.invoke);
                v.violate(
                    format!(
                        "{name}: token {} granted while an incompatible earlier hold was live",
                        b.fence
                    ),
                    ops,
                );
            }
        }
    }
    v
}

fn compatible(mode: Mode, others: impl Iterator<Item = Mode>) -> bool {
    let others: Vec<Mode> = others.collect();
    match mode {
        Mode::Exclusive => others.is_empty(),
        Mode::Shared => others.iter().all(|m| *m == Mode::Shared),
        Mode::Permits { count, limit } => {
            let taken: u32 = others
                .iter()
                .map(|m| match m {
                    Mode::Permits { count, .. } => *count,
                    _ => limit,
                })
                .sum();
            taken + count <= limit
        }
    }
}

/// No lease was granted anything after a client learned it was dead.
pub fn no_grant_to_dead_lease(history: &History) -> Verdict {
    let all = grants(history);
    let mut first_death: BTreeMap<u64, &Operation> = BTreeMap::new();
    for o in &history.ops {
        if let (Some(lease), Some(c)) = (o.op.lease(), o.complete) {
            if proves_dead(o) && first_death.get(&lease).is_none_or(|d| d.complete > Some(c)) {
                first_death.insert(lease, o);
            }
        }
    }
    let mut v = Verdict::new(
        "no grant to a dead lease",
        format!(
            "{} grants, {} leases seen dead",
            all.len(),
            first_death.len()
        ),
    );
    for g in &all {
        if let Some(d) = first_death.get(&g.lease) {
            if d.complete.is_some_and(|c| c < g.op.invoke) {
                v.violate(
                    format!(
                        "{}: lease {} granted token {} after it was reported gone",
                        g.name, g.lease, g.fence
                    ),
                    vec![(*d).clone(), g.op.clone()],
                );
            }
        }
    }
    v
}
