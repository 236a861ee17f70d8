//! Replies and errors of the peer network cross the wire intact.

use openraft::error::{Fatal, RaftError};
use openraft::{ErrorSubject, ErrorVerb, StorageError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use raftlock_storage::{TypeConfig, Vote};

use super::*;
use crate::error::Error;
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
