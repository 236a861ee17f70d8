//! `Tripwire`: a one-way "this can no longer be trusted" signal with a
//! reason, shared by a session (its lease is gone) and each hold on it (the
//! lock was force-released); and [`confirm_held`], the one linearizable
//! check (`Check(name, fence)`) that trips a hold the cluster no longer has.

use std::sync::Arc;

use tokio::sync::watch;

use super::Client;
use crate::error::Error;

/// Trips once; every waiter, past and future, sees the first reason.
#[derive(Debug, Clone)]
pub(crate) struct Tripwire {
    /// Holding the sender (not just receivers) means `changed()` never
    /// reports a closed channel while someone can still wait.
    tx: Arc<watch::Sender<Option<String>>>,
}

impl Tripwire {
    pub fn new() -> Self {
        Tripwire {
            tx: Arc::new(watch::channel(None).0),
        }
    }

    /// Trips with `why`; later trips keep the first reason.
    pub fn trip(&self, why: impl Into<String>) {
        let why = why.into();
        self.tx.send_if_modified(|v| {
            if v.is_none() {
                *v = Some(why);
                true
            } else {
                false
            }
        });
    }

    /// The reason, once tripped.
    pub fn reason(&self) -> Option<String> {
        self.tx.borrow().clone()
    }

    /// Resolves with the reason once tripped (at once if it already was).
    pub async fn tripped(&self) -> String {
        let mut rx = self.tx.subscribe();
        let reason = match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone(),
            // Unreachable: `self` holds the sender.
            Err(_) => None,
        };
        reason.unwrap_or_else(|| "signal dropped".into())
    }
}

/// Asks the cluster, with one linearizable read (`Check`, served through
/// the leader's read index), whether `fence` still holds `name`; trips
/// `lost` if it does not. A force-release, revoke or expiry applied before
/// this call is seen by it. `Err` only when the cluster could not be asked
/// (the hold is then neither confirmed nor tripped).
pub(crate) async fn confirm_held(
    client: &Client,
    name: &str,
    fence: u64,
    lost: &Tripwire,
) -> Result<(), Error> {
    if !client.check(name, fence).await? {
        lost.trip(fence_gone(fence));
    }
    Ok(())
}

/// Why a hold is lost whose fence `Check` no longer finds.
pub(crate) fn fence_gone(fence: u64) -> String {
    format!("fence {fence} no longer holds it: force-released, or its lease ended")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_reason_wins_and_late_waiters_see_it() {
        let t = Tripwire::new();
        assert_eq!(t.reason(), None);
        let waiter = tokio::spawn({
            let t = t.clone();
            async move { t.tripped().await }
        });
        t.trip("a");
        t.trip("b");
        assert_eq!(waiter.await.unwrap(), "a");
        assert_eq!(t.tripped().await, "a");
    }
}
