//! The client-facing gRPC services of `raftlock.v1`. Each is a thin layer:
//! check input, build a command or read the state, map the answer. Calls
//! held open (watches, waits) take a place in their account's
//! [`StreamQuota`] first.

mod cluster_service;
mod coordination_service;
mod election_service;
mod lease_service;
mod lock_service;
mod stream_quota;

use std::sync::Arc;

use crate::serving::Serving;
use raftlock_raft::clock::wall_clock_ms;
use raftlock_raft::Error;
use raftlock_storage::state::LockState;
use raftlock_storage::{Caller, ClientSeq, Command, Request, Response};

pub use cluster_service::ClusterService;
pub use coordination_service::CoordinationService;
pub use election_service::ElectionService;
pub use lease_service::LeaseService;
pub use lock_service::LockService;
pub use stream_quota::{StreamPermit, StreamQuota};

use crate::pb;

/// The answer header for something that happened at `revision`.
fn header(node: &Serving, revision: u64) -> Option<pb::Header> {
    let term = node.replica().term();
    Some(pb::Header {
        revision,
        node_id: node.replica().id(),
        term,
    })
}

/// Replicates a client command for `caller`; a state-machine refusal
/// becomes an error.
async fn write(
    node: &Serving,
    origin: ClientSeq,
    caller: &Caller,
    command: Command,
) -> Result<(u64, Response), Error> {
    let request = Request {
        origin: Some(origin),
        caller: caller.clone(),
        time_ms: wall_clock_ms(),
        command,
    };
    match node.write(request).await? {
        (_, Response::Rejected(e)) => Err(e.into()),
        ok => Ok(ok),
    }
}

/// Runs `f` on the state after a linearizable barrier (or at once when the
/// caller opted into a local read); returns the revision read at.
async fn read<T>(
    node: &Arc<Serving>,
    local: bool,
    f: impl FnOnce(&LockState) -> T,
) -> Result<(u64, T), Error> {
    let revision = if local {
        node.replica().applied_index()
    } else {
        node.replica().read_barrier().await?
    };
    Ok((revision, node.replica().read_state(f)))
}

fn unexpected(response: Response) -> Error {
    Error::Internal(format!("unexpected state machine answer: {response:?}"))
}
