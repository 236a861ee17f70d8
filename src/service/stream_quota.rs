//! The open-calls quota: how many long-lived calls one account (identity,
//! or source address without authentication) may hold open on this node
//! at once — keep-alive streams, Observe streams, and Acquire and Campaign
//! calls that wait. Each such call holds a [`StreamPermit`] for as long as
//! it is open; the place is given back when the permit drops.
//!
//! Per node and in memory, unlike the leases, client ids and waiters an
//! account holds, which the replicated state counts: what an open call
//! costs (a task, a subscription, an HTTP/2 stream) is this node's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use raftlock_raft::Error;
use raftlock_storage::{Account, CommandError, Quota};

/// Open calls per account, bounded by `limit`. Cheap to clone; clones
/// share the count.
#[derive(Clone)]
pub struct StreamQuota {
    /// Most calls one account may hold open.
    limit: u32,
    /// Accounts with at least one open call, and how many.
    open: Arc<Mutex<HashMap<Account, u32>>>,
}

/// One open call's place in its account's quota, given back on drop.
#[must_use = "the place is given back when the permit drops"]
pub struct StreamPermit {
    open: Arc<Mutex<HashMap<Account, u32>>>,
    account: Account,
}

impl StreamQuota {
    /// A quota of `limit` open calls per account.
    pub fn new(limit: u32) -> Self {
        StreamQuota {
            limit,
            open: Arc::default(),
        }
    }

    /// A place for one more open call of `account`, or the refusal naming
    /// the quota, the account and the limit. A call without an account
    /// (none reaches the client listener) needs no place.
    pub fn admit(&self, account: Option<Account>) -> Result<Option<StreamPermit>, Error> {
        let Some(account) = account else {
            return Ok(None);
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(account.clone()).or_default();
        if *count >= self.limit {
            return Err(Error::Rejected(CommandError::QuotaExceeded {
                quota: Quota::Streams,
                account,
                count: u64::from(*count),
                limit: self.limit,
            }));
        }
        *count += 1;
        Ok(Some(StreamPermit {
            open: self.open.clone(),
            account,
        }))
    }

    /// How many calls `account` holds open now.
    #[cfg(test)]
    fn open_calls(&self, account: &Account) -> u32 {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(account).copied().unwrap_or(0)
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.account) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    #[test]
    fn an_account_holds_at_most_its_open_calls_and_gets_them_back() {
        let quota = StreamQuota::new(2);
        let flooder = Account::source(IpAddr::from([10, 0, 0, 1]));
        let first = quota.admit(Some(flooder.clone())).unwrap();
        let _second = quota.admit(Some(flooder.clone())).unwrap();
        let refused = quota
            .admit(Some(flooder.clone()))
            .err()
            .expect("over the quota");
        assert_eq!(
            refused.to_string(),
            "source 10.0.0.1 has 2 watch or wait calls open on this node \
             (limit 2, the server's quota_streams): no new one until one of them ends"
        );
        // Another account is not counted with it.
        let other = Account::Identity("jobs".into());
        assert!(quota.admit(Some(other.clone())).unwrap().is_some());
        assert_eq!(quota.open_calls(&other), 0, "given back on drop");
        drop(first);
        assert_eq!(quota.open_calls(&flooder), 1);
        assert!(quota.admit(Some(flooder)).is_ok());
        assert!(quota.admit(None).unwrap().is_none());
    }
}
