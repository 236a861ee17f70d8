//! The peer network: a channel to each peer, dialed lazily (over TLS only
//! to the node named) and reused per target, and a follower's call to the
//! leader ([`PeerNetwork::forward`]).
//!
//! Each message is postcard in a [`Blob`](crate::pb::Blob): the peer API is internal and
//! ships with the binary, and postcard keeps bytes as bytes (JSON made a
//! 64 KiB election value 130–230 KB, too slow to cross in one heartbeat
//! when a follower catches up). Every blob carries the [`PeerGuard`] envelope, and
//! every reply's envelope is checked: an address that now answers as
//! another node or another cluster is treated as unreachable.
//!
//! # Layout
//! - `connection`: openraft's RPCs to one peer over these channels.

mod connection;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use raftlock_storage::NodeId;

pub use self::connection::{PeerConnection, APPEND_BUDGET_BYTES};
use crate::error::PeerWords;
pub use crate::error::{ForwardFailure, ForwardFault};

use super::dial_error::DialError;
use super::forward::{ForwardResult, Forwarded};
use super::guard::PeerGuard;
pub(crate) use super::link_filter::LinkFilter;
use super::payload::{decode, encode};
use super::witness::Witness;
use super::OnRefusedAsNonMember;
use crate::metrics::NodeMetrics;
use crate::pb::peer_client::PeerClient;
use crate::transport::tls::{member_endpoint, NodeTls};

/// Makes peer clients for openraft and for forwarding.
#[derive(Clone)]
pub struct PeerNetwork {
    /// This node's id, for the link filter.
    id: NodeId,
    /// Lazily connected channels by target node and peer address: with TLS
    /// a channel checks that the server is that node.
    channels: Arc<Mutex<HashMap<(NodeId, String), Channel>>>,
    filter: LinkFilter,
    /// Seals requests and checks replies.
    guard: Arc<PeerGuard>,
    /// Largest reply accepted.
    max_message: usize,
    /// The least time an append-entries call is given (see
    /// [`PeerConnection::deadline`]).
    append_deadline: Duration,
    /// This node's certificate and the cluster CA; `None`: plain text.
    tls: Option<NodeTls>,
    /// Counts failed Raft RPCs per peer.
    metrics: Arc<NodeMetrics>,
    /// Told when a peer refuses this node as a removed member.
    on_refused: OnRefusedAsNonMember,
    /// What this node saw of each peer, for a peer's rollback check.
    witness: Arc<Witness>,
}

impl PeerNetwork {
    pub(crate) fn new(
        id: NodeId,
        filter: LinkFilter,
        guard: Arc<PeerGuard>,
        max_message: usize,
        tls: Option<NodeTls>,
        metrics: Arc<NodeMetrics>,
        on_refused: OnRefusedAsNonMember,
    ) -> Self {
        PeerNetwork {
            id,
            channels: Arc::default(),
            filter,
            guard,
            max_message,
            append_deadline: Duration::ZERO,
            tls,
            metrics,
            on_refused,
            witness: Arc::default(),
        }
    }

    /// Gives every append-entries call at least `deadline` (see
    /// [`PeerConnection::deadline`]); without, openraft's heartbeat interval.
    pub(crate) fn with_append_deadline(mut self, deadline: Duration) -> Self {
        self.append_deadline = deadline;
        self
    }

    /// What this node saw of each peer (see [`Witness`]).
    pub(crate) fn witness(&self) -> &Witness {
        &self.witness
    }

    /// The channel to node `target` at `addr`. With TLS it presents this
    /// node's certificate and accepts only a server certificate from the
    /// cluster CA naming `node-TARGET.raftlock`.
    fn channel(&self, target: NodeId, addr: &str) -> Result<Channel, DialError> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let key = (target, addr.to_string());
        if let Some(c) = channels.get(&key) {
            return Ok(c.clone());
        }
        let channel = self.endpoint(target, addr)?.connect_lazy();
        channels.insert(key, channel.clone());
        Ok(channel)
    }

    /// How to reach node `target` at `addr` (over TLS: only if it presents
    /// node `target`'s certificate).
    pub(crate) fn endpoint(&self, target: NodeId, addr: &str) -> Result<Endpoint, DialError> {
        Ok(member_endpoint(self.tls.as_ref(), target, addr)?
            .connect_timeout(Duration::from_millis(500))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(5))
            .keep_alive_timeout(Duration::from_secs(5)))
    }

    /// The links a test cut or slowed.
    pub(crate) fn filter(&self) -> &LinkFilter {
        &self.filter
    }

    /// The envelope this node seals and checks peer messages with.
    pub(crate) fn guard(&self) -> &PeerGuard {
        &self.guard
    }

    /// Whether peers authenticate with a cluster secret (a join token).
    /// The secret itself never leaves the guard but for its own file.
    pub fn uses_join_token(&self) -> bool {
        self.guard.key().is_some()
    }

    /// Sends a forwarded call to `target` at `addr` and waits for its answer.
    pub async fn forward(
        &self,
        target: NodeId,
        addr: &str,
        call: &Forwarded,
        timeout: Duration,
    ) -> Result<ForwardResult, ForwardFailure> {
        let lost = |reason: ForwardFault| ForwardFailure {
            refused: false,
            reason,
        };
        if self.filter.is_blocked(self.id, target) {
            return Err(lost(ForwardFault::LinkCut(target)));
        }
        let channel = self
            .channel(target, addr)
            .map_err(|e| lost(ForwardFault::Dial(e)))?;
        let data = encode(call).map_err(|e| lost(ForwardFault::Payload(e)))?;
        let sealed = self.guard.seal("forward", target, data);
        let mut req = tonic::Request::new(sealed.clone());
        req.set_timeout(timeout);
        let reply = PeerClient::new(channel)
            .max_decoding_message_size(self.max_message)
            .forward(req)
            .await
            .map_err(|s| ForwardFailure {
                refused: s.code() == tonic::Code::PermissionDenied,
                reason: ForwardFault::Status {
                    leader: target,
                    code: s.code(),
                    message: PeerWords::new(s.message()).said_by(target),
                },
            })?
            .into_inner();
        self.guard
            .check_reply("forward", &reply, &sealed, target)
            .map_err(|refusal| {
                lost(ForwardFault::BadReply {
                    leader: target,
                    addr: addr.to_owned(),
                    refusal: Box::new(refusal),
                })
            })?;
        self.witness.saw_boot(target, reply.boot);
        let result: ForwardResult =
            decode(&reply.data).map_err(|e| lost(ForwardFault::Payload(e)))?;
        Ok(result.map_err(|e| e.said_by(target)))
    }
}

#[cfg(test)]
mod tests;
