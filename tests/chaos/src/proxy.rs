//! Userspace TCP proxies in front of every node, and the link policy they
//! enforce.
//!
//! # The model
//!
//! Each node j gets two proxies: a *peer proxy* forwarding to j's peer
//! (Raft) port and a *client proxy* forwarding to j's client port. The
//! cluster's membership names the proxies, not the real ports, so every
//! Raft message, every forwarded write and every client call passes one.
//!
//! Membership is replicated, so all nodes dial the same address for j; the
//! peer proxy therefore tells callers apart by asking the kernel which node
//! process owns the connecting socket ([`crate::proc_net`]). A *directed*
//! link i→j is cut by refusing (and tearing down) connections that node i
//! opens to j's peer proxy. Because a gRPC connection carries both i's
//! requests and j's answers, cutting i→j silences every RPC *i* starts
//! towards j; RPCs j starts towards i use j's own connection, governed by
//! j→i. That is the granularity of the model: connections, not packets.
//! Nothing is delayed or reordered, only refused or reset, and a cut takes
//! effect for open connections at once (they are closed), for new ones on
//! connect. A connection whose owner cannot be found (the node died while
//! connecting) is let through and counted.
//!
//! Client proxies cut by target node only: the harness can make node j
//! unreachable for every client, not for some clients.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::Error;

/// Which links are cut.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Cut directed peer links (from, to).
    pub blocked: BTreeSet<(u64, u64)>,
    /// Nodes clients cannot reach.
    pub clients_blocked: BTreeSet<u64>,
}

impl Policy {
    /// Cuts every link between the groups (both directions); links inside a
    /// group stay.
    pub fn partition(groups: &[Vec<u64>]) -> Policy {
        let mut blocked = BTreeSet::new();
        for (gi, a) in groups.iter().enumerate() {
            for (gj, b) in groups.iter().enumerate() {
                if gi != gj {
                    for &x in a {
                        for &y in b {
                            blocked.insert((x, y));
                        }
                    }
                }
            }
        }
        Policy {
            blocked,
            clients_blocked: BTreeSet::new(),
        }
    }
}

/// Counters the report shows.
#[derive(Debug, Default)]
pub struct ProxyStats {
    pub accepted: AtomicU64,
    pub refused: AtomicU64,
    pub cut: AtomicU64,
    pub unattributed: AtomicU64,
}

/// The proxies of one cluster and the policy they share.
pub struct Network {
    policy: watch::Sender<Policy>,
    /// Node id → pid of its running process, for telling callers apart.
    pids: Arc<Mutex<BTreeMap<u64, u32>>>,
    pub stats: Arc<ProxyStats>,
    tasks: Vec<JoinHandle<()>>,
}

/// Which kind of port a proxy fronts.
#[derive(Debug, Clone, Copy)]
enum Side {
    Peer,
    Client,
}

impl Network {
    /// A network with every link open and no proxies yet.
    pub fn new() -> Network {
        Network {
            policy: watch::Sender::new(Policy::default()),
            pids: Arc::default(),
            stats: Arc::default(),
            tasks: Vec::new(),
        }
    }

    /// Binds a listener on a free loopback port (for a proxy or a node).
    pub async fn bind() -> Result<(TcpListener, SocketAddr), Error> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(Error::io("bind a loopback port"))?;
        let addr = listener.local_addr().map_err(Error::io("local address"))?;
        Ok((listener, addr))
    }

    /// Serves a peer proxy for node `target` forwarding to `upstream`.
    pub fn serve_peer(&mut self, listener: TcpListener, target: u64, upstream: SocketAddr) {
        self.serve(listener, target, upstream, Side::Peer);
    }

    /// Serves a client proxy for node `target` forwarding to `upstream`.
    pub fn serve_client(&mut self, listener: TcpListener, target: u64, upstream: SocketAddr) {
        self.serve(listener, target, upstream, Side::Client);
    }

    /// Records the pid of node `id`'s process (`None` while it is down).
    pub fn set_pid(&self, id: u64, pid: Option<u32>) {
        let mut pids = self.pids.lock().unwrap_or_else(|e| e.into_inner());
        match pid {
            Some(pid) => pids.insert(id, pid),
            None => pids.remove(&id),
        };
    }

    /// Replaces the policy; open connections that are now cut close.
    pub fn set_policy(&self, policy: Policy) {
        self.policy.send_replace(policy);
    }

    /// Opens every link.
    pub fn heal(&self) {
        self.set_policy(Policy::default());
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.policy.borrow().clone()
    }

    fn serve(&mut self, listener: TcpListener, target: u64, upstream: SocketAddr, side: Side) {
        let policy = self.policy.subscribe();
        let pids = self.pids.clone();
        let stats = self.stats.clone();
        self.tasks.push(tokio::spawn(async move {
            let ours = match listener.local_addr() {
                Ok(a) => a,
                Err(_) => return,
            };
            loop {
                let Ok((inbound, peer)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let link = Link {
                    target,
                    side,
                    peer,
                    ours,
                    upstream,
                };
                tokio::spawn(link.run(inbound, policy.clone(), pids.clone(), stats.clone()));
            }
        }));
    }
}

impl Default for Network {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// One accepted connection.
struct Link {
    target: u64,
    side: Side,
    peer: SocketAddr,
    ours: SocketAddr,
    upstream: SocketAddr,
}

impl Link {
    async fn run(
        self,
        mut inbound: TcpStream,
        mut policy: watch::Receiver<Policy>,
        pids: Arc<Mutex<BTreeMap<u64, u32>>>,
        stats: Arc<ProxyStats>,
    ) {
        let source = match self.side {
            Side::Client => None,
            Side::Peer => {
                let candidates: Vec<(u64, u32)> = pids
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(|(id, pid)| (*id, *pid))
                    .collect();
                let (peer, ours) = (self.peer, self.ours);
                let found = tokio::task::spawn_blocking(move || {
                    crate::proc_net::connection_owner(peer, ours, &candidates)
                })
                .await
                .ok()
                .flatten();
                if found.is_none() {
                    stats.unattributed.fetch_add(1, Ordering::Relaxed);
                }
                found
            }
        };
        let cut = |p: &Policy| match (self.side, source) {
            (Side::Client, _) => p.clients_blocked.contains(&self.target),
            (Side::Peer, Some(from)) => p.blocked.contains(&(from, self.target)),
            (Side::Peer, None) => false,
        };
        if cut(&policy.borrow_and_update()) {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let connect = TcpStream::connect(self.upstream);
        let Ok(Ok(mut outbound)) = tokio::time::timeout(Duration::from_secs(1), connect).await
        else {
            return;
        };
        let _ = outbound.set_nodelay(true);
        let _ = inbound.set_nodelay(true);
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let watch_cut = async {
            loop {
                if policy.changed().await.is_err() {
                    // The network is gone: stop forwarding.
                    return;
                }
                if cut(&policy.borrow_and_update()) {
                    return;
                }
            }
        };
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
            _ = watch_cut => { stats.cut.fetch_add(1, Ordering::Relaxed); }
        }
    }
}
