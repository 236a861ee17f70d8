//! Live leases, the derived index of what each one holds or waits for, and
//! what each account holds: its leases and its waiting requests, bounded by
//! its [`Quotas`].
//!
//! The indexes are not persisted: they are rebuilt from the leases and
//! locks in [`LockState::from_parts`](super::LockState::from_parts). The
//! attachment index (lease → lock name, owner) lets revoking or expiring a
//! lease cost what the lease owns instead of a scan over every lock; the
//! account index lets a quota check cost a lookup and a bulk revoke what
//! the account owns.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{Lease, Step};
use crate::account::Account;
use crate::command::checks::check_ttl;
use crate::command::{CommandError, LeaseId, Response};
use crate::event::Event;
use crate::limits::{Quota, Quotas, MAX_LEASES};

/// (lease, lock name, owner) → held (`true`) or waiting (`false`).
///
/// One map for all leases rather than a map per lease: most leases hold
/// one lock, and a B-tree per lease costs a whole ~550-byte node for that
/// one entry (W7's 100 000 leases each holding a lock: 133.1 MB of state
/// before, 82.5 MB after; `storage/examples/state_memory.rs`).
type AttachmentIndex = BTreeMap<(LeaseId, String, String), bool>;

/// What one account has in the state.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct AccountUse {
    /// Its live leases.
    leases: BTreeSet<LeaseId>,
    /// Waits attached to its leases.
    waiters: u64,
}

/// Who granted a lease, as the lease table needs it.
pub(super) struct Grantor {
    /// The client whose request granted it (see [`Lease::granted_by`]).
    pub(super) client: Option<Uuid>,
    /// The identity that may use it (see [`Lease::identity`]).
    pub(super) identity: Option<String>,
    /// The account it is charged to (see [`Lease::account`]).
    pub(super) account: Option<Account>,
}

/// Leases by id, plus the attachment and account indexes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct LeaseTable {
    /// Every live lease.
    leases: BTreeMap<LeaseId, Lease>,
    /// What each lease holds or waits for. Only present attachments have
    /// entries, so equal states have equal indexes.
    attached: AttachmentIndex,
    /// What each account has; accounts with nothing are absent, so equal
    /// states have equal indexes.
    accounts: BTreeMap<Account, AccountUse>,
}

impl LeaseTable {
    /// The table holding `leases`, with an empty attachment index (the lock
    /// table fills it in as it loads).
    pub(super) fn from_leases(leases: Vec<Lease>) -> Self {
        let mut accounts: BTreeMap<Account, AccountUse> = BTreeMap::new();
        for lease in &leases {
            if let Some(account) = &lease.account {
                let usage = accounts.entry(account.clone()).or_default();
                usage.leases.insert(lease.id);
            }
        }
        let leases = leases.into_iter().map(|l| (l.id, l)).collect();
        Self {
            leases,
            attached: BTreeMap::new(),
            accounts,
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

    /// Creates a lease whose id is the step's slot, for `grantor`, within
    /// its account's lease quota.
    pub(super) fn grant(
        &mut self,
        ttl_ms: u64,
        grantor: Grantor,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        check_ttl(ttl_ms)?;
        if let Some(account) = &grantor.account {
            let held = self.accounts.get(account).map_or(0, |u| u.leases.len());
            check_quota(Quota::Leases, account, held as u64, step.quotas.leases)?;
        }
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
        if let Some(account) = &grantor.account {
            let usage = self.accounts.entry(account.clone()).or_default();
            usage.leases.insert(id);
        }
        self.leases.insert(
            id,
            Lease {
                id,
                ttl_ms,
                granted_at_ms: step.time_ms,
                granted_by: grantor.client,
                identity: grantor.identity,
                account: grantor.account,
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
        let left: Vec<_> = self.lease_range(id).map(|(key, _)| key.clone()).collect();
        for (lease, name, owner) in left {
            self.detach(lease, &name, &owner);
        }
        let lease = self.leases.remove(&id);
        if let Some(account) = lease.as_ref().and_then(|l| l.account.as_ref()) {
            self.change_use(account, |usage| {
                usage.leases.remove(&id);
            });
        }
        lease
    }

    /// Records that `owner` holds (`held`) or waits for lock `name` under
    /// `lease`.
    pub(super) fn attach(&mut self, lease: LeaseId, name: &str, owner: &str, held: bool) {
        let before = self
            .attached
            .insert((lease, name.to_owned(), owner.to_owned()), held);
        match (before, held) {
            (Some(false), true) => self.count_waiter(lease, false),
            (None | Some(true), false) => self.count_waiter(lease, true),
            _ => {}
        }
    }

    /// Forgets that `owner` holds or waits for `name` under `lease`.
    pub(super) fn detach(&mut self, lease: LeaseId, name: &str, owner: &str) {
        let before = self
            .attached
            .remove(&(lease, name.to_owned(), owner.to_owned()));
        if before == Some(false) {
            self.count_waiter(lease, false);
        }
    }

    /// Refuses a new wait on `lease` when its account has as many waits as
    /// its quota allows.
    pub(super) fn check_waiter_quota(
        &self,
        lease: LeaseId,
        quotas: &Quotas,
    ) -> Result<(), CommandError> {
        let Some(account) = self.leases.get(&lease).and_then(|l| l.account.as_ref()) else {
            return Ok(());
        };
        let waiting = self.accounts.get(account).map_or(0, |u| u.waiters);
        check_quota(Quota::Waiters, account, waiting, quotas.waiters)
    }

    /// The live leases of `account`, by id.
    pub(super) fn of_account(&self, account: &Account) -> impl Iterator<Item = LeaseId> + '_ {
        self.accounts
            .get(account)
            .into_iter()
            .flat_map(|u| u.leases.iter().copied())
    }

    /// How many live leases `account` holds and how many requests wait on
    /// them.
    pub(super) fn account_use(&self, account: &Account) -> (usize, u64) {
        self.accounts
            .get(account)
            .map_or((0, 0), |u| (u.leases.len(), u.waiters))
    }

    /// Counts a wait on `lease` starting (`true`) or ending for its account.
    fn count_waiter(&mut self, lease: LeaseId, starts: bool) {
        let Some(account) = self.leases.get(&lease).and_then(|l| l.account.clone()) else {
            return;
        };
        self.change_use(&account, |usage| {
            if starts {
                usage.waiters += 1;
            } else {
                usage.waiters = usage.waiters.saturating_sub(1);
            }
        });
    }

    /// Changes what `account` has, forgetting the account once it has
    /// nothing.
    fn change_use(&mut self, account: &Account, change: impl FnOnce(&mut AccountUse)) {
        let usage = self.accounts.entry(account.clone()).or_default();
        change(usage);
        if usage.leases.is_empty() && usage.waiters == 0 {
            self.accounts.remove(account);
        }
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

/// Refuses one more of `quota` for `account`, which has `count`, when that
/// would exceed `limit`.
pub(super) fn check_quota(
    quota: Quota,
    account: &Account,
    count: u64,
    limit: u32,
) -> Result<(), CommandError> {
    if count < u64::from(limit) {
        return Ok(());
    }
    Err(CommandError::QuotaExceeded {
        quota,
        account: account.clone(),
        count,
        limit,
    })
}
