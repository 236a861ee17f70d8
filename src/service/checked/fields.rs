//! Fields only the wire can get wrong: request ids, enum numbers and
//! unset lease ids, each turned into its checked form here once.

use raftlock_raft::error::{Problem, ValidationError};
use raftlock_raft::Error;
use raftlock_storage::limits::MAX_OWNER_LEN;
use raftlock_storage::{Account, ClientSeq, Mode, ReadWriteOp};
use uuid::Uuid;

use crate::pb;

fn invalid(field: &'static str, problem: Problem) -> Error {
    ValidationError::field(field, problem).into()
}

/// The request id of a mutating call. Without one, the call gets a fresh
/// anonymous id of its own: retried inside the cluster exactly once, but a
/// client that re-sends it makes a new request (and the leases it grants do
/// not keep its session remembered).
pub(super) fn origin(id: Option<&pb::RequestId>) -> Result<ClientSeq, Error> {
    let Some(id) = id else {
        return Ok(ClientSeq {
            client: Uuid::new_v4(),
            seq: 1,
            acked_below: 0,
            attempt: 0,
            anonymous: true,
        });
    };
    let client = Uuid::from_slice(&id.client_id).map_err(|_| {
        let got = id.client_id.len();
        invalid(
            "request_id.client_id",
            Problem::Length { expected: 16, got },
        )
    })?;
    if id.seq == 0 {
        return Err(invalid("request_id.seq", Problem::AtLeast { min: 1 }));
    }
    if id.acked_below > id.seq {
        let problem = Problem::NotAbove { bound: "seq" };
        return Err(invalid("request_id.acked_below", problem));
    }
    Ok(ClientSeq {
        client,
        seq: id.seq,
        acked_below: id.acked_below,
        attempt: id.attempt,
        anonymous: false,
    })
}

/// A lease id the call names (0, the wire's unset value, is never a lease).
pub(crate) fn lease_id(id: u64) -> Result<u64, Error> {
    if id == 0 {
        let hint = Some("grant a lease first");
        return Err(invalid("lease id", Problem::Unset { hint }));
    }
    Ok(id)
}

/// The mode of an Acquire; its bounds are checked with the command.
pub(super) fn mode(mode: i32, permits: u32, limit: u32) -> Result<Mode, Error> {
    match pb::LockMode::try_from(mode) {
        Ok(pb::LockMode::Exclusive) => Ok(Mode::Exclusive),
        Ok(pb::LockMode::Shared) => Ok(Mode::Shared),
        Ok(pb::LockMode::Permits) => Ok(Mode::Permits {
            count: permits,
            limit,
        }),
        Err(_) => Err(invalid(
            "lock mode",
            Problem::Unknown { value: mode.into() },
        )),
    }
}

/// The read-write step a request asks for.
pub(super) fn read_write_op(req: &pb::ReadWriteRequest) -> Result<ReadWriteOp, Error> {
    let ttl_ms = req.ttl_ms;
    Ok(match pb::ReadWriteOp::try_from(req.op) {
        Ok(pb::ReadWriteOp::Read) => ReadWriteOp::Read { ttl_ms },
        Ok(pb::ReadWriteOp::Write) => ReadWriteOp::Write {
            ttl_ms,
            intent: req.intent,
        },
        Ok(pb::ReadWriteOp::ReleaseRead) => ReadWriteOp::ReleaseRead,
        Ok(pb::ReadWriteOp::ReleaseWrite) => ReadWriteOp::ReleaseWrite,
        Ok(pb::ReadWriteOp::CancelIntent) => ReadWriteOp::CancelIntent,
        Ok(pb::ReadWriteOp::Downgrade) => ReadWriteOp::Downgrade { ttl_ms },
        Err(_) => {
            let value = req.op.into();
            return Err(invalid("read-write op", Problem::Unknown { value }));
        }
    })
}

/// Whose leases a RevokeAll names: an identity (non-empty, at most
/// [`MAX_OWNER_LEN`] bytes, as auth-file names are) or an IP address.
pub(super) fn account(
    account: Option<&pb::lease_revoke_all_request::Account>,
) -> Result<Account, Error> {
    use pb::lease_revoke_all_request::Account as Named;
    match account {
        None => Err(invalid(
            "the leases' identity or source address",
            Problem::Missing,
        )),
        Some(Named::Identity(name)) if name.is_empty() || name.len() > MAX_OWNER_LEN => {
            let problem = Problem::LengthRange {
                min: 1,
                max: MAX_OWNER_LEN,
                got: name.len(),
            };
            Err(invalid("identity", problem))
        }
        Some(Named::Identity(name)) => Ok(Account::Identity(name.clone())),
        Some(Named::Source(addr)) => addr
            .trim()
            .parse::<std::net::IpAddr>()
            .map(Account::source)
            .map_err(|_| {
                let value = addr.clone();
                invalid(
                    "source",
                    Problem::NotA {
                        value,
                        kind: "an IP address",
                    },
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_fields() {
        assert!(mode(7, 1, 1).is_err());
        assert_eq!(mode(2, 2, 3).unwrap(), Mode::Permits { count: 2, limit: 3 });
        assert!(lease_id(0).is_err());
        let bad = pb::RequestId {
            client_id: vec![1, 2],
            seq: 1,
            acked_below: 0,
            attempt: 0,
        };
        assert!(origin(Some(&bad)).is_err());
        let seq_zero = pb::RequestId {
            client_id: vec![7; 16],
            seq: 0,
            acked_below: 0,
            attempt: 0,
        };
        assert!(origin(Some(&seq_zero)).is_err());
        assert!(origin(None).unwrap().anonymous);
        use pb::lease_revoke_all_request::Account as Named;
        assert!(account(None).is_err());
        assert!(account(Some(&Named::Identity(String::new()))).is_err());
        assert!(account(Some(&Named::Source("10.0.0.300".into()))).is_err());
        assert_eq!(
            account(Some(&Named::Source("::ffff:10.0.0.3".into()))).unwrap(),
            Account::Source([10, 0, 0, 3].into())
        );
    }
}
