//! A node's settings: replication's ([`raftlock_raft::Config`]) and the
//! serving layer's ([`ServingConfig`]: client authentication, the client
//! and admin listeners, the default lock-delay, the per-account quotas). One flat
//! table of keys holds both, in a TOML file as in flags (`heartbeat_ms`,
//! `auth_file`, ...); a key neither knows is refused.

use std::path::PathBuf;
use std::time::Duration;

use raftlock_raft::config::{check_ranges, millis, ListenerLimits};
use raftlock_raft::ConfigError;
use raftlock_storage::limits::{
    self, DEFAULT_QUOTA_CLIENTS, DEFAULT_QUOTA_LEASES, DEFAULT_QUOTA_WAITERS, MAX_LOCK_DELAY_MS,
};
use raftlock_storage::Quotas;
use serde::{Deserialize, Deserializer, Serialize};

/// Default of [`ServingConfig::quota_streams`].
pub const DEFAULT_QUOTA_STREAMS: u32 = 10_000;

/// Everything a node needs to start.
///
/// In a TOML file the keys are the `raftlock serve` flags with `_` for `-`
/// (`heartbeat_ms = 50`, `initial_cluster = ["1=PEER/CLIENT", ...]`,
/// `auth_file = "auth.toml"`), replication's and serving's side by side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Config {
    /// Replication: identity, addresses, cluster, timings, storage, TLS,
    /// peer authentication.
    #[serde(flatten)]
    pub replication: raftlock_raft::Config,
    /// Serving clients: authentication, listeners, lock-delay, quotas.
    #[serde(flatten)]
    pub serving: ServingConfig,
}

/// The serving layer's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServingConfig {
    /// Whether the client listener also requires a client certificate
    /// signed by `tls_ca`. Needs the TLS settings.
    pub client_cert_auth: bool,
    /// Client authentication and roles: a TOML file of users (a token's
    /// SHA-256, or a client certificate's name) and the roles they have
    /// (`admin`, or name prefixes). `None`: every client may do anything,
    /// the loopback default. See docs/security.md.
    pub auth_file: Option<PathBuf>,
    /// Admin HTTP listener (`/metrics`, `/healthz`, `/readyz`, the status
    /// page), `host:port`. `None` (the default): no admin listener. It has
    /// no TLS or auth and shows every lock name and owner, so keep it on
    /// loopback or behind a firewall (docs/operations.md). `"off"` (or
    /// `""`) in a file, variable or flag reads as `None`.
    #[serde(deserialize_with = "off_is_none")]
    pub admin_addr: Option<String>,
    /// Further `Host` names the admin listener answers to (`name` or
    /// `name:port`, e.g. a proxy's or a DNS name's), besides its own bound
    /// address (and `localhost:PORT` when bound to loopback). A request
    /// naming any other host is refused (421), so a web page cannot read
    /// the status page by DNS rebinding.
    pub admin_hosts: Vec<String>,
    /// Client connections this node holds open at once; one more is
    /// accepted and closed at once. Keep it below the process's open-file
    /// limit (`ulimit -n`; `raftlock serve` raises its soft limit to the
    /// hard one at start and warns when that is still too low).
    pub max_client_connections: usize,
    /// Client connections from one source IP address held open at once.
    /// A client holds one connection to each node it has called (its
    /// sessions' keep-alives, waits and watches are streams on it), so the
    /// default, 2 500, admits 2 000 clients on one host with room for
    /// reconnects, and leaves three quarters of `max_client_connections`
    /// to every other address. The peer listener has its own, fixed budget
    /// (256 connections, 64 per address), so a client flood never takes the
    /// peers' places.
    pub max_connections_per_ip: usize,
    /// The lock-delay of an acquire that names none: how long a lock stays
    /// closed after its holder is lost to lease expiry or force-release
    /// (never after a clean release). Zero: none, the lock passes on at once.
    #[serde(rename = "lock_delay_ms", with = "millis")]
    pub lock_delay: Duration,
    /// Calls one account may hold open on this node at once: keep-alive
    /// streams, Observe streams, and Acquire and Campaign calls that wait.
    /// Per node.
    pub quota_streams: u32,
    /// Live leases one account may hold: an authenticated identity, or,
    /// without authentication, a source IP address. Counted cluster-wide;
    /// the leader's setting applies (its entries carry it), so set it
    /// alike on every node.
    pub quota_leases: u32,
    /// Client ids one account may have remembered for exactly-once
    /// retries. Past it, its own least recently seen client id without a
    /// live lease is forgotten; once each of them granted a live lease, a
    /// new client id is refused until one of those leases ends.
    /// Cluster-wide, the leader's setting.
    pub quota_clients: u32,
    /// Requests one account may have waiting in lock and election queues
    /// (counted by the account of the lease they wait on). Cluster-wide,
    /// the leader's setting.
    pub quota_waiters: u32,
}

impl ServingConfig {
    /// The per-account quotas this node's entries carry when it leads.
    pub fn quotas(&self) -> Quotas {
        Quotas {
            leases: self.quota_leases,
            clients: self.quota_clients,
            waiters: self.quota_waiters,
        }
    }
}

impl Default for ServingConfig {
    fn default() -> Self {
        ServingConfig {
            client_cert_auth: false,
            auth_file: None,
            admin_addr: None,
            admin_hosts: Vec::new(),
            max_client_connections: 10_000,
            max_connections_per_ip: 2_500,
            lock_delay: Duration::ZERO,
            quota_streams: DEFAULT_QUOTA_STREAMS,
            quota_leases: DEFAULT_QUOTA_LEASES,
            quota_clients: DEFAULT_QUOTA_CLIENTS,
            quota_waiters: DEFAULT_QUOTA_WAITERS,
        }
    }
}

/// One flat table read as both parts: the serving layer takes its keys,
/// replication the rest, refusing any it does not know.
impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Flat {
            #[serde(flatten)]
            serving: ServingConfig,
            #[serde(flatten)]
            rest: toml::Table,
        }
        let flat = Flat::deserialize(d)?;
        // Refused here rather than by replication's own
        // `deny_unknown_fields`, whose list names only its own keys.
        let replication_keys = keys::replication();
        if let Some(key) = flat
            .rest
            .keys()
            .find(|key| !replication_keys.contains(&key.as_str()))
        {
            return Err(keys::unknown(key));
        }
        let replication = toml::Value::Table(flat.rest)
            .try_into()
            .map_err(serde::de::Error::custom)?;
        Ok(Config {
            replication,
            serving: flat.serving,
        })
    }
}

impl Config {
    /// Checks the settings fit together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.replication.validate()?;
        let serving = &self.serving;
        let lock_delay = u64::try_from(serving.lock_delay.as_millis()).unwrap_or(u64::MAX);
        let ranges = [
            ("lock_delay_ms", lock_delay, 0, MAX_LOCK_DELAY_MS),
            // A quota of 0 would refuse everyone; one above the global
            // bound is that bound.
            (
                "quota_streams",
                u64::from(serving.quota_streams),
                1,
                1_000_000,
            ),
            (
                "quota_leases",
                u64::from(serving.quota_leases),
                1,
                limits::MAX_LEASES as u64,
            ),
            (
                "quota_clients",
                u64::from(serving.quota_clients),
                1,
                limits::MAX_CLIENT_SESSIONS as u64,
            ),
            (
                "quota_waiters",
                u64::from(serving.quota_waiters),
                1,
                1_000_000,
            ),
        ];
        check_ranges(&ranges)?;
        let (total, per_ip) = (
            serving.max_client_connections,
            serving.max_connections_per_ip,
        );
        if total == 0 || per_ip == 0 || per_ip > total {
            return Err(ConfigError::ConnectionLimits { total, per_ip });
        }
        if serving.client_cert_auth && !self.replication.tls_enabled() {
            return Err(ConfigError::ClientCertAuthWithoutTls);
        }
        Ok(())
    }

    /// The client listener's budget.
    pub fn client_listener_limits(&self) -> ListenerLimits {
        ListenerLimits {
            max_connections: self.serving.max_client_connections,
            max_connections_per_ip: self.serving.max_connections_per_ip,
            ..self.replication.timeouts(ListenerLimits::client_default())
        }
    }

    /// A warning to print at start when a listener is bound beyond
    /// loopback without TLS: anyone on the network can then speak Raft to
    /// the peer port and call every client RPC. `None` when all is well.
    pub fn exposure_warning(&self) -> Option<String> {
        let replication = &self.replication;
        let exposed: Vec<&str> = [&replication.client_addr, &replication.peer_addr]
            .into_iter()
            .filter(|addr| !is_loopback(addr))
            .map(String::as_str)
            .collect();
        if exposed.is_empty() {
            return None;
        }
        let exposed = exposed.join(" and ");
        let authenticated = self.serving.auth_file.is_some() || self.serving.client_cert_auth;
        match (replication.tls_enabled(), authenticated) {
            (true, true) => None,
            (false, _) => Some(format!(
                "listening on {exposed} without TLS: anyone who can reach these ports can \
                 speak Raft to this node, read tokens off the wire and call every client \
                 RPC, force-release included. Set --tls-cert, --tls-key and --tls-ca, and \
                 --auth-file (see docs/security.md)"
            )),
            (true, false) => Some(format!(
                "listening on {exposed} without client authentication: any client that \
                 can reach the client port may force-release any lock, revoke any lease \
                 and change the membership. Set --auth-file for roles, or at least \
                 --client-cert-auth (see docs/security.md)"
            )),
        }
    }
}

/// An address setting where `"off"` and `""` mean none.
fn off_is_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let addr = Option::<String>::deserialize(d)?;
    Ok(addr.filter(|a| a != "off" && !a.is_empty()))
}

/// Whether `addr` (`host:port`) names a loopback address. Names other than
/// `localhost` count as exposed: they may resolve anywhere.
fn is_loopback(addr: &str) -> bool {
    if let Ok(sock) = addr.parse::<std::net::SocketAddr>() {
        return sock.ip().is_loopback();
    }
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.eq_ignore_ascii_case("localhost")
}

pub mod keys;

#[cfg(test)]
mod tests;
