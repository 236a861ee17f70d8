//! The calls that take a lock and may wait for it: Acquire and Campaign.
//! Their lock-delay, when the caller names none, is the node's default
//! ([`Serving::lock_delay_ms`]), put in the command here, where the call is
//! checked: the checked form is what runs, never changed after.
//!
//! [`Serving::lock_delay_ms`]: crate::serving::Serving::lock_delay_ms

use std::time::Duration;

use raftlock_raft::error::{Problem, ValidationError};
use raftlock_raft::Error;
use raftlock_storage::command::checks::{check_acquire, check_acquire_with_ttl};
use raftlock_storage::command::{Acquire, AcquireWithTtl};
use raftlock_storage::{ClientSeq, Mode};

use super::fields::{lease_id, mode, origin};
use super::{Checked, Needs};
use crate::pb;

/// How long a waiting call waits in the queue: `None` until granted.
pub(crate) type WaitFor = Option<Duration>;

/// An Acquire, checked.
#[derive(Debug)]
pub(crate) enum AcquireLock {
    /// A try-lock whose TTL is its own (`ttl_ms` set, no lease).
    OwnTtl {
        origin: ClientSeq,
        command: AcquireWithTtl,
    },
    /// A lock on the caller's lease, waited for or tried.
    OnLease {
        origin: ClientSeq,
        command: Acquire,
        timeout: WaitFor,
    },
}

impl Checked for AcquireLock {
    fn needs(&self) -> Needs<'_> {
        match self {
            AcquireLock::OwnTtl { command, .. } => Needs::Name(&command.name),
            AcquireLock::OnLease { command, .. } => Needs::Name(&command.name),
        }
    }
}

impl AcquireLock {
    /// `req` checked, its lock-delay the one it names or else
    /// `default_lock_delay_ms`, the node's.
    pub(crate) fn check(
        req: pb::AcquireRequest,
        default_lock_delay_ms: u64,
    ) -> Result<Self, Error> {
        let origin = origin(req.request_id.as_ref())?;
        let mode = mode(req.mode, req.permits, req.limit)?;
        let lock_delay_ms = req.lock_delay_ms.unwrap_or(default_lock_delay_ms);
        if let Some(ttl_ms) = req.ttl_ms {
            if req.lease != 0 {
                let problem = Problem::NotZero {
                    got: req.lease,
                    because: "ttl_ms makes the lock a lease of its own",
                };
                return Err(ValidationError::field("lease", problem).into());
            }
            if req.wait {
                let rule = "is for a try-lock (wait false): a waiter needs a lease kept alive \
                            while it waits";
                let problem = Problem::RuledOut { rule };
                return Err(ValidationError::field("ttl_ms", problem).into());
            }
            let command = AcquireWithTtl {
                name: req.name,
                owner: req.owner,
                ttl_ms,
                mode,
                lock_delay_ms,
            };
            check_acquire_with_ttl(&command)?;
            return Ok(AcquireLock::OwnTtl { origin, command });
        }
        let command = Acquire {
            name: req.name,
            owner: req.owner,
            lease: lease_id(req.lease)?,
            mode,
            wait: req.wait,
            value: None,
            lock_delay_ms,
        };
        check_acquire(&command)?;
        Ok(AcquireLock::OnLease {
            origin,
            command,
            timeout: wait_for(req.wait_timeout_ms),
        })
    }
}

/// A Campaign, checked: an exclusive Acquire that waits (or, `no_wait`,
/// tries once) and carries the value its leader publishes.
#[derive(Debug)]
pub(crate) struct Campaign {
    pub origin: ClientSeq,
    pub command: Acquire,
    pub timeout: WaitFor,
}

impl Checked for Campaign {
    fn needs(&self) -> Needs<'_> {
        Needs::Name(&self.command.name)
    }
}

impl Campaign {
    /// `req` checked; its lock-delay is `default_lock_delay_ms`, the
    /// node's, as for a lock that names none.
    pub(crate) fn check(
        req: pb::CampaignRequest,
        default_lock_delay_ms: u64,
    ) -> Result<Self, Error> {
        let origin = origin(req.request_id.as_ref())?;
        let command = Acquire {
            name: req.name,
            owner: req.owner,
            lease: lease_id(req.lease)?,
            mode: Mode::Exclusive,
            wait: !req.no_wait,
            value: Some(req.value),
            lock_delay_ms: default_lock_delay_ms,
        };
        check_acquire(&command)?;
        Ok(Campaign {
            origin,
            // One try waits for nothing, whatever the wait asked.
            timeout: if req.no_wait {
                None
            } else {
                wait_for(req.wait_timeout_ms)
            },
            command,
        })
    }
}

/// The wire's wait timeout: 0 waits until granted.
fn wait_for(wait_timeout_ms: u64) -> WaitFor {
    (wait_timeout_ms > 0).then(|| Duration::from_millis(wait_timeout_ms))
}
