//! `raftlock serve`: run one node until SIGINT or SIGTERM.
//!
//! Settings come from, lowest precedence first: defaults, a TOML config
//! file (`--config`), `RAFTLOCK_*` environment variables, flags.

use std::path::PathBuf;

use raftlock_raft::InitialMember;
use serde::Serialize;

use super::open_file_limit;
use super::signals::Interrupts;
use super::EXIT_SUCCESS;
use raftlock::config_layers::ConfigLayers;
use raftlock::node::Node;
use raftlock::Config;

/// Flags of `raftlock serve`; each also reads `RAFTLOCK_<NAME>`.
///
/// Serialized, the settings among them are one layer of [`ConfigLayers`]:
/// a field's name is its TOML key, and a flag not given (`None`, a switch
/// left off, an empty list) leaves the key to the file and the defaults.
#[derive(Debug, clap::Args, Serialize)]
pub struct ServeArgs {
    /// TOML file with any of the settings below: the flag names with `_` for
    /// `-` (`heartbeat_ms = 50`). Unknown keys are refused.
    #[arg(long, env = "RAFTLOCK_CONFIG")]
    #[serde(skip)]
    config: Option<PathBuf>,
    /// Print the effective settings, and where each came from (default,
    /// file, env, flag), as TOML; then exit without starting.
    #[arg(long)]
    #[serde(skip)]
    print_config: bool,
    /// Node id (at least 1, unique in the cluster). Default 1.
    #[arg(long, env = "RAFTLOCK_ID")]
    id: Option<u64>,
    /// Data directory. Default ./raftlock-data.
    #[arg(long, env = "RAFTLOCK_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Client API listen address. Default: this node's entry in
    /// --initial-cluster, else 127.0.0.1:7379. Given, it must match that
    /// entry (or --advertise-client-addr must).
    #[arg(long, env = "RAFTLOCK_CLIENT_ADDR")]
    client_addr: Option<String>,
    /// Peer (Raft) listen address. Default: this node's entry in
    /// --initial-cluster, else 127.0.0.1:7380. Given, it must match that
    /// entry (or --advertise-peer-addr must).
    #[arg(long, env = "RAFTLOCK_PEER_ADDR")]
    peer_addr: Option<String>,
    /// Client address other nodes and clients should use, if not client-addr.
    #[arg(long, env = "RAFTLOCK_ADVERTISE_CLIENT_ADDR")]
    advertise_client_addr: Option<String>,
    /// Peer address other nodes should use, if not peer-addr.
    #[arg(long, env = "RAFTLOCK_ADVERTISE_PEER_ADDR")]
    advertise_peer_addr: Option<String>,
    /// Members of a new cluster: ID=PEER_ADDR/CLIENT_ADDR,... (same on every
    /// node). Default: a one-node cluster of this node.
    #[arg(long, env = "RAFTLOCK_INITIAL_CLUSTER", value_delimiter = ',')]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    initial_cluster: Vec<InitialMember>,
    /// Start empty and wait to be added with `raftlock cluster add-learner`.
    #[arg(long, env = "RAFTLOCK_JOIN")]
    #[serde(skip_serializing_if = "is_off")]
    join: bool,
    /// Leader heartbeat period in ms. Default 50.
    #[arg(long, env = "RAFTLOCK_HEARTBEAT_MS")]
    heartbeat_ms: Option<u64>,
    /// Election timeout in ms (randomized up to twice this, after a leader
    /// lease of twice this). Default 300.
    #[arg(long, env = "RAFTLOCK_ELECTION_TIMEOUT_MS")]
    election_timeout_ms: Option<u64>,
    /// Entries kept behind the last snapshot for slow followers. Default
    /// 1000.
    #[arg(long, env = "RAFTLOCK_KEEP_ENTRIES_AFTER_SNAPSHOT")]
    keep_entries_after_snapshot: Option<u64>,
    /// How long a write waits for a leader (and a quorum) before it is
    /// answered UNAVAILABLE, in ms. Default 5000.
    #[arg(long, env = "RAFTLOCK_LEADER_WAIT_MS")]
    leader_wait_ms: Option<u64>,
    /// Lock-delay for acquires that name none, in ms (Consul's lock-delay):
    /// a lock whose holder is lost to lease expiry or force-release stays
    /// closed this long, so the lost holder's writes in flight land first.
    /// Never after a clean release. Default 0 (none); at most 60000.
    #[arg(long, env = "RAFTLOCK_LOCK_DELAY_MS")]
    lock_delay_ms: Option<u64>,
    /// Snapshot after this many entries. Default 10000.
    #[arg(long, env = "RAFTLOCK_SNAPSHOT_AFTER")]
    snapshot_after: Option<u64>,
    /// Largest peer message accepted or sent, in bytes. Default 16777216
    /// (16 MiB); at least 8 MiB.
    #[arg(long, env = "RAFTLOCK_MAX_PEER_MESSAGE_BYTES")]
    max_peer_message_bytes: Option<usize>,
    /// Client connections held open at once; more are closed at accept.
    /// Default 10000 (keep it below `ulimit -n`).
    #[arg(long, env = "RAFTLOCK_MAX_CLIENT_CONNECTIONS")]
    max_client_connections: Option<usize>,
    /// Client connections held open at once from one IP address (one per
    /// client and node). Default 2500.
    #[arg(long, env = "RAFTLOCK_MAX_CONNECTIONS_PER_IP")]
    max_connections_per_ip: Option<usize>,
    /// A new connection that has not sent its handshake after this many ms
    /// is closed. Default 10000.
    #[arg(long, env = "RAFTLOCK_HANDSHAKE_TIMEOUT_MS")]
    handshake_timeout_ms: Option<u64>,
    /// A connection that sends nothing for this many ms is closed; the node
    /// pings every connection at a quarter of it. Default 60000.
    #[arg(long, env = "RAFTLOCK_IDLE_TIMEOUT_MS")]
    idle_timeout_ms: Option<u64>,
    /// Live leases one identity may hold (per source IP address without
    /// an auth file), counted cluster-wide; the leader's setting applies.
    /// Default 10000.
    #[arg(long, env = "RAFTLOCK_QUOTA_LEASES")]
    quota_leases: Option<u32>,
    /// Client ids one identity (or source address) may have remembered for
    /// exactly-once retries; once each of them holds a live lease, new
    /// client ids are refused. Cluster-wide, the leader's setting. Default
    /// 10000.
    #[arg(long, env = "RAFTLOCK_QUOTA_CLIENTS")]
    quota_clients: Option<u32>,
    /// Requests one identity (or source address) may have waiting for
    /// locks and elections. Cluster-wide, the leader's setting. Default
    /// 10000.
    #[arg(long, env = "RAFTLOCK_QUOTA_WAITERS")]
    quota_waiters: Option<u32>,
    /// Calls one identity (or source address) may hold open on this node:
    /// keep-alive and Observe streams, waiting Acquire and Campaign calls.
    /// Default 10000.
    #[arg(long, env = "RAFTLOCK_QUOTA_STREAMS")]
    quota_streams: Option<u32>,
    /// Admin HTTP listener for /metrics, /healthz, /readyz and the status
    /// page, e.g. 127.0.0.1:7381 ("off": none). Default: 127.0.0.1 on the
    /// client port + 2 (7381), skipped with a warning when that port is taken.
    #[arg(long, env = "RAFTLOCK_ADMIN_ADDR")]
    admin_addr: Option<String>,
    /// Further Host names the admin listener answers to, comma-separated
    /// (NAME or NAME:PORT: a proxy's, a DNS name's). Default: only its own
    /// address (and localhost:PORT on loopback); other Hosts get 421.
    #[arg(long, env = "RAFTLOCK_ADMIN_HOSTS", value_delimiter = ',')]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    admin_hosts: Vec<String>,
    /// UNSAFE, for tests only: acknowledge writes without fsync (sled's
    /// sync_file_range only). A power loss can lose acknowledged locks.
    #[arg(long, env = "RAFTLOCK_UNSAFE_NO_FSYNC", hide_short_help = true)]
    #[serde(skip_serializing_if = "is_off")]
    unsafe_no_fsync: bool,
    /// This node's certificate (PEM; `raftlock certs create-node`). With
    /// --tls-key and --tls-ca: TLS on both listeners, and peers must
    /// present a node certificate from the CA.
    #[arg(long, env = "RAFTLOCK_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, env = "RAFTLOCK_TLS_KEY")]
    tls_key: Option<PathBuf>,
    /// The cluster CA certificate (PEM).
    #[arg(long, env = "RAFTLOCK_TLS_CA")]
    tls_ca: Option<PathBuf>,
    /// Clients must present a certificate signed by --tls-ca, too.
    #[arg(long, env = "RAFTLOCK_CLIENT_CERT_AUTH")]
    #[serde(skip_serializing_if = "is_off")]
    client_cert_auth: bool,
    /// Client authentication and roles: a TOML file of users (token hash
    /// or certificate name) and roles (admin, or lock-name patterns). See
    /// docs/security.md; `raftlock auth create-token` makes a token.
    #[arg(long, env = "RAFTLOCK_AUTH_FILE")]
    auth_file: Option<std::path::PathBuf>,
    /// The cluster's join token (`rlj1-...`), the secret that authenticates
    /// peers without TLS: the same for every member of a new cluster of
    /// several nodes (`raftlock certs create-join-token` makes one), the
    /// cluster's for a joining node (`raftlock cluster add-learner` prints
    /// the command). Kept in the data dir after the first start. Prefer
    /// the variable or --join-token-file: a flag shows in the process list.
    #[arg(long, env = "RAFTLOCK_JOIN_TOKEN", hide_env_values = true)]
    join_token: Option<String>,
    /// A file holding the join token.
    #[arg(long, env = "RAFTLOCK_JOIN_TOKEN_FILE")]
    join_token_file: Option<PathBuf>,
    /// Run a cluster of several nodes without peer authentication (no TLS,
    /// no join token): anyone who reaches the peer port can rewrite every
    /// lock. Announced in the log and on the status page.
    #[arg(long, env = "RAFTLOCK_INSECURE")]
    #[serde(skip_serializing_if = "is_off")]
    insecure: bool,
}

impl ServeArgs {
    /// Whether `--print-config` was given.
    pub fn print_config_requested(&self) -> bool {
        self.print_config
    }

    /// The layers of settings: the config file if any, under these flags
    /// and the `RAFTLOCK_*` variables clap read with them (one overlay:
    /// the fields that were given, by their TOML keys).
    fn layers(&self) -> Result<ConfigLayers, String> {
        let mut layers = ConfigLayers::default();
        if let Some(path) = &self.config {
            layers = layers.file(path).map_err(|e| e.to_string())?;
        }
        layers.overlay("flags", self).map_err(|e| e.to_string())
    }

    /// The config these flags describe, on top of the config file if any.
    pub fn to_config(&self) -> Result<Config, String> {
        self.layers()?.build().map_err(|e| e.to_string())
    }

    /// The admin listener `raftlock serve` opens when no flag, variable or
    /// config file names one: loopback, two ports above the client port
    /// (127.0.0.1:7381 beside the default 7379/7380). `None` when one was
    /// named (or turned `off`). The embedded [`Node`] has no such default.
    fn default_admin_addr(layers: &ConfigLayers, config: &Config) -> Option<String> {
        if layers.origin("admin_addr").is_some() {
            return None;
        }
        let port = config
            .replication
            .client_addr
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse::<u16>().ok())
            .and_then(|port| port.checked_add(2))
            .filter(|&port| port > 2);
        port.map(|port| format!("127.0.0.1:{port}"))
    }

    /// The effective settings as TOML, each with where it came from: a flag,
    /// a `RAFTLOCK_*` variable, the config file, or the default. `matches`
    /// are the parsed `serve` arguments (they know flag from env).
    pub fn print_config(&self, matches: Option<&clap::ArgMatches>) -> Result<String, String> {
        let layers = self.layers()?;
        let config = layers.build().map_err(|e| e.to_string())?;
        let effective = toml::Table::try_from(&config).map_err(|e| e.to_string())?;
        let mut out = String::new();
        for (key, value) in &effective {
            let source = match matches.and_then(|m| m.value_source(key)) {
                Some(clap::parser::ValueSource::CommandLine) => "flag".to_string(),
                Some(clap::parser::ValueSource::EnvVariable) => {
                    format!("env RAFTLOCK_{}", key.to_uppercase())
                }
                _ if layers.origin(key).is_some_and(|o| o != "flags") => "file".to_string(),
                _ => "default".to_string(),
            };
            let line = toml::Table::from_iter([(key.clone(), value.clone())]).to_string();
            out.push_str(&format!("{:<60} # {source}\n", line.trim_end()));
        }
        Ok(out)
    }
}

/// A switch left off: not a setting of this layer.
fn is_off(on: &bool) -> bool {
    !on
}

/// Runs a node until SIGINT or SIGTERM, then shuts it down in order.
pub async fn run(args: ServeArgs, matches: Option<&clap::ArgMatches>) -> Result<u8, String> {
    if args.print_config {
        print!("{}", args.print_config(matches)?);
        return Ok(EXIT_SUCCESS);
    }
    // Watch the signals first, so one arriving during startup still gets
    // an orderly shutdown instead of killing the process.
    let mut interrupts = Interrupts::watch()?;
    let layers = args.layers()?;
    let config = layers.build().map_err(|e| e.to_string())?;
    open_file_limit::raise(&config);
    // Every file the node makes (sled's snapshot files while it runs
    // included) is private from the start; the data dir is tightened at
    // open too (docs/security.md, "State is private to the node").
    // SAFETY: umask(2) only sets this process's file-creation mask.
    unsafe { libc::umask(0o077) };
    let mut builder = Node::builder();
    if let Some(addr) = ServeArgs::default_admin_addr(&layers, &config) {
        // Nothing asked for an admin listener: serve one on loopback, as
        // etcd serves its metrics beside the client port. A second node on
        // the same host finds the port taken and runs without one.
        match tokio::net::TcpListener::bind(&addr).await {
            Ok(listener) => builder = builder.admin_listener(listener),
            Err(e) => eprintln!(
                "warning: no admin listener (metrics, health, status page): {addr}: {e}; \
                 choose one with --admin-addr, or --admin-addr off"
            ),
        }
    }
    let node = builder
        .config(config)
        .start()
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "raftlock node {} serving clients on {} (peers on {}){}",
        node.id(),
        node.client_addr(),
        node.peer_addr(),
        if node.tls_enabled() {
            ", TLS on; peers need a node certificate from the CA"
        } else {
            ""
        }
    );
    if let Some(admin) = node.admin_addr() {
        eprintln!("admin listener (metrics, health, status page) on http://{admin}/");
    }
    let failure = tokio::select! {
        _ = interrupts.recv() => None,
        reason = node.failed() => Some(reason),
        why = node.removed() => {
            // Not a failure: a supervisor must not restart a removed member.
            eprintln!("removed from the cluster: {why}; stopping (its data dir can be deleted)");
            None
        }
    };
    eprintln!("shutting down");
    node.shutdown().await;
    match failure {
        // A node whose Raft core stopped must not linger half-alive: exit
        // non-zero so a supervisor restarts it (or an operator looks).
        Some(reason) => Err(format!("raftlock node failed: {reason}")),
        None => Ok(EXIT_SUCCESS),
    }
}

#[cfg(test)]
mod tests;
