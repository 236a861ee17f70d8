//! Election records ([`Command::Lead`]): the holder of an election's
//! lock, alone, with its TTL, when it took and last renewed the lead, how
//! often the lead changed hands, and its metadata. Apart from the plain
//! own holds because of the record kept by name, which outlives a hold to
//! count transitions.
//!
//! [`Command::Lead`]: crate::command::Command::Lead

use crate::command::{CommandError, ElectionRecord, Mode, Request, Response};
use crate::state::{LockState, Step};

/// The fields of [`Command::Lead`](crate::command::Command::Lead).
pub(in crate::state) struct LeadRequest<'a> {
    pub(in crate::state) name: &'a str,
    pub(in crate::state) owner: &'a str,
    pub(in crate::state) ttl_ms: u64,
    pub(in crate::state) metadata: &'a [(String, String)],
}

impl LockState {
    /// [`Command::Lead`](crate::command::Command::Lead).
    pub(in crate::state) fn lead(
        &mut self,
        lead: &LeadRequest<'_>,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let LeadRequest {
            name,
            owner,
            ttl_ms,
            metadata,
        } = *lead;
        let mut metadata = metadata.to_vec();
        metadata.sort();
        let previous = self.named.election(name).cloned();
        let account = request.caller.account();
        let led_by_other = self
            .locks
            .get(name)
            .is_some_and(|l| l.holders.iter().any(|h| h.owner != owner));
        if previous.is_none() && !led_by_other {
            self.named.admit(account.as_ref(), &step.quotas)?;
        }
        let record = match self.own_hold(name, owner)? {
            Some(h) if h.mode == Mode::Exclusive => {
                self.leases.set_ttl(h.lease, ttl_ms, step)?;
                let kept = previous.filter(|r| r.holder == owner);
                Some(ElectionRecord {
                    holder: owner.to_owned(),
                    ttl_ms,
                    acquired_at_ms: kept.as_ref().map_or(step.time_ms, |r| r.acquired_at_ms),
                    renewed_at_ms: step.time_ms,
                    transitions: kept.as_ref().map_or(0, |r| r.transitions),
                    metadata,
                })
            }
            Some(_) => None,
            None => self
                .take_own_hold(name, owner, ttl_ms, Mode::Exclusive, request, step)?
                .map(|_| ElectionRecord {
                    holder: owner.to_owned(),
                    ttl_ms,
                    acquired_at_ms: step.time_ms,
                    renewed_at_ms: step.time_ms,
                    transitions: previous
                        .as_ref()
                        .map_or(0, |r| r.transitions + u64::from(r.holder != owner)),
                    metadata,
                }),
        };
        if let Some(record) = record {
            self.named.set_election(name, account, record);
        }
        let answer = self.election(name).unwrap_or_else(|| ElectionRecord {
            transitions: self.named.election(name).map_or(0, |r| r.transitions),
            ..ElectionRecord::default()
        });
        Ok(Response::Led(answer))
    }

    /// The live record of election `name`: its holder holds the lock alone.
    /// A lock held alone without a record (taken another way) answers a
    /// record made from its hold.
    pub fn election(&self, name: &str) -> Option<ElectionRecord> {
        let lock = self.locks.get(name)?;
        let holder = lock.holders.iter().find(|h| h.mode == Mode::Exclusive)?;
        match self.named.election(name) {
            Some(record) if record.holder == holder.owner => Some(record.clone()),
            _ => Some(ElectionRecord {
                holder: holder.owner.clone(),
                ttl_ms: self.leases.get(holder.lease).map_or(0, |l| l.ttl_ms),
                acquired_at_ms: holder.granted_at_ms,
                renewed_at_ms: holder.granted_at_ms,
                transitions: 0,
                metadata: Vec::new(),
            }),
        }
    }
}
