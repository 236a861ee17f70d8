//! Backups: the whole lock state at one applied log index, as a file, and
//! seeding a new node's data dir from one (`raftlock snapshot save` and
//! `raftlock snapshot restore`, like `etcdctl snapshot save` and `etcdutl
//! snapshot restore`).
//!
//! A backup file is [`MAGIC`], then a record framed as every stored record
//! is ([`crate::codec`]: format byte, CRC32C, postcard). A damaged or
//! foreign file is refused with what is wrong with it.
//!
//! A restored dir holds the state as a snapshot at index `backup.index +
//! bump`, with the log purged up to it and the new members as the applied
//! membership. Every node of the new cluster is restored from the same file
//! with the same members, so all start at the same position and elect a
//! leader among themselves; nothing needs initializing. The fence floor
//! follows: fences and lease ids are slots (`log index << 16 | position`)
//! and the new cluster's entries all come after that index, so every fence
//! it grants is above every fence the old cluster granted up to the backup
//! (and, with `bump`, up to that many entries after it). Fences the old
//! cluster granted after the backup are cleared without the operator's
//! help: the state carries a pending [`SlotShift`](crate::state::SlotShift) from the backup's time,
//! which the new cluster's first request settles, moving every later slot
//! past whatever the old cluster could have reached in the time between.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use openraft::vote::RaftLeaderId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::codec::{decode, decode_previous, encode, format_of, PREVIOUS_FORMAT};
use crate::disk_sync::{io_error, DiskSync, SyncMode};
use crate::error::Error;
use crate::identity::{Bootstrap, Identity};
use crate::log_store::LogStore;
use crate::sm_store::snapshot::{SnapshotPayload, SnapshotStore};
use crate::sm_store::{read_state, AppliedMembers, SharedState};
use crate::state::{StateParts, StatePartsV5, StatePartsV6, StatePartsV6Named};
use crate::types::{
    CommittedLeaderId, LogId, Membership, NodeAddr, NodeId, SnapshotMeta, StoredMembership,
};

/// The first bytes of every backup file.
pub const MAGIC: &[u8] = b"raftlock backup\n";

/// The lock state at one applied log index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backup {
    /// The last log index whose effects are in `state`.
    pub index: u64,
    /// The cluster it was taken from.
    pub cluster_id: Option<Uuid>,
    /// Wall clock of the node that took it, ms since the Unix epoch.
    pub taken_at_ms: u64,
    /// Every lease, lock and remembered reply.
    pub state: StateParts,
}

/// [`Backup`] as builds of record format 5 wrote it; read and converted
/// (see [`StatePartsV5`]), so a backup taken before an upgrade restores.
#[derive(Deserialize)]
struct BackupV5 {
    index: u64,
    cluster_id: Option<Uuid>,
    taken_at_ms: u64,
    state: StatePartsV5,
}

/// [`Backup`] as builds of record format 6 before slot shifts wrote it:
/// the same record, ending where today's `state` has its shift.
#[derive(Deserialize)]
struct BackupV6Named {
    index: u64,
    cluster_id: Option<Uuid>,
    taken_at_ms: u64,
    state: StatePartsV6Named,
}

/// [`Backup`] as builds of record format 6 before named records wrote it:
/// the same record, ending where today's `state` has its named records.
#[derive(Deserialize)]
struct BackupV6 {
    index: u64,
    cluster_id: Option<Uuid>,
    taken_at_ms: u64,
    state: StatePartsV6,
}

impl Backup {
    /// Copies the applied state and its index, under the state's read lock
    /// so the two agree.
    pub fn capture(
        state: &SharedState,
        applied: &AppliedMembers,
        cluster_id: Option<Uuid>,
        taken_at_ms: u64,
    ) -> Result<Self, Error> {
        let state = read_state(state)?;
        Ok(Self {
            index: applied.last_applied_index(),
            cluster_id,
            taken_at_ms,
            state: state.to_parts(),
        })
    }

    /// The file's bytes.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        let mut out = MAGIC.to_vec();
        out.extend(encode("backup", self)?);
        Ok(out)
    }

    /// Reads a backup file's bytes, checking its magic and checksum.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let Some(record) = bytes.strip_prefix(MAGIC) else {
            return Err(Error::corrupt(
                "backup",
                "the file does not start as a raftlock backup does \
                 (made by `raftlock snapshot save`?)",
            ));
        };
        if format_of(record) == Some(PREVIOUS_FORMAT) {
            let old: BackupV5 = decode_previous("backup", record)?;
            return Ok(Backup {
                index: old.index,
                cluster_id: old.cluster_id,
                taken_at_ms: old.taken_at_ms,
                state: old.state.into(),
            });
        }
        // A record of an earlier format-6 build ends before the slot
        // shift (or the named records) today's carry, so decoding it as
        // today's runs out of bytes; it is then read as what it is.
        decode("backup", record).or_else(|today: Error| {
            decode::<BackupV6Named>("backup", record)
                .map(|old| Backup {
                    index: old.index,
                    cluster_id: old.cluster_id,
                    taken_at_ms: old.taken_at_ms,
                    state: old.state.into(),
                })
                .or_else(|_| {
                    decode::<BackupV6>("backup", record).map(|old| Backup {
                        index: old.index,
                        cluster_id: old.cluster_id,
                        taken_at_ms: old.taken_at_ms,
                        state: old.state.into(),
                    })
                })
                .map_err(|_| today)
        })
    }

    /// The highest fence the backup holds (0 without holders).
    pub fn highest_fence(&self) -> u64 {
        self.state
            .locks
            .iter()
            .flat_map(|l| l.holders.iter().map(|h| h.fence))
            .max()
            .unwrap_or(0)
    }
}

/// What a restored node is: its id, the new cluster's members and how its
/// log continues.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The node the dir is for.
    pub node_id: NodeId,
    /// Every member of the new cluster (this node included), as
    /// `--initial-cluster` names them.
    pub members: BTreeMap<NodeId, NodeAddr>,
    /// How the dir records its formation (what `serve` is started with).
    pub bootstrap: Bootstrap,
    /// Extra log positions to skip past the backup's index, so fences also
    /// clear those the old cluster granted after the backup (as etcdutl's
    /// `--bump-revision`).
    pub bump: u64,
    /// Mixed into the new cluster's id: restoring one file twice into two
    /// clusters with the same members needs two tokens.
    pub token: String,
    /// The restoring machine's wall clock, ms since the Unix epoch: a
    /// backup so old that the fence floor would not fit is refused.
    pub now_ms: u64,
}

/// What a restore made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The index the new cluster's log continues after.
    pub index: u64,
    /// Every fence the new cluster grants is above this: the backup's
    /// index, `bump`, and how far the old cluster could have gone since
    /// the backup was taken, up to now ([`SlotShift`](crate::state::SlotShift); the first request
    /// of the new cluster raises it further by the time passed until then).
    pub fence_floor: u64,
    /// The new cluster's id (the same on every member restored alike).
    pub cluster_id: Uuid,
}

/// Seeds the new, empty data dir `dir` with `backup` for the node `seed`
/// names. Refuses a dir that exists and is not empty. Blocking.
pub fn restore(dir: &Path, backup_bytes: &[u8], seed: &Seed) -> Result<Restored, Error> {
    let backup = Backup::decode(backup_bytes)?;
    if !seed.members.contains_key(&seed.node_id) {
        return Err(Error::Restore(format!(
            "node {} is not one of the members ({})",
            seed.node_id,
            seed.members
                .keys()
                .map(|id| id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    refuse_used_dir(dir)?;
    let index = backup
        .index
        .checked_add(seed.bump)
        .filter(|i| i.checked_add(1).is_some_and(|n| n < (1 << (64 - 16))))
        .ok_or_else(|| Error::Restore(format!("--bump-index {} is too large", seed.bump)))?;
    let mut backup = backup;
    // A new cluster, of the members the operator names.
    backup.state.retired_nodes.clear();
    backup.state.slots = backup
        .state
        .slots
        .restored(index, backup.taken_at_ms, seed.now_ms)
        .map_err(|e| {
            Error::Restore(format!(
                "{e}; the backup is too old to restore with a fence floor"
            ))
        })?;
    let fence_floor = backup.state.slots.floor(index + 1, seed.now_ms) - 1;
    let lowest = *seed.members.keys().next().unwrap_or(&seed.node_id);
    // Term 0, as openraft's own initialization entry: every leader of the
    // new cluster has a higher term.
    let log_id = LogId::new(CommittedLeaderId::new(0, lowest), index);
    let voters: BTreeSet<NodeId> = seed.members.keys().copied().collect();
    let membership = StoredMembership::new(
        Some(log_id),
        Membership::new(vec![voters], seed.members.clone())
            .map_err(|e| Error::Restore(format!("members: {e}")))?,
    );
    let cluster_id = cluster_id_for(backup_bytes, &seed.bootstrap, &seed.token);

    crate::private_dir::create_private(dir)?;
    let db = sled::Config::new()
        .path(dir)
        .cache_capacity(crate::node_db::CACHE_BYTES)
        .open()?;
    let sync = Arc::new(DiskSync::new(db.clone(), dir, SyncMode::Fsync)?);
    let payload = SnapshotPayload {
        last_applied: Some(log_id),
        membership: membership.clone(),
        state: backup.state,
    };
    let meta = SnapshotMeta {
        last_log_id: Some(log_id),
        last_membership: membership,
    };
    SnapshotStore::open(&db)?.store(&meta, &payload.encode(Some(cluster_id))?)?;
    LogStore::open(dir, sync.clone())?.seed_purged(log_id)?;
    sync.sync()?;
    sync.sync_all_files(dir)?;
    drop(db);

    let mut identity = Identity::new(seed.node_id, seed.bootstrap.clone());
    identity.cluster_id = Some(cluster_id);
    identity.floor.committed = index;
    identity.write(dir)?;
    crate::private_dir::make_private(dir)?;
    Ok(Restored {
        index,
        fence_floor,
        cluster_id,
    })
}

/// The new cluster's id: the same for every member restored from the same
/// file with the same members and token.
fn cluster_id_for(backup_bytes: &[u8], bootstrap: &Bootstrap, token: &str) -> Uuid {
    let mut hash = Sha256::new();
    hash.update(b"raftlock restore\0");
    hash.update(Sha256::digest(backup_bytes));
    hash.update(format!("{bootstrap:?}\0{token}").as_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A restore makes a new dir: it never writes over one a node may use.
fn refuse_used_dir(dir: &Path) -> Result<(), Error> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(Error::Restore(format!(
                "{} is not empty: restore into a new, empty data dir",
                dir.display()
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(dir, "read", e)),
    }
}

#[cfg(test)]
mod tests;
