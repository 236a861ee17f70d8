//! Where an operator command (membership, force-release, bulk revoke,
//! backup) finds the cluster's admin credential: derived on this host from
//! the cluster secret in a node's data dir or a join-token file, and sent
//! as a bearer token. The secret itself is never sent (docs/security.md,
//! "Operator calls").

use std::path::{Path, PathBuf};

use raftlock_raft::peer::admin_credential::AdminCredential;
use raftlock_raft::peer::auth::{key_path, ClusterKey};

use super::Endpoints;
use raftlock_client::Client;

/// The data dir `raftlock serve` uses without flags.
const DEFAULT_DATA_DIR: &str = "raftlock-data";

/// The flags of an operator command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AdminArgs {
    /// A member's data dir, to derive the cluster's admin credential from
    /// its `raftlock.key` (on that node's host). Default: ./raftlock-data
    /// when it has one and every endpoint is on loopback.
    #[arg(long, env = "RAFTLOCK_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// A file holding the cluster's join token, to derive the admin
    /// credential from (RAFTLOCK_JOIN_TOKEN gives the token itself).
    #[arg(long, env = "RAFTLOCK_JOIN_TOKEN_FILE")]
    pub join_token_file: Option<PathBuf>,
}

impl AdminArgs {
    /// The admin credential these flags (or the defaults) lead to; `None`
    /// when there is none to send (a TLS cluster's operator presents a
    /// node certificate instead, a cluster with an auth file takes an
    /// admin user's token).
    pub fn credential(&self, ep: &Endpoints) -> Result<Option<AdminCredential>, String> {
        let cannot = |e: raftlock_raft::peer::auth::KeyError| {
            format!("cannot read the cluster's admin credential: {e}")
        };
        if let Some(dir) = &self.data_dir {
            return AdminCredential::read(dir).map(Some).map_err(cannot);
        }
        if let Some(file) = &self.join_token_file {
            return AdminCredential::read(file).map(Some).map_err(cannot);
        }
        if let Ok(token) = std::env::var("RAFTLOCK_JOIN_TOKEN") {
            return ClusterKey::from_token(&token)
                .map(|key| Some(AdminCredential::derive(&key)))
                .map_err(|e| format!("RAFTLOCK_JOIN_TOKEN: {e}"));
        }
        // The one-command default: `raftlock serve` in this directory.
        // Sent only to loopback endpoints, so a local node's credential
        // never goes to another host unasked.
        let default = Path::new(DEFAULT_DATA_DIR);
        if ep.token.is_none()
            && key_path(default).is_file()
            && ep.endpoints.iter().all(|e| on_loopback(e))
        {
            return Ok(AdminCredential::read(default).ok());
        }
        Ok(None)
    }

    /// A client of `ep` that sends the admin credential, if there is one
    /// (in place of `--token`).
    pub async fn connect(&self, ep: &Endpoints) -> Result<Client, String> {
        let credential = self.credential(ep)?;
        ep.connect_with_token(credential.map(|c| c.to_bearer()))
            .await
    }
}

/// Whether endpoint `e` (`host:port`, maybe `http(s)://`) names this host.
fn on_loopback(e: &str) -> bool {
    let hostport = e
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let host = match hostport.rsplit_once(':') {
        Some((host, _)) => host,
        None => hostport,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::on_loopback;

    #[test]
    fn only_loopback_endpoints_get_the_default_credential() {
        for e in [
            "127.0.0.1:7379",
            "localhost:7379",
            "[::1]:7379",
            "http://127.0.0.2:1",
        ] {
            assert!(on_loopback(e), "{e}");
        }
        for e in ["10.0.0.1:7379", "db1.example:7379", "https://evil.example"] {
            assert!(!on_loopback(e), "{e}");
        }
    }
}
