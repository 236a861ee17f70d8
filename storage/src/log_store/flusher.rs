//! Syncs appended log entries on a thread of their own and tells openraft
//! when they are durable.
//!
//! openraft 0.10 hands an append its entries with an [`IOFlushed`]
//! callback and goes on at once: the leader replicates entries whose own
//! copy is still being written, and counts its own copy towards a commit
//! only once the callback fired. The flusher runs one sync for every
//! append queued while the previous sync ran (group commit), then fires
//! their callbacks in order. A sync writes out every insert made before it
//! started, so each callback it fires covers its own entries.
//!
//! A thread rather than a task: it ends on its own as soon as the store
//! that started it is dropped (releasing the database), without waiting
//! for a runtime to poll it.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::storage::IOFlushed;
use std::sync::mpsc;

use super::LogStore;
use crate::types::TypeConfig;

/// Told of every append once it is durable: how many entries, and how
/// long from the append's start until its sync returned. (The `raft` crate
/// feeds a histogram with it, so storage needs no metrics.)
#[derive(Clone)]
pub struct AppendTimer(pub Arc<dyn Fn(usize, Duration) + Send + Sync>);

impl std::fmt::Debug for AppendTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppendTimer")
    }
}

/// An append waiting for its sync.
struct Pending {
    /// The last index the append inserted (`None` for no entries).
    last: Option<u64>,
    /// How many entries it inserted.
    entries: usize,
    /// When the append started.
    started: Instant,
    callback: IOFlushed<TypeConfig>,
}

/// The handle of the flusher thread; dropping it ends the thread once it
/// has synced what was queued.
#[derive(Debug)]
pub(crate) struct Flusher {
    tx: mpsc::Sender<Pending>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending({:?})", self.last)
    }
}

impl Flusher {
    /// Starts the flusher thread for `store` (which must not own a flusher
    /// itself, or the thread would keep itself alive).
    pub(crate) fn start(store: LogStore) -> Self {
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("raftlock-log-sync".into())
            .spawn(move || run(&store, &rx));
        if let Err(e) = spawned {
            // No thread: every flush fails (openraft stops the node) rather
            // than an append being acknowledged unsynced.
            tracing::error!("cannot start the log sync thread: {e}");
        }
        Flusher { tx }
    }

    /// Queues the sync of entries up to `last`; `callback` fires once
    /// they are durable, or with the error that kept them from it.
    pub(crate) fn flush(
        &self,
        last: Option<u64>,
        entries: usize,
        started: Instant,
        callback: IOFlushed<TypeConfig>,
    ) {
        let pending = Pending {
            last,
            entries,
            started,
            callback,
        };
        if let Err(mpsc::SendError(pending)) = self.tx.send(pending) {
            pending
                .callback
                .io_completed(Err(io::Error::other("the log sync thread stopped")));
        }
    }
}

fn run(store: &LogStore, rx: &mpsc::Receiver<Pending>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let appends: Vec<_> = batch
            .iter()
            .map(|p| (p.last, p.entries, p.started))
            .collect();
        let synced = sync_appended(store, &appends);
        for pending in batch {
            let result = match &synced {
                Ok(()) => Ok(()),
                // Each waiter gets a copy, of the same kind (a full disk
                // stays one: `storage_failure`).
                Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
            };
            pending.callback.io_completed(result);
        }
    }
}

/// Syncs `appends` (each its last index, its number of entries and when
/// it started), all inserted already, and times each; blocks. What the
/// flusher thread runs for a batch, and a follower's append in place.
pub(super) fn sync_appended(
    store: &LogStore,
    appends: &[(Option<u64>, usize, Instant)],
) -> io::Result<()> {
    let last = appends.iter().filter_map(|(last, ..)| *last).max();
    // Entries up to `last` are durable once the sync returns: what is
    // also committed may raise the identity file's floor.
    let synced = store.sync_with(|store, floor| match last {
        Some(last) => {
            let committed = store.committed.load(Ordering::SeqCst);
            floor.committed_synced(committed.min(last))
        }
        None => Ok(()),
    });
    for (_, entries, started) in appends {
        match &synced {
            Ok(()) => {
                if let Some(timer) = &store.append_timer {
                    (timer.0)(*entries, started.elapsed());
                }
            }
            Err(e) => tracing::error!(error = %e, entries, "log sync failed"),
        }
    }
    synced.map_err(|e| e.to_io())
}
