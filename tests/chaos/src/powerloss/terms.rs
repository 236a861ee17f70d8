//! Check (d), Raft votes are never taken back: a watcher asks every node
//! for its status (term, leader) every [`POLL`] for the whole run, across
//! cuts and restarts.
//!
//! A node's vote only ever grows, and it is stored before the node acts
//! on it. So a node's term must never go down, and within one term the
//! leader it names must never go down either — openraft 0.9 (as raftlock
//! builds it, without `single-term-leader`) orders leaders by (term, node
//! id), and a voter may grant a later candidate of the same term with a
//! higher id. Either going back, across a restart, means the power cut
//! took back a vote: the way two leaders come to share one leader id.
//!
//! For that same reason, two leaders named for one term are not by
//! themselves a violation here; they are counted and shown.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use raftlock_client::Client;
use tokio::task::JoinSet;

use crate::checker::Verdict;
use crate::clock::now_ns;
use crate::Error;

/// How often each node is asked.
pub const POLL: Duration = Duration::from_millis(50);

/// Where a (term, leader) pair was first seen.
#[derive(Debug, Clone, Copy)]
pub struct Sighting {
    /// The node that named this leader.
    pub node: u64,
    /// When, on the run's clock.
    pub t: u64,
}

/// What the watcher saw.
#[derive(Debug, Default)]
pub struct TermLog {
    /// Status calls made / answered.
    pub polls: u64,
    pub answers: u64,
    /// term → leader id → first sighting.
    pub leaders: BTreeMap<u64, BTreeMap<u64, Sighting>>,
    /// node → its last (term, leader named, or 0), and when.
    pub last: BTreeMap<u64, (u64, u64, u64)>,
    /// Every time a node's vote went back.
    pub regressions: Vec<String>,
    /// The run's start on the clock `t`s are taken from.
    pub t0: u64,
}

impl TermLog {
    /// Enters one answer of `node` at `t`.
    pub(super) fn enter(&mut self, node: u64, term: u64, leader: u64, t: u64) {
        self.answers += 1;
        if let Some(&(was_term, was_leader, was_t)) = self.last.get(&node) {
            let back = term < was_term
                || (term == was_term && leader != 0 && was_leader != 0 && leader < was_leader);
            if back {
                self.regressions.push(format!(
                    "n{node} went back from term {was_term} ({}, at {}) to term {term} ({}, at {})",
                    Leader(was_leader),
                    Stamp(was_t, self.t0),
                    Leader(leader),
                    Stamp(t, self.t0)
                ));
            }
        }
        let keep = self.last.get(&node).map_or(0, |l| l.1);
        let leader_now = if leader == 0 && self.last.get(&node).is_some_and(|l| l.0 == term) {
            keep
        } else {
            leader
        };
        self.last.insert(node, (term, leader_now, t));
        if leader != 0 {
            self.leaders
                .entry(term)
                .or_default()
                .entry(leader)
                .or_insert(Sighting { node, t });
        }
    }
}

/// A leader id as a status names it (0: none known).
struct Leader(u64);

impl std::fmt::Display for Leader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => write!(f, "no leader"),
            id => write!(f, "leader n{id}"),
        }
    }
}

/// A time on the run's clock, shown as seconds since the run's start:
/// (time, start).
struct Stamp(u64, u64);

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.3}s", self.0.saturating_sub(self.1) as f64 / 1e9)
    }
}

/// The running watcher.
pub struct TermWatch {
    log: Arc<Mutex<TermLog>>,
    tasks: JoinSet<()>,
}

impl TermWatch {
    /// Starts one poller per `(node id, client address)`, asking the
    /// node itself (not through the proxies).
    /// `t0` is the run's start.
    pub async fn start(nodes: &[(u64, String)], t0: u64) -> Result<TermWatch, Error> {
        let log = Arc::new(Mutex::new(TermLog {
            t0,
            ..TermLog::default()
        }));
        let mut tasks = JoinSet::new();
        for (id, addr) in nodes {
            let options = raftlock_client::ClientOptions {
                retry_for: Duration::from_millis(100),
                ..Default::default()
            };
            let client = Client::connect_with([addr.clone()], options).await?;
            tasks.spawn(poll(*id, client, log.clone()));
        }
        Ok(TermWatch { log, tasks })
    }

    /// Stops polling; answers what was seen.
    pub async fn stop(mut self) -> TermLog {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *log)
    }
}

async fn poll(node: u64, client: Client, log: Arc<Mutex<TermLog>>) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let status = tokio::time::timeout(POLL * 4, client.status()).await;
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        log.polls += 1;
        if let Ok(Ok(status)) = status {
            log.enter(node, status.term, status.leader_id, now_ns());
        }
    }
}

/// The verdict on a watcher's log.
pub fn verdict(log: &TermLog) -> Verdict {
    let shared = shared_terms(log);
    let mut v = Verdict::new(
        "Raft votes never go back",
        format!(
            "{} nodes, {} terms ({} with two leaders, which openraft's (term, node) leader ids allow), {} of {} status polls answered",
            log.last.len(),
            log.leaders.len(),
            shared.len(),
            log.answers,
            log.polls
        ),
    );
    for r in &log.regressions {
        v.violate(r.clone(), Vec::new());
    }
    v
}

/// The terms in which more than one leader was named, one line each.
pub fn shared_terms(log: &TermLog) -> Vec<String> {
    log.leaders
        .iter()
        .filter(|(_, leaders)| leaders.len() > 1)
        .map(|(term, leaders)| {
            let who: Vec<String> = leaders
                .iter()
                .map(|(l, s)| format!("n{l} (named by n{} at {})", s.node, Stamp(s.t, log.t0)))
                .collect();
            format!("term {term}: {}", who.join(", "))
        })
        .collect()
}
