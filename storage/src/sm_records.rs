//! How the lock state lies in the `sm` tree: one record per lease, lock and
//! client session, plus the applied meta (last applied log id, membership)
//! that describes them.
//!
//! Key layout (values are JSON):
//! - `l/` + big-endian lease id → [`Lease`];
//! - `k/` + lock name bytes → [`Lock`];
//! - `c/` + the 16 uuid bytes → [`ClientSession`];
//! - `m/last_applied`, `m/membership` → [`AppliedMeta`]'s two fields.
//!
//! The meta shares the tree with the records so that one sled `Batch` (atomic
//! per tree) writes the records together with the log id they describe.

use openraft::{LogId, StoredMembership};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{from_json, to_json, Error};
use crate::state::{Changes, ClientSession, Lease, Lock, LockState, StateParts};
use crate::types::{NodeAddr, NodeId};

const LEASE_PREFIX: &[u8] = b"l/";
const LOCK_PREFIX: &[u8] = b"k/";
const CLIENT_PREFIX: &[u8] = b"c/";
const LAST_APPLIED_KEY: &[u8] = b"m/last_applied";
const MEMBERSHIP_KEY: &[u8] = b"m/membership";

/// What the state machine has applied, besides the lock state itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AppliedMeta {
    /// The last entry whose effects are in the state.
    pub(crate) last_applied: Option<LogId<NodeId>>,
    /// The last membership entry applied.
    pub(crate) membership: StoredMembership<NodeId, NodeAddr>,
}

fn prefixed(prefix: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + rest.len());
    key.extend_from_slice(prefix);
    key.extend_from_slice(rest);
    key
}

fn lease_key(id: u64) -> Vec<u8> {
    prefixed(LEASE_PREFIX, &id.to_be_bytes())
}

fn lock_key(name: &str) -> Vec<u8> {
    prefixed(LOCK_PREFIX, name.as_bytes())
}

fn client_key(id: &Uuid) -> Vec<u8> {
    prefixed(CLIENT_PREFIX, id.as_bytes())
}

/// Adds to `batch` a rewrite of every record `changes` touched: the record as
/// it now is in `state`, or its removal when it no longer exists.
pub(crate) fn write_changes(
    batch: &mut sled::Batch,
    state: &LockState,
    changes: &Changes,
) -> Result<(), Error> {
    for id in &changes.leases {
        match state.lease(*id) {
            Some(lease) => batch.insert(lease_key(*id), to_json("lease record", lease)?),
            None => batch.remove(lease_key(*id)),
        }
    }
    for name in &changes.locks {
        match state.lock(name) {
            Some(lock) => batch.insert(lock_key(name), to_json("lock record", lock)?),
            None => batch.remove(lock_key(name)),
        }
    }
    for id in &changes.clients {
        match state.client(id) {
            Some(session) => batch.insert(client_key(id), to_json("client record", session)?),
            None => batch.remove(client_key(id)),
        }
    }
    Ok(())
}

/// Adds to `batch` every record of `parts` (for a state written whole).
pub(crate) fn write_all(batch: &mut sled::Batch, parts: &StateParts) -> Result<(), Error> {
    for lease in &parts.leases {
        batch.insert(lease_key(lease.id), to_json("lease record", lease)?);
    }
    for lock in &parts.locks {
        batch.insert(lock_key(&lock.name), to_json("lock record", lock)?);
    }
    for (id, session) in &parts.clients {
        batch.insert(client_key(id), to_json("client record", session)?);
    }
    Ok(())
}

/// Adds the applied meta to `batch`.
pub(crate) fn write_meta(batch: &mut sled::Batch, meta: &AppliedMeta) -> Result<(), Error> {
    batch.insert(
        LAST_APPLIED_KEY,
        to_json("last applied log id", &meta.last_applied)?,
    );
    batch.insert(MEMBERSHIP_KEY, to_json("membership", &meta.membership)?);
    Ok(())
}

/// Reads the whole `sm` tree back: the records and the applied meta.
pub(crate) fn load(tree: &sled::Tree) -> Result<(StateParts, AppliedMeta), Error> {
    let mut parts = StateParts::default();
    let mut meta = AppliedMeta::default();
    for item in tree.iter() {
        let (key, value) = item?;
        if let Some(id) = key.strip_prefix(LEASE_PREFIX) {
            let lease: Lease = from_json("lease record", &value)?;
            if id != lease.id.to_be_bytes() {
                return Err(Error::Corrupt(format!(
                    "lease {} stored under key {key:?}",
                    lease.id
                )));
            }
            parts.leases.push(lease);
        } else if let Some(name) = key.strip_prefix(LOCK_PREFIX) {
            let lock: Lock = from_json("lock record", &value)?;
            if name != lock.name.as_bytes() {
                return Err(Error::Corrupt(format!(
                    "lock {:?} stored under key {key:?}",
                    lock.name
                )));
            }
            parts.locks.push(lock);
        } else if let Some(id) = key.strip_prefix(CLIENT_PREFIX) {
            let id =
                Uuid::from_slice(id).map_err(|_| Error::Corrupt(format!("client key {key:?}")))?;
            let session: ClientSession = from_json("client record", &value)?;
            parts.clients.push((id, session));
        } else if *key == *LAST_APPLIED_KEY {
            meta.last_applied = from_json("last applied log id", &value)?;
        } else if *key == *MEMBERSHIP_KEY {
            meta.membership = from_json("membership", &value)?;
        } else {
            return Err(Error::Corrupt(format!("unknown state machine key {key:?}")));
        }
    }
    Ok((parts, meta))
}

/// A batch that replaces the whole tree's content with `parts` and `meta`:
/// removals of every present key, overridden by the new records.
pub(crate) fn replace_all(
    tree: &sled::Tree,
    parts: &StateParts,
    meta: &AppliedMeta,
) -> Result<sled::Batch, Error> {
    let mut batch = sled::Batch::default();
    for key in tree.iter().keys() {
        batch.remove(key?);
    }
    write_all(&mut batch, parts)?;
    write_meta(&mut batch, meta)?;
    Ok(batch)
}
