//! The nemesis: a seeded random schedule of faults, one at a time, each
//! healed before the next, with quiet gaps between.
//!
//! Faults (node ids 1..=N):
//! - `kill-leader`, `kill-node`: kill -9, down 1–4 s, restart from its
//!   data dir;
//! - `pause-node`: SIGSTOP the leader or a random node for 1.5–4 s (the
//!   election timeout is 0.5–1 s), then SIGCONT;
//! - `hung-first`: SIGSTOP the node every client lists first in its
//!   endpoints for 3–8 s, then SIGCONT: its listener still accepts, so
//!   clients must move past it within their dial timeout;
//! - `pause-client`: SIGSTOP a client process that holds a lock, for longer
//!   than its lease TTL, then SIGCONT — it wakes believing it holds;
//! - `isolate-leader`: cut every peer link to and from the leader;
//! - `split`: a majority and a minority (2|1 or 3|2), random members;
//! - `split3` (5 nodes): 2|1|2 — no side has a majority;
//! - `bridge`: two sides that cannot see each other and one node both see;
//! - `client-cut`: clients cannot reach one node (the leader half the time);
//! - `full-restart`: kill -9 every node, restart them all (at most every
//!   25 s).
//!
//! The same seed gives the same sequence of choices; timing-dependent
//! choices (who the leader is, which client holds a lock) follow the run.

use std::time::Duration;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::clients::ClientProcs;
use crate::clock::now_ns;
use crate::cluster::Cluster;
use crate::proxy::Policy;
use crate::Error;

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    KillLeader,
    KillNode,
    PauseNode,
    HungFirst,
    PauseClient,
    IsolateLeader,
    Split,
    Split3,
    Bridge,
    ClientCut,
    FullRestart,
}

impl FaultKind {
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::KillLeader => "kill-leader",
            FaultKind::KillNode => "kill-node",
            FaultKind::PauseNode => "pause-node",
            FaultKind::HungFirst => "hung-first",
            FaultKind::PauseClient => "pause-client",
            FaultKind::IsolateLeader => "isolate-leader",
            FaultKind::Split => "split",
            FaultKind::Split3 => "split3",
            FaultKind::Bridge => "bridge",
            FaultKind::ClientCut => "client-cut",
            FaultKind::FullRestart => "full-restart",
        }
    }
}

/// One injected fault.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    pub start: u64,
    pub end: u64,
    /// Node ids (or, for `pause-client`, client ids).
    pub targets: Vec<u64>,
}

/// Weighted choice table.
const WEIGHTS: [(FaultKind, u32); 11] = [
    (FaultKind::KillLeader, 3),
    (FaultKind::KillNode, 2),
    (FaultKind::PauseNode, 3),
    (FaultKind::HungFirst, 3),
    (FaultKind::PauseClient, 4),
    (FaultKind::IsolateLeader, 3),
    (FaultKind::Split, 2),
    (FaultKind::Split3, 1),
    (FaultKind::Bridge, 2),
    (FaultKind::ClientCut, 1),
    (FaultKind::FullRestart, 1),
];

/// Runs the schedule.
pub struct Nemesis<'a> {
    pub cluster: &'a mut Cluster,
    pub clients: &'a ClientProcs,
    pub rng: ChaCha8Rng,
    /// Clients' lease TTL; client pauses outlast it.
    pub ttl: Duration,
    pub faults: Vec<Fault>,
    last_full_restart: Option<Instant>,
}

impl<'a> Nemesis<'a> {
    pub fn new(
        cluster: &'a mut Cluster,
        clients: &'a ClientProcs,
        rng: ChaCha8Rng,
        ttl: Duration,
    ) -> Self {
        Nemesis {
            cluster,
            clients,
            rng,
            ttl,
            faults: Vec::new(),
            last_full_restart: None,
        }
    }

    /// Injects faults until `until`, then heals everything.
    pub async fn run(&mut self, until: Instant) -> Result<(), Error> {
        while Instant::now() < until {
            self.sleep(1000, 3000).await;
            if Instant::now() >= until {
                break;
            }
            let kind = self.choose();
            self.inject(kind).await?;
        }
        self.heal_all().await
    }

    fn choose(&mut self) -> FaultKind {
        let n = self.cluster.ids().len();
        let allowed: Vec<(FaultKind, u32)> = WEIGHTS
            .iter()
            .copied()
            .filter(|(k, _)| match k {
                FaultKind::Split3 => n >= 5,
                FaultKind::FullRestart => self
                    .last_full_restart
                    .is_none_or(|t| t.elapsed() > Duration::from_secs(25)),
                _ => true,
            })
            .collect();
        let total: u32 = allowed.iter().map(|(_, w)| w).sum();
        let mut pick = self.rng.gen_range(0..total);
        for (k, w) in &allowed {
            if pick < *w {
                return *k;
            }
            pick -= w;
        }
        FaultKind::PauseNode
    }

    async fn inject(&mut self, kind: FaultKind) -> Result<(), Error> {
        let ids = self.cluster.ids();
        let start = now_ns();
        let leader = match kind {
            FaultKind::KillLeader
            | FaultKind::IsolateLeader
            | FaultKind::PauseNode
            | FaultKind::ClientCut => self.cluster.leader().await,
            _ => None,
        };
        let random = *ids.choose(&mut self.rng).unwrap_or(&1);
        let targets: Vec<u64> = match kind {
            FaultKind::KillLeader => {
                let id = leader.unwrap_or(random);
                self.cluster.kill(id).await?;
                self.sleep(1000, 4000).await;
                self.cluster.start(id)?;
                vec![id]
            }
            FaultKind::KillNode => {
                self.cluster.kill(random).await?;
                self.sleep(1000, 4000).await;
                self.cluster.start(random)?;
                vec![random]
            }
            FaultKind::PauseNode => {
                let id = if self.rng.gen_bool(0.5) {
                    leader.unwrap_or(random)
                } else {
                    random
                };
                self.cluster.pause(id, true)?;
                self.sleep(1500, 4000).await;
                self.cluster.pause(id, false)?;
                vec![id]
            }
            FaultKind::HungFirst => {
                let id = self.cluster.first_listed().unwrap_or(random);
                self.cluster.pause(id, true)?;
                self.sleep(3000, 8000).await;
                self.cluster.pause(id, false)?;
                vec![id]
            }
            FaultKind::PauseClient => {
                let holders = self.clients.holders();
                let pool = if holders.is_empty() {
                    self.clients.ids()
                } else {
                    holders
                };
                let Some(&client) = pool.choose(&mut self.rng) else {
                    return Ok(());
                };
                self.clients.pause(client, true)?;
                let ttl = self.ttl.as_millis() as u64;
                self.sleep(ttl + 500, ttl + 2500).await;
                self.clients.pause(client, false)?;
                vec![u64::from(client)]
            }
            FaultKind::IsolateLeader => {
                let id = leader.unwrap_or(random);
                let others: Vec<u64> = ids.iter().copied().filter(|i| *i != id).collect();
                self.partition(&[vec![id], others]).await
            }
            FaultKind::Split => {
                let mut shuffled = ids.clone();
                shuffled.shuffle(&mut self.rng);
                let minority = shuffled.split_off(shuffled.len().div_ceil(2));
                self.partition(&[shuffled, minority]).await
            }
            FaultKind::Split3 => {
                let mut s = ids.clone();
                s.shuffle(&mut self.rng);
                let (a, rest) = s.split_at(2);
                let (b, c) = rest.split_at(1);
                self.partition(&[a.to_vec(), b.to_vec(), c.to_vec()]).await
            }
            FaultKind::Bridge => {
                let mut s = ids.clone();
                s.shuffle(&mut self.rng);
                let bridge = s.remove(0);
                let right = s.split_off(s.len() / 2);
                let mut policy = Policy::partition(&[s.clone(), right.clone()]);
                policy.clients_blocked.clear();
                self.cluster.net.set_policy(policy);
                self.sleep(2000, 5000).await;
                self.cluster.net.heal();
                let mut t = vec![bridge];
                t.extend(s);
                t.extend(right);
                t
            }
            FaultKind::ClientCut => {
                let id = if self.rng.gen_bool(0.5) {
                    leader.unwrap_or(random)
                } else {
                    random
                };
                let mut policy = Policy::default();
                policy.clients_blocked.insert(id);
                self.cluster.net.set_policy(policy);
                self.sleep(2000, 4000).await;
                self.cluster.net.heal();
                vec![id]
            }
            FaultKind::FullRestart => {
                for id in &ids {
                    self.cluster.kill(*id).await?;
                }
                self.sleep(500, 2000).await;
                self.cluster.start_all()?;
                self.last_full_restart = Some(Instant::now());
                ids.clone()
            }
        };
        self.faults.push(Fault {
            kind,
            start,
            end: now_ns(),
            targets,
        });
        Ok(())
    }

    /// Applies a partition for 2–5 s, then heals it. Returns the members
    /// in group order.
    async fn partition(&mut self, groups: &[Vec<u64>]) -> Vec<u64> {
        self.cluster.net.set_policy(Policy::partition(groups));
        self.sleep(2000, 5000).await;
        self.cluster.net.heal();
        groups.concat()
    }

    /// Opens every link, resumes and starts every node.
    pub async fn heal_all(&mut self) -> Result<(), Error> {
        self.cluster.net.heal();
        self.cluster.resume_all()?;
        for id in self.clients.ids() {
            self.clients.pause(id, false)?;
        }
        self.cluster.start_all()
    }

    async fn sleep(&mut self, min_ms: u64, max_ms: u64) {
        let ms = self.rng.gen_range(min_ms..=max_ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}
