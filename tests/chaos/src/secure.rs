//! The secure mode (`--secure`): the same run with TLS on both listeners,
//! mutual TLS between peers (through the proxies, which only see bytes)
//! and client authentication. Certificates come from `raftlock_cli::certs`;
//! the auth file gives the workload's token a role that covers exactly
//! the workload's lock and election names, so every call it makes passes
//! the name and lease-ownership checks of a secured cluster.
//!
//! Client processes get the CA and the token as `RAFTLOCK_CACERT` and
//! `RAFTLOCK_TOKEN`, the variables the `raftlock` CLI reads; the harness
//! keeps the same settings in `HARNESS`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use raftlock::auth::policy::token_sha256;
use raftlock_client::{ClientOptions, ClientTls};

use crate::Error;

/// The workload's names (see `workload::run`).
const WORKLOAD_NAMES: &str = r#"["x0", "x1", "rw", "sem", "e"]"#;

/// Settings the harness's own client calls (leader checks) use.
static HARNESS: OnceLock<Secure> = OnceLock::new();

/// A secured cluster's files.
#[derive(Debug, Clone)]
pub struct Secure {
    /// `ca.crt`, `node-N.crt/.key`, `auth.toml`.
    dir: PathBuf,
    /// The workload's bearer token.
    token: String,
}

impl Secure {
    /// Makes a CA, a certificate per node (ids 1..=n) and an auth file in
    /// `dir`, and makes them the harness's client settings.
    pub fn create(dir: &Path, n: u64) -> Result<Secure, Error> {
        let setup = |e: raftlock_client::Error| Error::Setup(format!("certificates: {e}"));
        std::fs::create_dir_all(dir).map_err(Error::io("create the certs dir"))?;
        raftlock_cli::certs::create_ca(dir, true).map_err(setup)?;
        let hosts = ["127.0.0.1".to_string(), "localhost".to_string()];
        for id in 1..=n {
            raftlock_cli::certs::create_node(dir, None, id, &hosts, true).map_err(setup)?;
        }
        let token = format!("chaos-{}", uuid::Uuid::new_v4().simple());
        let auth = format!(
            "[roles.workload]\nnames = {WORKLOAD_NAMES}\n\n\
             [[users]]\nname = \"workload\"\ntoken_sha256 = \"{}\"\nroles = [\"workload\"]\n",
            token_sha256(&token)
        );
        std::fs::write(dir.join("auth.toml"), auth).map_err(Error::io("write auth.toml"))?;
        let secure = Secure {
            dir: dir.to_path_buf(),
            token,
        };
        let _ = HARNESS.set(secure.clone());
        Ok(secure)
    }

    /// Node `id`'s TLS and auth flags.
    pub fn node_args(&self, id: u64) -> Vec<String> {
        let (cert, key) = raftlock_cli::certs::node_files(&self.dir, id);
        let path = |p: &Path| p.display().to_string();
        vec![
            "--tls-cert".into(),
            path(&cert),
            "--tls-key".into(),
            path(&key),
            "--tls-ca".into(),
            path(&self.ca()),
            "--auth-file".into(),
            path(&self.dir.join("auth.toml")),
        ]
    }

    /// Environment of a client process.
    pub fn client_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RAFTLOCK_CACERT", self.ca().display().to_string()),
            ("RAFTLOCK_TOKEN", self.token.clone()),
        ]
    }

    fn ca(&self) -> PathBuf {
        self.dir.join(raftlock_cli::certs::CA_CERT)
    }
}

/// Client settings retrying for `retry_for`: the harness's secure settings
/// if it made any, else `RAFTLOCK_CACERT` / `RAFTLOCK_TOKEN` from the
/// environment (a client process of a secure run), else plain text.
pub fn client_options(retry_for: Duration) -> Result<ClientOptions, Error> {
    let (ca, token) = match HARNESS.get() {
        Some(s) => (Some(s.ca()), Some(s.token.clone())),
        None => (
            std::env::var_os("RAFTLOCK_CACERT").map(PathBuf::from),
            std::env::var("RAFTLOCK_TOKEN").ok(),
        ),
    };
    let tls = match ca {
        Some(ca) => Some(ClientTls::from_files(Some(&ca), None, None)?),
        None => None,
    };
    Ok(ClientOptions {
        retry_for,
        tls,
        token,
        ..ClientOptions::default()
    })
}
