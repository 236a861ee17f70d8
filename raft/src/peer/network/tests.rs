//! Replies and errors of the peer network cross the wire intact, and a
//! refusal a leader answers to a forwarded call arrives naming the leader.

use openraft::error::{Fatal, RaftError};
use openraft::{ErrorSubject, ErrorVerb, StorageError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

use raftlock_storage::{TypeConfig, Vote};

use super::*;
use crate::error::Error;
use crate::error::Unavailable;
use crate::metrics::NodeMetrics;
use crate::pb::peer_server::{Peer, PeerServer};
use crate::pb::Blob;
use crate::peer::forward::ForwardReply;

fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(value: T) {
    let back: T = decode(&encode(&value).unwrap()).unwrap();
    assert_eq!(format!("{back:?}"), format!("{value:?}"));
}

#[test]
fn replies_and_errors_cross_the_wire() {
    let io = std::io::Error::other("disk gone");
    let storage =
        StorageError::<TypeConfig>::from_io_error(ErrorSubject::Logs, ErrorVerb::Write, io);
    round_trip::<Result<(), RaftError<TypeConfig>>>(Err(RaftError::Fatal(Fatal::Stopped)));
    round_trip::<Result<(), RaftError<TypeConfig>>>(Err(RaftError::Fatal(Fatal::StorageError(
        storage,
    ))));
    round_trip(crate::peer::snapshot_transfer::SnapshotChunk {
        vote: Vote::new_committed(3, 1),
        meta: raftlock_storage::SnapshotMeta::default(),
        offset: 1 << 20,
        data: vec![1, 2, 3],
        done: true,
    });
    round_trip::<Result<ForwardReply, Error>>(Err(Error::NotLeader {
        leader_id: 2,
        leader_addr: "127.0.0.1:7379".into(),
    }));
    round_trip::<Result<ForwardReply, Error>>(Ok(ForwardReply::ReadIndex(7)));
}

/// A leader stand-in: answers every forwarded call with one error, sealed
/// as node 2; every other peer call is unimplemented.
struct RefusingLeader {
    guard: PeerGuard,
    answer: Error,
}

#[tonic::async_trait]
impl Peer for RefusingLeader {
    async fn append_entries(&self, _: Request<Blob>) -> Result<Response<Blob>, Status> {
        Err(Status::unimplemented("append_entries"))
    }
    async fn vote(&self, _: Request<Blob>) -> Result<Response<Blob>, Status> {
        Err(Status::unimplemented("vote"))
    }
    async fn pre_vote(&self, _: Request<Blob>) -> Result<Response<Blob>, Status> {
        Err(Status::unimplemented("pre_vote"))
    }
    async fn install_snapshot(&self, _: Request<Blob>) -> Result<Response<Blob>, Status> {
        Err(Status::unimplemented("install_snapshot"))
    }
    async fn forward(&self, req: Request<Blob>) -> Result<Response<Blob>, Status> {
        let result: ForwardResult = Err(self.answer.clone());
        let data = encode(&result).map_err(|e| Status::internal(e.to_string()))?;
        let request = req.get_ref();
        let reply = self
            .guard
            .seal_reply("forward", request.from, data, request);
        Ok(Response::new(reply))
    }
    async fn identify(&self, _: Request<Blob>) -> Result<Response<Blob>, Status> {
        Err(Status::unimplemented("identify"))
    }
    async fn recall(&self, _: Request<Blob>) -> Result<Response<Blob>, Status> {
        Err(Status::unimplemented("recall"))
    }
}

/// A refusal the leader sends back to a forwarded call arrives as the
/// `Relayed` reason of its kind, in the leader's words, naming the leader
/// as the node that said them. Fails if `forward` leaves the words without
/// their speaker (seen with `said_by(target)` taken out of `forward`).
#[tokio::test]
async fn a_forwarded_calls_refusal_names_the_leader_that_said_it() {
    let alive = Duration::from_secs(1);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let reason = Unavailable::NodeStopping { node: 2 };
    let leader = RefusingLeader {
        guard: PeerGuard::new(2, 1, None, alive),
        answer: reason.clone().into(),
    };
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(PeerServer::new(leader))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    let net = PeerNetwork::new(
        1,
        LinkFilter::default(),
        Arc::new(PeerGuard::new(1, 1, None, alive)),
        1 << 20,
        None,
        Arc::new(NodeMetrics::new()),
        Arc::new(|_, _| {}),
    );
    let got = net
        .forward(2, &addr, &Forwarded::ReadIndex, Duration::from_secs(10))
        .await
        .expect("the leader answered");
    let Err(Error::Unavailable(Unavailable::Relayed(words))) = &got else {
        panic!("not a relayed refusal: {got:?}");
    };
    assert_eq!(words.words(), reason.to_string());
    assert_eq!(words.node(), Some(2), "{words:?}");
    server.abort();
}
