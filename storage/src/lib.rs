//! Durability for raftlock: the lock state machine and everything that keeps
//! it on disk.
//!
//! # Layout
//!
//! - [`types`]: the openraft type configuration and the node address record.
//! - [`account`]: whom a client request is charged to (quotas, sessions).
//! - [`command`]: what a Raft entry carries ([`Request`], [`Command`]) and what
//!   applying it answers ([`Response`], [`CommandError`]).
//! - [`event`]: what applying an entry tells the serving layer (grants,
//!   releases, lease changes) so it can push them to waiting callers.
//! - [`limits`]: the bounds on client input, shared by the server's edge
//!   validation and the state machine's own checks, and the per-account
//!   [`Quotas`].
//! - [`state`]: the lock state machine itself. Pure logic: no IO, no clock.
//! - [`node_db`]: the node's data dir (its log and its sled database) and [`open`],
//!   which refuses a data dir that lost or damaged acknowledged state.
//! - [`codec`]: how records are framed on disk (format byte, CRC32C).
//! - [`dir_lock`]: who has a data dir open (the holder of sled's lock).
//! - `sled_snap_files`: sled's own `snap.*` files; removes the incomplete
//!   ones an open interrupted by a full disk leaves.
//! - [`disk_sync`]: sled's flush plus the `fsync`/`fdatasync` that make it
//!   durable.
//! - [`identity`]: the data dir's identity file and state floor.
//! - [`log_store`]: the Raft log and vote store on a write-ahead log of
//!   segment files (`wal/`), the thread that syncs its appends, and the
//!   move of an earlier dir's log out of sled.
//! - [`sm_store`]: the state machine, durable through snapshots and the log;
//!   [`sm_store::snapshot`]: snapshot bytes, the stored current snapshot,
//!   the builder.
//! - `trees`: the names of the sled trees.
//! - [`backup`]: a backup file of the whole state, and seeding a new data
//!   dir from one.
//! - [`error`]: the crate's [`Error`].
//!
//! Nothing here knows about gRPC; the `raft` crate wires these into openraft.

pub mod account;
pub mod backup;
pub mod codec;
pub mod command;
pub mod dir_lock;
pub mod disk_sync;
pub mod error;
pub mod event;
pub mod fatal_report;
pub mod identity;
pub mod limits;
pub mod log_store;
pub mod node_db;
pub mod private_dir;
mod sled_snap_files;
pub mod sm_store;
pub mod state;
pub mod storage_failure;
mod trees;
pub mod types;

pub use account::Account;
pub use command::{
    slot, slot_index, Caller, Claim, ClientSeq, Command, CommandError, Fence, LeaseId, Mode,
    Proposal, ReadWriteOp, ReadWriteOutcome, Request, Response, MAX_REQUESTS_PER_ENTRY,
};
pub use disk_sync::SyncMode;
pub use error::Error;
pub use event::{Applied, EndReason, Event};
pub use identity::{Bootstrap, Identity, IDENTITY_FILE};
pub use limits::{Quota, Quotas};
pub use log_store::{AppendTimer, LogStore, Position};
pub use node_db::{open, OpenOptions};
pub use sm_store::snapshot::{encode_snapshot, verify_snapshot, SnapshotBuilder};
pub use sm_store::{AppliedMembers, AppliedState, SharedState, StateMachineStore};
pub use types::{
    CommittedLeaderId, Entry, EntryPayload, LogId, Membership, NodeAddr, NodeId, Reply, Snapshot,
    SnapshotData, SnapshotMeta, StoredMembership, TypeConfig, Vote,
};
