//! The names of the sled trees in a data dir, in one place: the stores
//! open their own, and opening a dir checks them all.

/// Name of the Raft log tree.
pub(crate) const LOG_TREE: &str = "log";
/// Name of the tree holding vote, committed and last purged log ids.
pub(crate) const RAFT_META_TREE: &str = "raft_meta";
/// Name of the per-record state machine tree of earlier builds.
pub(crate) const LEGACY_SM_TREE: &str = "sm";
/// Name of the tree holding the current snapshot.
pub(crate) const SNAPSHOT_TREE: &str = "snapshot";
