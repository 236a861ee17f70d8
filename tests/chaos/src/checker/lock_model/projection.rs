//! The projection of a recorded history onto one lock name: the entries
//! the linearizability search orders, with unknown outcomes cut short at
//! the first proof that their lease is dead.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{AcqResult, LockOp, RelResult, Step};
use crate::checker::search::Entry;
use crate::history::{Failure, History, Mode, Op, Operation, Value};

/// The names a history's lock operations touch.
pub fn lock_names(history: &History) -> BTreeSet<String> {
    history
        .ops
        .iter()
        .filter(|o| !matches!(o.op, Op::RegRead { .. } | Op::RegWrite { .. }))
        .filter_map(|o| o.op.name().map(str::to_string))
        .collect()
}

/// The entries of lock `name`: its lock operations plus the keep-alives
/// and revokes of every lease used on it. An op with an unknown outcome
/// that concerns a lease ends no later than the first later proof that the
/// lease is dead (after that it can have no effect).
pub fn project<'a>(history: &'a History, name: &str) -> Vec<Entry<Step>> {
    let mut owners: HashMap<&'a str, u32> = HashMap::new();
    let mut owner_lease: HashMap<&str, u64> = HashMap::new();
    let mut leases = BTreeSet::new();
    for o in &history.ops {
        if let Op::Acquire {
            name: n,
            owner,
            lease,
            ..
        }
        | Op::Campaign {
            name: n,
            owner,
            lease,
        } = &o.op
        {
            if n == name {
                leases.insert(*lease);
                owner_lease.entry(owner).or_insert(*lease);
            }
        }
    }
    // Proofs of death per lease: (invoke, complete).
    let mut deaths: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for o in &history.ops {
        if let (Some(lease), Some(c)) = (o.op.lease(), o.complete) {
            if proves_dead(o) {
                deaths.entry(lease).or_default().push((o.invoke, c));
            }
        }
    }
    let mut entries = Vec::new();
    for (i, o) in history.ops.iter().enumerate() {
        let mut intern = |s: &'a str| intern(&mut owners, s);
        let op = match &o.op {
            Op::Acquire {
                name: n,
                owner,
                lease,
                mode,
                ..
            } if n == name => Some(LockOp::Acquire {
                owner: intern(owner),
                lease: *lease,
                mode: *mode,
                result: acq_result(o),
            }),
            Op::Campaign {
                name: n,
                owner,
                lease,
            } if n == name => Some(LockOp::Acquire {
                owner: intern(owner),
                lease: *lease,
                mode: Mode::Exclusive,
                result: acq_result(o),
            }),
            Op::Release { name: n, owner } if n == name => {
                let result = match (o.ok(), o.failure()) {
                    (Some(Value::Remaining { count }), _) => {
                        Some(RelResult::Ok { remaining: *count })
                    }
                    (_, Some(Failure::NotHeld | Failure::LeaseExpired)) => Some(RelResult::NotHeld),
                    (_, Some(_)) => None,
                    _ => Some(RelResult::Unknown),
                };
                result.map(|result| LockOp::Release {
                    owner: intern(owner),
                    result,
                })
            }
            Op::Resign { name: n, owner } if n == name => match o.outcome_kind() {
                "fail" => None,
                kind => Some(LockOp::Resign {
                    owner: intern(owner),
                    known: kind == "ok",
                }),
            },
            Op::Check { name: n, fence } if n == name => match o.ok() {
                Some(Value::Valid { valid }) => Some(LockOp::Check {
                    fence: *fence,
                    valid: *valid,
                }),
                _ => None,
            },
            Op::Leader { name: n } if n == name => match o.ok() {
                Some(Value::Leader { owner, fence }) => Some(LockOp::Leader(
                    owner.as_deref().map(|w| (intern(w), *fence)),
                )),
                _ => None,
            },
            Op::KeepAlive { lease } if leases.contains(lease) => match (o.ok(), o.failure()) {
                (Some(_), _) => Some(LockOp::LeaseAlive(*lease)),
                (_, Some(Failure::LeaseExpired)) => Some(LockOp::LeaseDead(*lease)),
                _ => None,
            },
            Op::Revoke { lease } if leases.contains(lease) => match (o.ok(), o.failure()) {
                (Some(_), _) | (_, Some(Failure::LeaseExpired)) => Some(LockOp::LeaseDead(*lease)),
                _ => None,
            },
            _ => None,
        };
        let Some(op) = op else { continue };
        let mut ret = o.complete_or_max();
        if ret == u64::MAX {
            let lease = match &o.op {
                Op::Release { owner, .. } | Op::Resign { owner, .. } => {
                    owner_lease.get(owner.as_str()).copied()
                }
                other => other.lease(),
            };
            if let Some(proofs) = lease.and_then(|l| deaths.get(&l)) {
                if let Some(end) = proofs
                    .iter()
                    .filter(|(inv, _)| *inv >= o.invoke)
                    .map(|(_, c)| *c)
                    .min()
                {
                    ret = end;
                }
            }
        }
        if let LockOp::Acquire {
            owner,
            result: AcqResult::Cancelled,
            ..
        } = &op
        {
            entries.push(Entry {
                call: o.invoke,
                ret,
                op: Step {
                    op: LockOp::Cancel { owner: *owner },
                    forget: None,
                },
                source: i,
            });
        }
        entries.push(Entry {
            call: o.invoke,
            ret,
            op: Step { op, forget: None },
            source: i,
        });
    }
    entries.sort_by_key(|e| (e.call, e.source));
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if let LockOp::Acquire { lease, .. }
        | LockOp::LeaseAlive(lease)
        | LockOp::LeaseDead(lease) = &e.op.op
        {
            last.insert(*lease, i);
        }
    }
    for (lease, i) in last {
        entries[i].op.forget = Some(lease);
    }
    entries
}

/// A small number for an owner string.
fn intern<'a>(owners: &mut HashMap<&'a str, u32>, s: &'a str) -> u32 {
    let next = owners.len() as u32;
    *owners.entry(s).or_insert(next)
}

fn acq_result(o: &Operation) -> AcqResult {
    match (o.ok(), o.failure()) {
        (Some(Value::Granted { fence, count }), _) => AcqResult::Granted {
            fence: *fence,
            count: *count,
        },
        (Some(_), _) => AcqResult::Busy,
        (_, Some(Failure::LeaseExpired)) => AcqResult::LeaseDead,
        (_, Some(Failure::Timeout | Failure::WaitEnded)) => AcqResult::Cancelled,
        (_, Some(_)) => AcqResult::NoEffect,
        _ => AcqResult::Unknown,
    }
}

/// Whether `o` proves its lease dead by the time it answered.
pub fn proves_dead(o: &Operation) -> bool {
    matches!(
        (&o.op, o.ok(), o.failure()),
        (Op::Revoke { .. }, Some(_), _)
            | (
                Op::KeepAlive { .. } | Op::Revoke { .. } | Op::Acquire { .. } | Op::Campaign { .. },
                _,
                Some(Failure::LeaseExpired)
            )
    )
}
