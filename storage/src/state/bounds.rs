//! Input checks the state machine applies to every command, whatever the
//! server's edge already checked (see [`crate::limits`]).

use crate::command::{CommandError, Mode};
use crate::limits::{
    MAX_LOCK_DELAY_MS, MAX_METADATA_BYTES, MAX_NAME_LEN, MAX_OWNER_LEN, MAX_SEMAPHORE_LIMIT,
    MAX_TTL_MS, MAX_VALUE_LEN, MIN_TTL_MS,
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

/// Election metadata: unique non-empty keys, at most [`MAX_METADATA_BYTES`]
/// of keys and values together.
pub(super) fn check_metadata(metadata: &[(String, String)]) -> Result<(), CommandError> {
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
pub(super) fn check_due(due: u64) -> Result<(), CommandError> {
    let seconds = f64::from_bits(due);
    if !seconds.is_finite() || seconds.is_sign_negative() {
        return Err(invalid(format!(
            "due {seconds} is not a finite, non-negative number of seconds"
        )));
    }
    Ok(())
}
