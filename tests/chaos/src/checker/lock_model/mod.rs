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
//!
//! # Layout
//!
//! - this file: the model's state and operations, and [`Model::step`];
//! - `transitions`: what each operation may do to the state;
//! - `projection`: from a recorded history to one name's entries.

mod projection;
mod transitions;

use super::search::Model;
use crate::history::Mode;

pub use projection::{lock_names, project, proves_dead};

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
    /// cancel (raft/src/grant_wait.rs: "a grant that raced the cancel is released"),
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
