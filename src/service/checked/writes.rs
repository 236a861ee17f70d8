//! The calls that replicate one command, each wire request checked into a
//! [`Write`].

use raftlock_raft::Error;
use raftlock_storage::command::{
    Cancel, ClaimFire, ForceRelease, GrantLease, Hold, Lead, Proclaim, ReadWrite, Release,
    RevokeAccountLeases, RevokeLease, SetLeaseTtl, Unhold,
};
use raftlock_storage::{ClientSeq, Command};

use super::fields::{account, lease_id, origin, read_write_op};
use super::Write;
use crate::pb;

impl Write {
    /// `command` for the call with request id `origin`, if in bounds.
    fn checked(origin: ClientSeq, command: Command) -> Result<Write, Error> {
        command.check()?;
        Ok(Write { origin, command })
    }
}

impl TryFrom<pb::LeaseGrantRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::LeaseGrantRequest) -> Result<Self, Error> {
        let command = Command::GrantLease(GrantLease { ttl_ms: req.ttl_ms });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::LeaseRevokeRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::LeaseRevokeRequest) -> Result<Self, Error> {
        let origin = origin(req.request_id.as_ref())?;
        let command = Command::RevokeLease(RevokeLease {
            id: lease_id(req.id)?,
        });
        Write::checked(origin, command)
    }
}

impl TryFrom<pb::LeaseSetTtlRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::LeaseSetTtlRequest) -> Result<Self, Error> {
        let origin = origin(req.request_id.as_ref())?;
        let command = Command::SetLeaseTtl(SetLeaseTtl {
            id: lease_id(req.id)?,
            ttl_ms: req.ttl_ms,
        });
        Write::checked(origin, command)
    }
}

impl TryFrom<pb::LeaseRevokeAllRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::LeaseRevokeAllRequest) -> Result<Self, Error> {
        let origin = origin(req.request_id.as_ref())?;
        let command = Command::RevokeAccountLeases(RevokeAccountLeases {
            account: account(req.account.as_ref())?,
        });
        Write::checked(origin, command)
    }
}

impl TryFrom<pb::ReleaseRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::ReleaseRequest) -> Result<Self, Error> {
        let command = Command::Release(Release {
            name: req.name,
            owner: req.owner,
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::CancelRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::CancelRequest) -> Result<Self, Error> {
        // The client's own cancel: ends the wait or hold whoever claimed it.
        let command = Command::Cancel(Cancel {
            name: req.name,
            owner: req.owner,
            call: None,
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::ForceReleaseRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::ForceReleaseRequest) -> Result<Self, Error> {
        let command = Command::ForceRelease(ForceRelease { name: req.name });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::ProclaimRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::ProclaimRequest) -> Result<Self, Error> {
        let command = Command::Proclaim(Proclaim {
            name: req.name,
            owner: req.owner,
            value: req.value,
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

/// Resign is the candidate's or leader's own Cancel.
impl TryFrom<pb::ResignRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::ResignRequest) -> Result<Self, Error> {
        let command = Command::Cancel(Cancel {
            name: req.name,
            owner: req.owner,
            call: None,
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::HoldRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::HoldRequest) -> Result<Self, Error> {
        let command = Command::Hold(Hold {
            name: req.name,
            owner: req.owner,
            ttl_ms: req.ttl_ms,
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::UnholdRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::UnholdRequest) -> Result<Self, Error> {
        let command = Command::Unhold(Unhold {
            name: req.name,
            owner: req.owner,
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::ReadWriteRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::ReadWriteRequest) -> Result<Self, Error> {
        let origin = origin(req.request_id.as_ref())?;
        let op = read_write_op(&req)?;
        let command = Command::ReadWrite(ReadWrite {
            name: req.name,
            owner: req.owner,
            op,
        });
        Write::checked(origin, command)
    }
}

impl TryFrom<pb::LeadRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::LeadRequest) -> Result<Self, Error> {
        let command = Command::Lead(Lead {
            name: req.name,
            owner: req.owner,
            ttl_ms: req.ttl_ms,
            metadata: req.metadata.into_iter().collect(),
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}

impl TryFrom<pb::ClaimFireRequest> for Write {
    type Error = Error;
    fn try_from(req: pb::ClaimFireRequest) -> Result<Self, Error> {
        let command = Command::ClaimFire(ClaimFire {
            name: req.name,
            due: req.due.to_bits(),
        });
        Write::checked(origin(req.request_id.as_ref())?, command)
    }
}
