//! The options of a `NativeClient` from `raftlock.Client`'s keywords.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use raftlock_client::{ClientOptions, ClientTls, SettingNames};

use crate::convert::secs;
use crate::run::to_py;

/// How the client's messages name settings for Python users: the keyword
/// arguments of `raftlock.Client` (never the command line's flags).
pub(crate) const PYTHON_NAMES: SettingNames = SettingNames {
    endpoints: "endpoints=",
    cacert: "cacert=",
    cert: "cert=",
    key: "key=",
    cacert_example: "raftlock.Client(..., cacert=\"ca.crt\")",
};

/// `raftlock.admin_token(path)`: the cluster's admin credential, derived
/// from the secret in a node's data dir (`raftlock.key`) or a join-token
/// file, to pass as `token=` for operator calls (force-release, bulk
/// revoke, membership, backups) on a cluster without an auth file.
#[pyfunction]
pub fn admin_token(path: PathBuf) -> PyResult<String> {
    raftlock::AdminCredential::read(&path)
        .map(|c| c.to_bearer())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// `raftlock.Client`'s keywords; `None`: the client's default (or its
/// `RAFTLOCK_*` variable).
pub struct ClientSettings {
    pub session_ttl: Option<f64>,
    pub safety_margin: Option<f64>,
    pub retry_for: Option<f64>,
    /// Seconds; `None`: `RAFTLOCK_DIAL_TIMEOUT` (as the command line
    /// reads it: `500ms`, `2s`, bare seconds), else the client's default.
    pub dial_timeout: Option<f64>,
    pub token: Option<String>,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// `RAFTLOCK_DIAL_TIMEOUT`, if set, read as the command line reads it.
fn dial_timeout_from_env() -> PyResult<Option<Duration>> {
    let Ok(text) = std::env::var("RAFTLOCK_DIAL_TIMEOUT") else {
        return Ok(None);
    };
    raftlock::duration::parse_duration_or_seconds(&text)
        .map(Some)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("RAFTLOCK_DIAL_TIMEOUT: {e}")))
}

/// The client's options from `settings`, each checked.
pub fn client_options(settings: ClientSettings) -> PyResult<ClientOptions> {
    let mut options = ClientOptions {
        setting_names: PYTHON_NAMES,
        ..ClientOptions::default()
    };
    if let Some(ttl) = settings.session_ttl {
        options.session_ttl = secs("session_ttl", ttl)?;
    }
    if let Some(margin) = settings.safety_margin {
        options.safety_margin = Some(secs("safety_margin", margin)?);
    }
    if let Some(retry) = settings.retry_for {
        options.retry_for = secs("retry_for", retry)?;
    }
    match settings.dial_timeout {
        Some(dial) => options.dial_timeout = secs("dial_timeout", dial)?,
        None => {
            if let Some(dial) = dial_timeout_from_env()? {
                options.dial_timeout = dial;
            }
        }
    }
    options.token = settings.token;
    let (cacert, cert, key) = (settings.cacert, settings.cert, settings.key);
    if cacert.is_some() || cert.is_some() || key.is_some() {
        let tls = ClientTls::from_files_named(
            &PYTHON_NAMES,
            cacert.as_deref(),
            cert.as_deref(),
            key.as_deref(),
        )
        .map_err(to_py)?;
        options.tls = Some(tls);
    }
    Ok(options)
}
