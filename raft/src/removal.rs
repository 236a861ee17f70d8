//! Noticing that this node was removed from the cluster, so that it stops
//! instead of campaigning for ever against members that refuse it.
//!
//! A node knows it was removed when either
//! - it applied a membership that does not list it, or
//! - a peer refused one of its Raft messages (a vote or an append) as from a
//!   non-member, citing a committed membership newer than the one this node
//!   applied. Committed memberships are ordered by log index, so a newer
//!   one without this node is final. A peer that merely lags (it has not
//!   applied this node's addition yet) cites an older one and is ignored.
//!
//! Forwarded calls are not evidence: a learner forwards writes as soon as
//! the leader replicates to it, maybe before the leader applied its
//! addition.

use std::sync::Arc;

use tokio::sync::watch;

use raftlock_storage::{AppliedMembers, NodeId};

use crate::replica::Replica;

/// Metadata on a peer's "not a member" refusal: the log index of the
/// committed membership it judged by.
pub const MEMBERSHIP_INDEX_KEY: &str = "raftlock-membership-index";

/// Whether, and why, this node was removed. Clones share the verdict.
#[derive(Clone)]
pub(crate) struct Removal {
    id: NodeId,
    members: AppliedMembers,
    verdict: Arc<watch::Sender<Option<String>>>,
}

impl Removal {
    pub(crate) fn new(id: NodeId, members: AppliedMembers) -> Self {
        Removal {
            id,
            members,
            verdict: Arc::new(watch::channel(None).0),
        }
    }

    /// `peer` refused a Raft message of this node as from a non-member,
    /// judging by its committed membership at `their_index`.
    pub(crate) fn refused_by(&self, peer: NodeId, their_index: u64) {
        let ours = self.members.index();
        if their_index > ours {
            self.declare(format!(
                "node {peer} refuses node {} as a non-member: its committed membership \
                 (log index {their_index}) no longer lists it (this node applied index {ours})",
                self.id
            ));
        }
    }

    /// Checks the membership this node applied.
    pub(crate) fn check_applied(&self) {
        if self.members.contains(self.id) == Some(false) {
            self.declare(format!(
                "the committed membership (log index {}) no longer lists node {}",
                self.members.index(),
                self.id
            ));
        }
    }

    fn declare(&self, why: String) {
        self.verdict.send_if_modified(|v| {
            if v.is_some() {
                return false;
            }
            *v = Some(why);
            true
        });
    }

    /// Resolves with the reason once this node knows it was removed.
    pub(crate) async fn wait(&self) -> String {
        let mut rx = self.verdict.subscribe();
        let why = match rx.wait_for(Option::is_some).await {
            Ok(why) => why.clone(),
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            // The sender lives as long as `self`; unreachable in practice.
            None => std::future::pending().await,
        }
    }
}

/// Stops serving once the node learns it was removed; runs until `stop`.
pub(crate) async fn stop_when_removed(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    tokio::select! {
        why = node.removal.wait() => {
            tracing::warn!(node = node.id, "removed from the cluster: {why}; this node stops serving");
            node.mark_stopping();
        }
        _ = stop.changed() => {}
    }
}
