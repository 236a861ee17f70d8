//! Each call's request, checked: one `TryFrom` per call turns the wire
//! request into what the serving layer takes, usually the [`Command`] it
//! replicates. The bounds are the state machine's own ([`Command::check`]);
//! what is checked here besides is what only the wire can get wrong:
//! request ids, enum numbers, fields that must go together, and an unset
//! (0) lease id.
//!
//! A handler takes a request through [`admit`](super::admit): authenticate,
//! check, and hold the caller to what [`Checked::needs`] says.

mod acquire;
mod fields;
mod writes;

use raftlock_storage::command::checks::check_name;
use raftlock_storage::{ClientSeq, Command};

use crate::pb;
pub(crate) use acquire::{AcquireLock, Campaign};
pub(crate) use fields::lease_id;

/// What a checked call needs of its caller besides being authenticated.
pub(crate) enum Needs<'a> {
    /// Nothing more (lease calls: a lease is checked against its grantor
    /// where it is used).
    Nothing,
    /// Leave to use this lock, election or schedule name.
    Name(&'a str),
    /// The admin role, for the operator call it names.
    Admin(String),
}

/// A request in its checked form.
pub(crate) trait Checked {
    /// What the caller must be allowed.
    fn needs(&self) -> Needs<'_>;
}

/// A call that replicates one command: the request id it carries and the
/// command, checked.
#[derive(Debug)]
pub(crate) struct Write {
    pub origin: ClientSeq,
    pub command: Command,
}

impl Checked for Write {
    fn needs(&self) -> Needs<'_> {
        match &self.command {
            Command::ForceRelease(_) => Needs::Admin("force-release".to_string()),
            Command::RevokeAccountLeases(c) => {
                Needs::Admin(format!("revoking every lease of {}", c.account))
            }
            Command::GrantLease(_)
            | Command::RevokeLease(_)
            | Command::SetLeaseTtl(_)
            | Command::ExpireLeases(_) => Needs::Nothing,
            Command::Acquire(c) => Needs::Name(&c.name),
            Command::AcquireWithTtl(c) => Needs::Name(&c.name),
            Command::Release(c) => Needs::Name(&c.name),
            Command::Cancel(c) => Needs::Name(&c.name),
            Command::EndLockDelay(c) => Needs::Name(&c.name),
            Command::Proclaim(c) => Needs::Name(&c.name),
            Command::Hold(c) => Needs::Name(&c.name),
            Command::Unhold(c) => Needs::Name(&c.name),
            Command::ReadWrite(c) => Needs::Name(&c.name),
            Command::Lead(c) => Needs::Name(&c.name),
            Command::ClaimFire(c) => Needs::Name(&c.name),
        }
    }
}

/// A read of one name's state: the wire request, whose name is in bounds.
#[derive(Debug)]
pub(crate) struct NamedRead<R>(pub R);

/// A wire request that reads one name's state.
pub(crate) trait ReadsName {
    fn name(&self) -> &str;
}

impl<R: ReadsName> Checked for NamedRead<R> {
    fn needs(&self) -> Needs<'_> {
        Needs::Name(self.0.name())
    }
}

impl<R: ReadsName> NamedRead<R> {
    pub(crate) fn check(request: R) -> Result<Self, raftlock_raft::Error> {
        check_name(request.name())?;
        Ok(NamedRead(request))
    }
}

macro_rules! reads_name {
    ($($request:ty),* $(,)?) => {$(
        impl ReadsName for $request {
            fn name(&self) -> &str {
                &self.name
            }
        }
        impl TryFrom<$request> for NamedRead<$request> {
            type Error = raftlock_raft::Error;
            fn try_from(request: $request) -> Result<Self, Self::Error> {
                NamedRead::check(request)
            }
        }
    )*};
}

reads_name!(
    pb::CheckRequest,
    pb::DescribeRequest,
    pb::LeaderRequest,
    pb::ObserveRequest,
    pb::ReadWriteStateRequest,
    pb::LeaderRecordRequest,
    pb::LastFiredRequest,
);
