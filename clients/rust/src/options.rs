//! How a [`Client`] is set up: its session lease TTL, the safety margin
//! before a lease's end at which holds stop being trusted, the retry
//! budget of each call, the dial timeout of each endpoint, TLS, and the
//! names its messages give settings.
//!
//! [`Client`]: super::Client

use std::time::Duration;

use super::{Client, ClientTls, LeaseId, DEFAULT_DIAL_TIMEOUT, DEFAULT_RETRY_FOR};
use crate::error::Error;

/// Default TTL of a client's session lease.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(10);

/// The shortest dial timeout: below it, a healthy node on a busy machine
/// looks dead.
pub const MIN_DIAL_TIMEOUT: Duration = Duration::from_millis(10);

/// Settings of a [`Client`]. Plain data with [`Default`]; build one with
/// [`Client::builder`] or pass it to [`Client::connect_with`].
#[derive(Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// TTL of the session lease the client grants lazily on first use. It is
    /// renewed every third of the TTL; if the client dies, its locks are
    /// freed at most this long afterwards.
    pub session_ttl: Duration,
    /// How long before a lease's end (as measured from when its last
    /// successful keep-alive was *sent*) its holds count as lost when
    /// keep-alives keep failing. `None`: a fifth of that lease's TTL. Capped
    /// at half the TTL. It covers clock-rate differences and gives the
    /// holder time to stop before another client can be granted the lock.
    pub safety_margin: Option<Duration>,
    /// How long one call keeps retrying (other nodes, the named leader)
    /// before it reports [`Error::Unavailable`].
    pub retry_for: Duration,
    /// How long an endpoint may take to connect and answer a first
    /// question (its status) before the call moves on to the next one: a
    /// node paused with SIGSTOP, or a listener that accepts and never
    /// answers, costs a call about this long. It never bounds a call on
    /// a node that answers (a waiting acquire, an observe stream).
    pub dial_timeout: Duration,
    /// Use this existing lease as the session instead of granting one. The
    /// client keeps it alive but never revokes it; once it is gone, calls
    /// that need the session fail with [`Error::LeaseExpired`].
    pub lease: Option<LeaseId>,
    /// TLS to every endpoint: the CA nodes' certificates must chain to and
    /// the client certificate to present. `None`: plain text, unless the
    /// endpoints are written `https://...` (then TLS with the platform's
    /// trusted roots).
    pub tls: Option<ClientTls>,
    /// A bearer token (`raftlock auth create-token`) sent with every call,
    /// for clusters that authenticate clients by token. Sent as gRPC
    /// metadata: use it with TLS, or it crosses the network in clear.
    pub token: Option<String>,
    /// How error messages name the settings they tell the user to change
    /// (the command line's flags unless a front end says otherwise).
    pub setting_names: SettingNames,
}

/// How the client's error messages name the settings a user can change,
/// so that each front end words the next step in the terms its users
/// type: the command line's flags by default; the Python package passes
/// its keyword arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingNames {
    /// The endpoints to connect to (`--endpoints`).
    pub endpoints: &'static str,
    /// The cluster CA file (`--cacert`).
    pub cacert: &'static str,
    /// The client certificate file (`--cert`).
    pub cert: &'static str,
    /// The client certificate's key file (`--key`).
    pub key: &'static str,
    /// Passing the CA, as an example to copy (`--cacert ca.crt`).
    pub cacert_example: &'static str,
}

impl SettingNames {
    /// The `raftlock` command line's flags.
    pub const CLI: SettingNames = SettingNames {
        endpoints: "--endpoints",
        cacert: "--cacert",
        cert: "--cert",
        key: "--key",
        cacert_example: "--cacert ca.crt",
    };
}

impl Default for SettingNames {
    fn default() -> Self {
        SettingNames::CLI
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.debug_struct("ClientOptions")
            .field("session_ttl", &self.session_ttl)
            .field("safety_margin", &self.safety_margin)
            .field("retry_for", &self.retry_for)
            .field("dial_timeout", &self.dial_timeout)
            .field("lease", &self.lease)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("setting_names", &self.setting_names)
            .finish()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            session_ttl: DEFAULT_SESSION_TTL,
            safety_margin: None,
            retry_for: DEFAULT_RETRY_FOR,
            dial_timeout: DEFAULT_DIAL_TIMEOUT,
            lease: None,
            tls: None,
            token: None,
            setting_names: SettingNames::CLI,
        }
    }
}

impl ClientOptions {
    /// Checks the settings; the server bounds TTLs to 100 ms ..= 1 day.
    pub fn validate(&self) -> Result<(), Error> {
        if self.session_ttl < Duration::from_millis(100) {
            return Err(Error::InvalidArgument(format!(
                "session TTL {:?} is below the minimum of 100ms",
                self.session_ttl
            )));
        }
        if self.retry_for.is_zero() {
            return Err(Error::InvalidArgument("retry budget must be > 0".into()));
        }
        if self.dial_timeout < MIN_DIAL_TIMEOUT {
            return Err(Error::InvalidArgument(format!(
                "dial timeout {:?} is below the minimum of {MIN_DIAL_TIMEOUT:?}",
                self.dial_timeout
            )));
        }
        if self.lease == Some(0) {
            return Err(Error::InvalidArgument("lease id 0 is not a lease".into()));
        }
        Ok(())
    }

    /// The safety margin for a lease of `ttl`.
    pub(crate) fn margin_for(&self, ttl: Duration) -> Duration {
        self.safety_margin.unwrap_or(ttl / 5).min(ttl / 2)
    }
}

/// Builds a [`Client`]: `Client::builder(endpoints).session_ttl(..).connect()`.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    endpoints: Vec<String>,
    options: ClientOptions,
}

impl ClientBuilder {
    pub(crate) fn new(endpoints: Vec<String>) -> Self {
        ClientBuilder {
            endpoints,
            options: ClientOptions::default(),
        }
    }

    /// Replaces every setting.
    pub fn options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// TTL of the session lease (default 10 s).
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.options.session_ttl = ttl;
        self
    }

    /// See [`ClientOptions::safety_margin`].
    pub fn safety_margin(mut self, margin: Duration) -> Self {
        self.options.safety_margin = Some(margin);
        self
    }

    /// Retry budget of one call (default 15 s).
    pub fn retry_for(mut self, budget: Duration) -> Self {
        self.options.retry_for = budget;
        self
    }

    /// Dial timeout of each endpoint (default 1 s); see
    /// [`ClientOptions::dial_timeout`].
    pub fn dial_timeout(mut self, timeout: Duration) -> Self {
        self.options.dial_timeout = timeout;
        self
    }

    /// Use an existing lease as the session; see [`ClientOptions::lease`].
    pub fn lease(mut self, lease: LeaseId) -> Self {
        self.options.lease = Some(lease);
        self
    }

    /// Speak TLS to every endpoint; see [`ClientOptions::tls`].
    pub fn tls(mut self, tls: ClientTls) -> Self {
        self.options.tls = Some(tls);
        self
    }

    /// Authenticate every call with this bearer token; see
    /// [`ClientOptions::token`].
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.options.token = Some(token.into());
        self
    }

    /// How error messages name settings; see [`SettingNames`].
    pub fn setting_names(mut self, names: SettingNames) -> Self {
        self.options.setting_names = names;
        self
    }

    /// Validates the settings and creates the client (connections are made
    /// lazily, on the first call).
    pub async fn connect(self) -> Result<Client, Error> {
        Client::connect_with(self.endpoints, self.options).await
    }
}
