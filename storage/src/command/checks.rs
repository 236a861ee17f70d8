//! The bounds a command's fields must keep (see [`crate::limits`]), written
//! once: the server's edge checks a request with [`Command::check`] before
//! it proposes anything, to give a clear error early, and the state machine
//! checks every entry again when it applies it, however it got into the log.

use super::{Acquire, AcquireWithTtl, Command, CommandError, Mode, ReadWriteOp};
use crate::limits::{
    MAX_LOCK_DELAY_MS, MAX_METADATA_BYTES, MAX_NAME_LEN, MAX_OWNER_LEN, MAX_SEMAPHORE_LIMIT,
    MAX_TTL_MS, MAX_VALUE_LEN, MIN_TTL_MS,
};

impl Command {
    /// Checks every field against its bound; an `InvalidArgument` names
    /// the first field out of bounds. Commands only the leader proposes
    /// (lease expiry, lock-delay end) carry nothing a caller chose.
    pub fn check(&self) -> Result<(), CommandError> {
        match self {
            Command::GrantLease(c) => check_ttl(c.ttl_ms),
            Command::SetLeaseTtl(c) => check_ttl(c.ttl_ms),
            Command::RevokeLease(_)
            | Command::RevokeAccountLeases(_)
            | Command::ExpireLeases(_)
            | Command::EndLockDelay(_) => Ok(()),
            Command::Acquire(c) => check_acquire(c),
            Command::AcquireWithTtl(c) => check_acquire_with_ttl(c),
            Command::Release(c) => check_holder(&c.name, &c.owner),
            Command::Cancel(c) => check_holder(&c.name, &c.owner),
            Command::Unhold(c) => check_holder(&c.name, &c.owner),
            Command::ForceRelease(c) => check_name(&c.name),
            Command::Proclaim(c) => {
                check_holder(&c.name, &c.owner)?;
                check_value(&c.value)
            }
            Command::Hold(c) => {
                check_holder(&c.name, &c.owner)?;
                check_ttl(c.ttl_ms)
            }
            Command::ReadWrite(c) => {
                check_holder(&c.name, &c.owner)?;
                match c.op {
                    ReadWriteOp::Read { ttl_ms }
                    | ReadWriteOp::Write { ttl_ms, .. }
                    | ReadWriteOp::Downgrade { ttl_ms } => check_ttl(ttl_ms),
                    ReadWriteOp::ReleaseRead
                    | ReadWriteOp::ReleaseWrite
                    | ReadWriteOp::CancelIntent => Ok(()),
                }
            }
            Command::Lead(c) => {
                check_holder(&c.name, &c.owner)?;
                check_ttl(c.ttl_ms)?;
                check_metadata(&c.metadata)
            }
            Command::ClaimFire(c) => {
                check_name(&c.name)?;
                check_due(c.due)
            }
        }
    }
}

/// [`Command::Acquire`]'s fields.
pub fn check_acquire(c: &Acquire) -> Result<(), CommandError> {
    check_holder(&c.name, &c.owner)?;
    if let Some(value) = &c.value {
        check_value(value)?;
    }
    check_mode(c.mode)?;
    check_lock_delay(c.lock_delay_ms)
}

/// [`Command::AcquireWithTtl`]'s fields.
pub fn check_acquire_with_ttl(c: &AcquireWithTtl) -> Result<(), CommandError> {
    check_holder(&c.name, &c.owner)?;
    check_ttl(c.ttl_ms)?;
    check_mode(c.mode)?;
    check_lock_delay(c.lock_delay_ms)
}

/// A name and the owner token acting on it.
fn check_holder(name: &str, owner: &str) -> Result<(), CommandError> {
    check_name(name)?;
    check_owner(owner)
}

fn invalid(message: String) -> CommandError {
    CommandError::InvalidArgument(message)
}

/// A lock, semaphore, election or schedule name: non-empty, at most
/// [`MAX_NAME_LEN`] bytes.
pub fn check_name(name: &str) -> Result<(), CommandError> {
    if name.is_empty() {
        return Err(invalid("name must not be empty".into()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(format!(
            "name is {} bytes, longer than {MAX_NAME_LEN}",
            name.len()
        )));
    }
    Ok(())
}

/// An owner token: non-empty, at most [`MAX_OWNER_LEN`] bytes.
pub fn check_owner(owner: &str) -> Result<(), CommandError> {
    if owner.is_empty() {
        return Err(invalid("owner token must not be empty".into()));
    }
    if owner.len() > MAX_OWNER_LEN {
        return Err(invalid(format!(
            "owner token is {} bytes, longer than {MAX_OWNER_LEN}",
            owner.len()
        )));
    }
    Ok(())
}

/// A published value: at most [`MAX_VALUE_LEN`] bytes.
pub fn check_value(value: &[u8]) -> Result<(), CommandError> {
    if value.len() > MAX_VALUE_LEN {
        return Err(invalid(format!(
            "value is {} bytes, longer than {MAX_VALUE_LEN}",
            value.len()
        )));
    }
    Ok(())
}

/// A mode: semaphore requests need `1 <= count <= limit <= MAX_SEMAPHORE_LIMIT`.
pub fn check_mode(mode: Mode) -> Result<(), CommandError> {
    if let Mode::Permits { count, limit } = mode {
        if count == 0 || count > limit || limit > MAX_SEMAPHORE_LIMIT {
            return Err(invalid(format!(
                "semaphore request of {count} permits out of {limit}: \
                 need 1 <= count <= limit <= {MAX_SEMAPHORE_LIMIT}"
            )));
        }
    }
    Ok(())
}

/// A lease TTL: within [`MIN_TTL_MS`]..=[`MAX_TTL_MS`].
pub fn check_ttl(ttl_ms: u64) -> Result<(), CommandError> {
    if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(invalid(format!(
            "ttl {ttl_ms} ms is outside {MIN_TTL_MS}..={MAX_TTL_MS} ms"
        )));
    }
    Ok(())
}

/// A lock-delay: at most [`MAX_LOCK_DELAY_MS`] (0: none).
pub fn check_lock_delay(lock_delay_ms: u64) -> Result<(), CommandError> {
    if lock_delay_ms > MAX_LOCK_DELAY_MS {
        return Err(invalid(format!(
            "lock-delay {lock_delay_ms} ms is above the {MAX_LOCK_DELAY_MS} ms maximum"
        )));
    }
    Ok(())
}

/// Election metadata: unique non-empty keys, at most [`MAX_METADATA_BYTES`]
/// of keys and values together.
pub fn check_metadata(metadata: &[(String, String)]) -> Result<(), CommandError> {
    let bytes: usize = metadata.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_METADATA_BYTES {
        return Err(invalid(format!(
            "metadata is {bytes} bytes, more than {MAX_METADATA_BYTES}"
        )));
    }
    if metadata.iter().any(|(k, _)| k.is_empty()) {
        return Err(invalid("metadata keys must not be empty".to_owned()));
    }
    let mut keys: Vec<&str> = metadata.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if let Some(pair) = keys.windows(2).find(|w| w[0] == w[1]) {
        return Err(invalid(format!("metadata key {:?} given twice", pair[0])));
    }
    Ok(())
}

/// A schedule's fire instant (`f64::to_bits` of seconds since the Unix
/// epoch): finite and not negative, so that comparing the bits compares
/// the instants.
pub fn check_due(due: u64) -> Result<(), CommandError> {
    let seconds = f64::from_bits(due);
    if !seconds.is_finite() || seconds.is_sign_negative() {
        return Err(invalid(format!(
            "due {seconds} is not a finite, non-negative number of seconds"
        )));
    }
    Ok(())
}
