//! How a power-loss call ended: answered, definitely failed, or unknown —
//! and the one place a client error is sorted into those.

use std::future::Future;
use std::time::Duration;

/// Longest a single call may take before its outcome counts as unknown.
pub const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// The end of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    /// Answered.
    Ok(T),
    /// Definitely not done (lease gone, not held, wait timed out and
    /// cancelled by the server, ...).
    Fail(String),
    /// May or may not have taken effect.
    Unknown(String),
}

impl<T> Answer<T> {
    /// The answer's value, if any.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Answer::Ok(v) => Some(v),
            _ => None,
        }
    }

    /// Maps an answered value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Answer<U> {
        match self {
            Answer::Ok(v) => Answer::Ok(f(v)),
            Answer::Fail(e) => Answer::Fail(e),
            Answer::Unknown(e) => Answer::Unknown(e),
        }
    }
}

/// Runs `call` under [`CALL_DEADLINE`] and sorts its result.
pub async fn settle<T, F>(call: F) -> Answer<T>
where
    F: Future<Output = Result<T, raftlock_client::Error>>,
{
    match tokio::time::timeout(CALL_DEADLINE, call).await {
        Ok(Ok(v)) => Answer::Ok(v),
        Ok(Err(e)) => sort(&e),
        Err(_) => Answer::Unknown(format!("no answer within {CALL_DEADLINE:?}")),
    }
}

/// Definite failures vs indeterminate errors, as the chaos recorder sorts
/// them: only `Unavailable` and `Internal` leave the effect open.
fn sort<T>(e: &raftlock_client::Error) -> Answer<T> {
    use raftlock_client::Error as E;
    match e {
        E::InvalidArgument(_)
        | E::LeaseExpired(_)
        | E::NotHeld(_)
        | E::Timeout(_)
        | E::WaitEnded(_)
        | E::LimitReached(_) => Answer::Fail(e.to_string()),
        other => Answer::Unknown(other.to_string()),
    }
}
