//! The Lock service: acquire (held open while queued), release, cancel,
//! force-release, check, describe, list.

use std::sync::Arc;

use crate::serving::Serving;
use raftlock_raft::clock::wall_clock_ms;
use raftlock_storage::command::CancelOutcome;
use raftlock_storage::state::Lock;
use raftlock_storage::{Command, Mode, Response};
use tonic::{Request, Response as Reply, Status};

use super::checked::{AcquireLock, NamedRead, Write};
use super::{admit, admit_by, header, read, unexpected, write, StreamQuota};
use crate::auth::{Auth, Principal};
use crate::pb;
use crate::serving::grant_wait::AcquireCall;
use crate::status::{to_status, wait_status};

/// Most locks one List answers.
const DEFAULT_LIST_LIMIT: usize = 1000;

/// Serves `raftlock.v1.Lock`.
pub struct LockService {
    pub(crate) node: Arc<Serving>,
    pub(crate) auth: Auth,
    /// Acquire calls that wait, held open per account.
    pub(crate) streams: StreamQuota,
}

#[tonic::async_trait]
impl pb::lock_server::Lock for LockService {
    async fn acquire(
        &self,
        req: Request<pb::AcquireRequest>,
    ) -> Result<Reply<pb::AcquireResponse>, Status> {
        let default_lock_delay_ms = self.node.lock_delay_ms();
        let (who, call) = admit_by(&self.auth, req, |req| {
            AcquireLock::check(req, default_lock_delay_ms)
        })?;
        let (origin, command, timeout) = match call {
            AcquireLock::OwnTtl { origin, command } => {
                let call = Write {
                    origin,
                    command: Command::AcquireWithTtl(command),
                };
                return self.acquire_with_ttl(&who, call).await;
            }
            AcquireLock::OnLease {
                origin,
                command,
                timeout,
            } => (origin, command, timeout),
        };
        // A waiting call is held open: it takes a place until it ends.
        let _permit = match command.wait {
            true => self.streams.admit(who.account()).map_err(to_status)?,
            false => None,
        };
        let call = AcquireCall {
            command,
            timeout,
            origin,
            caller: who.caller().clone(),
        };
        let grant = self.node.acquire(call).await.map_err(wait_status)?;
        let revision = grant.map(|g| g.revision).unwrap_or(0);
        Ok(Reply::new(pb::AcquireResponse {
            header: header(&self.node, revision),
            acquired: grant.is_some(),
            fence: grant.map(|g| g.fence).unwrap_or(0),
            count: grant.map(|g| g.count).unwrap_or(0),
            lease: 0,
        }))
    }

    async fn release(
        &self,
        req: Request<pb::ReleaseRequest>,
    ) -> Result<Reply<pb::ReleaseResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::Released { remaining } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::ReleaseResponse {
            header: header(&self.node, index),
            remaining,
        }))
    }

    async fn cancel(
        &self,
        req: Request<pb::CancelRequest>,
    ) -> Result<Reply<pb::CancelResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::Cancelled { outcome } = response else {
            return Err(unexpected(response));
        };
        let outcome = match outcome {
            CancelOutcome::Dequeued => "dequeued",
            CancelOutcome::Released => "released",
            CancelOutcome::NotFound => "not_found",
            // Only a server-issued cancel (naming a call) can be superseded.
            CancelOutcome::Superseded => "superseded",
        };
        Ok(Reply::new(pb::CancelResponse {
            header: header(&self.node, index),
            outcome: outcome.to_string(),
        }))
    }

    async fn force_release(
        &self,
        req: Request<pb::ForceReleaseRequest>,
    ) -> Result<Reply<pb::ForceReleaseResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::ForceReleased { holders } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::ForceReleaseResponse {
            header: header(&self.node, index),
            holders,
        }))
    }

    async fn check(
        &self,
        req: Request<pb::CheckRequest>,
    ) -> Result<Reply<pb::CheckResponse>, Status> {
        let (_, NamedRead(req)) = admit(&self.auth, req)?;
        let (revision, valid) =
            read(&self.node, req.local, |s| s.check(&req.name, req.fence)).await?;
        Ok(Reply::new(pb::CheckResponse {
            header: header(&self.node, revision),
            valid,
        }))
    }

    async fn describe(
        &self,
        req: Request<pb::DescribeRequest>,
    ) -> Result<Reply<pb::DescribeResponse>, Status> {
        let (_, NamedRead(req)) = admit(&self.auth, req)?;
        let now = wall_clock_ms();
        let (revision, lock) = read(&self.node, req.local, |s| {
            s.lock(&req.name).map(|l| lock_info(l, now))
        })
        .await?;
        Ok(Reply::new(pb::DescribeResponse {
            header: header(&self.node, revision),
            lock,
        }))
    }

    async fn list(
        &self,
        req: Request<pb::ListLocksRequest>,
    ) -> Result<Reply<pb::ListLocksResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        let limit = if req.limit == 0 {
            DEFAULT_LIST_LIMIT
        } else {
            req.limit as usize
        };
        let now = wall_clock_ms();
        let (revision, locks) = read(&self.node, req.local, |s| {
            // Only the names the caller may use; with authentication off
            // that is every name, and the first `limit` are read as before.
            let scan = if who.may_use_every_name() {
                limit
            } else {
                usize::MAX
            };
            s.locks_with_prefix(&req.prefix, scan)
                .into_iter()
                .filter(|l| who.may_use(&l.name))
                .take(limit)
                .map(|l| lock_info(l, now))
                .collect::<Vec<_>>()
        })
        .await?;
        Ok(Reply::new(pb::ListLocksResponse {
            header: header(&self.node, revision),
            locks,
        }))
    }
}

impl LockService {
    /// A try-lock whose TTL is its own: one write, which grants or finds
    /// the lock busy.
    async fn acquire_with_ttl(
        &self,
        who: &Principal,
        call: Write,
    ) -> Result<Reply<pb::AcquireResponse>, Status> {
        let (index, response) = write(&self.node, who, call).await?;
        let (fence, count, lease) = match response {
            Response::GrantedWithLease {
                lease,
                fence,
                count,
            } => (fence, count, lease),
            Response::Busy => (0, 0, 0),
            other => return Err(unexpected(other)),
        };
        Ok(Reply::new(pb::AcquireResponse {
            header: header(&self.node, index),
            acquired: lease != 0,
            fence,
            count,
            lease,
        }))
    }
}

/// Wire form of a mode: (mode, permits).
pub(crate) fn mode_to_pb(mode: Mode) -> (i32, u32) {
    match mode {
        Mode::Exclusive => (pb::LockMode::Exclusive as i32, 0),
        Mode::Shared => (pb::LockMode::Shared as i32, 0),
        Mode::Permits { count, .. } => (pb::LockMode::Permits as i32, count),
    }
}

/// Wire form of a lock, with hold and wait durations as of `now_ms`.
pub(crate) fn lock_info(lock: &Lock, now_ms: u64) -> pb::LockInfo {
    pb::LockInfo {
        name: lock.name.clone(),
        semaphore_limit: lock.semaphore_limit.unwrap_or(0),
        holders: lock
            .holders
            .iter()
            .map(|h| {
                let (mode, permits) = mode_to_pb(h.mode);
                pb::HolderInfo {
                    owner: h.owner.clone(),
                    lease: h.lease,
                    mode,
                    permits,
                    fence: h.fence,
                    count: h.count,
                    held_ms: now_ms.saturating_sub(h.granted_at_ms),
                    value: h.value.clone().unwrap_or_default(),
                    lock_delay_ms: h.lock_delay_ms,
                }
            })
            .collect(),
        waiters: lock
            .waiters
            .iter()
            .map(|w| {
                let (mode, permits) = mode_to_pb(w.mode);
                pb::WaiterInfo {
                    owner: w.owner.clone(),
                    lease: w.lease,
                    mode,
                    permits,
                    waited_ms: now_ms.saturating_sub(w.queued_at_ms),
                }
            })
            .collect(),
        lock_delay_ms: lock.delay.as_ref().map_or(0, |d| d.ms),
        delayed_ms: lock
            .delay
            .as_ref()
            .map_or(0, |d| now_ms.saturating_sub(d.started_at_ms)),
    }
}
