//! The bytes of a snapshot: what they hold ([`SnapshotPayload`]: the
//! whole lock state and the log position it is at), how they are framed
//! (a marker, the cluster id, a checksum), and the checks they pass before
//! a node takes them: their frame, their cluster, and that they hold the
//! state their meta claims. Earlier builds' formats are still read
//! (`legacy`). Apart from where snapshots are kept and how they are built:
//! this is the codec, with no IO.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::command::slot_index;
use crate::error::{from_json, Error};
use crate::state::{StateParts, StatePartsView};
use crate::types::{LogId, SnapshotMeta, StoredMembership};
use legacy::{SnapshotPayloadV5, SnapshotPayloadV6, SnapshotPayloadV6Named};

mod legacy;
#[cfg(test)]
mod tests;

/// The bytes of a snapshot: the whole lock state and the log position it is
/// at, framed as [`CHECKED_SNAPSHOT`] says. Snapshots of earlier builds are
/// still read (see `legacy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SnapshotPayload {
    /// Last entry whose effects are in `state`.
    pub(crate) last_applied: Option<LogId>,
    /// Last membership applied.
    pub(crate) membership: StoredMembership,
    /// Every record.
    pub(crate) state: StateParts,
}

/// [`SnapshotPayload`] with the state borrowed: what a snapshot is encoded
/// from, under the state's read lock.
#[derive(Serialize)]
pub(super) struct SnapshotPayloadView<'a> {
    pub(super) last_applied: Option<LogId>,
    pub(super) membership: &'a StoredMembership,
    pub(super) state: StatePartsView<'a>,
}

/// The first byte of snapshot bytes this build writes: then the cluster id
/// the snapshot was built in (16 bytes, nil when the builder knew none), a
/// CRC32C (little-endian) of everything after it, and the postcard payload.
/// The checksum catches bytes damaged between the builder and the
/// installer, and the cluster id a snapshot of another cluster.
const CHECKED_SNAPSHOT: u8 = 0xB5;

/// The same frame around a [`SnapshotPayloadV6Named`], as builds of record
/// format 6 before slot shifts wrote it.
const CHECKED_SNAPSHOT_V6_NAMED: u8 = 0xB4;

/// The same frame around a [`SnapshotPayloadV6`], as builds of record
/// format 6 before named records wrote it.
const CHECKED_SNAPSHOT_V6: u8 = 0xB3;

/// The same frame around a [`SnapshotPayloadV5`], as builds of record
/// format 5 wrote it.
const CHECKED_SNAPSHOT_V5: u8 = 0xB2;

/// The first byte of snapshot bytes in postcard without a checksum, as
/// builds before [`CHECKED_SNAPSHOT_V5`] wrote them. Earlier builds still
/// wrote JSON, whose first byte is `{`.
const POSTCARD_SNAPSHOT: u8 = 0xB1;

/// Marker, cluster id, CRC32C.
const CHECKED_HEADER: usize = 1 + 16 + 4;

/// Encodes snapshot bytes as [`CHECKED_SNAPSHOT`] says.
pub(super) fn encode_payload<T: Serialize>(
    payload: &T,
    cluster: Option<Uuid>,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(CHECKED_HEADER);
    out.push(CHECKED_SNAPSHOT);
    out.extend_from_slice(cluster.unwrap_or_else(Uuid::nil).as_bytes());
    out.extend_from_slice(&[0; 4]);
    postcard::to_io(payload, &mut out).map_err(|e| Error::encode("snapshot", e))?;
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[1..17]), &out[CHECKED_HEADER..]);
    out[17..CHECKED_HEADER].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Snapshot bytes in the [`CHECKED_SNAPSHOT`] frame, their checksum
/// verified.
struct Framed<'a> {
    /// The cluster they were built in; `None` when the builder knew none.
    built_in: Option<Uuid>,
    /// The postcard payload.
    payload: &'a [u8],
}

/// Checks the frame of `data` (marked [`CHECKED_SNAPSHOT`],
/// [`CHECKED_SNAPSHOT_V6_NAMED`], [`CHECKED_SNAPSHOT_V6`] or
/// [`CHECKED_SNAPSHOT_V5`]); `None` for bytes in another format.
fn unframe(data: &[u8]) -> Result<Option<Framed<'_>>, Error> {
    if !matches!(
        data.first(),
        Some(
            &CHECKED_SNAPSHOT
                | &CHECKED_SNAPSHOT_V6_NAMED
                | &CHECKED_SNAPSHOT_V6
                | &CHECKED_SNAPSHOT_V5
        )
    ) {
        return Ok(None);
    }
    if data.len() < CHECKED_HEADER {
        return Err(Error::corrupt(
            "snapshot",
            format!("{} bytes, shorter than its header", data.len()),
        ));
    }
    let stored = u32::from_le_bytes([data[17], data[18], data[19], data[20]]);
    let computed = crc32c::crc32c_append(crc32c::crc32c(&data[1..17]), &data[CHECKED_HEADER..]);
    if stored != computed {
        return Err(Error::Checksum {
            what: "snapshot".into(),
            stored,
            computed,
        });
    }
    let cluster = Uuid::from_slice(&data[1..17]).map_err(|e| Error::decode("snapshot", e))?;
    Ok(Some(Framed {
        built_in: (!cluster.is_nil()).then_some(cluster),
        payload: &data[CHECKED_HEADER..],
    }))
}

impl SnapshotPayload {
    /// The bytes of this snapshot, built in `cluster`.
    pub(crate) fn encode(&self, cluster: Option<Uuid>) -> Result<Vec<u8>, Error> {
        encode_payload(self, cluster)
    }

    /// Decodes received or stored snapshot bytes and checks them against
    /// `meta` ([`check_covers`]) and, when `cluster` is given, that they
    /// were built in that cluster. Nothing is changed by a refusal: callers
    /// decode before they store or replace anything.
    pub(crate) fn decode(
        meta: &SnapshotMeta,
        data: &[u8],
        cluster: Option<Uuid>,
    ) -> Result<Self, Error> {
        let postcard_v5 = |bytes: &[u8]| {
            postcard::from_bytes::<SnapshotPayloadV5>(bytes)
                .map(Self::from)
                .map_err(|e| Error::decode("snapshot", e))
        };
        let payload: Self = match (unframe(data)?, data.first()) {
            (Some(framed), first) => {
                check_cluster(cluster, framed.built_in)?;
                if first == Some(&CHECKED_SNAPSHOT_V5) {
                    postcard_v5(framed.payload)?
                } else if first == Some(&CHECKED_SNAPSHOT_V6_NAMED) {
                    postcard::from_bytes::<SnapshotPayloadV6Named>(framed.payload)
                        .map(Self::from)
                        .map_err(|e| Error::decode("snapshot", e))?
                } else if first == Some(&CHECKED_SNAPSHOT_V6) {
                    postcard::from_bytes::<SnapshotPayloadV6>(framed.payload)
                        .map(Self::from)
                        .map_err(|e| Error::decode("snapshot", e))?
                } else {
                    postcard::from_bytes(framed.payload)
                        .map_err(|e| Error::decode("snapshot", e))?
                }
            }
            (None, Some(&POSTCARD_SNAPSHOT)) => postcard_v5(&data[1..])?,
            (None, Some(b'{')) => from_json::<SnapshotPayloadV5>("snapshot", data)?.into(),
            (None, _) => {
                return Err(Error::corrupt(
                    "snapshot",
                    "not in a snapshot format this build reads",
                ))
            }
        };
        payload.check_covers(meta)?;
        Ok(payload)
    }

    /// Checks the payload holds what `meta` says: the state at its last log
    /// id, with its membership, and nothing taken after that position (every
    /// lease id, fence and client's last sighting is the slot of an entry).
    fn check_covers(&self, meta: &SnapshotMeta) -> Result<(), Error> {
        if self.last_applied != meta.last_log_id {
            return Err(Error::Corrupt(format!(
                "snapshot holds the state at {:?} but its meta says {:?}",
                self.last_applied, meta.last_log_id
            )));
        }
        if self.membership != meta.last_membership {
            return Err(Error::Corrupt(format!(
                "snapshot holds membership {:?} but its meta says {:?}",
                self.membership, meta.last_membership
            )));
        }
        let at = self.last_applied.map_or(0, |l| l.index);
        if self.membership.log_id().is_some_and(|m| m.index > at) {
            return Err(Error::Corrupt(format!(
                "snapshot at index {at} holds a membership from a later index"
            )));
        }
        // Slots run ahead of the log index by the restore's shift.
        let shifted = at.saturating_add(self.state.slots.entries);
        if let Some(index) = newest_index(&self.state).filter(|&i| i > shifted) {
            return Err(Error::Corrupt(format!(
                "snapshot at index {at} (slots at {shifted}) holds a record made at slot \
                 index {index}, after it"
            )));
        }
        Ok(())
    }
}

/// The highest log index any record of `state` names as the one it was
/// made at.
fn newest_index(state: &StateParts) -> Option<u64> {
    let leases = state.leases.iter().map(|l| slot_index(l.id));
    let holders = state.locks.iter().flat_map(|l| &l.holders);
    let fences = holders.flat_map(|h| [slot_index(h.fence), slot_index(h.lease)]);
    let waiters = state.locks.iter().flat_map(|l| &l.waiters);
    let waiting = waiters.map(|w| slot_index(w.lease));
    let clients = state.clients.iter().map(|(_, c)| slot_index(c.last_index));
    let read_write = state.named.read_write.iter().map(|(_, k)| &k.record);
    let generations = read_write.clone().map(|r| slot_index(r.generation));
    let intents = read_write.flat_map(|r| r.intents.iter().map(|i| slot_index(i.lease)));
    leases
        .chain(fences)
        .chain(waiting)
        .chain(clients)
        .chain(generations)
        .chain(intents)
        .max()
}

/// Snapshot bytes built in cluster `built_in` may replace a state of
/// cluster `ours`: the same cluster, or one side that knows none (a node
/// that has not learnt its cluster's id yet, a builder that had none).
fn check_cluster(ours: Option<Uuid>, built_in: Option<Uuid>) -> Result<(), Error> {
    match (ours, built_in) {
        (Some(ours), Some(theirs)) if ours != theirs => Err(Error::Corrupt(format!(
            "snapshot was built in cluster {theirs}, this node belongs to cluster {ours}"
        ))),
        (Some(ours), None) => Err(Error::Corrupt(format!(
            "snapshot names no cluster, this node belongs to cluster {ours}"
        ))),
        _ => Ok(()),
    }
}

/// The bytes of a snapshot of `state` at the position `meta` names, built in
/// `cluster`: what a leader ships and [`verify_snapshot`] checks. For tools
/// and tests that make a snapshot without a state machine.
pub fn encode_snapshot(
    meta: &SnapshotMeta,
    state: &StateParts,
    cluster: Option<Uuid>,
) -> Result<Vec<u8>, Error> {
    #[derive(Serialize)]
    struct Borrowed<'a> {
        last_applied: Option<LogId>,
        membership: &'a StoredMembership,
        state: &'a StateParts,
    }
    let payload = Borrowed {
        last_applied: meta.last_log_id,
        membership: &meta.last_membership,
        state,
    };
    encode_payload(&payload, cluster)
}

/// Checks snapshot bytes received from a peer before they are handed to
/// Raft: their format and checksum, that they were built in `cluster`
/// (this node's), and that they hold the state `meta` claims: at its last
/// log id, with its membership, and no record made after that position.
/// The state machine's install runs the same checks, but a failure there stops the Raft core; this one lets the
/// receiver refuse the snapshot and keep serving. Blocking: it decodes the
/// whole state.
pub fn verify_snapshot(
    meta: &SnapshotMeta,
    data: &[u8],
    cluster: Option<Uuid>,
) -> Result<(), Error> {
    SnapshotPayload::decode(meta, data, cluster).map(|_| ())
}
