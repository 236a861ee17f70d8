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

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

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
    fn lock(&self) -> std::sync::MutexGuard<'_, Links> {
        // A poisoned filter only means a test thread panicked; the sets are
        // still valid sets.
        self.links.lock().unwrap_or_else(|e| e.into_inner())
    }
}
