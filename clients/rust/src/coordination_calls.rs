//! The Coordination calls of [`Client`], one RPC each: holds found again by
//! their owner token on leases of their own, read-write lock steps with
//! write intents, election records and schedule fires. They are what
//! grelmicro's coordination backends need (the Python package's
//! `raftlock.grelmicro` is built on them); every write carries a request
//! id, so a retry is applied once.

use std::collections::HashMap;
use std::time::Duration;

use super::{Client, LeaseId};
use crate::error::Error;
use crate::pb;
use crate::pb::coordination_client::CoordinationClient;

pub use crate::pb::ReadWriteOp;

/// A hold taken or renewed by [`Client::hold`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The hold's fencing token (unchanged by renewals).
    pub fence: u64,
    /// The lease of its own the hold is on.
    pub lease: LeaseId,
}

/// What one [`Client::read_write`] step answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadWriteStep {
    /// Read, write, downgrade: granted. Releases and cancel: something was
    /// ended.
    pub granted: bool,
    /// Read and downgrade: the fence of the latest write grant (0: never);
    /// write: this grant's fence.
    pub generation: u64,
    /// Write: the writer before never released (its lease ended instead).
    pub poisoned: bool,
}

/// An election's record, as [`Client::lead`] and [`Client::leader_record`]
/// answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadRecord {
    /// The owner token that leads; empty when nobody does.
    pub holder: String,
    /// The lead's TTL.
    pub ttl: Duration,
    /// When the holder took the lead, ms since the Unix epoch (the
    /// cluster leader's clock).
    pub acquired_at_ms: u64,
    /// When it last renewed.
    pub renewed_at_ms: u64,
    /// How many times the lead passed to another owner.
    pub transitions: u64,
    /// What the holder published.
    pub metadata: HashMap<String, String>,
}

impl From<pb::ElectionRecord> for LeadRecord {
    fn from(r: pb::ElectionRecord) -> Self {
        LeadRecord {
            holder: r.holder,
            ttl: Duration::from_millis(r.ttl_ms),
            acquired_at_ms: r.acquired_at_ms,
            renewed_at_ms: r.renewed_at_ms,
            transitions: r.transitions,
            metadata: r.metadata,
        }
    }
}

/// A TTL as the wire carries it, in whole milliseconds.
fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

impl Client {
    /// Takes `name` alone for `owner` on a lease of its own of `ttl`, or
    /// renews the hold `owner` has (its lease's TTL set to `ttl`, same
    /// fence). `None`: another owner holds it.
    pub async fn hold(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Held>, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::HoldRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
            ttl_ms: ttl_ms(ttl),
        };
        let reply = open.settle(rpc!(self, CoordinationClient, hold, req))?;
        Ok(reply.held.then_some(Held {
            fence: reply.fence,
            lease: reply.lease,
        }))
    }

    /// Ends `owner`'s hold of `name` (taken by `hold`, `read_write` or
    /// `lead`) with its lease; `false` when it held none.
    pub async fn unhold(&self, name: &str, owner: &str) -> Result<bool, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::UnholdRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
        };
        Ok(open
            .settle(rpc!(self, CoordinationClient, unhold, req))?
            .ended)
    }

    /// One step of read-write lock `name` as `owner`; `ttl` is the lease
    /// (or intent) TTL where the step takes one, `intent` whether a refused
    /// write records an intent.
    pub async fn read_write(
        &self,
        name: &str,
        owner: &str,
        op: ReadWriteOp,
        ttl: Duration,
        intent: bool,
    ) -> Result<ReadWriteStep, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::ReadWriteRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
            op: op as i32,
            ttl_ms: ttl_ms(ttl),
            intent,
        };
        let reply = open.settle(rpc!(self, CoordinationClient, read_write, req))?;
        Ok(ReadWriteStep {
            granted: reply.granted,
            generation: reply.generation,
            poisoned: reply.poisoned,
        })
    }

    /// Read-write lock `name` as it stands (linearizable).
    pub async fn read_write_state(&self, name: &str) -> Result<pb::ReadWriteStateResponse, Error> {
        let req = pb::ReadWriteStateRequest { name: name.into() };
        rpc!(self, CoordinationClient, read_write_state, req)
    }

    /// Leads election `name` as `owner` for `ttl`, or renews the lead it
    /// has, publishing `metadata`; answers the record, whoever leads (the
    /// caller leads when its `holder` is `owner`).
    pub async fn lead(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
        metadata: HashMap<String, String>,
    ) -> Result<LeadRecord, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::LeadRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
            ttl_ms: ttl_ms(ttl),
            metadata,
        };
        let reply = open.settle(rpc!(self, CoordinationClient, lead, req))?;
        Ok(reply.record.unwrap_or_default().into())
    }

    /// The record of election `name` while someone leads it.
    pub async fn leader_record(&self, name: &str) -> Result<Option<LeadRecord>, Error> {
        let req = pb::LeaderRecordRequest { name: name.into() };
        let reply = rpc!(self, CoordinationClient, leader_record, req)?;
        Ok(reply.record.map(LeadRecord::from))
    }

    /// Claims schedule `name`'s fire at `due` (seconds since the Unix
    /// epoch): `true` for the one claim that wins it.
    pub async fn claim_fire(&self, name: &str, due: f64) -> Result<bool, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::ClaimFireRequest {
            request_id: Some(request_id),
            name: name.into(),
            due,
        };
        Ok(open
            .settle(rpc!(self, CoordinationClient, claim_fire, req))?
            .won)
    }

    /// The last fire claimed for schedule `name`.
    pub async fn last_fired(&self, name: &str) -> Result<Option<f64>, Error> {
        let req = pb::LastFiredRequest { name: name.into() };
        Ok(rpc!(self, CoordinationClient, last_fired, req)?.last_fired)
    }
}
