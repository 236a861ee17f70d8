//! One worker of a client process: a loop of acquire (or campaign),
//! critical section and release (or resign) on one resource, with the
//! occasional stale-client attempt on a lease it knows is dead.

mod lease;

use std::time::Duration;

use raftlock_client::{Acquire, Client, LockMode};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::recorder::{register_outcome, Recorder};
use super::{ClientConfig, WAIT};
use crate::history::{Event, Failure, Mode, Op, Outcome, Value};
use crate::register::RegisterClient;
use lease::LeaseHandle;

/// What a worker contends on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Exclusive(&'static str),
    ReadWrite(&'static str),
    Semaphore(&'static str, u32),
    Election(&'static str),
}

/// One worker: a loop of acquire, critical section, release.
pub(super) struct Worker {
    kind: Kind,
    client: Client,
    rec: Recorder,
    keeper_rec: Recorder,
    rng: ChaCha8Rng,
    register: RegisterClient,
    ttl: Duration,
    lease: Option<LeaseHandle>,
    iterations: u64,
    /// Whether the last read-write acquire was exclusive.
    rw_exclusive: bool,
    /// A lease this worker knows is dead, not yet tried again.
    zombie: Option<u64>,
}

/// How a grant attempt ended, for the loop.
enum Got {
    Granted(u64),
    NotGranted,
    LeaseDead,
    Unknown,
}

impl Worker {
    /// Worker `i` of the client process `cfg`, contending on `kind`; its
    /// events go to `tx`.
    pub(super) fn new(
        kind: Kind,
        client: Client,
        cfg: &ClientConfig,
        i: usize,
        tx: &mpsc::UnboundedSender<Event>,
    ) -> Self {
        Worker {
            kind,
            client,
            rec: Recorder::new(cfg.id, i as u32 * 2, tx.clone()),
            keeper_rec: Recorder::new(cfg.id, i as u32 * 2 + 1, tx.clone()),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed ^ (u64::from(cfg.id) << 32) ^ i as u64),
            register: RegisterClient::new(cfg.register),
            ttl: cfg.ttl,
            lease: None,
            iterations: 0,
            rw_exclusive: false,
            zombie: None,
        }
    }

    pub(super) async fn run(mut self, deadline: Instant) {
        while Instant::now() < deadline {
            let Some(lease) = self.ensure_lease(deadline).await else {
                break;
            };
            self.try_zombie().await;
            self.iterations += 1;
            let owner = uuid::Uuid::new_v4().simple().to_string();
            match self.grant(&owner, lease, true).await {
                Got::Granted(fence) => {
                    self.critical_section(fence).await;
                    self.give_back(&owner).await;
                }
                Got::NotGranted => self.pause(20, 100).await,
                Got::LeaseDead => self.mark_dead(),
                Got::Unknown => self.abandon_lease().await,
            }
            if self.iterations.is_multiple_of(12) {
                // Rotate leases now and then, so dead leases get tried.
                self.abandon_lease().await;
            }
            self.pause(5, 60).await;
        }
        if let Some(l) = self.lease.take() {
            l.keeper.abort();
            let _ = self.revoke(l.id).await;
        }
    }

    /// Sometimes tries the lease this worker knows is dead, as a stale
    /// client would. A correct cluster refuses; should it grant, the hold
    /// is given back at once so the workload goes on.
    async fn try_zombie(&mut self) {
        let Some(dead) = self.zombie.take() else {
            return;
        };
        if !self.rng.gen_bool(0.5) {
            return;
        }
        let owner = uuid::Uuid::new_v4().simple().to_string();
        if let Got::Granted(_) = self.grant(&owner, dead, false).await {
            self.give_back(&owner).await;
        }
    }

    /// Asks for the worker's resource under `owner`; `real = false` is the
    /// stale-client attempt (a try-lock, short campaign) with a dead lease.
    async fn grant(&mut self, owner: &str, lease: u64, real: bool) -> Got {
        let outcome = match self.kind {
            Kind::Election(name) => {
                let timeout = if real {
                    WAIT
                } else {
                    Duration::from_millis(200)
                };
                let op = Op::Campaign {
                    name: name.into(),
                    owner: owner.into(),
                    lease,
                };
                let call =
                    self.client
                        .campaign(name, owner, lease, owner.as_bytes(), Some(timeout));
                self.rec
                    .record(op, call, |fence| Value::Granted {
                        fence: *fence,
                        count: 1,
                    })
                    .await
            }
            _ => {
                let (name, mode) = self.lock_mode();
                self.rw_exclusive = mode == Mode::Exclusive;
                let wait = real && self.rng.gen_bool(0.75);
                let spec = Acquire {
                    name: name.into(),
                    owner: owner.into(),
                    lease,
                    mode: match mode {
                        Mode::Exclusive => LockMode::Exclusive,
                        Mode::Shared => LockMode::Shared,
                        Mode::Permits { .. } => LockMode::Permits,
                    },
                    permits: if let Mode::Permits { count, .. } = mode {
                        count
                    } else {
                        0
                    },
                    limit: if let Mode::Permits { limit, .. } = mode {
                        limit
                    } else {
                        0
                    },
                    wait,
                    timeout: wait.then_some(WAIT),
                    lock_delay: None,
                };
                let op = Op::Acquire {
                    name: name.into(),
                    owner: owner.into(),
                    lease,
                    mode,
                    wait,
                };
                let client = self.client.clone();
                let call = async move { client.acquire(&spec).await };
                self.rec
                    .record(op, call, |g| match g {
                        Some(g) => Value::Granted {
                            fence: g.fence,
                            count: g.count,
                        },
                        None => Value::Busy,
                    })
                    .await
            }
        };
        match outcome {
            Outcome::Ok(Value::Granted { fence, .. }) => Got::Granted(fence),
            Outcome::Ok(_) => Got::NotGranted,
            Outcome::Fail(Failure::LeaseExpired) => Got::LeaseDead,
            Outcome::Fail(_) => Got::NotGranted,
            Outcome::Info { .. } => Got::Unknown,
        }
    }

    /// The lock name and mode for this iteration.
    fn lock_mode(&mut self) -> (&'static str, Mode) {
        match self.kind {
            Kind::Exclusive(n) | Kind::Election(n) => (n, Mode::Exclusive),
            Kind::ReadWrite(n) => {
                if self.rng.gen_bool(0.7) {
                    (n, Mode::Shared)
                } else {
                    (n, Mode::Exclusive)
                }
            }
            Kind::Semaphore(n, limit) => (n, Mode::Permits { count: 1, limit }),
        }
    }

    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Exclusive(n) | Kind::ReadWrite(n) | Kind::Semaphore(n, _) | Kind::Election(n) => {
                n
            }
        }
    }

    /// Inside the lock: for exclusive holds a fenced read-modify-write of
    /// the register, for the election a leader read first.
    async fn critical_section(&mut self, fence: u64) {
        let name = self.name();
        let exclusive_writer = match self.kind {
            Kind::Exclusive(_) | Kind::Election(_) => true,
            // Read-write: only the exclusive holder writes; a shared one
            // holds for a while. The rw op recorded tells which it was.
            Kind::ReadWrite(_) => self.last_mode_exclusive(),
            Kind::Semaphore(..) => false,
        };
        if let Kind::Election(_) = self.kind {
            let client = self.client.clone();
            let op = Op::Leader { name: name.into() };
            let call = async move { client.leader(name).await };
            self.rec
                .record(op, call, |l| Value::Leader {
                    owner: l.has_leader.then(|| l.owner.clone()),
                    fence: l.fence,
                })
                .await;
        }
        if !exclusive_writer {
            self.pause(10, 60).await;
            return;
        }
        let Some(value) = self.register_read(name, fence).await else {
            return;
        };
        self.pause(0, 30).await;
        if self.rng.gen_bool(0.2) {
            let client = self.client.clone();
            let op = Op::Check {
                name: name.into(),
                fence,
            };
            let call = async move { client.check(name, fence).await };
            self.rec
                .record(op, call, |v| Value::Valid { valid: *v })
                .await;
        }
        let op = Op::RegWrite {
            name: name.into(),
            fence,
            value: value + 1,
        };
        let id = self.rec.invoke(op);
        let outcome = register_outcome(self.register.write(name, fence, value + 1).await);
        self.rec.complete(id, outcome);
    }

    /// Whether the last acquire this worker made was exclusive.
    fn last_mode_exclusive(&self) -> bool {
        self.rw_exclusive
    }

    async fn register_read(&mut self, name: &str, fence: u64) -> Option<u64> {
        let id = self.rec.invoke(Op::RegRead {
            name: name.into(),
            fence,
        });
        let outcome = register_outcome(self.register.read(name, fence).await);
        self.rec.complete(id, outcome.clone());
        match outcome {
            Outcome::Ok(Value::Register { value }) => Some(value),
            _ => None,
        }
    }

    /// Releases (or resigns) `owner`'s hold; an indeterminate answer
    /// abandons the lease, which ends the hold for sure.
    async fn give_back(&mut self, owner: &str) {
        let name = self.name();
        let client = self.client.clone();
        let outcome = match self.kind {
            Kind::Election(_) => {
                let op = Op::Resign {
                    name: name.into(),
                    owner: owner.into(),
                };
                let o = owner.to_string();
                let call = async move { client.resign(name, &o).await };
                self.rec.record(op, call, |_| Value::Unit).await
            }
            _ => {
                let op = Op::Release {
                    name: name.into(),
                    owner: owner.into(),
                };
                let o = owner.to_string();
                let call = async move { client.release(name, &o).await };
                self.rec
                    .record(op, call, |r| Value::Remaining { count: *r })
                    .await
            }
        };
        if let Outcome::Info { .. } = outcome {
            self.abandon_lease().await;
        }
    }

    async fn pause(&mut self, min_ms: u64, max_ms: u64) {
        let ms = self.rng.gen_range(min_ms..=max_ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
