//! What a client made by `node.client()` knows of its node in this
//! process, so that stopping the application is quick:
//!
//! - once the node starts stopping, every call of the client (and of the
//!   holds it handed out) ends at once with "node N is stopping", instead
//!   of retrying for `retry_for` against a listener that is closing;
//! - leaving (a release on leaving a lock, a resign, the session's revoke
//!   in `close()`) waits at most [`LEAVE_WAIT`], and not at all once the
//!   node stops (it cannot be done through it): when every replica stops
//!   at once, the last ones have no quorum left to leave with. Past it the
//!   call returns, the client's background cleanup of the dropped hold
//!   goes on, and the session lease ends the rest when its TTL runs out
//!   (keep-alives stop with the process). A leave that found the cluster
//!   unreachable makes the next ones of this client not wait, until one
//!   succeeds again.
//!
//! A client of a remote cluster has no link: its calls are left as they are.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use raftlock_client::Error;
use tokio::sync::watch;

use crate::run::{finish, Reply};

/// How long one leave waits (see the module docs).
pub const LEAVE_WAIT: Duration = Duration::from_millis(500);

struct Link {
    id: u64,
    stopping: watch::Receiver<bool>,
    /// A leave of this client gave up for want of an answer, and none
    /// succeeded since.
    unreachable: AtomicBool,
}

/// A client's link to its node in this process; `default()`: none.
#[derive(Clone, Default)]
pub struct NodeLink(Option<Arc<Link>>);

impl NodeLink {
    /// The link of a client of node `id`, which announces its stop on
    /// `stopping`.
    pub fn new(id: u64, stopping: watch::Receiver<bool>) -> Self {
        NodeLink(Some(Arc::new(Link {
            id,
            stopping,
            unreachable: AtomicBool::new(false),
        })))
    }

    /// [`finish`] of a call of a client on this link: blocking, or with
    /// `aio` an awaitable, ended at once if the node stops.
    pub fn run<'py, F, T>(&self, py: Python<'py>, aio: bool, fut: F) -> Reply<'py>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        finish(py, aio, self.call(fut))
    }

    /// [`run`](Self::run) of the call `call` makes on its own clone of
    /// `client` (the future owns what it uses: it may outlive the method).
    pub fn run_on<'py, C, F, T>(
        &self,
        py: Python<'py>,
        aio: bool,
        client: &C,
        call: impl FnOnce(C) -> F,
    ) -> Reply<'py>
    where
        C: Clone,
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        self.run(py, aio, call(client.clone()))
    }

    /// `fut`, ended at once with "node N is stopping" once the node stops.
    pub fn call<T>(
        &self,
        fut: impl Future<Output = Result<T, Error>> + Send + 'static,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'static
    where
        T: Send + 'static,
    {
        // Boxed here, the call's state (kilobytes) is not copied again each
        // time the future is moved on its way to the runtime.
        let fut = Box::pin(fut);
        let link = self.0.clone();
        async move {
            let Some(link) = link else {
                return fut.await;
            };
            let mut stopping = link.stopping.clone();
            tokio::select! {
                biased;
                result = fut => result,
                () = stopped(&mut stopping) => Err(Error::Unavailable(format!(
                    "node {} of this process is stopping: calls through its client end \
                     at once (what is still held ends when its lease's TTL runs out)",
                    link.id
                ))),
            }
        }
    }

    /// A leave (`what`: "release of lock \"x\""...): returns what `fut`
    /// answers within [`LEAVE_WAIT`] (no wait while the cluster was found
    /// unreachable); past it, or once the node stops, `Ok` with one
    /// warning, leaving the rest to the background and the lease's TTL.
    pub fn leave<T>(
        &self,
        what: String,
        fut: impl Future<Output = Result<T, Error>> + Send + 'static,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'static
    where
        T: Default + Send + 'static,
    {
        let fut = Box::pin(fut); // as in `call`
        let link = self.0.clone();
        async move {
            let Some(link) = link else {
                return fut.await;
            };
            let wait = if link.unreachable.load(Ordering::Relaxed) {
                Duration::ZERO
            } else {
                LEAVE_WAIT
            };
            let mut stopping = link.stopping.clone();
            let why = tokio::select! {
                biased;
                result = tokio::time::timeout(wait, fut) => match result {
                    Ok(result) => {
                        if result.is_ok() {
                            link.unreachable.store(false, Ordering::Relaxed);
                        }
                        return result;
                    }
                    Err(_) => format!("no answer within {wait:?}"),
                },
                () = stopped(&mut stopping) => "the node is stopping".to_owned(),
            };
            if !link.unreachable.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    node = link.id,
                    "{what}: {why}, going on without it (no quorum, as when every \
                     replica stops at once?); the lease ends it when its TTL runs out"
                );
            }
            Ok(T::default())
        }
    }
}

/// Resolves once `stopping` says so; never if its sender is gone without.
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    if stopping.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}
