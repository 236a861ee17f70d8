//! Server side of the peer API: hands Raft messages to openraft and forwarded
//! calls to the node, which serves them only if it is the leader.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::network::{decode, encode};
use crate::node::NodeInner;
use crate::pb::peer_server::Peer;
use crate::pb::Blob;

/// The peer gRPC service of one node.
pub struct PeerService {
    pub(crate) node: Arc<NodeInner>,
}

fn bad_request(e: serde_json::Error) -> Status {
    Status::invalid_argument(format!("undecodable peer message: {e}"))
}

fn reply<T: serde::Serialize>(value: &T) -> Result<Response<Blob>, Status> {
    encode(value)
        .map(Response::new)
        .map_err(|e| Status::internal(format!("cannot encode reply: {e}")))
}

#[tonic::async_trait]
impl Peer for PeerService {
    async fn append_entries(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let rpc = decode(req.get_ref()).map_err(bad_request)?;
        reply(&self.node.raft.append_entries(rpc).await)
    }

    async fn vote(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let rpc = decode(req.get_ref()).map_err(bad_request)?;
        reply(&self.node.raft.vote(rpc).await)
    }

    async fn install_snapshot(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let rpc = decode(req.get_ref()).map_err(bad_request)?;
        reply(&self.node.raft.install_snapshot(rpc).await)
    }

    async fn forward(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let call = decode(req.get_ref()).map_err(bad_request)?;
        reply(&self.node.serve_as_leader(call).await)
    }
}
