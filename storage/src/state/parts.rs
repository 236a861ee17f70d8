//! The state's records in the form snapshots carry: [`StateParts`] to
//! decode into and rebuild from, [`StatePartsView`] to encode from without
//! copying.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::lease_table::LeaseTable;
use super::lock_table::LockTable;
use super::named_table::NamedTable;
use super::session_table::SessionTable;
use super::{
    granter_key, ClientSession, Lease, Lock, LockState, NamedRecords, SessionKey, SlotShift,
};

/// Serializable form of the state, used for snapshots.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateParts {
    /// By id.
    pub leases: Vec<Lease>,
    /// By name.
    pub locks: Vec<Lock>,
    /// By account, then client id.
    pub clients: Vec<(SessionKey, ClientSession)>,
    /// Election records, schedule fires, read-write lock records (none in
    /// the records of earlier builds: see `StatePartsV6`).
    pub named: NamedRecords,
    /// How far slots run ahead of the log index (none in the records of
    /// earlier builds: see `StatePartsV6Named`).
    pub slots: SlotShift,
    /// Node ids removed from the membership, never to be added again
    /// (none in the records of earlier builds).
    pub retired_nodes: BTreeSet<u64>,
}

/// [`StateParts`] borrowed from a [`LockState`]: encodes exactly as
/// `StateParts` does, without copying the records (see
/// [`LockState::parts_view`]).
#[derive(Debug, Serialize)]
pub struct StatePartsView<'a> {
    leases: Vec<&'a Lease>,
    locks: Vec<&'a Lock>,
    clients: Vec<(&'a SessionKey, &'a ClientSession)>,
    named: NamedRecords,
    slots: SlotShift,
    retired_nodes: &'a BTreeSet<u64>,
}

impl LockState {
    /// Rebuilds the state (and its derived indexes) from stored records.
    pub fn from_parts(parts: StateParts) -> Self {
        let granters: Vec<SessionKey> = parts.leases.iter().filter_map(granter_key).collect();
        let mut leases = LeaseTable::from_leases(parts.leases);
        let locks = LockTable::from_locks(parts.locks, &mut leases);
        let sessions = SessionTable::from_sessions(parts.clients, granters);
        Self {
            leases,
            locks,
            sessions,
            named: NamedTable::from_records(parts.named),
            slots: parts.slots,
            retired_nodes: parts.retired_nodes,
        }
    }

    /// The records, for a snapshot.
    pub fn to_parts(&self) -> StateParts {
        StateParts {
            leases: self.leases.iter().cloned().collect(),
            locks: self.locks.iter().cloned().collect(),
            clients: self
                .sessions
                .iter()
                .map(|(key, s)| (key.clone(), s.clone()))
                .collect(),
            named: self.named.to_records(),
            slots: self.slots,
            retired_nodes: self.retired_nodes.clone(),
        }
    }

    /// The state's records, borrowed, for encoding a snapshot without a
    /// copy of the whole state.
    pub fn parts_view(&self) -> StatePartsView<'_> {
        StatePartsView {
            leases: self.leases.iter().collect(),
            locks: self.locks.iter().collect(),
            clients: self.sessions.iter().collect(),
            named: self.named.to_records(),
            slots: self.slots,
            retired_nodes: &self.retired_nodes,
        }
    }
}
