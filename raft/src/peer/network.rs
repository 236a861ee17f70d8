//! openraft's network over the peer gRPC service.
//!
//! Each message is postcard in a [`Blob`](crate::pb::Blob): the peer API is internal and
//! ships with the binary, and postcard keeps bytes as bytes (JSON made a
//! 64 KiB election value 130–230 KB, too slow to cross in one heartbeat
//! when a follower catches up). Every blob carries the [`PeerGuard`] envelope, and
//! every reply's envelope is checked: an address that now answers as
//! another node or another cluster is treated as unreachable. Append
//! batches are kept under [`APPEND_BUDGET_BYTES`] by asking openraft for
//! fewer entries. Channels connect lazily and are reused per target.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::future::Future;

use openraft::error::{
    NetworkError, RPCError, RaftError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{OptionalSend, RaftNetworkFactory, RaftNetworkV2};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::transport::{Channel, Endpoint};

use raftlock_storage::{NodeAddr, NodeId, Snapshot, SnapshotData, TypeConfig, Vote};

pub use crate::error::{ForwardFailure, ForwardFault};

use super::dial_error::DialError;
use super::forward::{ForwardResult, Forwarded};
use super::guard::PeerGuard;
pub(crate) use super::link_filter::LinkFilter;
use super::payload::{decode, encode};
use super::snapshot_transfer;
use super::witness::Witness;
use super::{OnRefusedAsNonMember, MEMBERSHIP_INDEX_KEY};
use crate::metrics::NodeMetrics;
use crate::pb::peer_client::PeerClient;
use crate::transport::tls::{member_endpoint, NodeTls};

/// Largest append-entries message this node sends with more than one
/// entry: above it only a prefix of the entries is sent and openraft hears
/// a partial success, so a catch-up batch of large entries stays quick to
/// send and to decode. One entry alone may be larger (the proposer bounds
/// an entry to about 1 MiB of payload), up to the receiver's message limit.
pub const APPEND_BUDGET_BYTES: usize = 1 << 20;

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
                    message: s.message().to_owned(),
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

impl RaftNetworkFactory<TypeConfig> for PeerNetwork {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &NodeAddr) -> Self::Network {
        PeerConnection {
            net: self.clone(),
            target,
            addr: node.peer_addr.clone(),
        }
    }
}

/// openraft's handle on one peer.
pub struct PeerConnection {
    net: PeerNetwork,
    target: NodeId,
    addr: String,
}

/// Which peer RPC to call.
#[derive(Clone, Copy)]
enum Rpc {
    Append,
    Vote,
    PreVote,
    Snapshot,
}

impl Rpc {
    fn name(self) -> &'static str {
        match self {
            Rpc::Append => "append_entries",
            Rpc::Vote => "vote",
            Rpc::PreVote => "pre_vote",
            Rpc::Snapshot => "install_snapshot",
        }
    }
}

impl PeerConnection {
    async fn call<Req, Resp>(
        &self,
        rpc: Rpc,
        msg: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<TypeConfig>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
    {
        let data = encode(msg).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        self.send(rpc, data, option).await
    }

    /// Sends encoded `data` and decodes the checked reply; counts a
    /// failure in `raftlock_peer_rpc_errors_total`.
    async fn send<Resp>(
        &self,
        rpc: Rpc,
        data: Vec<u8>,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<TypeConfig>>
    where
        Resp: DeserializeOwned,
    {
        let result = self.exchange(rpc, data, option).await.and_then(|reply| {
            let result: Result<Resp, RaftError<TypeConfig>> =
                decode(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
            // The peer's Raft stopped or failed: it is going away.
            result.map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
        });
        if result.is_err() {
            self.net.metrics.on_peer_error(self.target, rpc.name());
        }
        result
    }

    /// Sends `data` sealed; answers the data of the peer's reply, its
    /// envelope checked.
    async fn exchange(
        &self,
        rpc: Rpc,
        data: Vec<u8>,
        option: &RPCOption,
    ) -> Result<Vec<u8>, RPCError<TypeConfig>> {
        if self.net.filter.is_blocked(self.net.id, self.target) {
            let e = std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "link cut by test filter",
            );
            return Err(RPCError::Unreachable(Unreachable::new(&e)));
        }
        let channel = self.net.channel(self.target, &self.addr).map_err(|e| {
            let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
            RPCError::Unreachable(Unreachable::new(&e))
        })?;
        let sealed = self.net.guard.seal(rpc.name(), self.target, data);
        let mut req = tonic::Request::new(sealed.clone());
        req.set_timeout(self.deadline(rpc, option));
        let mut client = PeerClient::new(channel).max_decoding_message_size(self.net.max_message);
        let reply = match rpc {
            Rpc::Append => client.append_entries(req).await,
            Rpc::Vote => client.vote(req).await,
            Rpc::PreVote => client.pre_vote(req).await,
            Rpc::Snapshot => client.install_snapshot(req).await,
        };
        let reply = reply.map_err(|status| {
            // A vote or an append refused as from a non-member may mean
            // this node was removed (the membership layer decides).
            let cited = status
                .metadata()
                .get(MEMBERSHIP_INDEX_KEY)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            if let (tonic::Code::PermissionDenied, Some(index)) = (status.code(), cited) {
                (self.net.on_refused)(self.target, index);
            }
            if status.code() == tonic::Code::Unavailable {
                RPCError::Unreachable(Unreachable::new(&status))
            } else {
                RPCError::Network(NetworkError::new(&status))
            }
        })?;
        let reply = reply.into_inner();
        if let Err(e) = self
            .net
            .guard
            .check_reply(rpc.name(), &reply, &sealed, self.target)
        {
            let e = std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} answers wrongly: {e}", self.addr),
            );
            return Err(RPCError::Unreachable(Unreachable::new(&e)));
        }
        self.net.witness.saw_boot(self.target, reply.boot);
        Ok(reply.data)
    }

    /// How long `rpc` may take. openraft gives every append-entries call
    /// the heartbeat interval (50 ms by default), but a follower answers an
    /// append only once its entries are on disk, and the round trip adds
    /// the network's time and (with TLS) the ciphers': on a slow disk or a
    /// busy machine that is more than a heartbeat. An append cut off then
    /// is sent again from the last acknowledged entry, with whatever was
    /// proposed meanwhile, so the follower has new entries to sync each
    /// time and the leader never hears it took any: nothing commits while
    /// the follower stays that slow (a forwarded write waited out all of
    /// `leader_wait`, 30 s, on a loaded CI machine with mutual TLS). An
    /// append is therefore given `append_deadline` (the longest election
    /// timeout: a follower that heard nothing for that long stands for
    /// election anyway). Heartbeats stay bounded by openraft itself, to the
    /// heartbeat interval.
    fn deadline(&self, rpc: Rpc, option: &RPCOption) -> Duration {
        match rpc {
            Rpc::Append => option.hard_ttl().max(self.net.append_deadline),
            _ => option.hard_ttl(),
        }
    }

    /// Sends the snapshot's pieces one by one; stops early when the
    /// follower answers with a vote of a later term (this leader is stale).
    async fn send_snapshot(
        &self,
        vote: Vote,
        snapshot: Snapshot,
        option: &RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, RPCError<TypeConfig>> {
        let mut reply = SnapshotResponse::<TypeConfig>::new(vote);
        for piece in snapshot_transfer::pieces(vote, snapshot) {
            reply = self.call(Rpc::Snapshot, &piece, option).await?;
            if reply.vote.leader_id().term > vote.leader_id().term {
                break;
            }
        }
        Ok(reply)
    }
}

impl RaftNetworkV2<TypeConfig> for PeerConnection {
    type SnapshotData = SnapshotData;

    /// Sends the entries, or only a prefix of them when all of them would
    /// make a message above [`APPEND_BUDGET_BYTES`]; a prefix the follower
    /// took is a partial success, after which openraft sends the rest.
    async fn append_entries(
        &mut self,
        mut rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        if !rpc.entries.is_empty() && self.net.filter.holds_entries(self.net.id, self.target) {
            let e = std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "log entries held by test filter",
            );
            return Err(RPCError::Unreachable(Unreachable::new(&e)));
        }
        let mut data = encode(&rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let mut sent_prefix = None;
        while rpc.entries.len() > 1 && data.len() > APPEND_BUDGET_BYTES {
            let entries = rpc.entries.len();
            let fit = (entries * APPEND_BUDGET_BYTES / data.len()).clamp(1, entries - 1);
            rpc.entries.truncate(fit);
            let last = rpc.entries.last().map(|e| e.log_id);
            rpc.leader_commit = rpc.leader_commit.min(last);
            sent_prefix = last;
            data = encode(&rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        }
        let sent = Instant::now();
        let reply = self.send(Rpc::Append, data, &option).await?;
        if !rpc.entries.is_empty() {
            self.net.metrics.on_peer_append(self.target, sent.elapsed());
        }
        Ok(match (reply, sent_prefix) {
            (AppendEntriesResponse::Success, Some(last)) => {
                AppendEntriesResponse::PartialSuccess(Some(last))
            }
            (reply, _) => reply,
        })
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        let reply: VoteResponse<TypeConfig> = self.call(Rpc::Vote, &rpc, &option).await?;
        if reply.vote_granted {
            // openraft grants only a vote it saved: the peer's dir holds it.
            let term = reply.vote.leader_id().term;
            self.net.witness.saw_vote(self.target, term);
        }
        Ok(reply)
    }

    /// PreVote: a node that would start an election first asks whether it
    /// could win one, without raising its term. A node cut off from the
    /// others (which cannot win) then leaves the cluster's term alone and
    /// does not depose a working leader when it comes back.
    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(Rpc::PreVote, &rpc, &option).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            sent = self.send_snapshot(vote, snapshot, &option) => sent.map_err(|e| match e {
                RPCError::Timeout(e) => StreamingError::Timeout(e),
                RPCError::Unreachable(e) => StreamingError::Unreachable(e),
                RPCError::Network(e) => StreamingError::Network(e),
                RPCError::RemoteError(e) => StreamingError::Network(NetworkError::new(&e)),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
