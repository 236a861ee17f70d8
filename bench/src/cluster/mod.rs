//! The two 3-node clusters under test, as processes this benchmark starts,
//! kills and restarts itself: etcd ([`etcd`]) and raftlock ([`raftlock`]),
//! both started by the same launcher (`launch`) as node processes of the
//! shared test kit (`raftlock-testkit`).

pub mod etcd;
mod launch;
pub mod raftlock;

use std::fmt;
use std::time::Duration;

pub use raftlock_testkit::{Memory, NodeProcess, NodeSpec};

use crate::Error;

/// Which system a cluster, a client or a result belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum System {
    Etcd,
    Raftlock,
}

impl System {
    /// Both systems, etcd first (the ratio's denominator).
    pub const ALL: [System; 2] = [System::Etcd, System::Raftlock];

    /// The name used in output and on the `hold` command line.
    pub fn name(self) -> &'static str {
        match self {
            System::Etcd => "etcd",
            System::Raftlock => "raftlock",
        }
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for System {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "etcd" => Ok(System::Etcd),
            "raftlock" => Ok(System::Raftlock),
            other => Err(format!("unknown system {other:?} (etcd or raftlock)")),
        }
    }
}

/// What one node says about the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeView {
    /// This node's own id in its system (etcd member id, raftlock node id).
    pub id: u64,
    /// The leader it follows; 0 when it knows none.
    pub leader: u64,
    pub term: u64,
    pub applied: u64,
}

/// A running 3-node cluster of one system.
#[derive(Debug)]
pub struct Cluster {
    pub system: System,
    pub nodes: Vec<NodeProcess>,
}

impl Cluster {
    /// Client endpoints, `host:port`, in node order.
    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.client_addr.clone()).collect()
    }

    /// The view of node `i` (0-based), or `None` if it does not answer in
    /// time.
    pub async fn view(&self, i: usize) -> Option<NodeView> {
        let addr = &self.nodes[i].client_addr;
        let ask = async {
            match self.system {
                System::Etcd => etcd::view(addr).await,
                System::Raftlock => raftlock::view(addr).await,
            }
        };
        tokio::time::timeout(Duration::from_secs(2), ask)
            .await
            .ok()
            .flatten()
    }

    /// Index (0-based) of the node that leads, as the nodes agree.
    pub async fn leader(&self) -> Result<usize, Error> {
        let views = self.views().await;
        settled_leader(&views).ok_or_else(|| {
            Error::Cluster(format!("{} has no settled leader: {views:?}", self.system))
        })
    }

    async fn views(&self) -> Vec<Option<NodeView>> {
        let mut views = Vec::new();
        for i in 0..self.nodes.len() {
            views.push(if self.nodes[i].pid().is_some() {
                self.view(i).await
            } else {
                None
            });
        }
        views
    }

    /// Waits until every node runs, follows the same leader in the same
    /// term, and has applied what the leader has (within `lag` entries).
    pub async fn wait_healthy(&mut self, within: Duration) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            for n in &mut self.nodes {
                if !n.is_running() {
                    return Err(Error::Cluster(format!(
                        "{} node {} exited; last log lines:\n{}",
                        self.system,
                        n.index,
                        n.log_tail(20)
                    )));
                }
            }
            let last = self.views().await;
            if settled_leader(&last).is_some() && caught_up(&last, 10) {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                let tails: Vec<String> = self
                    .nodes
                    .iter()
                    .map(|n| format!("--- node {}:\n{}", n.index, n.log_tail(10)))
                    .collect();
                return Err(Error::Cluster(format!(
                    "{} not healthy after {within:?}: {last:?}\n{}",
                    self.system,
                    tails.join("\n")
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Fails if a node this benchmark did not kill has exited: something
    /// outside the benchmark stopped it, and the run would measure that.
    pub fn check_running(&mut self) -> Result<(), Error> {
        for n in &mut self.nodes {
            if n.was_started() && !n.is_running() {
                return Err(Error::Cluster(format!(
                    "{} node {} exited without the benchmark stopping it \
                     (killed from outside?); last log lines:\n{}",
                    self.system,
                    n.index,
                    n.log_tail(10)
                )));
            }
        }
        Ok(())
    }

    /// `kill -9` node `i` (0-based).
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// Starts node `i` again from its data dir.
    pub fn restart(&mut self, i: usize) -> Result<(), Error> {
        Ok(self.nodes[i].start()?)
    }

    /// Memory of every running node, in node order.
    pub fn memory(&self) -> Vec<Option<Memory>> {
        self.nodes.iter().map(NodeProcess::memory).collect()
    }

    /// CPU time (user + system) every node has used so far, in seconds,
    /// in node order (`/proc/PID/stat`); `None` for a node not running.
    pub fn cpu_seconds(&self) -> Vec<Option<f64>> {
        // SAFETY: sysconf only reads a constant of the running system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        self.nodes
            .iter()
            .map(|n| {
                let stat = std::fs::read_to_string(format!("/proc/{}/stat", n.pid()?)).ok()?;
                // Fields after the command name, which is in parentheses
                // and may hold spaces: utime and stime are the 12th and 13th.
                let (_, rest) = stat.rsplit_once(')')?;
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
                Some((ticks(11)? + ticks(12)?) / hz)
            })
            .collect()
    }

    /// Stops every node (`kill -9`; the data dirs are thrown away after).
    pub fn stop(&mut self) {
        for n in &mut self.nodes {
            n.kill();
        }
    }
}

/// The leader every answering node follows, if all answer and agree, and
/// that node knows itself as leader.
fn settled_leader(views: &[Option<NodeView>]) -> Option<usize> {
    let all: Vec<NodeView> = views.iter().copied().collect::<Option<_>>()?;
    let first = all.first()?;
    if first.leader == 0
        || all
            .iter()
            .any(|v| v.leader != first.leader || v.term != first.term)
    {
        return None;
    }
    all.iter().position(|v| v.id == first.leader)
}

fn caught_up(views: &[Option<NodeView>], lag: u64) -> bool {
    let applied: Vec<u64> = views.iter().flatten().map(|v| v.applied).collect();
    match (applied.iter().max(), applied.iter().min()) {
        (Some(max), Some(min)) => max - min <= lag,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: u64, leader: u64, term: u64) -> Option<NodeView> {
        Some(NodeView {
            id,
            leader,
            term,
            applied: 7,
        })
    }

    #[test]
    fn leader_needs_agreement_of_every_node() {
        assert_eq!(
            settled_leader(&[v(1, 2, 3), v(2, 2, 3), v(3, 2, 3)]),
            Some(1)
        );
        assert_eq!(settled_leader(&[v(1, 2, 3), v(2, 2, 3), None]), None);
        assert_eq!(settled_leader(&[v(1, 2, 3), v(2, 2, 4), v(3, 2, 3)]), None);
        assert_eq!(settled_leader(&[v(1, 0, 3), v(2, 0, 3), v(3, 0, 3)]), None);
        assert_eq!(settled_leader(&[v(1, 9, 3), v(2, 9, 3), v(3, 9, 3)]), None);
    }
}
