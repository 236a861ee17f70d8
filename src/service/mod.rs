//! The client-facing gRPC services of `raftlock.v1`. Each is a thin layer:
//! `admit` the request into its checked form (module `checked`), hand
//! it to the serving layer (a command to replicate, or a read of the
//! state), and map the answer. Calls held open (watches, waits) take a
//! place in their account's [`StreamQuota`] first.

mod checked;
mod cluster_service;
mod coordination_service;
mod election_service;
mod lease_service;
mod lock_service;
mod stream_quota;

use std::sync::Arc;

use crate::serving::stamp::stamped;
use crate::serving::Serving;
use raftlock_raft::error::{Asked, Internal};
use raftlock_raft::Error;
use raftlock_storage::state::LockState;
use raftlock_storage::Response;
use tonic::Status;

use crate::auth::{Auth, Principal};
use crate::status::to_status;
use checked::{Checked, Needs, Write};

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

/// A handler's preamble: authenticates the caller, checks the request into
/// its checked form `C`, and holds the caller to what that form needs.
fn admit<W, C>(auth: &Auth, req: tonic::Request<W>) -> Result<(Principal, C), Status>
where
    C: TryFrom<W, Error = Error> + Checked,
{
    admit_by(auth, req, C::try_from)
}

/// [`admit`] with the check `check` (one that needs more than the request,
/// such as the node's defaults).
fn admit_by<W, C: Checked>(
    auth: &Auth,
    req: tonic::Request<W>,
    check: impl FnOnce(W) -> Result<C, Error>,
) -> Result<(Principal, C), Status> {
    let who = auth.authenticate(&req)?;
    let call = check(req.into_inner()).map_err(to_status)?;
    match call.needs() {
        Needs::Nothing => {}
        Needs::Name(name) => who.check_name(name)?,
        Needs::Admin(what) => who.check_admin(&what)?,
    }
    Ok((who, call))
}

/// Replicates a checked call's command for `who`; a state-machine refusal
/// becomes an error.
async fn write(node: &Serving, who: &Principal, call: Write) -> Result<(u64, Response), Status> {
    let request = stamped(Some(call.origin), who.caller().clone(), call.command);
    match node.write(request).await.map_err(to_status)? {
        (_, Response::Rejected(e)) => Err(to_status(e.into())),
        ok => Ok(ok),
    }
}

/// Runs `f` on the state after a linearizable barrier (or at once when the
/// caller opted into a local read); returns the revision read at.
async fn read<T>(
    node: &Arc<Serving>,
    local: bool,
    f: impl FnOnce(&LockState) -> T,
) -> Result<(u64, T), Status> {
    let revision = if local {
        node.replica().applied_index()
    } else {
        node.replica().read_barrier().await.map_err(to_status)?
    };
    Ok((revision, node.replica().read_state(f)))
}

/// A state machine answer the call cannot have.
fn unexpected(response: Response) -> Status {
    to_status(Internal::unexpected(Asked::StateMachine, response).into())
}
