//! How many snapshot builds still hold the node's storage. A build runs
//! on the blocking pool and holds the database until it ends, which may be
//! after Raft stopped: a node waits for them before it says it stopped, so
//! that whoever removes the data dir next (a test's temporary dir, an
//! embedding app) does not pull it from under sled, whose last flush then
//! waits for ever for a write to a file that is gone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The count of builds alive, shared by a store and its builders.
#[derive(Clone, Default)]
pub struct Builds(Arc<AtomicUsize>);

impl Builds {
    /// One more build, until the returned guard drops.
    pub(crate) fn start(&self) -> BuildInFlight {
        self.0.fetch_add(1, Ordering::AcqRel);
        BuildInFlight(self.0.clone())
    }

    /// Builds alive now.
    pub fn in_flight(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// Waits until no build is alive, up to `limit`; whether none is.
    pub async fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while self.in_flight() > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

/// Counts one build while alive; a builder holds it as its last field, so
/// it drops after the builder's handles on the storage.
pub(crate) struct BuildInFlight(Arc<AtomicUsize>);

impl Drop for BuildInFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Clone for BuildInFlight {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, Ordering::AcqRel);
        BuildInFlight(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_build_is_counted_until_it_and_its_clones_drop() {
        let builds = Builds::default();
        let first = builds.start();
        let copy = first.clone();
        assert_eq!(builds.in_flight(), 2);
        drop(first);
        assert!(!builds.wait_idle(Duration::from_millis(30)).await);
        let waiter = tokio::spawn({
            let builds = builds.clone();
            async move { builds.wait_idle(Duration::from_secs(10)).await }
        });
        drop(copy);
        assert!(waiter.await.expect("waiter"));
    }
}
