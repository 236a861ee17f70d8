//! Server side of the peer API: checks each message's envelope
//! ([`crate::peer_guard`]) and contents ([`crate::peer_checks`]), then hands
//! Raft messages to openraft and forwarded calls to the node, which serves
//! them only if it is the leader.

use std::sync::Arc;
use std::time::Instant;

use openraft::async_runtime::WatchReceiver;
use tonic::{Request, Response, Status};

use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse};
use raftlock_storage::{NodeId, TypeConfig};

use crate::network::{decode, encode};
use crate::pb::peer_server::Peer;
use crate::pb::Blob;
use crate::peer_checks::{check_append, check_snapshot, check_vote};
use crate::peer_guard::{Refusal, Sender};
use crate::removal::MEMBERSHIP_INDEX_KEY;
use crate::replica::Replica;
use crate::snapshot_transfer::{Assembly, SnapshotChunk};
use crate::tls::peer_node_id;

/// The peer gRPC service of one node.
pub struct PeerService {
    pub(crate) node: Arc<Replica>,
    /// The snapshot being received, piece by piece.
    incoming: tokio::sync::Mutex<Assembly>,
}

/// What a snapshot piece is answered with.
type SnapshotReply = Result<SnapshotResponse<TypeConfig>, RaftError<TypeConfig>>;

fn bad_request(e: postcard::Error) -> Status {
    Status::invalid_argument(format!("undecodable peer message: {e}"))
}

fn refused(e: Refusal) -> Status {
    match e {
        Refusal::Malformed(_) => Status::invalid_argument(e.to_string()),
        Refusal::Storage(_) => Status::unavailable(e.to_string()),
        Refusal::Unauthenticated(_) => Status::unauthenticated(e.to_string()),
        _ => Status::permission_denied(e.to_string()),
    }
}

impl PeerService {
    pub(crate) fn new(node: Arc<Replica>) -> Self {
        PeerService {
            node,
            incoming: tokio::sync::Mutex::default(),
        }
    }

    /// Adds a snapshot piece to the one being received; installs the
    /// snapshot with its last piece.
    async fn receive_snapshot(
        &self,
        from: NodeId,
        chunk: SnapshotChunk,
    ) -> Result<SnapshotReply, Status> {
        let whole = self.incoming.lock().await.add(from, chunk)?;
        let Some((vote, snapshot)) = whole else {
            let vote = self.node.raft.metrics().borrow_watched().vote;
            return Ok(Ok(SnapshotResponse::new(vote)));
        };
        let installed = self.node.raft.install_full_snapshot(vote, snapshot).await;
        Ok(installed.map_err(RaftError::Fatal))
    }

    /// Checks the envelope of `req`; returns the sender. With TLS, the
    /// sender must be the node its certificate names.
    async fn admit(&self, rpc: &str, req: &Request<Blob>) -> Result<Sender, Status> {
        // First: nothing of an unauthenticated message is read or kept.
        self.node
            .guard
            .authenticate(rpc, req.get_ref())
            .map_err(refused)?;
        if let Some(certified) = peer_node_id(req) {
            let claimed = req.get_ref().from;
            if claimed != certified {
                tracing::error!(
                    node = self.node.id,
                    peer = certified,
                    "refused a peer message: the certificate of node {certified} \
                     claims to send as node {claimed}"
                );
                return Err(Status::permission_denied(format!(
                    "the certificate names node {certified}, the message claims node {claimed}"
                )));
            }
        }
        // Committed membership, not the latest: a leader may legitimately
        // lead while the newest (uncommitted) config leaves it out.
        // Before its first apply (a leader just elected in a new cluster)
        // a node judges by the membership in its log.
        let from = req.get_ref().from;
        let is_member = self
            .node
            .members
            .contains(from)
            .or_else(|| self.node.logged_membership_contains(from));
        let not_member = matches!(is_member, Some(false));
        let admitted = self
            .node
            .guard
            .admit(req.get_ref(), req.remote_addr(), is_member)
            .await;
        admitted.map_err(|e| {
            let mut status = refused(e);
            if not_member {
                // Lets a removed sender tell it was removed (crate::removal).
                if let Ok(v) = self.node.members.index().to_string().parse() {
                    status.metadata_mut().insert(MEMBERSHIP_INDEX_KEY, v);
                }
            }
            status
        })
    }

    /// This node's current term.
    fn term(&self) -> u64 {
        self.node.raft.metrics().borrow_watched().current_term
    }

    /// Refuses a message whose contents fail a check, with a log line.
    fn check(&self, from: NodeId, what: &str, result: Result<(), String>) -> Result<(), Status> {
        result.map_err(|e| {
            tracing::warn!(node = self.node.id, peer = from, "refused a {what}: {e}");
            Status::invalid_argument(format!("refused {what}: {e}"))
        })
    }

    fn reply<T: serde::Serialize>(
        &self,
        rpc: &str,
        request: &Blob,
        to: NodeId,
        value: &T,
    ) -> Result<Response<Blob>, Status> {
        encode(value)
            .map(|data| Response::new(self.node.guard.seal_reply(rpc, to, data, request)))
            .map_err(|e| Status::internal(format!("cannot encode reply: {e}")))
    }
}

#[tonic::async_trait]
impl Peer for PeerService {
    async fn append_entries(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let arrived = Instant::now();
        let from = self.admit("append_entries", &req).await?;
        let rpc: AppendEntriesRequest<TypeConfig> =
            decode(&req.get_ref().data).map_err(bad_request)?;
        self.check(
            from.id,
            "append-entries",
            check_append(&rpc, from.id, self.term()),
        )?;
        let carries_entries = !rpc.entries.is_empty();
        let reply = self.node.raft.append_entries(rpc).await;
        if matches!(&reply, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_))) {
            self.node.heard_from_leader(from.id);
        }
        let reply = self.reply("append_entries", req.get_ref(), from.id, &reply);
        if carries_entries {
            self.node.metrics.on_append_served(arrived.elapsed());
        }
        reply
    }

    async fn vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let from = self.admit("vote", &req).await?;
        let rpc = decode(&req.get_ref().data).map_err(bad_request)?;
        self.check(
            from.id,
            "vote request",
            check_vote(&rpc, from.id, self.term()),
        )?;
        self.reply(
            "vote",
            req.get_ref(),
            from.id,
            &self.node.raft.vote(rpc).await,
        )
    }

    async fn pre_vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let from = self.admit("pre_vote", &req).await?;
        let rpc = decode(&req.get_ref().data).map_err(bad_request)?;
        self.check(
            from.id,
            "pre-vote request",
            check_vote(&rpc, from.id, self.term()),
        )?;
        self.reply(
            "pre_vote",
            req.get_ref(),
            from.id,
            &self.node.raft.pre_vote(rpc).await,
        )
    }

    async fn install_snapshot(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let from = self.admit("install_snapshot", &req).await?;
        let chunk: SnapshotChunk = decode(&req.get_ref().data).map_err(bad_request)?;
        self.check(
            from.id,
            "snapshot",
            check_snapshot(&chunk, from.id, self.term()),
        )?;
        let reply = self.receive_snapshot(from.id, chunk).await?;
        self.reply("install_snapshot", req.get_ref(), from.id, &reply)
    }

    async fn identify(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        // Nothing, not even the cluster id, for a caller without the secret.
        self.node
            .guard
            .authenticate("identify", req.get_ref())
            .map_err(refused)?;
        // The address record other members keep for this node: lets
        // `add-learner` check it was given this node's addresses.
        let data = encode(&self.node.config.node_addr())
            .map_err(|e| Status::internal(format!("cannot encode this node's address: {e}")))?;
        Ok(Response::new(self.node.guard.identify(data, req.get_ref())))
    }

    async fn forward(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let from = self.admit("forward", &req).await?;
        let call = decode(&req.get_ref().data).map_err(bad_request)?;
        self.reply(
            "forward",
            req.get_ref(),
            from.id,
            &self.node.serve_as_leader(call).await,
        )
    }
}
