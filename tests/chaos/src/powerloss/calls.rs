//! The calls a power-loss run makes, each entered in the ledger before it
//! is sent and settled by its answer: the load and the fence probes both
//! go through here, so nothing the cluster acknowledges goes unrecorded.

use std::sync::Arc;
use std::time::Duration;

use raftlock_client::{Acquire, Client, LockMode};

use super::answer::{settle, Answer};
use super::ledger::{Digest, Ledger};

/// Lease TTL: long enough that nothing expires during a run, so every
/// hold the ledger knows of must still be there after a restart.
pub const LEASE_TTL: Duration = Duration::from_secs(6 * 60 * 60);

/// A client and the ledger its calls are entered in.
#[derive(Clone)]
pub struct Calls {
    pub client: Client,
    pub ledger: Arc<Ledger>,
}

impl Calls {
    /// Grants a lease of [`LEASE_TTL`].
    pub async fn grant_lease(&self) -> Answer<u64> {
        self.ledger.lease_begin();
        let answer = settle(self.client.grant_lease(LEASE_TTL)).await;
        self.ledger.lease_done(&answer);
        answer
    }

    /// An exclusive acquire: a try-lock when `wait` is `None`.
    pub async fn acquire(
        &self,
        name: &str,
        owner: &str,
        lease: u64,
        wait: Option<Duration>,
    ) -> Answer<Option<u64>> {
        let kind = if wait.is_some() {
            "acquire"
        } else {
            "try_acquire"
        };
        let spec = Acquire {
            wait: wait.is_some(),
            timeout: wait,
            ..Acquire::exclusive(name, owner, lease)
        };
        debug_assert_eq!(spec.mode, LockMode::Exclusive);
        self.ledger.acquire_begin(kind, name, owner);
        let call = async { self.client.acquire(&spec).await };
        let answer = settle(call).await.map(|g| g.map(|g| g.fence));
        self.ledger.acquire_done(kind, name, owner, &answer);
        answer
    }

    /// Releases `owner`'s hold of `name`.
    pub async fn release(&self, name: &str, owner: &str) -> Answer<u32> {
        self.ledger.release_begin(name, owner);
        let answer = settle(self.client.release(name, owner)).await;
        self.ledger.release_done(name, owner, &answer);
        answer
    }

    /// Campaigns for `name` with `value`, waiting at most `wait`.
    pub async fn campaign(
        &self,
        name: &str,
        owner: &str,
        lease: u64,
        value: &[u8],
        wait: Duration,
    ) -> Answer<u64> {
        self.ledger.campaign_begin(name, owner, Digest::of(value));
        let call = self.client.campaign(name, owner, lease, value, Some(wait));
        let answer = settle(call).await;
        self.ledger.campaign_done(name, owner, &answer);
        answer
    }

    /// Publishes `value` as `owner`, the leader of `name`.
    pub async fn proclaim(&self, name: &str, owner: &str, value: &[u8]) -> Answer<()> {
        let digest = Digest::of(value);
        self.ledger.proclaim_begin(name, owner, digest);
        let answer = settle(self.client.proclaim(name, owner, value)).await;
        self.ledger.proclaim_done(name, owner, digest, &answer);
        answer
    }

    /// Ends `owner`'s leadership of `name`.
    pub async fn resign(&self, name: &str, owner: &str) -> Answer<()> {
        self.ledger.resign_begin(name, owner);
        let answer = settle(self.client.resign(name, owner)).await;
        self.ledger.resign_done(name, owner, &answer);
        answer
    }
}
