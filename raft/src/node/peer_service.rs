//! Server side of the peer API: checks each message's envelope
//! ([`crate::peer::guard`]) and contents ([`crate::peer::checks`]; a whole
//! snapshot's data too), records its sender only once every check passed,
//! then hands Raft messages to openraft and forwarded calls to the node,
//! which serves them only if it is the leader.

use std::sync::Arc;
use std::time::Instant;

use openraft::async_runtime::WatchReceiver;
use tonic::{Request, Response, Status};

use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse};
use raftlock_storage::{verify_snapshot, NodeId, Snapshot, TypeConfig};

use crate::error::Source;
use crate::pb::peer_server::Peer;
use crate::pb::Blob;
use crate::peer::checks::{
    check_append, check_snapshot, check_snapshot_position, check_vote, Local,
};
use crate::peer::content_refusal::ContentRefusal;
use crate::peer::guard::{Refusal, Sender};
use crate::peer::payload::{decode, encode};
use crate::peer::snapshot_transfer::{Assembly, SnapshotChunk};
use crate::peer::witness;
use crate::peer::MEMBERSHIP_INDEX_KEY;
use crate::replica::Replica;
use crate::transport::tls::peer_node_id;

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

    /// Adds a snapshot piece to the one being received; with its last
    /// piece, checks the whole snapshot and installs it. A snapshot that
    /// fails a check is refused here, before openraft sees it: an error from
    /// the state machine's install would stop the Raft core.
    async fn receive_snapshot(
        &self,
        req: &Request<Blob>,
        from: NodeId,
        chunk: SnapshotChunk,
    ) -> Result<SnapshotReply, Status> {
        let mut incoming = self.incoming.lock().await;
        incoming.check(from, &chunk)?;
        if !chunk.done {
            self.record(req).await?;
            incoming.add(from, chunk)?;
            let vote = self.node.raft.metrics().borrow_watched().vote;
            return Ok(Ok(SnapshotResponse::new(vote)));
        }
        let whole = incoming.add(from, chunk)?;
        drop(incoming);
        let Some((vote, snapshot)) = whole else {
            return Err(Status::internal(
                "the last snapshot piece completed nothing",
            ));
        };
        let snapshot = self.check_snapshot_data(from, snapshot).await?;
        self.record(req).await?;
        let installed = self.node.raft.install_full_snapshot(vote, snapshot).await;
        Ok(installed.map_err(RaftError::Fatal))
    }

    /// Checks a whole snapshot from `from` as the state machine's install
    /// will (format, checksum, cluster, that it holds what its meta claims),
    /// and its position against what this node committed meanwhile; hands
    /// the snapshot back if it passes.
    async fn check_snapshot_data(
        &self,
        from: NodeId,
        snapshot: Snapshot,
    ) -> Result<Snapshot, Status> {
        self.check(
            from,
            "snapshot",
            check_snapshot_position(&snapshot.meta, self.local()),
        )?;
        let cluster = self.node.guard.cluster_id();
        let Snapshot { meta, snapshot } = snapshot;
        // Decoding a large state blocks: off the runtime, with the bytes
        // moved there and back rather than copied.
        let checked = tokio::task::spawn_blocking(move || {
            let data = snapshot.into_inner();
            let verified = verify_snapshot(&meta, &data, cluster);
            (meta, data, verified)
        })
        .await;
        let (meta, data, verified) =
            checked.map_err(|e| Status::internal(format!("snapshot check did not finish: {e}")))?;
        let verified = verified.map_err(|e| ContentRefusal::Snapshot(Source::new(e)));
        self.check(from, "snapshot", verified)?;
        Ok(Snapshot {
            meta,
            snapshot: std::io::Cursor::new(data),
        })
    }

    /// Records the sender of `req` once its contents passed every check.
    async fn record(&self, req: &Request<Blob>) -> Result<(), Status> {
        self.node
            .guard
            .record(req.get_ref(), req.remote_addr())
            .await
            .map_err(refused)?;
        let blob = req.get_ref();
        self.node.net.witness().saw_boot(blob.from, blob.boot);
        Ok(())
    }

    /// Checks the envelope of `req`; returns the sender. With TLS, the
    /// sender must be the node its certificate names.
    async fn admit(&self, rpc: &str, req: &Request<Blob>) -> Result<Sender, Status> {
        // First: nothing of an unauthenticated message is read or kept.
        self.node
            .guard
            .authenticate(rpc, req.get_ref())
            .map_err(refused)?;
        self.check_certificate(req)?;
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
                // Lets a removed sender tell it was removed (crate::membership::removal).
                if let Ok(v) = self.node.members.index().to_string().parse() {
                    status.metadata_mut().insert(MEMBERSHIP_INDEX_KEY, v);
                }
            }
            status
        })
    }

    /// With TLS, the sender a message claims must be the node its
    /// certificate names.
    fn check_certificate(&self, req: &Request<Blob>) -> Result<(), Status> {
        let Some(certified) = peer_node_id(req) else {
            return Ok(());
        };
        let claimed = req.get_ref().from;
        if claimed == certified {
            return Ok(());
        }
        let refusal = Refusal::CertificateMismatch { certified, claimed };
        self.node
            .guard
            .note_refused(certified, "certificate", &refusal);
        Err(Status::permission_denied(format!(
            "the certificate names node {certified}, the message claims node {claimed}"
        )))
    }

    /// What a message's contents are checked against: this node's term
    /// and committed log id.
    fn local(&self) -> Local {
        let metrics = self.node.raft.metrics();
        let metrics = metrics.borrow_watched();
        Local {
            term: metrics.current_term,
            committed: metrics.local_committed,
        }
    }

    /// Refuses a message whose contents fail a check, counted and logged
    /// (rate-limited) as a `content` refusal.
    fn check(
        &self,
        from: NodeId,
        what: &'static str,
        result: Result<(), ContentRefusal>,
    ) -> Result<(), Status> {
        result.map_err(|e| {
            let status = Status::invalid_argument(format!("refused {what}: {e}"));
            let refusal = Refusal::Content { what, why: e };
            self.node.guard.note_refused(from, "content", &refusal);
            status
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
            check_append(&rpc, from.id, self.local()),
        )?;
        self.record(&req).await?;
        let carries_entries = !rpc.entries.is_empty();
        if let Some(delay) = carries_entries
            .then(|| self.node.net.filter().entries_delay(from.id, self.node.id))
            .flatten()
        {
            tokio::time::sleep(delay).await;
        }
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
            check_vote(&rpc, from.id, self.local()),
        )?;
        self.record(&req).await?;
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
            check_vote(&rpc, from.id, self.local()),
        )?;
        self.record(&req).await?;
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
            check_snapshot(&chunk, from.id, self.local()),
        )?;
        let reply = self.receive_snapshot(&req, from.id, chunk).await?;
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

    async fn recall(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        // Not admitted like the other calls: the asker is a node starting
        // on a dir that may be older than what this node saw of it, which
        // admission would refuse before it could be told so.
        self.node
            .guard
            .authenticate("recall", req.get_ref())
            .map_err(refused)?;
        self.check_certificate(&req)?;
        let from = req.get_ref().from;
        let mut seen = self.node.net.witness().of(from);
        let leading = witness::acked_as_leader(&self.node.raft.metrics().borrow_watched(), from);
        seen.acked = witness::later(seen.acked, leading);
        self.reply("recall", req.get_ref(), from, &seen)
    }

    async fn forward(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let from = self.admit("forward", &req).await?;
        let call = decode(&req.get_ref().data).map_err(bad_request)?;
        self.record(&req).await?;
        self.reply(
            "forward",
            req.get_ref(),
            from.id,
            &self.node.serve_as_leader(call).await,
        )
    }
}
