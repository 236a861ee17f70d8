//! Checks on client input at the server's edge, so bad requests get a clear
//! error before they reach the log. The state machine checks the same bounds
//! again (`raftlock_storage::limits`).

use raftlock_raft::Error;
use std::time::Duration;

use raftlock_storage::limits::{
    MAX_LOCK_DELAY_MS, MAX_NAME_LEN, MAX_OWNER_LEN, MAX_SEMAPHORE_LIMIT, MAX_TTL_MS, MAX_VALUE_LEN,
    MIN_TTL_MS,
};
use raftlock_storage::{Account, ClientSeq, Mode};
use uuid::Uuid;

use crate::pb;

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// A lock, semaphore or election name.
pub fn name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(invalid("name must not be empty".into()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(format!(
            "name is {} bytes; the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    Ok(())
}

/// An owner token.
pub fn owner(owner: &str) -> Result<(), Error> {
    if owner.is_empty() {
        return Err(invalid("owner token must not be empty".into()));
    }
    if owner.len() > MAX_OWNER_LEN {
        return Err(invalid(format!(
            "owner token is {} bytes; the limit is {MAX_OWNER_LEN}",
            owner.len()
        )));
    }
    Ok(())
}

/// A lease TTL.
pub fn ttl_ms(ttl_ms: u64) -> Result<(), Error> {
    if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(invalid(format!(
            "ttl {ttl_ms} ms is outside {MIN_TTL_MS}..={MAX_TTL_MS} ms"
        )));
    }
    Ok(())
}

/// A lock whose TTL is its own: a TTL in range, taken by a try-lock
/// without a lease of the caller's.
pub fn own_ttl(ttl: u64, lease: u64, wait: bool) -> Result<(), Error> {
    ttl_ms(ttl)?;
    if lease != 0 {
        return Err(invalid(format!(
            "ttl_ms makes the lock a lease of its own; lease must be 0, not {lease}"
        )));
    }
    if wait {
        return Err(invalid(
            "ttl_ms is for a try-lock (wait false): a waiter needs a lease kept alive while it waits"
                .into(),
        ));
    }
    Ok(())
}

/// A lock-delay asked for with an acquire (absent: the node's default).
pub fn lock_delay(lock_delay_ms: Option<u64>) -> Result<Option<Duration>, Error> {
    match lock_delay_ms {
        Some(ms) if ms > MAX_LOCK_DELAY_MS => Err(invalid(format!(
            "lock-delay {ms} ms is above the {MAX_LOCK_DELAY_MS} ms maximum"
        ))),
        other => Ok(other.map(Duration::from_millis)),
    }
}

/// An election value.
pub fn value(value: &[u8]) -> Result<(), Error> {
    if value.len() > MAX_VALUE_LEN {
        return Err(invalid(format!(
            "value is {} bytes; the limit is {MAX_VALUE_LEN}",
            value.len()
        )));
    }
    Ok(())
}

/// A lease id (0 is never a lease).
pub fn lease(id: u64) -> Result<(), Error> {
    if id == 0 {
        return Err(invalid("lease id must be set (grant a lease first)".into()));
    }
    Ok(())
}

/// The mode of an Acquire.
pub fn mode(mode: i32, permits: u32, limit: u32) -> Result<Mode, Error> {
    match pb::LockMode::try_from(mode) {
        Ok(pb::LockMode::Exclusive) => Ok(Mode::Exclusive),
        Ok(pb::LockMode::Shared) => Ok(Mode::Shared),
        Ok(pb::LockMode::Permits) => {
            if limit == 0 || limit > MAX_SEMAPHORE_LIMIT {
                return Err(invalid(format!(
                    "semaphore limit {limit} is outside 1..={MAX_SEMAPHORE_LIMIT}"
                )));
            }
            if permits == 0 || permits > limit {
                return Err(invalid(format!("permits {permits} is outside 1..={limit}")));
            }
            Ok(Mode::Permits {
                count: permits,
                limit,
            })
        }
        Err(_) => Err(invalid(format!("unknown lock mode {mode}"))),
    }
}

/// Whose leases a RevokeAll names: an identity (non-empty, at most
/// [`MAX_OWNER_LEN`] bytes, as auth-file names are) or an IP address.
pub fn account(account: Option<&pb::lease_revoke_all_request::Account>) -> Result<Account, Error> {
    use pb::lease_revoke_all_request::Account as Named;
    match account {
        None => Err(invalid(
            "name the leases' identity or source address".into(),
        )),
        Some(Named::Identity(name)) if name.is_empty() || name.len() > MAX_OWNER_LEN => {
            Err(invalid(format!(
                "identity must be 1..={MAX_OWNER_LEN} bytes, not {}",
                name.len()
            )))
        }
        Some(Named::Identity(name)) => Ok(Account::Identity(name.clone())),
        Some(Named::Source(addr)) => addr
            .trim()
            .parse::<std::net::IpAddr>()
            .map(Account::source)
            .map_err(|_| invalid(format!("source {addr:?} is not an IP address"))),
    }
}

/// The request id of a mutating call. Without one, the call gets a fresh
/// anonymous id of its own: retried inside the cluster exactly once, but a
/// client that re-sends it makes a new request (and the leases it grants do
/// not keep its session remembered).
pub fn request_id(id: Option<&pb::RequestId>) -> Result<ClientSeq, Error> {
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
        invalid(format!(
            "request_id.client_id must be 16 bytes, got {}",
            id.client_id.len()
        ))
    })?;
    if id.seq == 0 {
        return Err(invalid("request_id.seq must be at least 1".into()));
    }
    if id.acked_below > id.seq {
        return Err(invalid("request_id.acked_below must not exceed seq".into()));
    }
    Ok(ClientSeq {
        client,
        seq: id.seq,
        acked_below: id.acked_below,
        attempt: id.attempt,
        anonymous: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(name("").is_err());
        assert!(name(&"x".repeat(MAX_NAME_LEN + 1)).is_err());
        assert!(name("jobs/nightly").is_ok());
        assert!(ttl_ms(0).is_err());
        assert!(ttl_ms(u64::MAX).is_err());
        assert!(ttl_ms(10_000).is_ok());
        assert!(mode(2, 0, 3).is_err());
        assert!(mode(2, 4, 3).is_err());
        assert!(mode(7, 1, 1).is_err());
        assert_eq!(mode(2, 2, 3).unwrap(), Mode::Permits { count: 2, limit: 3 });
        let bad = pb::RequestId {
            client_id: vec![1, 2],
            seq: 1,
            acked_below: 0,
            attempt: 0,
        };
        assert!(request_id(Some(&bad)).is_err());
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
