//! [`Fenced`]: how a downstream resource uses fencing tokens to reject a
//! writer whose lock was lost (a paused process that wakes up after its
//! lease expired and someone else took the lock).

use std::sync::Mutex;

use crate::error::Error;

/// A value that only accepts writes carrying a fencing token at least as
/// high as the highest it has seen. Guard one resource with one lock name:
/// tokens are ordered per name.
///
/// This is the resource's side: it refuses an old token even from a
/// holder that never learned it lost the lock. The holder's side is
/// [`LockGuard::ensure_owned`](crate::LockGuard::ensure_owned) right before
/// the write (one round trip), which refuses once the lock was
/// force-released, revoked or expired.
///
/// ```no_run
/// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
/// use raftlock_client::Fenced;
///
/// let store = Fenced::new(Vec::<String>::new());
/// let guard = client.lock("store").acquire().await?;
/// store.write(guard.fence(), |rows| rows.push("written under the lock".into()))?;
///
/// // A holder with an older token (its lock was lost meanwhile) is refused:
/// let err = store.write(guard.fence() - 1, |rows| rows.clear()).unwrap_err();
/// assert!(matches!(err, raftlock_client::Error::StaleFence { .. }));
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct Fenced<T> {
    state: Mutex<(u64, T)>,
}

impl<T> Fenced<T> {
    /// Wraps `value`; no token seen yet.
    pub fn new(value: T) -> Self {
        Fenced {
            state: Mutex::new((0, value)),
        }
    }

    /// Runs `f` on the value if `fence` is not older than the highest
    /// token accepted so far (and then remembers `fence`); otherwise
    /// [`Error::StaleFence`] and the value is untouched.
    pub fn write<R>(&self, fence: u64, f: impl FnOnce(&mut T) -> R) -> Result<R, Error> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if fence < state.0 {
            return Err(Error::StaleFence {
                presented: fence,
                highest: state.0,
            });
        }
        state.0 = fence;
        Ok(f(&mut state.1))
    }

    /// Reads the value (reads need no token).
    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&state.1)
    }

    /// The highest token accepted so far (0: none).
    pub fn highest_fence(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.state.into_inner().unwrap_or_else(|e| e.into_inner()).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_equal_or_newer_tokens_and_rejects_older() {
        let f = Fenced::new(0);
        f.write(5, |v| *v = 1).unwrap();
        f.write(5, |v| *v += 1).unwrap();
        f.write(9, |v| *v += 1).unwrap();
        assert_eq!(
            f.write(7, |v| *v = 100),
            Err(Error::StaleFence {
                presented: 7,
                highest: 9
            })
        );
        assert_eq!(f.read(|v| *v), 3);
        assert_eq!(f.highest_fence(), 9);
    }
}
