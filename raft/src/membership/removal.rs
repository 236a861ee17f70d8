//! Noticing that this node was removed from the cluster, so that it stops
//! instead of campaigning for ever against members that refuse it.
//!
//! A node knows it was removed when either
//! - it applied a membership that does not list it, later than the first
//!   one that did (a node added with `--join` replays the cluster's earlier
//!   memberships, which never listed it, on its way to its addition; the
//!   index of its admission is kept in the data dir's identity file), or
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

use raftlock_storage::{AppliedMembers, LogStore, NodeId};

/// Whether, and why, this node was removed. Clones share the verdict.
#[derive(Clone)]
pub(crate) struct Removal {
    id: NodeId,
    members: AppliedMembers,
    /// Where the admission of a joining node is recorded.
    log: LogStore,
    /// The log index of the first applied membership that listed this
    /// node; `None` while a joining node has not been listed yet.
    admitted_at: Arc<std::sync::Mutex<Option<u64>>>,
    verdict: Arc<watch::Sender<Option<String>>>,
}

impl Removal {
    pub(crate) fn new(id: NodeId, members: AppliedMembers, log: LogStore) -> Self {
        Removal {
            id,
            members,
            admitted_at: Arc::new(std::sync::Mutex::new(log.admitted_at())),
            log,
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

    /// Checks the membership this node applied: records a joining node's
    /// admission the first time it is listed, and declares the removal of
    /// an admitted node that a later membership no longer lists.
    pub(crate) async fn check_applied(&self) {
        let Some((index, listed)) = self.members.listing(self.id) else {
            return;
        };
        let admitted_at = *self.admitted_at.lock().unwrap_or_else(|e| e.into_inner());
        match (listed, admitted_at) {
            (true, Some(_)) => {}
            (true, None) => {
                if let Err(e) = self.log.record_admission(index).await {
                    // Kept in memory all the same; only a restart before
                    // the next try forgets it, which delays noticing a
                    // removal, never invents one.
                    tracing::warn!(node = self.id, "cannot record this node's admission: {e}");
                }
                tracing::info!(node = self.id, index, "admitted to the cluster");
                *self.admitted_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(index);
            }
            (false, Some(since)) if index > since => self.declare(format!(
                "the committed membership (log index {index}) no longer lists node {}",
                self.id
            )),
            // A joining node replaying the memberships before its own
            // addition, or not added yet.
            (false, _) => {}
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
