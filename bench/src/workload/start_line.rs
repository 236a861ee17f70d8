//! The start line of a round's client tasks: connected first, they all
//! start together and measure the same window.

use std::sync::{Arc, OnceLock};

use tokio::sync::Barrier;
use tokio::time::Instant;

/// Holds `tasks` client tasks until [`open`](Self::open), then tells each
/// the instant they started.
#[derive(Clone)]
pub(super) struct StartLine {
    barrier: Arc<Barrier>,
    start: Arc<OnceLock<Instant>>,
}

impl StartLine {
    /// A start line for `tasks` client tasks.
    pub(super) fn new(tasks: usize) -> StartLine {
        StartLine {
            barrier: Arc::new(Barrier::new(tasks + 1)),
            start: Arc::new(OnceLock::new()),
        }
    }

    /// Waits (in a client task) for the start; answers when it was.
    pub(super) async fn wait(&self) -> Instant {
        self.barrier.wait().await;
        *self
            .start
            .get()
            .expect("the start time is set before the barrier opens")
    }

    /// Starts every client task now.
    pub(super) async fn open(&self) {
        let _ = self.start.set(Instant::now());
        self.barrier.wait().await;
    }
}
