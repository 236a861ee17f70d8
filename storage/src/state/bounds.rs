//! Input checks the state machine applies to every command, whatever the
//! server's edge already checked (see [`crate::limits`]).

use crate::command::{CommandError, Mode};
use crate::limits::{
    MAX_LOCK_DELAY_MS, MAX_NAME_LEN, MAX_OWNER_LEN, MAX_SEMAPHORE_LIMIT, MAX_TTL_MS, MAX_VALUE_LEN,
    MIN_TTL_MS,
};

fn invalid(message: String) -> CommandError {
    CommandError::InvalidArgument(message)
}

/// A lock name: non-empty, at most [`MAX_NAME_LEN`] bytes.
pub(super) fn check_name(name: &str) -> Result<(), CommandError> {
    if name.is_empty() {
        return Err(invalid("lock name is empty".into()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(format!(
            "lock name is {} bytes, longer than {MAX_NAME_LEN}",
            name.len()
        )));
    }
    Ok(())
}

/// An owner token: non-empty, at most [`MAX_OWNER_LEN`] bytes.
pub(super) fn check_owner(owner: &str) -> Result<(), CommandError> {
    if owner.is_empty() {
        return Err(invalid("owner token is empty".into()));
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
pub(super) fn check_value(value: &[u8]) -> Result<(), CommandError> {
    if value.len() > MAX_VALUE_LEN {
        return Err(invalid(format!(
            "value is {} bytes, longer than {MAX_VALUE_LEN}",
            value.len()
        )));
    }
    Ok(())
}

/// A mode: semaphore requests need `1 <= count <= limit <= MAX_SEMAPHORE_LIMIT`.
pub(super) fn check_mode(mode: Mode) -> Result<(), CommandError> {
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
pub(super) fn check_ttl(ttl_ms: u64) -> Result<(), CommandError> {
    if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(invalid(format!(
            "lease ttl {ttl_ms} ms is outside {MIN_TTL_MS}..={MAX_TTL_MS} ms"
        )));
    }
    Ok(())
}

/// A lock-delay: at most [`MAX_LOCK_DELAY_MS`] (0: none).
pub(super) fn check_lock_delay(lock_delay_ms: u64) -> Result<(), CommandError> {
    if lock_delay_ms > MAX_LOCK_DELAY_MS {
        return Err(invalid(format!(
            "lock-delay {lock_delay_ms} ms is above the {MAX_LOCK_DELAY_MS} ms maximum"
        )));
    }
    Ok(())
}
