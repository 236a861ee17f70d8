//! Node settings: one plain struct with defaults and validation, used by the
//! `raftlock serve` flags, the environment, a config file and the embedded
//! builder alike.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use raftlock_storage::{Bootstrap, NodeAddr, NodeId, OpenOptions, SyncMode};

mod checks;
pub mod join_token;
mod listener_limits;

pub use checks::{check_ranges, ConfigError, MemberProblem};
pub use listener_limits::ListenerLimits;

/// Default of [`Config::max_peer_message_bytes`].
pub const DEFAULT_MAX_PEER_MESSAGE_BYTES: usize = 16 << 20;

/// Smallest [`Config::max_peer_message_bytes`]: a snapshot chunk and the
/// largest entry must fit.
pub const MIN_PEER_MESSAGE_BYTES: usize = 8 << 20;

/// One member of the initial cluster: `ID=PEER_ADDR/CLIENT_ADDR`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct InitialMember {
    pub id: NodeId,
    pub addr: NodeAddr,
}

impl std::fmt::Display for InitialMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={}/{}",
            self.id, self.addr.peer_addr, self.addr.client_addr
        )
    }
}

impl TryFrom<String> for InitialMember {
    type Error = ConfigError;

    fn try_from(s: String) -> Result<Self, ConfigError> {
        s.parse()
    }
}

impl From<InitialMember> for String {
    fn from(m: InitialMember) -> String {
        m.to_string()
    }
}

impl FromStr for InitialMember {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem| ConfigError::BadMember {
            text: s.to_string(),
            problem,
        };
        let (id, addrs) = s.split_once('=').ok_or_else(|| bad(MemberProblem::NoId))?;
        let (peer, client) = addrs
            .split_once('/')
            .ok_or_else(|| bad(MemberProblem::NoClientAddr))?;
        let id = id
            .trim()
            .parse::<NodeId>()
            .map_err(|_| bad(MemberProblem::BadId))?;
        if peer.is_empty() || client.is_empty() {
            return Err(bad(MemberProblem::EmptyAddr));
        }
        Ok(InitialMember {
            id,
            addr: NodeAddr {
                peer_addr: peer.trim().to_string(),
                client_addr: client.trim().to_string(),
            },
        })
    }
}

/// Everything a node needs to start.
///
/// In a TOML file the keys are the `raftlock serve` flags with `_` for `-`
/// (`heartbeat_ms = 50`, `initial_cluster = ["1=PEER/CLIENT", ...]`); a key
/// it does not know is refused, never ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// This node's Raft id; unique in the cluster, never reused.
    pub id: NodeId,
    /// Where sled keeps the log, the vote and the lock state.
    pub data_dir: PathBuf,
    /// Client API listener.
    pub client_addr: String,
    /// Peer (Raft) listener.
    pub peer_addr: String,
    /// Address other nodes and clients should use for the client API, when it
    /// differs from `client_addr` (e.g. bound to 0.0.0.0).
    pub advertise_client_addr: Option<String>,
    /// Address other nodes should use for the peer API.
    pub advertise_peer_addr: Option<String>,
    /// Members to initialize a new cluster with. Empty: a one-node cluster of
    /// this node, unless `join` is set.
    pub initial_cluster: Vec<InitialMember>,
    /// Start empty and wait to be added by an existing cluster
    /// (`cluster add-learner`), instead of initializing one.
    pub join: bool,
    /// Leader heartbeat period.
    #[serde(rename = "heartbeat_ms", with = "millis")]
    pub heartbeat: Duration,
    /// Election timeout. A follower that stops hearing its leader waits out
    /// openraft's leader lease (`2 * election_timeout`) and then a random
    /// time in `[election_timeout, 2 * election_timeout)` before it
    /// campaigns: 0.9–1.2 s with the default 300 ms.
    #[serde(rename = "election_timeout_ms", with = "millis")]
    pub election_timeout: Duration,
    /// Take a snapshot after this many applied entries.
    #[serde(rename = "snapshot_after")]
    pub snapshot_after_entries: u64,
    /// Log entries to keep behind the last snapshot, for slow followers.
    pub keep_entries_after_snapshot: u64,
    /// How long a write waits for a leader before giving up.
    #[serde(rename = "leader_wait_ms", with = "millis")]
    pub leader_wait: Duration,
    /// UNSAFE, for tests only: acknowledge writes once sled has flushed
    /// them (`sync_file_range`), without `fsync`/`fdatasync`. A power loss
    /// can then lose acknowledged grants and votes. Restores the behaviour
    /// of builds before durable syncs, for the power-loss demonstration.
    pub unsafe_no_fsync: bool,
    /// This node's certificate (PEM), for both listeners and for dialling
    /// peers. It must be signed by `tls_ca` and name this node
    /// (`node-ID.raftlock`, as `raftlock certs create-node` writes it).
    /// `tls_cert`, `tls_key` and `tls_ca` are set together or not at all;
    /// without them both listeners speak plain text.
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// The cluster CA (PEM). Peers must present a certificate it signed
    /// (mutual TLS); a peer's server certificate must chain to it.
    pub tls_ca: Option<PathBuf>,
    /// The cluster's join token (`rlj1-...`): the secret that tags every
    /// peer message when peers do not use mTLS. Every member of a new
    /// cluster of more than one node gets the same one on its first start,
    /// a joining node the cluster's; the data dir keeps it afterwards
    /// (`raftlock.key`). Never printed back (`--print-config`).
    #[serde(skip_serializing)]
    pub join_token: Option<String>,
    /// A file holding the join token (instead of `join_token`, which shows
    /// in the process list when given as a flag).
    pub join_token_file: Option<PathBuf>,
    /// Run without peer authentication: no mTLS and no cluster secret, so
    /// anyone who reaches the peer port can rewrite every lock. Announced
    /// at start and on the status page.
    pub insecure: bool,
    /// Largest peer message this node accepts or sends, in bytes. Must hold
    /// a snapshot chunk (1 MiB) and the largest entry (about 1 MiB of
    /// payload), with room to spare.
    pub max_peer_message_bytes: usize,
    /// Time a new connection (client or peer) has to send its first bytes
    /// (the HTTP/2 preface, or a TLS ClientHello); a silent or half-open
    /// connection is closed then.
    #[serde(rename = "handshake_timeout_ms", with = "millis")]
    pub handshake_timeout: Duration,
    /// A connection (client or peer) that sends nothing for this long is
    /// closed. The node pings every connection at a quarter of it and closes
    /// one that does not answer within another quarter, so a live client
    /// always has something to send.
    #[serde(rename = "idle_timeout_ms", with = "millis")]
    pub idle_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            id: 1,
            data_dir: PathBuf::from("raftlock-data"),
            client_addr: "127.0.0.1:7379".to_string(),
            peer_addr: "127.0.0.1:7380".to_string(),
            advertise_client_addr: None,
            advertise_peer_addr: None,
            initial_cluster: Vec::new(),
            join: false,
            heartbeat: Duration::from_millis(50),
            election_timeout: Duration::from_millis(300),
            snapshot_after_entries: 10_000,
            keep_entries_after_snapshot: 1_000,
            leader_wait: Duration::from_secs(5),
            unsafe_no_fsync: false,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            join_token: None,
            join_token_file: None,
            insecure: false,
            max_peer_message_bytes: DEFAULT_MAX_PEER_MESSAGE_BYTES,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

impl Config {
    /// The peer listener's budget: fixed caps, this config's timeouts.
    pub fn peer_listener_limits(&self) -> ListenerLimits {
        self.timeouts(ListenerLimits::peer_default())
    }

    /// `base` with this config's handshake and idle timeouts (both
    /// listeners use them).
    pub fn timeouts(&self, base: ListenerLimits) -> ListenerLimits {
        ListenerLimits {
            handshake_timeout: self.handshake_timeout,
            idle_timeout: self.idle_timeout,
            keepalive_interval: self.idle_timeout / 4,
            keepalive_timeout: self.idle_timeout / 4,
            ..base
        }
    }

    /// Whether the listeners serve TLS (all three files are set).
    pub fn tls_enabled(&self) -> bool {
        self.tls_cert.is_some() && self.tls_key.is_some() && self.tls_ca.is_some()
    }

    /// The address record other members store for this node.
    pub fn node_addr(&self) -> NodeAddr {
        NodeAddr {
            peer_addr: self
                .advertise_peer_addr
                .clone()
                .unwrap_or_else(|| self.peer_addr.clone()),
            client_addr: self
                .advertise_client_addr
                .clone()
                .unwrap_or_else(|| self.client_addr.clone()),
        }
    }

    /// Takes this node's listen addresses from its own `--initial-cluster`
    /// entry, for the ones no setting named (`client`, `peer`): the entry
    /// is where the other members dial it. A no-op without an entry.
    pub fn listen_on_own_entry(&mut self, client: bool, peer: bool) {
        let Some(entry) = self.initial_cluster.iter().find(|m| m.id == self.id) else {
            return;
        };
        let addr = entry.addr.clone();
        if client {
            self.client_addr = addr.client_addr;
        }
        if peer {
            self.peer_addr = addr.peer_addr;
        }
    }

    /// How this node is told to form its cluster, as its data dir records
    /// it: `--join`, `--initial-cluster` (members sorted by id), or neither.
    pub fn bootstrap(&self) -> Bootstrap {
        if self.join {
            return Bootstrap::Join;
        }
        if self.initial_cluster.is_empty() {
            return Bootstrap::SingleNode;
        }
        let mut members = self.initial_cluster.clone();
        members.sort_by_key(|m| m.id);
        let members = members
            .iter()
            .map(|m| format!("{}={}/{}", m.id, m.addr.peer_addr, m.addr.client_addr))
            .collect::<Vec<_>>()
            .join(",");
        Bootstrap::Cluster { members }
    }

    /// What the storage is told when it opens the data dir.
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            node_id: self.id,
            bootstrap: self.bootstrap(),
            sync: if self.unsafe_no_fsync {
                SyncMode::UnsafeSledFlushOnly
            } else {
                SyncMode::Fsync
            },
        }
    }

    /// Members to initialize with: the configured cluster, or just this node.
    pub fn initial_members(&self) -> Vec<InitialMember> {
        if self.initial_cluster.is_empty() {
            vec![InitialMember {
                id: self.id,
                addr: self.node_addr(),
            }]
        } else {
            self.initial_cluster.clone()
        }
    }

    /// openraft's settings derived from ours.
    pub(crate) fn raft_config(&self) -> Result<openraft::Config, openraft::ConfigError> {
        let hb = self.heartbeat.as_millis() as u64;
        let el = self.election_timeout.as_millis() as u64;
        let cfg = openraft::Config {
            cluster_name: "raftlock".to_string(),
            heartbeat_interval: hb,
            election_timeout_min: el,
            election_timeout_max: el * 2,
            // Per snapshot piece (raft/src/network.rs sends a snapshot in
            // pieces of SNAPSHOT_CHUNK_BYTES).
            install_snapshot_timeout: 10_000,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_after_entries),
            max_in_snapshot_log_to_keep: self.keep_entries_after_snapshot,
            // A node that cannot win an election (cut off, or behind) asks
            // first and leaves everyone's term alone.
            enable_pre_vote: Some(true),
            // A restarted leader is elected again rather than restored: the
            // state machine is rebuilt by replaying the log, and the
            // committed index it reloads is a hint that may lag.
            enable_leader_restore: Some(false),
            ..Default::default()
        };
        cfg.validate()
    }
}

/// A [`Duration`] as a number of milliseconds, for serde.
pub mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `d` as whole milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    /// Reads whole milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_members_and_rejects_bad_ones() {
        let m: InitialMember = "2=127.0.0.1:7480/127.0.0.1:7479".parse().unwrap();
        assert_eq!(m.id, 2);
        assert_eq!(m.addr.peer_addr, "127.0.0.1:7480");
        assert_eq!(m.addr.client_addr, "127.0.0.1:7479");
        let cases = [
            ("", MemberProblem::NoId),
            ("2", MemberProblem::NoId),
            ("x=a/b", MemberProblem::BadId),
            ("2=a", MemberProblem::NoClientAddr),
            ("2=/b", MemberProblem::EmptyAddr),
            ("2=a/", MemberProblem::EmptyAddr),
        ];
        for (bad, problem) in cases {
            let err = bad.parse::<InitialMember>().expect_err(bad);
            assert_eq!(
                err,
                ConfigError::BadMember {
                    text: bad.into(),
                    problem
                },
                "{bad:?}"
            );
            assert!(err.to_string().starts_with(&format!(
                "bad initial-cluster member {bad:?}: expected ID=PEER_ADDR/CLIENT_ADDR"
            )));
        }
    }
}
