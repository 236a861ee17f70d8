//! The replication layer's errors: one enum, [`Error`], whose every
//! variant says what went wrong as data — a reason enum for a call that
//! cannot be served now ([`Unavailable`]), the field and bound of bad input
//! ([`ValidationError`]), the failed step and its source for an internal
//! fault ([`Internal`]).
//!
//! # Layout
//! - [`unavailable`]: why a call cannot be served right now (retry).
//! - [`invalid`]: why a request is refused as bad input.
//! - [`membership`]: a membership change the leader refuses.
//! - [`internal`]: a broken invariant or a failed library call, with its
//!   source.
//! - [`source`](crate::source): a foreign error kept whole, shareable and comparable.
//! - [`peer_words`]: another node's words, the source of a reason relayed
//!   over the peer API.
//! - `wire`: the form that crosses the peer API (kind and words), which
//!   nodes of different builds both read.

use serde::{Deserialize, Serialize};

use raftlock_storage::{CommandError, NodeId};

pub mod content_refusal;
pub mod dial_error;
pub mod internal;
pub mod invalid;
pub mod membership;
pub mod peer_words;
pub mod probe_fault;
pub mod refusal;
pub mod unavailable;
mod wire;

pub use crate::source::{Dump, Source};
pub use internal::{Asked, Internal, Step};
pub use invalid::{Problem, ValidationError};
pub use membership::{Found, MembershipRefusal, NewLearner};
pub use peer_words::PeerWords;
pub use unavailable::{ForwardFailure, ForwardFault, Unavailable};

/// Why a replicated call did not produce an answer.
///
/// It crosses the peer API (a follower hands the leader's refusal on) in
/// a wire form of its own that carries the kind and the words (see
/// `wire` and docs/decisions.md, "Errors on the peer wire"): a refusal
/// relayed from another node arrives as the `Relayed` reason of its kind,
/// whose source, a [`PeerWords`], holds the words and, where known, the
/// node that said them.
///
/// Not `#[non_exhaustive]`: the one mapping to `tonic::Status`
/// (`raftlock::status`) names every variant, so a new one does not compile
/// until it is mapped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(into = "wire::WireError", from = "wire::WireError")]
pub enum Error {
    /// The state machine refused the request; nothing changed.
    #[error(transparent)]
    Rejected(#[from] CommandError),
    /// This node cannot serve the call and knows who can.
    #[error("not the leader; the leader is node {leader_id} at {leader_addr}")]
    NotLeader {
        /// Current leader's id.
        leader_id: NodeId,
        /// Current leader's client address.
        leader_addr: String,
    },
    /// The call cannot be served right now; retry later or elsewhere.
    #[error("unavailable: {0}")]
    Unavailable(#[from] Unavailable),
    /// Bad input caught before it reached the log.
    #[error("invalid argument: {0}")]
    InvalidArgument(#[from] ValidationError),
    /// The node is shutting down.
    #[error("node is shutting down")]
    ShuttingDown,
    /// Local storage, a library or an internal invariant failed.
    #[error("internal error: {0}")]
    Internal(#[from] Internal),
}

impl From<MembershipRefusal> for Error {
    fn from(r: MembershipRefusal) -> Self {
        Error::InvalidArgument(r.into())
    }
}

impl Error {
    /// Whether the caller may retry the same request (with the same request
    /// id) elsewhere or later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::NotLeader { .. } | Error::Unavailable(_))
    }
}
