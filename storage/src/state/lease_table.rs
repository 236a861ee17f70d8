//! Live leases and the derived index of what each one holds or waits for.
//!
//! The index (lease → lock name, owner) is not persisted: it is rebuilt from
//! the locks in [`LockState::from_parts`](super::LockState::from_parts). It
//! lets revoking or expiring a lease cost what the lease owns instead of a
//! scan over every lock.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::bounds::check_ttl;
use super::{Lease, Step};
use crate::command::{CommandError, LeaseId, Response};
use crate::event::Event;
use crate::limits::MAX_LEASES;

/// (lease, lock name, owner) → held (`true`) or waiting (`false`).
///
/// One map for all leases rather than a map per lease: most leases hold
/// one lock, and a B-tree per lease costs a whole ~550-byte node for that
/// one entry (W7's 100 000 leases each holding a lock: 133.1 MB of state
/// before, 82.5 MB after; `storage/examples/state_memory.rs`).
type AttachmentIndex = BTreeMap<(LeaseId, String, String), bool>;

/// Leases by id, plus the attachment index.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct LeaseTable {
    /// Every live lease.
    leases: BTreeMap<LeaseId, Lease>,
    /// What each lease holds or waits for. Only present attachments have
    /// entries, so equal states have equal indexes.
    attached: AttachmentIndex,
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

    /// Creates a lease whose id is the step's slot, granted by client
    /// `granted_by` for `identity`.
    pub(super) fn grant(
        &mut self,
        ttl_ms: u64,
        granted_by: Option<Uuid>,
        identity: Option<String>,
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
                granted_by,
                identity,
            },
        );
        step.changes.events.push(Event::LeaseGranted { id, ttl_ms });
        Ok(Response::LeaseGranted { id, ttl_ms })
    }

    /// Gives lease `id` the TTL `ttl_ms` (see [`Command::SetLeaseTtl`]).
    ///
    /// [`Command::SetLeaseTtl`]: crate::command::Command::SetLeaseTtl
    pub(super) fn set_ttl(
        &mut self,
        id: LeaseId,
        ttl_ms: u64,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        check_ttl(ttl_ms)?;
        let lease = self
            .leases
            .get_mut(&id)
            .ok_or(CommandError::LeaseNotFound(id))?;
        lease.ttl_ms = ttl_ms;
        step.changes.events.push(Event::LeaseTtlSet { id, ttl_ms });
        Ok(Response::LeaseTtlSet { id, ttl_ms })
    }

    /// Forgets a lease and its index entries, and returns the lease. The
    /// caller has already ended (and so detached) everything attached to it.
    pub(super) fn remove(&mut self, id: LeaseId) -> Option<Lease> {
        let lease = self.leases.remove(&id);
        let left: Vec<_> = self.lease_range(id).map(|(key, _)| key.clone()).collect();
        for key in left {
            self.attached.remove(&key);
        }
        lease
    }

    /// Records that `owner` holds (`held`) or waits for lock `name` under
    /// `lease`.
    pub(super) fn attach(&mut self, lease: LeaseId, name: &str, owner: &str, held: bool) {
        self.attached
            .insert((lease, name.to_owned(), owner.to_owned()), held);
    }

    /// Forgets that `owner` holds or waits for `name` under `lease`.
    pub(super) fn detach(&mut self, lease: LeaseId, name: &str, owner: &str) {
        self.attached
            .remove(&(lease, name.to_owned(), owner.to_owned()));
    }

    /// The index entries of `lease`, in (name, owner) order.
    fn lease_range(
        &self,
        lease: LeaseId,
    ) -> impl Iterator<Item = (&(LeaseId, String, String), &bool)> + '_ {
        // The empty string sorts first, so the range starts at the lease's
        // first entry; it ends where the next lease's begin.
        self.attached
            .range((lease, String::new(), String::new())..)
            .take_while(move |((id, _, _), _)| *id == lease)
    }

    /// What `lease` holds or waits for, by lock name then owner.
    pub(super) fn attachments(
        &self,
        lease: LeaseId,
    ) -> impl Iterator<Item = (&str, &str, bool)> + '_ {
        self.lease_range(lease)
            .map(|((_, name, owner), held)| (name.as_str(), owner.as_str(), *held))
    }

    /// The names of the locks any of `leases` holds or waits for.
    pub(super) fn attached_lock_names(&self, leases: &BTreeSet<LeaseId>) -> BTreeSet<String> {
        leases
            .iter()
            .flat_map(|&id| self.attachments(id))
            .map(|(name, _, _)| name.to_owned())
            .collect()
    }
}
