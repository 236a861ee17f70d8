//! How a call that may be abandoned is sent: [`Unary`] names the tonic
//! call of each such request type (acquire, campaign, lease grant, release,
//! revoke), so one generic send serves the call itself and the background
//! cleanup that finishes it ([`abandoned`](super::abandoned)). A request
//! that waits ([`Waiting`]) is sent as numbered attempts of one request id,
//! each asking for the wait left; the others are sent as they are.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::time::Instant;
use tonic::Status;

use super::endpoints::{Endpoints, Transport};
use super::request_ids::WaitAttempts;
use crate::error::{self, Error};
use crate::pb;
use crate::pb::election_client::ElectionClient;
use crate::pb::lease_client::LeaseClient;
use crate::pb::lock_client::LockClient;

/// A request with its own tonic call.
pub(crate) trait Unary: Clone + Send + 'static {
    type Reply: Send;

    /// Sends this request over `ch`; answers the response body.
    fn send(self, ch: Transport) -> impl Future<Output = Result<Self::Reply, Status>> + Send;

    /// This request under request id `id`.
    fn with_id(self, id: &pb::RequestId) -> Self;
}

/// A request that waits (up to the wait it asks for) for its grant.
pub(crate) trait Waiting: Unary {
    /// This request as attempt `id`, asking for a wait of `wait_ms`.
    fn attempt(&self, id: pb::RequestId, wait_ms: u64) -> Self;
}

/// `Unary` for request types: `Request => Client::method -> Response`.
macro_rules! unary {
    ($($req:ident => $client:ident::$method:ident -> $reply:ident;)*) => {$(
        impl Unary for pb::$req {
            type Reply = pb::$reply;

            fn send(
                self,
                ch: Transport,
            ) -> impl Future<Output = Result<Self::Reply, Status>> + Send {
                async move { $client::new(ch).$method(self).await.map(|r| r.into_inner()) }
            }

            fn with_id(self, id: &pb::RequestId) -> Self {
                pb::$req {
                    request_id: Some(id.clone()),
                    ..self
                }
            }
        }
    )*};
}

unary! {
    AcquireRequest => LockClient::acquire -> AcquireResponse;
    ReleaseRequest => LockClient::release -> ReleaseResponse;
    CampaignRequest => ElectionClient::campaign -> CampaignResponse;
    LeaseGrantRequest => LeaseClient::grant -> LeaseGrantResponse;
    LeaseRevokeRequest => LeaseClient::revoke -> LeaseRevokeResponse;
}

impl Waiting for pb::AcquireRequest {
    fn attempt(&self, id: pb::RequestId, wait_ms: u64) -> Self {
        pb::AcquireRequest {
            request_id: Some(id),
            wait_timeout_ms: wait_ms,
            ..self.clone()
        }
    }
}

impl Waiting for pb::CampaignRequest {
    fn attempt(&self, id: pb::RequestId, wait_ms: u64) -> Self {
        pb::CampaignRequest {
            request_id: Some(id),
            // One try asks a server that knows no `no_wait` for the
            // shortest wait there is.
            wait_timeout_ms: if self.no_wait { 1 } else { wait_ms },
            ..self.clone()
        }
    }
}

/// Sends `req` as it is until answered (or `deadline`); `sending` hears of
/// each attempt before it leaves.
pub(crate) async fn send<R: Unary>(
    endpoints: &Endpoints,
    deadline: Option<Instant>,
    req: &R,
    sending: impl Fn(),
) -> Result<R::Reply, Error> {
    endpoints
        .call(deadline, |ch| {
            sending();
            req.clone().send(ch)
        })
        .await
}

/// Why the attempts of a wait ended without a reply.
#[derive(Debug)]
pub(crate) enum WaitFailed {
    /// No wait or hold was left under the request (see
    /// [`error::wait_gone`]): nothing was granted under it, and the call
    /// may ask again under a new request id. The error says what the node
    /// answered.
    Gone(Error),
    /// Any other failure.
    Failed(Error),
}

impl From<WaitFailed> for Error {
    fn from(failed: WaitFailed) -> Error {
        match failed {
            WaitFailed::Gone(e) | WaitFailed::Failed(e) => e,
        }
    }
}

/// Sends `req` as the attempts of `id` that `attempts` numbers, each asking
/// for the wait left; `sending` hears of each attempt's number before it
/// leaves.
pub(crate) async fn send_attempts<R: Waiting>(
    endpoints: &Endpoints,
    deadline: Option<Instant>,
    req: &R,
    id: &pb::RequestId,
    attempts: &mut WaitAttempts,
    sending: impl Fn(u32),
) -> Result<R::Reply, WaitFailed> {
    let gone = AtomicBool::new(false);
    let answer = endpoints
        .call(deadline, |ch| {
            let (id, wait_ms) = attempts.next(id);
            sending(id.attempt);
            let sent = req.attempt(id, wait_ms).send(ch);
            let gone = &gone;
            async move {
                let answer = sent.await;
                if answer.as_ref().is_err_and(error::wait_gone) {
                    gone.store(true, Ordering::Relaxed);
                }
                answer
            }
        })
        .await;
    // An ABORTED answer is final: the call ended with the one marked.
    answer.map_err(|e| match gone.into_inner() {
        true => WaitFailed::Gone(e),
        false => WaitFailed::Failed(e),
    })
}
