//! How the leader waits, inside one membership call, for a learner to
//! catch up: a new learner until it holds the entry that added it, a
//! learner to promote until it is close enough to the leader's log
//! ([`MAX_PROMOTE_LAG`](crate::membership::checks::MAX_PROMOTE_LAG)).
//!
//! The wait is bounded by [`CATCH_UP_WAIT`], well inside the time a
//! follower gives a forwarded call (`leader_wait`, 5 s by default), so
//! the caller hears an answer instead of a broken forward. A longer
//! catch-up is waited out by the caller (`raftlock cluster add-learner`
//! and `promote` poll the learner's own log, with a `--timeout`).
//! openraft's own blocking `add_learner` is not used: it waits without a
//! bound, and calls a learner 5 000 entries behind caught up.

use std::time::Duration;

use openraft::RaftMetrics;
use raftlock_storage::{NodeId, TypeConfig};

use crate::Raft;

/// Longest the leader waits for a learner within one membership call.
pub const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

/// The last log index the leader knows learner `id` holds (`None`: no
/// answer from it yet, or this node does not lead).
pub fn matched(m: &RaftMetrics<TypeConfig>, id: NodeId) -> Option<u64> {
    m.replication
        .as_ref()
        .and_then(|r| r.get(&id).cloned().flatten())
        .map(|l| l.index)
}

/// Waits up to `within` until learner `id` holds log index `index` (or
/// this node stops leading); answers whether it does.
pub async fn wait_holds(raft: &Raft, id: NodeId, index: u64, within: Duration) -> bool {
    let holds = |m: &RaftMetrics<TypeConfig>| matched(m, id).is_some_and(|i| i >= index);
    raft.wait(Some(within))
        .metrics(
            move |m| holds(m) || m.replication.is_none(),
            "a new learner holds its own addition",
        )
        .await
        .is_ok_and(|m| holds(&m))
}
