//! Who may act through a lease, and who may override: the state machine's
//! half of client authorisation.
//!
//! The node that takes a request authenticates its caller and checks what
//! needs no state (name prefixes, operator calls). What depends on the
//! state is checked here, at apply, so no race between a check and the
//! write can slip through: a lease belongs to the identity that granted it,
//! and only that identity or an admin may revoke it or hold, wait, release,
//! cancel or proclaim through it.

use super::LockState;
use crate::command::{
    Acquire, AcquireWithTtl, Cancel, ClaimFire, EndLockDelay, ExpireLeases, ForceRelease,
    GrantLease, Hold, Lead, Proclaim, ReadWrite, Release, RevokeAccountLeases, RevokeLease,
    SetLeaseTtl, Unhold,
};
use crate::command::{Caller, Command, CommandError, LeaseId, Request};

impl LockState {
    /// Refuses `request` if its caller may not do it; changes nothing.
    pub(super) fn authorize(&self, request: &Request) -> Result<(), CommandError> {
        let caller = &request.caller;
        match &request.command {
            Command::GrantLease(GrantLease { .. })
            | Command::AcquireWithTtl(AcquireWithTtl { .. })
            | Command::ExpireLeases(ExpireLeases { .. })
            | Command::EndLockDelay(EndLockDelay { .. }) => Ok(()),
            Command::RevokeLease(RevokeLease { id }) => self.may_use_lease(caller, *id, "revoke"),
            Command::SetLeaseTtl(SetLeaseTtl { id, .. }) => {
                self.may_use_lease(caller, *id, "change the TTL of")
            }
            Command::Acquire(Acquire { lease, .. }) => {
                self.may_use_lease(caller, *lease, "acquire through")
            }
            Command::Release(Release { name, owner })
            | Command::Cancel(Cancel { name, owner, .. })
            | Command::Proclaim(Proclaim { name, owner, .. }) => {
                self.may_act_as(caller, name, owner)
            }
            Command::Hold(Hold { name, owner, .. })
            | Command::Unhold(Unhold { name, owner })
            | Command::Lead(Lead { name, owner, .. }) => self.may_act_as(caller, name, owner),
            Command::ReadWrite(ReadWrite { name, owner, .. }) => {
                self.may_act_as(caller, name, owner)?;
                self.may_intend_as(caller, name, owner)
            }
            Command::ClaimFire(ClaimFire { .. }) => Ok(()),
            Command::ForceRelease(ForceRelease { name }) => {
                may_override(caller, &format!("force-releasing {name:?}"))
            }
            Command::RevokeAccountLeases(RevokeAccountLeases { account }) => {
                may_override(caller, &format!("revoking every lease of {account}"))
            }
        }
    }

    /// Whether `caller` may act through lease `id`. A lease that does not
    /// exist passes: the command itself answers "lease not found".
    fn may_use_lease(&self, caller: &Caller, id: LeaseId, what: &str) -> Result<(), CommandError> {
        let Some(lease) = self.lease(id) else {
            return Ok(());
        };
        let owner = lease.identity.as_deref();
        if caller.may_use_lease_of(owner) {
            return Ok(());
        }
        Err(CommandError::PermissionDenied(format!(
            "{} may not {what} lease {id}: it belongs to {}",
            describe(caller),
            owner.unwrap_or("nobody")
        )))
    }

    /// Whether `caller` may act as `owner` on lock `name`: through the
    /// lease of its hold and of its wait. An owner that neither holds nor
    /// waits passes: the command itself answers.
    fn may_act_as(&self, caller: &Caller, name: &str, owner: &str) -> Result<(), CommandError> {
        let Some(lock) = self.lock(name) else {
            return Ok(());
        };
        let held = lock
            .holders
            .iter()
            .filter(|h| h.owner == owner)
            .map(|h| h.lease);
        let waiting = lock
            .waiters
            .iter()
            .filter(|w| w.owner == owner)
            .map(|w| w.lease);
        for lease in held.chain(waiting) {
            self.may_use_lease(
                caller,
                lease,
                &format!("act as owner {owner:?} of {name:?} through"),
            )?;
        }
        Ok(())
    }

    /// Whether `caller` may act as `owner` through its write intent on
    /// `name`, if it has one.
    fn may_intend_as(&self, caller: &Caller, name: &str, owner: &str) -> Result<(), CommandError> {
        let Some(record) = self.named.read_write(name) else {
            return Ok(());
        };
        for intent in record.intents.iter().filter(|i| i.owner == owner) {
            self.may_use_lease(
                caller,
                intent.lease,
                &format!("act as owner {owner:?} of the intent on {name:?} through"),
            )?;
        }
        Ok(())
    }
}

/// Whether `caller` may run an operator override (`what`). Without
/// authentication (no identity) this is the node's own policy to enforce;
/// with it, only admins override.
fn may_override(caller: &Caller, what: &str) -> Result<(), CommandError> {
    if caller.identity.is_some() && !caller.admin {
        return Err(CommandError::PermissionDenied(format!(
            "{what} needs the admin role"
        )));
    }
    Ok(())
}

/// The caller as a refusal names it.
fn describe(caller: &Caller) -> String {
    match &caller.identity {
        Some(identity) => format!("identity {identity:?}"),
        None => "an unauthenticated caller".to_string(),
    }
}
