//! Snapshot payloads as earlier builds wrote them: read and converted to
//! today's [`SnapshotPayload`], never written.

use serde::Deserialize;

use super::SnapshotPayload;
use crate::state::{StatePartsV5, StatePartsV6, StatePartsV6Named};
use crate::types::{LogId, StoredMembership};

/// [`SnapshotPayload`] as builds of record format 5 and before wrote it:
/// the state in [`StatePartsV5`]'s layout (sessions keyed by client id
/// alone), in the frame of `CHECKED_SNAPSHOT_V5`, after
/// `POSTCARD_SNAPSHOT`, or as JSON. Read and converted, never written.
#[derive(Debug, Deserialize)]
pub(super) struct SnapshotPayloadV5 {
    last_applied: Option<LogId>,
    membership: StoredMembership,
    state: StatePartsV5,
}

impl From<SnapshotPayloadV5> for SnapshotPayload {
    fn from(old: SnapshotPayloadV5) -> Self {
        SnapshotPayload {
            last_applied: old.last_applied,
            membership: old.membership,
            state: old.state.into(),
        }
    }
}

/// [`SnapshotPayload`] as builds of record format 6 before slot shifts
/// wrote it, in the frame of `CHECKED_SNAPSHOT_V6_NAMED`. Read and
/// converted, never written.
#[derive(Debug, Deserialize)]
pub(super) struct SnapshotPayloadV6Named {
    last_applied: Option<LogId>,
    membership: StoredMembership,
    state: StatePartsV6Named,
}

impl From<SnapshotPayloadV6Named> for SnapshotPayload {
    fn from(old: SnapshotPayloadV6Named) -> Self {
        SnapshotPayload {
            last_applied: old.last_applied,
            membership: old.membership,
            state: old.state.into(),
        }
    }
}

/// [`SnapshotPayload`] as builds of record format 6 before named records
/// wrote it, in the frame of `CHECKED_SNAPSHOT_V6`. Read and converted,
/// never written.
#[derive(Debug, Deserialize)]
pub(super) struct SnapshotPayloadV6 {
    last_applied: Option<LogId>,
    membership: StoredMembership,
    state: StatePartsV6,
}

impl From<SnapshotPayloadV6> for SnapshotPayload {
    fn from(old: SnapshotPayloadV6) -> Self {
        SnapshotPayload {
            last_applied: old.last_applied,
            membership: old.membership,
            state: old.state.into(),
        }
    }
}
