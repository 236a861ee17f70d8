//! The harness side of the client processes: start them, read their event
//! lines, know which of them holds a lock right now (for the nemesis),
//! SIGSTOP/SIGCONT them, and collect everything at the end.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::cluster::signal;
use crate::history::{Event, Outcome, Value};
use crate::Error;

/// Client id → worker → holds something right now.
type Holding = Arc<Mutex<BTreeMap<u32, BTreeMap<u32, bool>>>>;

/// Running client processes.
pub struct ClientProcs {
    procs: Vec<(u32, Child)>,
    readers: Vec<JoinHandle<Vec<Event>>>,
    holding: Holding,
}

/// How to start the clients.
pub struct ClientPlan<'a> {
    /// This binary (which has the `client` sub-command).
    pub exe: &'a Path,
    pub count: u32,
    pub endpoints: &'a [String],
    pub register: SocketAddr,
    pub seed: u64,
    pub duration: Duration,
    pub ttl: Duration,
    /// Where each client's stderr goes.
    pub dir: &'a Path,
    /// Extra environment (a secure run's CA and token).
    pub env: &'a [(&'static str, String)],
}

impl ClientProcs {
    /// Starts `plan.count` client processes.
    pub fn spawn(plan: &ClientPlan<'_>) -> Result<ClientProcs, Error> {
        let holding: Holding = Arc::default();
        let mut procs = Vec::new();
        let mut readers = Vec::new();
        for id in 1..=plan.count {
            let log = plan.dir.join(format!("client{id}.log"));
            let err = std::fs::File::create(&log)
                .map_err(Error::io(format!("create {}", log.display())))?;
            let mut child = Command::new(plan.exe)
                .arg("client")
                .args(["--id", &id.to_string()])
                .args(["--endpoints", &plan.endpoints.join(",")])
                .args(["--register", &plan.register.to_string()])
                .args(["--seed", &plan.seed.to_string()])
                .args(["--duration-ms", &plan.duration.as_millis().to_string()])
                .args(["--ttl-ms", &plan.ttl.as_millis().to_string()])
                .envs(plan.env.iter().map(|(k, v)| (*k, v.as_str())))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(err)
                .kill_on_drop(true)
                .spawn()
                .map_err(Error::io(format!("start client {id}")))?;
            let stdout = child
                .stdout
                .take()
                .ok_or_else(|| Error::Setup("client stdout not piped".into()))?;
            let holding = holding.clone();
            readers.push(tokio::spawn(async move {
                let mut events = Vec::new();
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(event) = serde_json::from_str::<Event>(&line) {
                        track(&holding, id, &event);
                        events.push(event);
                    }
                }
                events
            }));
            procs.push((id, child));
        }
        Ok(ClientProcs {
            procs,
            readers,
            holding,
        })
    }

    /// Clients that hold a lock right now.
    pub fn holders(&self) -> Vec<u32> {
        let h = self.holding.lock().unwrap_or_else(|e| e.into_inner());
        h.iter()
            .filter(|(_, w)| w.values().any(|held| *held))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Client ids.
    pub fn ids(&self) -> Vec<u32> {
        self.procs.iter().map(|(id, _)| *id).collect()
    }

    /// SIGSTOP (`pause`) or SIGCONT client `id`.
    pub fn pause(&self, id: u32, pause: bool) -> Result<(), Error> {
        if let Some(pid) = self
            .procs
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, c)| c.id())
        {
            signal(pid, if pause { libc::SIGSTOP } else { libc::SIGCONT })?;
        }
        Ok(())
    }

    /// Waits for every client to finish (killing those still running after
    /// `grace`) and returns all their events.
    pub async fn finish(mut self, grace: Duration) -> Vec<Event> {
        for id in self.ids() {
            let _ = self.pause(id, false);
        }
        let deadline = tokio::time::Instant::now() + grace;
        for (_, child) in &mut self.procs {
            if tokio::time::timeout_at(deadline, child.wait())
                .await
                .is_err()
            {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
        let mut events = Vec::new();
        for r in self.readers.drain(..) {
            if let Ok(mut e) = r.await {
                events.append(&mut e);
            }
        }
        events
    }
}

/// Updates who holds what from one event.
fn track(holding: &Holding, client: u32, event: &Event) {
    let mut h = holding.lock().unwrap_or_else(|e| e.into_inner());
    let workers = h.entry(client).or_default();
    match event {
        Event::Complete {
            id,
            outcome: Outcome::Ok(Value::Granted { .. }),
            ..
        } => {
            workers.insert(id.worker, true);
        }
        Event::Invoke { id, op, .. } => {
            if matches!(
                op,
                crate::history::Op::Release { .. } | crate::history::Op::Resign { .. }
            ) {
                workers.insert(id.worker, false);
            }
        }
        _ => {}
    }
}
