//! Locks whose TTL is their own: [`Command::AcquireWithTtl`] makes a
//! lease and a try-lock hold on it in one entry, or changes nothing.
//!
//! [`Command::AcquireWithTtl`]: crate::command::Command::AcquireWithTtl

use super::{granter_key, grantor, LockState, Step};
use crate::command::Acquire;
use crate::command::{CommandError, Mode, Request, Response};

/// The fields of [`Command::AcquireWithTtl`].
pub(super) struct OwnTtlHold<'a> {
    pub(super) name: &'a str,
    pub(super) owner: &'a str,
    pub(super) ttl_ms: u64,
    pub(super) mode: Mode,
    pub(super) lock_delay_ms: u64,
}

impl LockState {
    /// Try-locks `hold.name` on a lease made for it; when the lock is busy
    /// or the request refused, the lease is taken back with its event, so
    /// nothing changes.
    pub(super) fn acquire_with_ttl(
        &mut self,
        hold: &OwnTtlHold<'_>,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let events_before = step.changes.events.len();
        let Response::LeaseGranted { id: lease, .. } =
            self.leases.grant(hold.ttl_ms, grantor(request), step)?
        else {
            unreachable!("a lease grant answers LeaseGranted")
        };
        let acquire = Acquire {
            name: hold.name.to_owned(),
            owner: hold.owner.to_owned(),
            lease,
            mode: hold.mode,
            wait: false,
            value: None,
            lock_delay_ms: hold.lock_delay_ms,
        };
        match self.locks.acquire(&acquire, &mut self.leases, step) {
            Ok(Response::Granted { fence, count }) => {
                if let Some(key) = self.leases.get(lease).and_then(granter_key) {
                    self.sessions.pin(&key);
                }
                Ok(Response::GrantedWithLease {
                    lease,
                    fence,
                    count,
                })
            }
            other => {
                self.leases.remove(lease);
                step.changes.events.truncate(events_before);
                other
            }
        }
    }
}
