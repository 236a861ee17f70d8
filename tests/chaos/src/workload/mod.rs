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
//!
//! # Layout
//!
//! - this file: [`run`] (workers, the observer, the event writer);
//! - `worker`: one worker's loop, and under it `lease`, the worker's lease
//!   and the task keeping it alive;
//! - `recorder`: stamping events and classifying answers into outcomes.

mod recorder;
mod worker;

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use raftlock_client::Client;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::clock::now_ns;
use crate::history::Event;
use crate::Error;
use worker::{Kind, Worker};

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
    let options = crate::secure::client_options(Duration::from_secs(4))?;
    let client = Client::connect_with(cfg.endpoints.clone(), options).await?;
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
        let worker = Worker::new(kind, client.clone(), &cfg, i, &tx);
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
