//! Counting semaphores and read-write locks: the same server-side FIFO queue
//! as a lock, held through the same [`LockGuard`].

use std::time::Duration;

use super::{Client, LockBuilder, LockGuard};
use crate::error::Error;

/// Permits of a [`Semaphore`]; released on drop like any lock.
pub type SemaphoreGuard = LockGuard;

/// A counting semaphore of `limit` permits; made by [`Client::semaphore`].
/// Every user of a name must agree on the limit.
#[derive(Debug, Clone)]
pub struct Semaphore {
    /// What every acquire starts from: the name, lease TTL and timeout.
    base: LockBuilder,
    limit: u32,
}

/// A read-write lock; made by [`Client::rwlock`].
#[derive(Debug, Clone)]
pub struct RwLock {
    /// What every read or write hold starts from (exclusive mode).
    base: LockBuilder,
}

impl Client {
    /// A counting semaphore `name` with `limit` permits. Requests are served
    /// strictly in FIFO order, so a large request at the head is not starved
    /// by smaller ones behind it.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let pool = client.semaphore("gpu-pool", 4);
    /// let permits = pool.acquire(2).await?;
    /// // ... use two GPUs ...
    /// permits.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn semaphore(&self, name: impl Into<String>, limit: u32) -> Semaphore {
        Semaphore {
            base: self.lock(name),
            limit,
        }
    }

    /// A read-write lock `name`: many readers or one writer, FIFO.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let config = client.rwlock("config");
    /// let reading = config.read().await?;
    /// drop(reading);
    /// let writing = config.write().await?;
    /// # Ok(()) }
    /// ```
    pub fn rwlock(&self, name: impl Into<String>) -> RwLock {
        RwLock {
            base: self.lock(name),
        }
    }
}

impl Semaphore {
    /// Hold permits on a lease of their own with this TTL (see
    /// [`LockBuilder::ttl`]).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.base = self.base.ttl(ttl);
        self
    }

    /// Wait at most this long; then [`Error::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.base = self.base.timeout(timeout);
        self
    }

    /// The builder behind [`acquire`](Self::acquire), for further options
    /// (owner token, abort-on-loss).
    pub fn builder(&self, permits: u32) -> LockBuilder {
        self.base.clone().permits(permits, self.limit)
    }

    /// Waits until `permits` permits are granted.
    pub async fn acquire(&self, permits: u32) -> Result<SemaphoreGuard, Error> {
        self.builder(permits).acquire().await
    }

    /// Takes `permits` permits only if they are free now.
    pub async fn try_acquire(&self, permits: u32) -> Result<Option<SemaphoreGuard>, Error> {
        self.builder(permits).try_acquire().await
    }
}

impl RwLock {
    /// Hold on a lease of its own with this TTL (see [`LockBuilder::ttl`]).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.base = self.base.ttl(ttl);
        self
    }

    /// Wait at most this long; then [`Error::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.base = self.base.timeout(timeout);
        self
    }

    /// The builder for a read hold, for further options.
    pub fn read_builder(&self) -> LockBuilder {
        self.base.clone().shared()
    }

    /// The builder for a write hold, for further options.
    pub fn write_builder(&self) -> LockBuilder {
        self.base.clone()
    }

    /// Waits for a shared (read) hold.
    pub async fn read(&self) -> Result<LockGuard, Error> {
        self.read_builder().acquire().await
    }

    /// Waits for the exclusive (write) hold.
    pub async fn write(&self) -> Result<LockGuard, Error> {
        self.write_builder().acquire().await
    }

    /// A read hold only if one is possible now.
    pub async fn try_read(&self) -> Result<Option<LockGuard>, Error> {
        self.read_builder().try_acquire().await
    }

    /// The write hold only if the lock is free now.
    pub async fn try_write(&self) -> Result<Option<LockGuard>, Error> {
        self.write_builder().try_acquire().await
    }
}
