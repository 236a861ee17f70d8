//! The peer transport and its guards: the openraft network over the peer
//! gRPC API (client side), the envelope and authentication on every
//! message, bounds on what a message may say, snapshot pieces, and what
//! this node saw of each peer. The server side is the node's
//! (`crate::node::peer_service`), since it hands messages to the replica.

pub mod admin_credential;
pub mod auth;
pub mod checks;
pub mod forward;
pub mod guard;
pub(crate) mod link_filter;
pub mod network;
pub mod payload;
pub mod probe;
pub mod snapshot_transfer;
pub mod witness;

/// The refusals and dial errors, where every error of this crate lives.
pub use crate::error::{content_refusal, dial_error};

use std::sync::Arc;

use raftlock_storage::NodeId;

/// Metadata on a peer's "not a member" refusal: the log index of the
/// committed membership it judged by.
pub const MEMBERSHIP_INDEX_KEY: &str = "raftlock-membership-index";

/// Told when `peer` refused one of this node's Raft messages as from a
/// non-member, judging by its committed membership at the given index
/// (the membership layer decides whether this node was removed).
pub type OnRefusedAsNonMember = Arc<dyn Fn(NodeId, u64) + Send + Sync>;
