//! `Tripwire`: a one-way "this can no longer be trusted" signal with a
//! reason, shared by a session (its lease is gone) and each hold on it (the
//! lock was force-released).

use std::sync::Arc;

use tokio::sync::watch;

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
