//! The dial deadline: how long an endpoint may take to show it is alive.
//!
//! A node paused with SIGSTOP (or any listener that accepts and never
//! answers) completes TCP handshakes from the kernel's backlog, so a
//! connect timeout alone does not notice it: a call sent there waits for
//! ever. Every endpoint therefore has to *answer* within the dial timeout
//! before a call waits on it:
//!
//! - an endpoint that has not answered yet (or failed since) is first
//!   asked for its status, a cheap local read ([`probe`]); that answer
//!   also names the leader, so the call can go there directly;
//! - a call on an endpoint that did answer before, with no reply within
//!   the dial timeout, makes the client ask the same connection for its
//!   status ([`watch`]); if that gets no answer either, the call is given
//!   up on that endpoint, and the next one is tried.
//!
//! Neither bounds the call itself: a waiting acquire, a campaign or an
//! observe stream on a node that answers may take as long as it likes.
//!
//! The calls of one client share these questions ([`Questions`]): calls
//! that need to know at the same moment whether an endpoint is alive (a
//! crowd of waiting acquires past their dial timeout, a burst of first
//! calls) wait for the one question in flight and take its outcome, so a
//! node is asked once, not once per call.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;
use tonic::Status;

use super::{Endpoints, Transport};
use crate::error::Error;
use crate::pb;
use crate::pb::cluster_client::ClusterClient;

/// How long an endpoint may take to connect and answer a first call.
pub const DEFAULT_DIAL_TIMEOUT: Duration = Duration::from_secs(1);

/// Which endpoints answered since they last failed (one flag each).
#[derive(Debug)]
pub(crate) struct Liveness(Vec<AtomicBool>);

impl Liveness {
    pub fn new(endpoints: usize) -> Self {
        Liveness((0..endpoints).map(|_| AtomicBool::new(false)).collect())
    }

    /// Whether endpoint `i` answered since it last failed.
    pub fn answered(&self, i: usize) -> bool {
        self.0.get(i).is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Records that endpoint `i` answered (`true`) or failed (`false`).
    pub fn set(&self, i: usize, answered: bool) {
        if let Some(flag) = self.0.get(i) {
            flag.store(answered, Ordering::Relaxed);
        }
    }
}

/// The last status question each endpoint was asked, one slot each; a
/// slot is locked while its question is in flight.
#[derive(Debug)]
pub(crate) struct Questions(Vec<Mutex<Option<Asked>>>);

/// A question that was answered or given up.
#[derive(Debug)]
pub(crate) struct Asked {
    /// When it was settled.
    settled: Instant,
    /// How long it was given.
    limit: Duration,
    probe: Probe,
}

impl Questions {
    pub fn new(endpoints: usize) -> Self {
        Questions((0..endpoints).map(|_| Mutex::new(None)).collect())
    }

    /// Asks endpoint `i` (`addr`, behind `channel`) for its status within
    /// `limit`, unless a question settled after `since` already tells:
    /// answered, or given up after at least `limit`. A question in flight
    /// is waited for, not repeated. `since` is when the caller began to
    /// need the answer (the call sent, the first question wanted), so an
    /// answer from before then never vouches for a node that stopped.
    pub async fn ask(
        &self,
        i: usize,
        channel: Transport,
        limit: Duration,
        addr: &str,
        since: Instant,
    ) -> Probe {
        let deadline = Instant::now() + limit;
        let Some(slot) = self.0.get(i) else {
            return probe(channel, limit, addr).await;
        };
        // The question in flight had no answer for all of `limit`.
        let Ok(mut last) = tokio::time::timeout_at(deadline, slot.lock()).await else {
            return Probe::Failed(no_answer(addr, limit));
        };
        if let Some(asked) = last.as_ref().filter(|asked| asked.tells(since, limit)) {
            return asked.probe.clone();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Probe::Failed(no_answer(addr, limit));
        }
        let probe = probe(channel, left, addr).await;
        *last = Some(Asked {
            settled: Instant::now(),
            limit: left,
            probe: probe.clone(),
        });
        probe
    }
}

impl Asked {
    /// Whether this outcome answers a question wanted since `since`,
    /// within `limit`.
    fn tells(&self, since: Instant, limit: Duration) -> bool {
        self.settled >= since && (matches!(self.probe, Probe::Answered(_)) || self.limit >= limit)
    }
}

/// What asking an endpoint for its status showed.
#[derive(Clone, Debug)]
pub(crate) enum Probe {
    /// A node answered: its status, or `None` if it refused the question
    /// (an unauthenticated caller, a port that serves something else):
    /// it is alive, and the call itself will hear why.
    Answered(Option<pb::StatusResponse>),
    /// No node answered: the transport's error, or no answer in time.
    Failed(Status),
}

/// Asks the node behind `channel` for its status, within `limit`.
pub(crate) async fn probe(channel: Transport, limit: Duration, addr: &str) -> Probe {
    let mut client = ClusterClient::new(channel);
    match tokio::time::timeout(limit, client.status(pb::StatusRequest::default())).await {
        Ok(Ok(status)) => Probe::Answered(Some(status.into_inner())),
        // A status made on this side carries the transport's error as
        // its source; one a node sent has none.
        Ok(Err(status)) if std::error::Error::source(&status).is_none() => Probe::Answered(None),
        Ok(Err(status)) => Probe::Failed(status),
        Err(_) => Probe::Failed(no_answer(addr, limit)),
    }
}

/// The status of an attempt on `addr` that had no answer within `limit`.
pub(crate) fn no_answer(addr: &str, limit: Duration) -> Status {
    Status::unavailable(format!(
        "no answer from {addr} within the dial timeout of {limit:?} (a paused or overloaded \
         node?)"
    ))
}

/// Why an endpoint that never answered in time counts as unreachable:
/// it was given `waited` (the dial timeout, or less when the caller's
/// timeout came first).
pub(crate) fn silence(waited: Duration) -> String {
    format!(
        "connected, but no answer within {waited:?}: a paused (SIGSTOP) or overloaded node, \
         or not a raftlock port"
    )
}

/// Whether `status` is [`no_answer`]'s (no node heard, nothing to wait for).
pub(crate) fn is_no_answer(status: &Status) -> bool {
    status.code() == tonic::Code::Unavailable
        && status.message().contains("within the dial timeout")
}

/// Runs `call` on an endpoint that answered before; if it has no reply
/// within `dial`, asks whether the node is alive (`check`: its status, on
/// the same connection, within `dial`), and gives the call up (as
/// [`no_answer`]) if that is not answered either. A node that answers the
/// question is alive: the call then runs as long as it needs.
pub(crate) async fn watch<T>(
    call: impl Future<Output = Result<T, Status>>,
    check: impl Future<Output = Probe>,
    dial: Duration,
    addr: &str,
) -> Result<T, Status> {
    tokio::pin!(call);
    if let Ok(answer) = tokio::time::timeout(dial, &mut call).await {
        return answer;
    }
    tokio::pin!(check);
    tokio::select! {
        answer = &mut call => answer,
        probed = &mut check => match probed {
            Probe::Answered(_) => call.await,
            Probe::Failed(status) if is_no_answer(&status) => Err(no_answer(addr, dial * 2)),
            Probe::Failed(status) => Err(status),
        },
    }
}

impl Endpoints {
    /// Asks endpoint `i`, which has not answered since it last failed, for
    /// its status within `dial`. With an answer it counts as answered and
    /// the call moves where the answer says: `Some` error says why it was
    /// passed over. Without one, the status the question failed with.
    pub(super) async fn first_answer(
        &self,
        i: usize,
        channel: Transport,
        dial: Duration,
        silent: &[u32],
    ) -> Result<Option<Error>, Status> {
        let asked = self
            .questions
            .ask(i, channel, dial, &self.addrs[i], Instant::now())
            .await;
        let status = match asked {
            Probe::Answered(status) => status,
            Probe::Failed(status) => return Err(status),
        };
        self.live.set(i, true);
        match self.redirect(i, status.as_ref(), silent) {
            Redirect::Stay => Ok(None),
            Redirect::To(leader) => {
                let _ =
                    self.current
                        .compare_exchange(i, leader, Ordering::Relaxed, Ordering::Relaxed);
                Ok(None)
            }
            Redirect::Skip(why) => {
                tracing::debug!(endpoint = %self.addrs[i], "skipped: {why}");
                self.skip(i);
                Ok(Some(Error::Unavailable(why)))
            }
        }
    }

    /// Where a call goes after endpoint `i` answered `status`: to the
    /// leader it names when that is one of the endpoints (and has not been
    /// silent during this call), elsewhere when it cannot serve (it is no
    /// member of the cluster it knows, or knows no leader), else here.
    fn redirect(&self, i: usize, status: Option<&pb::StatusResponse>, silent: &[u32]) -> Redirect {
        let Some(status) = status else {
            return Redirect::Stay;
        };
        let me = status.node_id;
        let addr = &self.addrs[i];
        if !status.members.is_empty() && !status.members.iter().any(|m| m.id == me) {
            return Redirect::Skip(format!(
                "node {me} at {addr} is not a member of its cluster (removed, or not added yet)"
            ));
        }
        if status.leader_id == 0 {
            return Redirect::Skip(format!(
                "node {me} at {addr} knows no leader (an election under way?)"
            ));
        }
        let leader = status
            .members
            .iter()
            .find(|m| m.id == status.leader_id)
            .and_then(|m| self.addrs.iter().position(|a| *a == m.client_addr));
        match leader {
            Some(j) if j != i && silent.get(j).is_some_and(|s| *s == 0) => Redirect::To(j),
            _ => Redirect::Stay,
        }
    }
}

/// Where a call goes after an endpoint answered its first question.
enum Redirect {
    Stay,
    /// To the leader, this endpoint.
    To(usize),
    /// To the next endpoint, for this reason.
    Skip(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_starts_unanswered_and_ignores_unknown_endpoints() {
        let live = Liveness::new(2);
        assert!(!live.answered(0));
        live.set(0, true);
        assert!(live.answered(0) && !live.answered(1));
        live.set(7, true);
        assert!(!live.answered(7));
        live.set(0, false);
        assert!(!live.answered(0));
    }

    #[test]
    fn only_an_outcome_settled_since_the_need_began_tells() {
        let since = Instant::now();
        let limit = Duration::from_millis(300);
        let settled = |at: Instant, limit: Duration, probe: Probe| Asked {
            settled: at,
            limit,
            probe,
        };
        let answered = || Probe::Answered(None);
        let silent = || Probe::Failed(no_answer("a:1", limit));
        let earlier = since - Duration::from_millis(1);
        // An answer from before the need began vouches for nothing.
        assert!(!settled(earlier, limit, answered()).tells(since, limit));
        assert!(settled(since, Duration::ZERO, answered()).tells(since, limit));
        // No answer tells only a caller who would not have waited longer.
        assert!(settled(since, limit, silent()).tells(since, limit));
        assert!(!settled(since, limit / 2, silent()).tells(since, limit));
        assert!(!settled(earlier, limit, silent()).tells(since, limit));
    }

    #[test]
    fn a_missing_answer_is_told_apart_from_a_nodes_unavailable() {
        assert!(is_no_answer(&no_answer("a:1", Duration::from_secs(1))));
        assert!(!is_no_answer(&Status::unavailable("no leader elected")));
    }
}
