//! The transitions of [`LockModel`]: every state an operation may lead
//! to, with lease deaths assumed only where nothing else explains an
//! answer.

use std::collections::BTreeSet;

use super::{AcqResult, Hold, LockModel, LockOp, RelResult};
use crate::history::Mode;

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

    /// Every state `op` may lead to from here. Where an op's outcome is
    /// unknown, "it had no effect" comes last, so the search tries it
    /// first.
    pub(super) fn apply(&self, op: &LockOp) -> Vec<LockModel> {
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
