//! [`LinkFilter`]: the links an in-process test cluster has cut, which the
//! peer network consults before each message.
//!
//! A test fault injector: exported only with the `test-util` feature
//! (which `raftlock-testkit` turns on). A default build keeps an empty
//! filter inside the network and offers no way to cut a link.
#![cfg_attr(
    not(feature = "test-util"),
    doc = r#"
In a default build the type is not exported:

```compile_fail,E0432
use raftlock_raft::LinkFilter;
```
"#
)]
// Without `test-util` nothing outside this crate can cut a link, so the
// methods that cut them are unused.
#![cfg_attr(not(feature = "test-util"), allow(dead_code))]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use raftlock_storage::NodeId;

/// Links a test has cut. Shared by every node of an in-process test cluster;
/// a blocked link fails as if the peer were unreachable.
#[derive(Debug, Clone, Default)]
pub struct LinkFilter {
    links: Arc<Mutex<Links>>,
}

#[derive(Debug, Default)]
struct Links {
    /// Links that carry nothing.
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Links that carry heartbeats but no log entries.
    entries_held: BTreeSet<(NodeId, NodeId)>,
    /// Links whose receiver answers an append that carries log entries
    /// only after this long.
    entries_slowed: BTreeMap<(NodeId, NodeId), Duration>,
}

impl LinkFilter {
    /// Cuts `from -> to`.
    pub fn block(&self, from: NodeId, to: NodeId) {
        self.lock().cut.insert((from, to));
    }
    /// Drops append-entries that carry log entries on `from -> to`, while
    /// heartbeats and leadership checks still pass: a leader that can prove
    /// it leads but cannot commit anything.
    pub fn hold_entries(&self, from: NodeId, to: NodeId) {
        self.lock().entries_held.insert((from, to));
    }
    /// Makes `to` answer each append-entries from `from` that carries log
    /// entries `delay` late (heartbeats are answered at once): a follower
    /// slower to store entries than a heartbeat interval, as on a slow
    /// disk or a starved machine.
    pub fn slow_entries(&self, from: NodeId, to: NodeId, delay: Duration) {
        self.lock().entries_slowed.insert((from, to), delay);
    }
    /// Cuts every link into and out of `node`.
    pub fn isolate(&self, node: NodeId, others: impl IntoIterator<Item = NodeId>) {
        let mut links = self.lock();
        for other in others {
            links.cut.insert((node, other));
            links.cut.insert((other, node));
        }
    }
    /// Restores every link.
    pub fn heal(&self) {
        *self.lock() = Links::default();
    }
    /// Whether `from -> to` is cut.
    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.lock().cut.contains(&(from, to))
    }
    pub(crate) fn holds_entries(&self, from: NodeId, to: NodeId) -> bool {
        self.lock().entries_held.contains(&(from, to))
    }
    /// How late `to` answers an append with entries from `from`.
    pub(crate) fn entries_delay(&self, from: NodeId, to: NodeId) -> Option<Duration> {
        self.lock().entries_slowed.get(&(from, to)).copied()
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Links> {
        // A poisoned filter only means a test thread panicked; the sets are
        // still valid sets.
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }
}
