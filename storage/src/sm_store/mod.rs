//! The lock state machine: openraft's [`RaftStateMachine`] over the
//! in-memory [`LockState`], made durable by snapshots and the Raft log.
//!
//! Apply changes the in-memory state and tells the serving layer what
//! happened; it writes nothing to disk. What makes the state durable is the
//! log (every applied entry was flushed to it first) and the snapshot: a
//! snapshot stores the whole state at one log position in sled and flushes
//! before openraft may purge the entries it covers. On restart the state
//! comes back from the current snapshot and openraft re-applies the
//! committed entries after it, as etcd replays its WAL after its backend's
//! consistent index. `docs/decisions.md` says why.

pub mod builds;
pub mod snapshot;

use std::io::{self, Cursor};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use futures::{Stream, TryStreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::OptionalSend;
use tokio::sync::mpsc::UnboundedSender;

use crate::command::{Command, CommandError, Response, MAX_REQUESTS_PER_ENTRY};
use crate::command::{ExpireLeases, RevokeAccountLeases};
use crate::disk_sync::DiskSync;
use crate::error::Error;
use crate::event::Applied;
use crate::limits::MAX_REVOKED_PER_ENTRY;
use crate::log_store::LogStore;
use crate::state::{Changes, LockState};
use crate::trees::LEGACY_SM_TREE;
use crate::types::{
    Entry, EntryPayload, LogId, NodeId, Snapshot, SnapshotData, SnapshotMeta, StoredMembership,
    TypeConfig,
};
use builds::Builds;
use snapshot::{ClusterSource, SnapshotBuilder, SnapshotPayload, SnapshotStore};

/// The in-memory lock state, shared with the serving layer for reads. Take
/// the read lock briefly and never across an `.await`.
pub type SharedState = Arc<RwLock<LockState>>;

/// The last applied log id and the last applied membership.
pub type AppliedState = (Option<LogId>, StoredMembership);

/// What the state machine has applied, besides the lock state itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AppliedMeta {
    /// The last entry whose effects are in the state.
    pub(crate) last_applied: Option<LogId>,
    /// The last membership entry applied.
    pub(crate) membership: StoredMembership,
}

/// The applied meta. Only changed while holding [`SharedState`]'s write lock,
/// and read under its read lock, so the two always agree.
pub(crate) type SharedMeta = Arc<Mutex<AppliedMeta>>;

/// Takes the state's read lock, refusing a state poisoned by a panic.
pub(crate) fn read_state(state: &SharedState) -> Result<RwLockReadGuard<'_, LockState>, Error> {
    state.read().map_err(|_| Error::Poisoned)
}

/// Apply steps with more work than this (requests, plus one per lease in an
/// expiry) run on tokio's blocking pool. A mass expiry or a large batch
/// then cannot hold a runtime worker — and the tasks queued behind it, such
/// as openraft's core sending heartbeats — for long enough to trigger an
/// election; small steps stay inline, where a thread hop would cost more
/// than the step.
const BLOCKING_APPLY_WORK: usize = 1_000;

/// The membership as applied (so committed) on this node; see
/// [`StateMachineStore::applied_members`].
#[derive(Clone)]
pub struct AppliedMembers(SharedMeta);

impl AppliedMembers {
    /// `None` while no membership is applied (a new node); else whether
    /// `id` is a voter or learner of it.
    pub fn contains(&self, id: NodeId) -> Option<bool> {
        let meta = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let membership = meta.membership.membership();
        membership.nodes().next()?;
        Some(membership.get_node(&id).is_some())
    }

    /// `None` while no membership is applied; else the applied
    /// membership's log index and whether it lists `id`, read together.
    pub fn listing(&self, id: NodeId) -> Option<(u64, bool)> {
        let meta = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let membership = meta.membership.membership();
        membership.nodes().next()?;
        let index = meta.membership.log_id().map_or(0, |l| l.index);
        Some((index, membership.get_node(&id).is_some()))
    }

    /// The last applied log index (0 before the first). Changed only under
    /// the lock state's write lock: read it under the read lock to get the
    /// index a copy of the state is at.
    pub fn last_applied_index(&self) -> u64 {
        let meta = self.0.lock().unwrap_or_else(|e| e.into_inner());
        meta.last_applied.map_or(0, |l| l.index)
    }

    /// The log index of the applied membership (0 before the first).
    pub fn index(&self) -> u64 {
        let meta = self.0.lock().unwrap_or_else(|e| e.into_inner());
        meta.membership.log_id().map_or(0, |l| l.index)
    }
}

/// The replicated lock state machine, snapshotted into the node's sled
/// database. Clones share everything.
#[derive(Clone)]
pub struct StateMachineStore {
    /// Syncs the whole database.
    sync: Arc<DiskSync>,
    /// The cluster snapshots are stamped with and must come from.
    cluster: ClusterSource,
    /// The current snapshot.
    snapshots: SnapshotStore,
    /// What the serving layer reads.
    state: SharedState,
    /// Last applied log id and membership.
    meta: SharedMeta,
    /// Where applied events go; nobody listening is fine.
    events: UnboundedSender<Applied>,
    /// Snapshot builds still running (they hold the storage).
    builds: Builds,
}

impl StateMachineStore {
    /// Loads the state machine from `db`: the current snapshot's state and
    /// position, or an empty state before any snapshot. openraft then
    /// re-applies the committed entries after that position.
    pub(crate) fn open(
        db: &sled::Db,
        sync: Arc<DiskSync>,
        events: UnboundedSender<Applied>,
    ) -> Result<Self, Error> {
        refuse_legacy_records(db)?;
        let store = Self {
            sync,
            cluster: ClusterSource::default(),
            snapshots: SnapshotStore::open(db)?,
            state: Arc::default(),
            meta: Arc::default(),
            events,
            builds: Builds::default(),
        };
        if let Some((snapshot, data)) = store.snapshots.current()? {
            // This dir's own snapshot: its cluster is the dir's.
            let payload = SnapshotPayload::decode(&snapshot, &data, None)?;
            store.replace_state(&snapshot, payload)?;
        }
        Ok(store)
    }

    /// Stamps every snapshot built from now on with the cluster id `log`'s
    /// data dir records, and refuses to install one built in another
    /// cluster. The node calls it once, before Raft starts; a store it was
    /// never called on (unit tests) stamps none and checks none.
    pub fn check_cluster_with(&self, log: LogStore) {
        self.cluster.set(log);
    }

    /// The count of snapshot builds still running, which a stopping node
    /// waits out before its data dir may be removed.
    pub fn builds(&self) -> Builds {
        self.builds.clone()
    }

    /// The in-memory lock state, for reads by the serving layer.
    pub fn state(&self) -> SharedState {
        self.state.clone()
    }

    /// A handle on the applied membership alone, which (unlike a clone of
    /// the store) does not keep the store open.
    pub fn applied_members(&self) -> AppliedMembers {
        AppliedMembers(self.meta.clone())
    }

    /// The last applied log id and membership.
    pub fn applied(&self) -> Result<AppliedState, Error> {
        let meta = self.meta.lock().map_err(|_| Error::Poisoned)?;
        Ok((meta.last_applied, meta.membership.clone()))
    }

    /// Makes every write so far (log, vote, snapshot) durable. Call it on
    /// shutdown.
    pub async fn flush(&self) -> Result<(), Error> {
        self.sync.sync_async().await
    }

    /// Applies `entries` to the in-memory state. Returns one response per
    /// entry and an [`Applied::Entry`] per entry with events.
    ///
    /// The state and the applied meta change together under the state's
    /// write lock, so a snapshot captured concurrently sees both at one
    /// position.
    fn apply_locked<I>(&self, entries: I) -> Result<(Vec<Vec<Response>>, Vec<Applied>), Error>
    where
        I: IntoIterator<Item = Entry>,
    {
        let mut state = self.state.write().map_err(|_| Error::Poisoned)?;
        let mut meta = self.meta.lock().map_err(|_| Error::Poisoned)?.clone();
        let mut responses = Vec::new();
        let mut events = Vec::new();
        for entry in entries {
            meta.last_applied = Some(entry.log_id);
            let response = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(proposal) => {
                    let mut changes = Changes::default();
                    let index = entry.log_id.index;
                    let replies = proposal
                        .requests
                        .iter()
                        .enumerate()
                        .map(|(position, request)| {
                            if position >= MAX_REQUESTS_PER_ENTRY {
                                // The proposer never builds such an entry;
                                // refusing (on every replica alike) keeps
                                // slots unique if one ever arrives.
                                return Response::Rejected(CommandError::InvalidArgument(
                                    "entry carries too many requests".into(),
                                ));
                            }
                            let at = state.slot_of(index, position, request.time_ms);
                            state.apply(at, request, &proposal.quotas, &mut changes)
                        })
                        .collect();
                    if !changes.events.is_empty() {
                        events.push(Applied::Entry {
                            index,
                            events: changes.events,
                        });
                    }
                    replies
                }
                EntryPayload::Membership(membership) => {
                    let listed: Vec<NodeId> = membership.nodes().map(|(id, _)| *id).collect();
                    let removed: Vec<NodeId> = meta
                        .membership
                        .nodes()
                        .map(|(id, _)| *id)
                        .filter(|id| !listed.contains(id))
                        .collect();
                    state.retire_nodes(removed);
                    meta.membership = StoredMembership::new(Some(entry.log_id), membership);
                    Vec::new()
                }
            };
            responses.push(response);
        }
        *self.meta.lock().map_err(|_| Error::Poisoned)? = meta;
        Ok((responses, events))
    }

    /// Applies `entries` in order, tells the serving layer what happened,
    /// and returns one response per entry. What openraft's `apply` runs;
    /// public for tests that drive the store without openraft.
    pub async fn apply_entries(
        &mut self,
        entries: Vec<Entry>,
    ) -> Result<Vec<Vec<Response>>, Error> {
        let work: usize = entries.iter().map(apply_work).sum();
        let applied = if work > BLOCKING_APPLY_WORK {
            let store = self.clone();
            tokio::task::spawn_blocking(move || store.apply_locked(entries))
                .await
                .unwrap_or_else(|e| Err(Error::Worker(e.to_string())))
        } else {
            self.apply_locked(entries)
        };
        let (responses, events) = applied?;
        for applied in events {
            // No listener is fine.
            let _ = self.events.send(applied);
        }
        Ok(responses)
    }

    /// Replaces the in-memory state and the applied meta with the snapshot's.
    fn replace_state(
        &self,
        snapshot: &SnapshotMeta,
        payload: SnapshotPayload,
    ) -> Result<(), Error> {
        let meta = AppliedMeta {
            last_applied: snapshot.last_log_id,
            membership: snapshot.last_membership.clone(),
        };
        let new_state = LockState::from_parts(payload.state);
        let mut state = self.state.write().map_err(|_| Error::Poisoned)?;
        *state = new_state;
        *self.meta.lock().map_err(|_| Error::Poisoned)? = meta;
        Ok(())
    }

    async fn install(&mut self, snapshot: &SnapshotMeta, data: Vec<u8>) -> Result<(), Error> {
        // Blocking work (decoding the whole state, a large sled insert) on
        // the blocking pool, as for large applies.
        let store = self.clone();
        let meta = snapshot.clone();
        let cluster = self.cluster.get();
        tokio::task::spawn_blocking(move || {
            // Decode and check before touching the disk: a bad snapshot
            // changes nothing. (The peer service runs the same checks
            // before handing a snapshot to Raft, whose core stops on an
            // error from here.)
            let payload = SnapshotPayload::decode(&meta, &data, cluster)?;
            store.snapshots.store(&meta, &data)?;
            store.replace_state(&meta, payload)
        })
        .await
        .unwrap_or_else(|e| Err(Error::Worker(e.to_string())))?;
        self.flush().await?;
        let index = snapshot.last_log_id.map_or(0, |l| l.index);
        // No listener is fine.
        let _ = self.events.send(Applied::Snapshot { index });
        Ok(())
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotData = SnapshotData;
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        Ok(self.applied()?)
    }

    /// Applies what openraft hands over in one step, then tells the
    /// serving layer what happened and answers each entry's writer.
    async fn apply<Strm>(&mut self, entries: Strm) -> Result<(), io::Error>
    where
        Strm: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + OptionalSend,
    {
        let (entries, responders): (Vec<Entry>, Vec<_>) =
            entries.try_collect::<Vec<_>>().await?.into_iter().unzip();
        let responses = self.apply_entries(entries).await?;
        for (responder, response) in responders.into_iter().zip(responses) {
            if let Some(responder) = responder {
                responder.send(response);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            sync: self.sync.clone(),
            cluster: self.cluster.clone(),
            state: self.state.clone(),
            meta: self.meta.clone(),
            snapshots: self.snapshots.clone(),
            _in_flight: self.builds.start(),
        }
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: SnapshotData,
    ) -> Result<(), io::Error> {
        Ok(self.install(meta, snapshot.into_inner()).await?)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let current = self.snapshots.current()?;
        Ok(current.map(|(meta, data)| Snapshot {
            meta,
            snapshot: Cursor::new(data),
        }))
    }
}

/// Roughly how much applying `entry` does: one per request, one per lease an
/// expiry names.
fn apply_work(entry: &Entry) -> usize {
    match &entry.payload {
        EntryPayload::Normal(proposal) => proposal
            .requests
            .iter()
            .map(|r| match &r.command {
                Command::ExpireLeases(ExpireLeases { ids }) => ids.len().max(1),
                Command::RevokeAccountLeases(RevokeAccountLeases { .. }) => MAX_REVOKED_PER_ENTRY,
                _ => 1,
            })
            .sum(),
        _ => 1,
    }
}

/// Refuses a data directory written by raftlock builds before snapshot-only
/// persistence, which kept one record per lease, lock and client session in
/// an `sm` tree. Its snapshot may be older than its purged log, so loading
/// only the snapshot could silently lose state.
fn refuse_legacy_records(db: &sled::Db) -> Result<(), Error> {
    let legacy = db
        .tree_names()
        .iter()
        .any(|name| name.as_ref() == LEGACY_SM_TREE.as_bytes());
    if legacy && !db.open_tree(LEGACY_SM_TREE)?.is_empty() {
        return Err(Error::Corrupt(
            "this data directory holds per-record state from an earlier raftlock build; \
             this build keeps the state in snapshots and cannot read it (start the node \
             from an empty directory and let it catch up from the cluster)"
                .into(),
        ));
    }
    Ok(())
}
