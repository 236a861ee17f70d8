//! The lock state machine persisted in sled: openraft's [`RaftStateMachine`]
//! over the in-memory [`LockState`] and its `sm` tree records.
//!
//! Apply changes the in-memory state, then writes exactly the records it
//! touched together with the new last applied log id in one sled batch, then
//! tells the serving layer what happened. It does not flush: the log entries
//! are durable, so a crash only loses applies that are replayed on restart.
//! Snapshots flush, so logs purged after one are never needed again.

use std::io::Cursor;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use openraft::storage::RaftStateMachine;
use openraft::{
    Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend, Snapshot, SnapshotMeta,
    StorageError, StoredMembership,
};
use tokio::sync::mpsc::UnboundedSender;

use crate::command::{slot, Command, CommandError, Response, MAX_REQUESTS_PER_ENTRY};
use crate::error::Error;
use crate::event::Applied;
use crate::node_db::SM_TREE;
use crate::sm_records::{self, AppliedMeta};
use crate::snapshot::{SnapshotBuilder, SnapshotPayload, SnapshotStore};
use crate::state::{Changes, LockState};
use crate::types::{NodeAddr, NodeId, TypeConfig};

/// The in-memory lock state, shared with the serving layer for reads. Take
/// the read lock briefly and never across an `.await`.
pub type SharedState = Arc<RwLock<LockState>>;

/// The last applied log id and the last applied membership.
pub type AppliedState = (Option<LogId<NodeId>>, StoredMembership<NodeId, NodeAddr>);

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

/// The replicated lock state machine, persisted in the node's sled database.
/// Clones share everything.
#[derive(Clone)]
pub struct StateMachineStore {
    /// The whole database, for flushes.
    db: sled::Db,
    /// Records and applied meta.
    tree: sled::Tree,
    /// The current snapshot.
    snapshots: SnapshotStore,
    /// What the serving layer reads.
    state: SharedState,
    /// Last applied log id and membership.
    meta: SharedMeta,
    /// Where applied events go; nobody listening is fine.
    events: UnboundedSender<Applied>,
}

impl StateMachineStore {
    /// Loads the state machine from `db`. If the stored snapshot is ahead of
    /// the records (a crash inside an install), the snapshot wins.
    pub(crate) fn open(db: &sled::Db, events: UnboundedSender<Applied>) -> Result<Self, Error> {
        let tree = db.open_tree(SM_TREE)?;
        let (parts, meta) = sm_records::load(&tree)?;
        let store = Self {
            db: db.clone(),
            tree,
            snapshots: SnapshotStore::open(db)?,
            state: Arc::new(RwLock::new(LockState::from_parts(parts))),
            meta: Arc::new(Mutex::new(meta.clone())),
            events,
        };
        if let Some((snapshot, data)) = store.snapshots.current()? {
            if snapshot.last_log_id > meta.last_applied {
                store.replace_state(&snapshot, SnapshotPayload::decode(&snapshot, &data)?)?;
                store.db.flush()?;
            }
        }
        Ok(store)
    }

    /// The in-memory lock state, for reads by the serving layer.
    pub fn state(&self) -> SharedState {
        self.state.clone()
    }

    /// The last applied log id and membership.
    pub fn applied(&self) -> Result<AppliedState, Error> {
        let meta = self.meta.lock().map_err(|_| Error::Poisoned)?;
        Ok((meta.last_applied, meta.membership.clone()))
    }

    /// Makes every write so far durable. Call it on shutdown.
    pub async fn flush(&self) -> Result<(), Error> {
        self.db.flush_async().await?;
        Ok(())
    }

    /// Applies `entries` to the state and persists what they changed. Returns
    /// one response per entry and an [`Applied::Entry`] per entry with events.
    ///
    /// The sled batch is applied while the write lock is held (a blocking but
    /// in-memory write, no `.await`): a snapshot built concurrently then only
    /// sees state whose records are already in sled, so its flush covers them.
    fn apply_entries<I>(&self, entries: I) -> Result<(Vec<Vec<Response>>, Vec<Applied>), Error>
    where
        I: IntoIterator<Item = Entry<TypeConfig>>,
    {
        let mut state = self.state.write().map_err(|_| Error::Poisoned)?;
        let mut meta = self.meta.lock().map_err(|_| Error::Poisoned)?.clone();
        let mut dirty = Changes::default();
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
                            state.apply(slot(index, position), request, &mut changes)
                        })
                        .collect();
                    dirty.leases.append(&mut changes.leases);
                    dirty.locks.append(&mut changes.locks);
                    dirty.clients.append(&mut changes.clients);
                    if !changes.events.is_empty() {
                        events.push(Applied::Entry {
                            index,
                            events: changes.events,
                        });
                    }
                    replies
                }
                EntryPayload::Membership(membership) => {
                    meta.membership = StoredMembership::new(Some(entry.log_id), membership);
                    Vec::new()
                }
            };
            responses.push(response);
        }
        let mut batch = sled::Batch::default();
        sm_records::write_changes(&mut batch, &state, &dirty)?;
        sm_records::write_meta(&mut batch, &meta)?;
        self.tree.apply_batch(batch)?;
        *self.meta.lock().map_err(|_| Error::Poisoned)? = meta;
        Ok((responses, events))
    }

    /// Replaces the state, the `sm` tree and the applied meta with the
    /// snapshot's. Does not flush.
    fn replace_state(
        &self,
        snapshot: &SnapshotMeta<NodeId, NodeAddr>,
        payload: SnapshotPayload,
    ) -> Result<(), Error> {
        let meta = AppliedMeta {
            last_applied: snapshot.last_log_id,
            membership: snapshot.last_membership.clone(),
        };
        let batch = sm_records::replace_all(&self.tree, &payload.state, &meta)?;
        let new_state = LockState::from_parts(payload.state);
        let mut state = self.state.write().map_err(|_| Error::Poisoned)?;
        self.tree.apply_batch(batch)?;
        *state = new_state;
        *self.meta.lock().map_err(|_| Error::Poisoned)? = meta;
        Ok(())
    }

    async fn install(
        &mut self,
        snapshot: &SnapshotMeta<NodeId, NodeAddr>,
        data: Vec<u8>,
    ) -> Result<(), Error> {
        // Blocking work (decoding and writing the whole state) on the
        // blocking pool, as for large applies.
        let store = self.clone();
        let meta = snapshot.clone();
        tokio::task::spawn_blocking(move || {
            // Decode before touching the disk: a bad snapshot changes nothing.
            let payload = SnapshotPayload::decode(&meta, &data)?;
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
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, NodeAddr>), StorageError<NodeId>>
    {
        self.applied()
            .map_err(|e| e.storage(ErrorSubject::StateMachine, ErrorVerb::Read))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        let work: usize = entries.iter().map(apply_work).sum();
        let applied = if work > BLOCKING_APPLY_WORK {
            let store = self.clone();
            tokio::task::spawn_blocking(move || store.apply_entries(entries))
                .await
                .unwrap_or_else(|e| Err(Error::Worker(e.to_string())))
        } else {
            self.apply_entries(entries)
        };
        let (responses, events) =
            applied.map_err(|e| e.storage(ErrorSubject::StateMachine, ErrorVerb::Write))?;
        for applied in events {
            // No listener is fine.
            let _ = self.events.send(applied);
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            db: self.db.clone(),
            state: self.state.clone(),
            meta: self.meta.clone(),
            snapshots: self.snapshots.clone(),
        }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, NodeAddr>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        self.install(meta, snapshot.into_inner())
            .await
            .map_err(|e| {
                e.storage(
                    ErrorSubject::Snapshot(Some(meta.signature())),
                    ErrorVerb::Write,
                )
            })
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let current = self
            .snapshots
            .current()
            .map_err(|e| e.storage(ErrorSubject::Snapshot(None), ErrorVerb::Read))?;
        Ok(current.map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}

/// Roughly how much applying `entry` does: one per request, one per lease an
/// expiry names.
fn apply_work(entry: &Entry<TypeConfig>) -> usize {
    match &entry.payload {
        EntryPayload::Normal(proposal) => proposal
            .requests
            .iter()
            .map(|r| match &r.command {
                Command::ExpireLeases { ids } => ids.len().max(1),
                _ => 1,
            })
            .sum(),
        _ => 1,
    }
}
