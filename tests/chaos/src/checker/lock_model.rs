//! The sequential model of one lock name (mutex, read-write lock,
//! semaphore or election), and the projection of a history onto it.
//!
//! Lease expiry is decided by the cluster at times the clients cannot see,
//! so the model lets any lease die at any moment, lazily: a lease is killed
//! only when that is the one way to explain an answer (a grant while
//! someone else held the lock, a "not held" for a holder, a keep-alive that
//! found it gone). A lease once dead stays dead, so a later answer showing
//! it alive (a keep-alive, a release that worked) refutes that explanation
//! and the search backtracks. Fencing tokens must grow with every new
//! grant; a re-entry returns the holder's token.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::search::{Entry, Model};
use crate::history::{Failure, History, Mode, Op, Operation, Value};

/// One hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Hold {
    owner: u32,
    lease: u64,
    mode: Mode,
    /// `None`: granted by an op whose answer was lost.
    fence: Option<u64>,
    count: u32,
}

/// The lock's state: holders, leases known dead, the last fence given.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LockModel {
    holders: Vec<Hold>,
    dead: Vec<u64>,
    /// Lower bound of the last fence granted.
    last_fence: u64,
    /// Timed-out waits (see [`AcqResult::Cancelled`]) whose cancel was
    /// placed before their possible grant, which therefore cannot happen.
    cancel_first: Vec<u32>,
    /// Timed-out waits whose possible grant was placed as "not granted"
    /// before their cancel.
    grant_skipped: Vec<u32>,
}

/// How an acquire (or campaign) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcqResult {
    Granted {
        fence: u64,
        count: u32,
    },
    Busy,
    /// Definitely not granted (refused input, name used otherwise).
    NoEffect,
    /// The wait timed out (or ended) and the server cancelled it. The grant
    /// may still have happened inside the call, then been released by the
    /// cancel (grant_wait.rs: "a grant that raced the cancel is released"),
    /// so others may have seen the lock taken meanwhile. The projection
    /// pairs this with a [`LockOp::Cancel`] over the same span.
    Cancelled,
    /// Refused because the lease is gone.
    LeaseDead,
    Unknown,
}

/// How a release ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelResult {
    Ok { remaining: u32 },
    NotHeld,
    Unknown,
}

/// An operation as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOp {
    Acquire {
        owner: u32,
        lease: u64,
        mode: Mode,
        result: AcqResult,
    },
    Release {
        owner: u32,
        result: RelResult,
    },
    /// The server's cancel of a timed-out wait: ends the owner's hold if
    /// the grant came first, else rules the grant out.
    Cancel {
        owner: u32,
    },
    /// Resign/cancel: ends the owner's hold if any. `known`: it surely ran.
    Resign {
        owner: u32,
        known: bool,
    },
    Check {
        fence: u64,
        valid: bool,
    },
    LeaseAlive(u64),
    LeaseDead(u64),
    /// An election's leader read: (owner, fence) or none.
    Leader(Option<(u32, u64)>),
}

impl LockModel {
    fn kill(&self, lease: u64) -> LockModel {
        let mut s = self.clone();
        if let Err(at) = s.dead.binary_search(&lease) {
            s.dead.insert(at, lease);
        }
        s.holders.retain(|h| h.lease != lease);
        s
    }

    fn is_dead(&self, lease: u64) -> bool {
        self.dead.binary_search(&lease).is_ok()
    }

    fn holder(&self, owner: u32) -> Option<usize> {
        self.holders.iter().position(|h| h.owner == owner)
    }

    fn fits(&self, mode: Mode) -> bool {
        match mode {
            Mode::Exclusive => self.holders.is_empty(),
            Mode::Shared => self.holders.iter().all(|h| h.mode == Mode::Shared),
            Mode::Permits { count, limit } => {
                let taken: u64 = self
                    .holders
                    .iter()
                    .map(|h| match h.mode {
                        Mode::Permits { count, .. } => u64::from(count),
                        _ => u64::from(limit),
                    })
                    .sum();
                taken + u64::from(count) <= u64::from(limit)
            }
        }
    }

    /// The states, after as few lease deaths as needed (never `own`), in
    /// which a request in `mode` fits.
    fn make_room(&self, mode: Mode, own: u64) -> Vec<LockModel> {
        if self.fits(mode) {
            return vec![self.clone()];
        }
        let mut out: Vec<LockModel> = Vec::new();
        let leases: BTreeSet<u64> = self
            .holders
            .iter()
            .filter(|h| h.lease != own)
            .map(|h| h.lease)
            .collect();
        for lease in leases {
            for s in self.kill(lease).make_room(mode, own) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    fn grant(&self, owner: u32, lease: u64, mode: Mode, fence: Option<u64>) -> Vec<LockModel> {
        if self.is_dead(lease) {
            return Vec::new();
        }
        if let Some(f) = fence {
            // Compatible waiters granted by one apply step (several readers,
            // several permit holders) share that step's token.
            let same_step = mode != Mode::Exclusive
                && self
                    .holders
                    .iter()
                    .any(|h| h.fence == Some(f) && h.mode != Mode::Exclusive);
            if f <= self.last_fence && !(same_step && f == self.last_fence) {
                return Vec::new();
            }
        }
        self.make_room(mode, lease)
            .into_iter()
            .map(|mut s| {
                s.holders.push(Hold {
                    owner,
                    lease,
                    mode,
                    fence,
                    count: 1,
                });
                s.last_fence = fence.unwrap_or(s.last_fence + 1);
                s
            })
            .collect()
    }

    fn release_one(&self, at: usize) -> LockModel {
        let mut s = self.clone();
        s.holders[at].count -= 1;
        if s.holders[at].count == 0 {
            s.holders.remove(at);
        }
        s
    }
}

/// An operation and, on the last one (in call order) that concerns a
/// lease, that lease: once it is placed, whether the lease is dead no
/// longer matters, so the state forgets it and stays small. (Forgetting
/// only makes the model more permissive.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub op: LockOp,
    pub forget: Option<u64>,
}

impl Model for LockModel {
    type Op = Step;

    fn step(&self, step: &Step) -> Vec<LockModel> {
        let mut out = self.apply(&step.op);
        if let Some(lease) = step.forget {
            for s in &mut out {
                if let Ok(at) = s.dead.binary_search(&lease) {
                    s.dead.remove(at);
                }
            }
        }
        out
    }
}

impl LockModel {
    /// Every state `op` may lead to from here. Where an op's outcome is
    /// unknown, "it had no effect" comes last, so the search tries it
    /// first.
    fn apply(&self, op: &LockOp) -> Vec<LockModel> {
        match op {
            LockOp::Acquire {
                owner,
                lease,
                mode,
                result,
            } => self.acquire(*owner, *lease, *mode, result),
            LockOp::Release { owner, result } => match (self.holder(*owner), result) {
                (Some(at), RelResult::Ok { remaining })
                    if self.holders[at].count == remaining + 1 =>
                {
                    vec![self.release_one(at)]
                }
                (_, RelResult::Ok { .. }) => Vec::new(),
                (Some(at), RelResult::NotHeld) => vec![self.kill(self.holders[at].lease)],
                (None, RelResult::NotHeld) => vec![self.clone()],
                (Some(at), RelResult::Unknown) => vec![self.release_one(at), self.clone()],
                (None, RelResult::Unknown) => vec![self.clone()],
            },
            LockOp::Cancel { owner } => {
                let mut s = self.clone();
                if let Some(at) = s.holder(*owner) {
                    s.holders.remove(at);
                } else if let Some(at) = s.grant_skipped.iter().position(|o| o == owner) {
                    s.grant_skipped.remove(at);
                } else {
                    s.cancel_first.push(*owner);
                }
                vec![s]
            }
            LockOp::Resign { owner, known } => {
                let mut ended = self.clone();
                ended.holders.retain(|h| h.owner != *owner);
                if *known || ended == *self {
                    vec![ended]
                } else {
                    vec![ended, self.clone()]
                }
            }
            LockOp::Check { fence, valid: true } => {
                if self
                    .holders
                    .iter()
                    .any(|h| h.fence.is_none_or(|f| f == *fence))
                {
                    vec![self.clone()]
                } else {
                    Vec::new()
                }
            }
            LockOp::Check {
                fence,
                valid: false,
            } => match self.holders.iter().find(|h| h.fence == Some(*fence)) {
                Some(h) => vec![self.kill(h.lease)],
                None => vec![self.clone()],
            },
            LockOp::LeaseAlive(lease) => {
                if self.is_dead(*lease) {
                    Vec::new()
                } else {
                    vec![self.clone()]
                }
            }
            LockOp::LeaseDead(lease) => vec![self.kill(*lease)],
            LockOp::Leader(None) => {
                let mut s = self.clone();
                let leases: Vec<u64> = s.holders.iter().map(|h| h.lease).collect();
                for l in leases {
                    s = s.kill(l);
                }
                vec![s]
            }
            LockOp::Leader(Some((owner, fence))) => {
                match self.holders.iter().position(|h| h.owner == *owner) {
                    Some(at) if self.holders[at].fence.is_none_or(|f| f == *fence) => {
                        let mut s = self.clone();
                        s.holders[at].fence = Some(*fence);
                        vec![s]
                    }
                    _ => Vec::new(),
                }
            }
        }
    }
}

impl LockModel {
    fn acquire(&self, owner: u32, lease: u64, mode: Mode, result: &AcqResult) -> Vec<LockModel> {
        let held = self.holder(owner);
        match (result, held) {
            (AcqResult::Granted { fence, count }, Some(at)) => {
                let h = &self.holders[at];
                if self.is_dead(lease)
                    || *count != h.count + 1
                    || h.fence.is_some_and(|f| f != *fence)
                {
                    return Vec::new();
                }
                let mut s = self.clone();
                s.holders[at].count += 1;
                s.holders[at].fence = Some(*fence);
                vec![s]
            }
            (AcqResult::Granted { fence, count: 1 }, None) => {
                self.grant(owner, lease, mode, Some(*fence))
            }
            (AcqResult::Granted { .. }, None) => Vec::new(),
            (AcqResult::Busy, None) if !self.holders.is_empty() => vec![self.clone()],
            (AcqResult::Busy, _) => Vec::new(),
            (AcqResult::NoEffect, _) => vec![self.clone()],
            (AcqResult::Cancelled, _) => {
                if let Some(at) = self.cancel_first.iter().position(|o| *o == owner) {
                    let mut s = self.clone();
                    s.cancel_first.remove(at);
                    return vec![s];
                }
                let mut out = if held.is_some() {
                    Vec::new()
                } else {
                    self.grant(owner, lease, mode, None)
                };
                let mut skipped = self.clone();
                skipped.grant_skipped.push(owner);
                out.push(skipped);
                out
            }
            (AcqResult::LeaseDead, _) => vec![self.kill(lease)],
            (AcqResult::Unknown, Some(at)) => {
                let mut s = self.clone();
                s.holders[at].count += 1;
                vec![s, self.clone()]
            }
            (AcqResult::Unknown, None) => {
                let mut out = self.grant(owner, lease, mode, None);
                out.push(self.clone());
                out
            }
        }
    }
}

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
