//! Live leases and the derived index of what each one holds or waits for.
//!
//! The index (lease → lock name, owner) is not persisted: it is rebuilt from
//! the locks in [`LockState::from_parts`](super::LockState::from_parts). It
//! lets revoking or expiring a lease cost what the lease owns instead of a
//! scan over every lock.

use std::collections::{BTreeMap, BTreeSet};

use super::bounds::check_ttl;
use super::{Lease, Step};
use crate::command::{CommandError, LeaseId, Response};
use crate::event::Event;
use crate::limits::MAX_LEASES;

/// (lock name, owner) → held (`true`) or waiting (`false`).
type Attachments = BTreeMap<(String, String), bool>;

/// Leases by id, plus the attachment index.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct LeaseTable {
    /// Every live lease.
    leases: BTreeMap<LeaseId, Lease>,
    /// What each lease holds or waits for. A lease with nothing attached has
    /// no entry, so equal states have equal indexes.
    attached: BTreeMap<LeaseId, Attachments>,
}

impl LeaseTable {
    /// The table holding `leases`, with an empty attachment index (the lock
    /// table fills it in as it loads).
    pub(super) fn from_leases(leases: Vec<Lease>) -> Self {
        let leases = leases.into_iter().map(|l| (l.id, l)).collect();
        Self {
            leases,
            attached: BTreeMap::new(),
        }
    }

    /// A live lease.
    pub(super) fn get(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    /// Every live lease, by id.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Lease> + '_ {
        self.leases.values()
    }

    /// Creates a lease whose id is the step's slot.
    pub(super) fn grant(
        &mut self,
        ttl_ms: u64,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        check_ttl(ttl_ms)?;
        if self.leases.len() >= MAX_LEASES {
            return Err(CommandError::TooManyLeases(MAX_LEASES));
        }
        let id = step.slot;
        if self.leases.contains_key(&id) {
            // Log indexes are unique, so only a replayed or corrupt log gets
            // here; refuse rather than overwrite the live lease.
            return Err(CommandError::InvalidArgument(format!(
                "lease {id} already exists"
            )));
        }
        self.leases.insert(
            id,
            Lease {
                id,
                ttl_ms,
                granted_at_ms: step.time_ms,
            },
        );
        step.changes.events.push(Event::LeaseGranted { id, ttl_ms });
        Ok(Response::LeaseGranted { id, ttl_ms })
    }

    /// Forgets a lease and its index entry. The caller has already ended
    /// everything attached to it.
    pub(super) fn remove(&mut self, id: LeaseId) {
        self.leases.remove(&id);
        self.attached.remove(&id);
    }

    /// Records that `owner` holds (`held`) or waits for lock `name` under
    /// `lease`.
    pub(super) fn attach(&mut self, lease: LeaseId, name: &str, owner: &str, held: bool) {
        self.attached
            .entry(lease)
            .or_default()
            .insert((name.to_owned(), owner.to_owned()), held);
    }

    /// Forgets that `owner` holds or waits for `name` under `lease`.
    pub(super) fn detach(&mut self, lease: LeaseId, name: &str, owner: &str) {
        if let Some(attachments) = self.attached.get_mut(&lease) {
            attachments.remove(&(name.to_owned(), owner.to_owned()));
            if attachments.is_empty() {
                self.attached.remove(&lease);
            }
        }
    }

    /// What `lease` holds or waits for, by lock name then owner.
    pub(super) fn attachments(
        &self,
        lease: LeaseId,
    ) -> impl Iterator<Item = (&(String, String), bool)> + '_ {
        self.attached
            .get(&lease)
            .into_iter()
            .flat_map(|a| a.iter().map(|(key, held)| (key, *held)))
    }

    /// The names of the locks any of `leases` holds or waits for.
    pub(super) fn attached_lock_names(&self, leases: &BTreeSet<LeaseId>) -> BTreeSet<String> {
        leases
            .iter()
            .flat_map(|&id| self.attachments(id))
            .map(|((name, _), _)| name.clone())
            .collect()
    }
}
