//! The client process (`raftlock-chaos client ...`): workers contending on
//! a few locks through the Rust client library, each event printed as a JSON
//! line on stdout for the harness.
//!
//! Clients are separate processes so that the nemesis can SIGSTOP one while
//! it holds a lock: everything in it freezes, keep-alives included, exactly
//! like a long GC pause. When it wakes it carries on where it stopped, with
//! a fence the cluster may have given to someone else meanwhile.
//!
//! Each process runs one worker per resource kind:
//! - `x0`, `x1`: exclusive locks; the critical section does a
//!   read-modify-write on the fenced register of the same name;
//! - `rw`: a read-write lock (shared 70%, exclusive 30%; exclusive holders
//!   increment register `rw`);
//! - `sem`: a semaphore of 2 permits, one taken at a time;
//! - `e`: an election; the leader increments register `e`.
//!
//! plus an observer of `e`. Every worker has its own lease, kept alive by a
//! task that records each keep-alive. After an indeterminate outcome the
//! worker revokes its lease (ending whatever it may hold) and starts a new
//! one; after learning its lease is dead it sometimes tries once more with
//! the dead lease, as a confused stale client would: a correct cluster must
//! refuse.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use raftlock::client::{Acquire, LockMode};
use raftlock::Client;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::now_ns;
use crate::history::{Event, Failure, Mode, Op, OpId, Outcome, Value};
use crate::register::{RegisterClient, Reply};
use crate::Error;

/// What one client process is told.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub id: u32,
    pub endpoints: Vec<String>,
    pub register: SocketAddr,
    pub seed: u64,
    pub duration: Duration,
    pub ttl: Duration,
}

/// Longest any single call may take before it is recorded as indeterminate.
const OP_DEADLINE: Duration = Duration::from_secs(8);
/// How long a waiting acquire or campaign waits in the queue.
const WAIT: Duration = Duration::from_secs(2);

/// Runs the client process until its duration is up.
pub async fn run(cfg: ClientConfig) -> Result<(), Error> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(event) = rx.recv().await {
            let Ok(mut line) = serde_json::to_vec(&event) else {
                continue;
            };
            line.push(b'\n');
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
    });
    let client = Client::connect_with_retry(cfg.endpoints.clone(), Duration::from_secs(4)).await?;
    let deadline = Instant::now() + cfg.duration;
    let kinds = [
        Kind::Exclusive("x0"),
        Kind::Exclusive("x1"),
        Kind::ReadWrite("rw"),
        Kind::Semaphore("sem", 2),
        Kind::Election("e"),
    ];
    let mut workers = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        let worker = Worker {
            kind,
            client: client.clone(),
            rec: Recorder::new(cfg.id, i as u32 * 2, tx.clone()),
            keeper_rec: Recorder::new(cfg.id, i as u32 * 2 + 1, tx.clone()),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed ^ (u64::from(cfg.id) << 32) ^ i as u64),
            register: RegisterClient::new(cfg.register),
            ttl: cfg.ttl,
            lease: None,
            iterations: 0,
            rw_exclusive: false,
            zombie: None,
        };
        workers.push(tokio::spawn(worker.run(deadline)));
    }
    let observer = tokio::spawn(observe(client.clone(), cfg.id, "e", tx.clone()));
    drop(tx);
    for w in workers {
        let _ = w.await;
    }
    observer.abort();
    let _ = observer.await;
    let _ = writer.await;
    Ok(())
}

/// Stamps and sends events for one worker.
#[derive(Clone)]
struct Recorder {
    client: u32,
    worker: u32,
    seq: Arc<AtomicU64>,
    tx: mpsc::UnboundedSender<Event>,
}

impl Recorder {
    fn new(client: u32, worker: u32, tx: mpsc::UnboundedSender<Event>) -> Self {
        Recorder {
            client,
            worker,
            seq: Arc::default(),
            tx,
        }
    }

    fn invoke(&self, op: Op) -> OpId {
        let id = OpId {
            client: self.client,
            worker: self.worker,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
        };
        let _ = self.tx.send(Event::Invoke {
            id,
            t: now_ns(),
            op,
        });
        id
    }

    fn complete(&self, id: OpId, outcome: Outcome) {
        let _ = self.tx.send(Event::Complete {
            id,
            t: now_ns(),
            outcome,
        });
    }

    /// Records `op`, runs `call` with the op deadline, records its outcome
    /// (`value` maps a success) and hands back the outcome.
    async fn record<T, F>(&self, op: Op, call: F, value: impl FnOnce(&T) -> Value) -> Outcome
    where
        F: std::future::Future<Output = Result<T, raftlock::Error>>,
    {
        let id = self.invoke(op);
        let outcome = match tokio::time::timeout(OP_DEADLINE, call).await {
            Ok(Ok(v)) => Outcome::Ok(value(&v)),
            Ok(Err(e)) => outcome_of(&e),
            Err(_) => Outcome::Info {
                reason: "client deadline".into(),
            },
        };
        self.complete(id, outcome.clone());
        outcome
    }
}

/// Classifies a client error: definite failures vs indeterminate.
fn outcome_of(e: &raftlock::Error) -> Outcome {
    use raftlock::Error as E;
    let fail = match e {
        E::InvalidArgument(_) => Failure::InvalidArgument,
        E::LeaseExpired(_) => Failure::LeaseExpired,
        E::NotHeld(_) => Failure::NotHeld,
        E::Timeout(_) => Failure::Timeout,
        E::WaitEnded(_) => Failure::WaitEnded,
        E::LimitReached(_) => Failure::LimitReached,
        other => {
            return Outcome::Info {
                reason: other.to_string(),
            }
        }
    };
    Outcome::Fail(fail)
}

/// What a worker contends on.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Exclusive(&'static str),
    ReadWrite(&'static str),
    Semaphore(&'static str, u32),
    Election(&'static str),
}

/// A lease and the task keeping it alive.
struct LeaseHandle {
    id: u64,
    /// Set when a keep-alive (or any call) learned the lease is gone.
    dead: Arc<AtomicBool>,
    keeper: JoinHandle<()>,
}

/// One worker: a loop of acquire, critical section, release.
struct Worker {
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
    async fn run(mut self, deadline: Instant) {
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

    /// The live lease, granting a new one (and first, sometimes, trying the
    /// dead one) when needed. `None` once the deadline passed.
    async fn ensure_lease(&mut self, deadline: Instant) -> Option<u64> {
        if let Some(l) = &self.lease {
            if !l.dead.load(Ordering::Relaxed) {
                return Some(l.id);
            }
            self.mark_dead();
        }
        while Instant::now() < deadline {
            let client = self.client.clone();
            let ttl = self.ttl;
            let op = Op::GrantLease {
                ttl_ms: ttl.as_millis() as u64,
            };
            let call = async move { client.grant_lease(ttl).await };
            if let Outcome::Ok(Value::Lease { id }) = self
                .rec
                .record(op, call, |id| Value::Lease { id: *id })
                .await
            {
                let dead = Arc::new(AtomicBool::new(false));
                let keeper = tokio::spawn(keep_alive(
                    self.client.clone(),
                    self.keeper_rec.clone(),
                    id,
                    self.ttl,
                    dead.clone(),
                ));
                self.lease = Some(LeaseHandle { id, dead, keeper });
                return Some(id);
            }
            self.pause(100, 300).await;
        }
        None
    }

    /// The lease is known dead: drop it, and maybe try it once more.
    fn mark_dead(&mut self) {
        if let Some(l) = self.lease.take() {
            l.keeper.abort();
            self.zombie = Some(l.id);
        }
    }

    /// Revokes the lease (retrying until the answer is definite, a few
    /// times), ending anything it holds.
    async fn abandon_lease(&mut self) {
        let Some(l) = self.lease.take() else {
            return;
        };
        l.keeper.abort();
        for _ in 0..4 {
            match self.revoke(l.id).await {
                Outcome::Ok(_) | Outcome::Fail(_) => {
                    self.zombie = Some(l.id);
                    return;
                }
                Outcome::Info { .. } => self.pause(200, 500).await,
            }
        }
    }

    async fn revoke(&mut self, lease: u64) -> Outcome {
        let client = self.client.clone();
        let call = async move { client.revoke(lease).await };
        self.rec
            .record(Op::Revoke { lease }, call, |_| Value::Unit)
            .await
    }

    async fn pause(&mut self, min_ms: u64, max_ms: u64) {
        let ms = self.rng.gen_range(min_ms..=max_ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn register_outcome(reply: Result<Reply, String>) -> Outcome {
    match reply {
        Ok(Reply::Ok(value)) => Outcome::Ok(Value::Register { value }),
        Ok(Reply::Stale(max_fence)) => Outcome::Fail(Failure::Stale { max_fence }),
        Err(reason) => Outcome::Info { reason },
    }
}

/// Keeps `lease` alive every ttl/4, recording each call, until it is gone.
async fn keep_alive(
    client: Client,
    rec: Recorder,
    lease: u64,
    ttl: Duration,
    dead: Arc<AtomicBool>,
) {
    let mut tick = tokio::time::interval(ttl / 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let c = client.clone();
        let call = async move { c.keep_alive(lease).await };
        let outcome = rec
            .record(Op::KeepAlive { lease }, call, |ttl| Value::Remaining {
                count: ttl.as_millis() as u32,
            })
            .await;
        if let Outcome::Fail(Failure::LeaseExpired) = outcome {
            dead.store(true, Ordering::Relaxed);
            return;
        }
    }
}

/// Follows election `name`, recording every item; re-subscribes when the
/// stream breaks (each subscription is its own stream number).
async fn observe(client: Client, id: u32, name: &'static str, tx: mpsc::UnboundedSender<Event>) {
    let mut stream_no = 0u32;
    loop {
        if let Ok(mut stream) = client.observe(name).await {
            while let Some(Ok(item)) = stream.next().await {
                let _ = tx.send(Event::Observed {
                    client: id,
                    stream: stream_no,
                    t: now_ns(),
                    name: name.into(),
                    owner: item.has_leader.then(|| item.owner.clone()),
                    fence: item.fence,
                });
            }
        }
        stream_no += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
