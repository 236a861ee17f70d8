//! Membership: what a typed change must find first (a new learner
//! answering as itself, a learner up and caught up), and noticing that this
//! node was removed.

pub mod checks;
pub(crate) mod removal;
