//! Whether a [`Config`] can work ([`Config::validate`]).

use std::time::Duration;

use raftlock_storage::NodeId;

use super::{Config, MIN_PEER_MESSAGE_BYTES};

/// A setting that cannot work.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("node id must be at least 1")]
    ZeroId,
    /// An `--initial-cluster` entry that is not `ID=PEER_ADDR/CLIENT_ADDR`.
    #[error("bad initial-cluster member {text:?}: expected ID=PEER_ADDR/CLIENT_ADDR, e.g. 1=127.0.0.1:7380/127.0.0.1:7379")]
    BadMember {
        /// The entry as given.
        text: String,
        /// What is wrong with it.
        problem: MemberProblem,
    },
    #[error("initial cluster does not include this node (id {0})")]
    SelfNotInCluster(NodeId),
    #[error("node id {0} appears twice in the initial cluster")]
    DuplicateMember(NodeId),
    #[error("{0} must not be empty")]
    Empty(&'static str),
    #[error("election timeout ({election:?}) must be at least 3 heartbeats ({heartbeat:?})")]
    Timing {
        heartbeat: Duration,
        election: Duration,
    },
    #[error("this node's {which} address is {ours} (--{flag}), but its own entry in --initial-cluster lists {listed}, the address the other members dial. Listen there (--{which}-addr {listed}), or advertise it while listening elsewhere (--advertise-{which}-addr {listed}), or correct entry {id} of --initial-cluster")]
    OwnAddressMismatch {
        id: NodeId,
        which: &'static str,
        flag: &'static str,
        ours: String,
        listed: String,
    },
    #[error("join token: {0}")]
    JoinToken(super::join_token::BadJoinToken),
    #[error("--join-token and --join-token-file exclude each other")]
    TwoJoinTokens,
    #[error("--insecure turns peer authentication off and cannot go with TLS, which authenticates peers by their certificates")]
    InsecureWithTls,
    #[error("--join and --initial-cluster exclude each other")]
    JoinWithCluster,
    #[error("TLS needs all three of tls_cert, tls_key and tls_ca (--tls-cert, --tls-key, --tls-ca); {missing} is missing")]
    PartialTls { missing: &'static str },
    #[error("client_cert_auth (--client-cert-auth) needs TLS: set tls_cert, tls_key and tls_ca")]
    ClientCertAuthWithoutTls,
    #[error("max peer message size {0} bytes is below the {MIN_PEER_MESSAGE_BYTES} a snapshot chunk and the largest entry need")]
    PeerMessageTooSmall(usize),
    #[error("{key} = {value} is out of range: it must be between {min} and {max}")]
    OutOfRange {
        key: &'static str,
        value: u64,
        min: u64,
        max: u64,
    },
    #[error("max_client_connections ({total}) and max_connections_per_ip ({per_ip}) must be at least 1, and the per-address cap at most the total")]
    ConnectionLimits { total: usize, per_ip: usize },
    #[error("handshake timeout ({handshake:?}) must be at least 100ms and idle timeout ({idle:?}) at least 1s")]
    ConnectionTimeouts { handshake: Duration, idle: Duration },
    /// A config file that cannot be read.
    #[error("cannot read config file {path}: {source}")]
    ReadFile {
        path: String,
        /// The file system's error.
        source: crate::source::Source,
    },
    /// A layer of settings (a config file, or flags) that does not fit:
    /// an unknown key, or a value of the wrong type. `layer` names it.
    #[error("{layer}: {}", source.to_string().trim_end())]
    Layer {
        /// The layer ("config file PATH", "flags", ...).
        layer: String,
        /// What the TOML reader said.
        source: crate::source::Source,
    },
}

/// What is wrong with an `--initial-cluster` entry.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberProblem {
    /// No `=` between the id and the addresses.
    NoId,
    /// No `/` between the peer and the client address.
    NoClientAddr,
    /// The id is not a number.
    BadId,
    /// The peer or the client address is empty.
    EmptyAddr,
}

impl Config {
    /// Checks the settings fit together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.id == 0 {
            return Err(ConfigError::ZeroId);
        }
        if self.client_addr.is_empty() {
            return Err(ConfigError::Empty("client address"));
        }
        if self.peer_addr.is_empty() {
            return Err(ConfigError::Empty("peer address"));
        }
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::Empty("data dir"));
        }
        self.validate_ranges()?;
        if self.heartbeat.is_zero() || self.election_timeout < self.heartbeat * 3 {
            return Err(ConfigError::Timing {
                heartbeat: self.heartbeat,
                election: self.election_timeout,
            });
        }
        if self.join && !self.initial_cluster.is_empty() {
            return Err(ConfigError::JoinWithCluster);
        }
        if self.max_peer_message_bytes < MIN_PEER_MESSAGE_BYTES {
            return Err(ConfigError::PeerMessageTooSmall(
                self.max_peer_message_bytes,
            ));
        }
        self.validate_connections()?;
        let mut seen = std::collections::BTreeSet::new();
        for m in &self.initial_cluster {
            if m.id == 0 {
                return Err(ConfigError::ZeroId);
            }
            if !seen.insert(m.id) {
                return Err(ConfigError::DuplicateMember(m.id));
            }
        }
        if !self.initial_cluster.is_empty() && !seen.contains(&self.id) {
            return Err(ConfigError::SelfNotInCluster(self.id));
        }
        self.validate_own_entry()?;
        self.validate_peer_auth()?;
        self.validate_tls()
    }

    /// The join token's settings fit together (whether one is needed
    /// depends on the data dir: `peer::auth::plan_key`).
    fn validate_peer_auth(&self) -> Result<(), ConfigError> {
        if self.join_token.is_some() && self.join_token_file.is_some() {
            return Err(ConfigError::TwoJoinTokens);
        }
        if let Some(token) = &self.join_token {
            super::join_token::parse(token).map_err(ConfigError::JoinToken)?;
        }
        if self.insecure && self.tls_enabled() {
            return Err(ConfigError::InsecureWithTls);
        }
        Ok(())
    }

    /// This node's addresses, as it advertises them, are the ones its own
    /// `--initial-cluster` entry gives the other members: a node listening
    /// elsewhere would be dialled in vain (or take another node's port).
    fn validate_own_entry(&self) -> Result<(), ConfigError> {
        let Some(entry) = self.initial_cluster.iter().find(|m| m.id == self.id) else {
            return Ok(());
        };
        let ours = self.node_addr();
        let pairs = [
            (
                "peer",
                self.advertise_peer_addr.is_some(),
                ours.peer_addr,
                &entry.addr.peer_addr,
            ),
            (
                "client",
                self.advertise_client_addr.is_some(),
                ours.client_addr,
                &entry.addr.client_addr,
            ),
        ];
        for (which, advertised, ours, listed) in pairs {
            if &ours != listed {
                let flag = match (which, advertised) {
                    ("peer", false) => "peer-addr",
                    ("peer", true) => "advertise-peer-addr",
                    (_, false) => "client-addr",
                    (_, true) => "advertise-client-addr",
                };
                return Err(ConfigError::OwnAddressMismatch {
                    id: self.id,
                    which,
                    flag,
                    ours,
                    listed: listed.clone(),
                });
            }
        }
        Ok(())
    }

    /// Numbers no node can work with: each refused with its key.
    fn validate_ranges(&self) -> Result<(), ConfigError> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let checks: [(&'static str, u64, u64, u64); 8] = [
            ("heartbeat_ms", ms(self.heartbeat), 1, 10_000),
            ("election_timeout_ms", ms(self.election_timeout), 3, 60_000),
            ("leader_wait_ms", ms(self.leader_wait), 1, 600_000),
            (
                "snapshot_after",
                self.snapshot_after_entries,
                1,
                100_000_000,
            ),
            (
                "keep_entries_after_snapshot",
                self.keep_entries_after_snapshot,
                0,
                100_000_000,
            ),
            // The lower bound has its own error (PeerMessageTooSmall).
            (
                "max_peer_message_bytes",
                self.max_peer_message_bytes as u64,
                0,
                1 << 30,
            ),
            (
                "handshake_timeout_ms",
                ms(self.handshake_timeout),
                100,
                600_000,
            ),
            ("idle_timeout_ms", ms(self.idle_timeout), 1_000, 86_400_000),
        ];
        check_ranges(&checks)
    }

    /// Timeouts a real handshake and keep-alive can meet.
    fn validate_connections(&self) -> Result<(), ConfigError> {
        let (handshake, idle) = (self.handshake_timeout, self.idle_timeout);
        if handshake < Duration::from_millis(100) || idle < Duration::from_secs(1) {
            return Err(ConfigError::ConnectionTimeouts { handshake, idle });
        }
        Ok(())
    }

    /// TLS is all three files or none.
    fn validate_tls(&self) -> Result<(), ConfigError> {
        let files = [
            ("tls_cert", &self.tls_cert),
            ("tls_key", &self.tls_key),
            ("tls_ca", &self.tls_ca),
        ];
        let set = files.iter().filter(|(_, f)| f.is_some()).count();
        if set != 0 && set != files.len() {
            let missing = files
                .iter()
                .find(|(_, f)| f.is_none())
                .map_or("a file", |(name, _)| *name);
            return Err(ConfigError::PartialTls { missing });
        }
        Ok(())
    }
}

/// Each `(key, value, min, max)` within its range, else `OutOfRange`
/// naming the first key that is not. Every layer's settings use it.
pub fn check_ranges(ranges: &[(&'static str, u64, u64, u64)]) -> Result<(), ConfigError> {
    for &(key, value, min, max) in ranges {
        if value < min || value > max {
            return Err(ConfigError::OutOfRange {
                key,
                value,
                min,
                max,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::InitialMember;

    #[test]
    fn validate_catches_mistakes() {
        assert_eq!(Config::default().validate(), Ok(()));
        let c = Config {
            id: 0,
            ..Config::default()
        };
        assert_eq!(c.validate(), Err(ConfigError::ZeroId));
        let c = Config {
            initial_cluster: vec!["2=a/b".parse().unwrap()],
            ..Config::default()
        };
        assert_eq!(c.validate(), Err(ConfigError::SelfNotInCluster(1)));
        let c = Config {
            election_timeout: Duration::from_millis(100),
            ..Config::default()
        };
        assert!(matches!(c.validate(), Err(ConfigError::Timing { .. })));
        assert!(Config::default().raft_config().is_ok());
    }

    /// Without the check, a node whose flags and `--initial-cluster`
    /// disagree listened on the flags' (or the default) ports while the
    /// others dialled the entry's: restored nodes all bound 127.0.0.1:7379.
    #[test]
    fn own_addresses_must_match_own_initial_cluster_entry() {
        let members: Vec<InitialMember> = [
            "1=10.0.0.1:7380/10.0.0.1:7379",
            "2=10.0.0.2:7380/10.0.0.2:7379",
        ]
        .iter()
        .map(|m| m.parse().expect("a member"))
        .collect();
        let matching = Config {
            id: 2,
            client_addr: "10.0.0.2:7379".into(),
            peer_addr: "10.0.0.2:7380".into(),
            initial_cluster: members.clone(),
            ..Config::default()
        };
        assert_eq!(matching.validate(), Ok(()));
        let defaults = Config {
            id: 2,
            initial_cluster: members.clone(),
            ..Config::default()
        };
        let err = defaults
            .validate()
            .expect_err("default ports are not node 2's");
        assert_eq!(
            err,
            ConfigError::OwnAddressMismatch {
                id: 2,
                which: "peer",
                flag: "peer-addr",
                ours: "127.0.0.1:7380".into(),
                listed: "10.0.0.2:7380".into(),
            }
        );
        assert!(
            err.to_string()
                .contains("--advertise-peer-addr 10.0.0.2:7380"),
            "{err}"
        );
        let advertised = Config {
            peer_addr: "0.0.0.0:7380".into(),
            client_addr: "0.0.0.0:7379".into(),
            advertise_peer_addr: Some("10.0.0.2:7380".into()),
            advertise_client_addr: Some("10.0.0.2:7378".into()),
            ..defaults
        };
        assert!(matches!(
            advertised.validate(),
            Err(ConfigError::OwnAddressMismatch {
                which: "client",
                flag: "advertise-client-addr",
                ..
            })
        ));
    }

    #[test]
    fn tls_is_all_three_files_or_none() {
        let full = Config {
            tls_cert: Some("n.crt".into()),
            tls_key: Some("n.key".into()),
            tls_ca: Some("ca.crt".into()),
            ..Config::default()
        };
        assert_eq!(full.validate(), Ok(()));
        assert!(full.tls_enabled());
        let no_key = Config {
            tls_key: None,
            ..full.clone()
        };
        assert_eq!(
            no_key.validate(),
            Err(ConfigError::PartialTls { missing: "tls_key" })
        );
        let only_ca = Config {
            tls_ca: Some("ca.crt".into()),
            ..Config::default()
        };
        assert_eq!(
            only_ca.validate(),
            Err(ConfigError::PartialTls {
                missing: "tls_cert"
            })
        );
        assert!(!Config::default().tls_enabled());
    }
}
