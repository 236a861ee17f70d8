//! openraft's network over the peer gRPC service: a [`PeerConnection`]
//! per peer sends appends, votes and snapshot pieces through the
//! [`PeerNetwork`]'s channels, each with its deadline, and keeps append
//! batches under [`APPEND_BUDGET_BYTES`] by asking openraft for fewer
//! entries. Apart from the network because this is openraft's contract
//! (its RPC errors, partial successes, streaming), while dialing and
//! forwarding are raftlock's own.

use std::future::Future;
use std::time::{Duration, Instant};

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

use raftlock_storage::{NodeAddr, NodeId, Snapshot, SnapshotData, TypeConfig, Vote};

use super::PeerNetwork;
use crate::pb::peer_client::PeerClient;
use crate::peer::payload::{decode, encode};
use crate::peer::snapshot_transfer;
use crate::peer::MEMBERSHIP_INDEX_KEY;

/// Largest append-entries message this node sends with more than one
/// entry: above it only a prefix of the entries is sent and openraft hears
/// a partial success, so a catch-up batch of large entries stays quick to
/// send and to decode. One entry alone may be larger (the proposer bounds
/// an entry to about 1 MiB of payload), up to the receiver's message limit.
pub const APPEND_BUDGET_BYTES: usize = 1 << 20;

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
