//! Membership: what a typed change must find first (a new learner
//! answering as itself, a learner up and caught up), how long the leader
//! waits for a learner to catch up, and noticing that this node was
//! removed.

pub mod catch_up;
pub mod checks;
pub(crate) mod removal;
