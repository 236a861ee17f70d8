//! The nodes a client talks to: one lazily connected channel per endpoint,
//! a current choice, and the retry loop every call goes through. It moves
//! to the leader a node names, or to the next endpoint, with backoff, until
//! the call's end: its retry budget, or the caller's deadline while no
//! node has been reached (the one place a caller's timeout bounds
//! connecting and retrying).
//!
//! `dial`: the dial timeout, which moves a call past an endpoint that
//! accepts connections and does not answer; `bearer_token`: the token
//! every call carries.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::Status;

use super::{ClientOptions, ClientTls};
use crate::cert_validity::CertValidity;
use crate::connect_failure::{classify, Attempted, Failure, Failures};
use crate::error::{from_status, leader_hint, Error};
use crate::options::SettingNames;

mod bearer_token;
pub(crate) mod dial;

pub use bearer_token::BearerToken;
use dial::{Liveness, Questions};

/// How long a call keeps retrying before it reports `Unavailable`.
pub const DEFAULT_RETRY_FOR: Duration = Duration::from_secs(15);

/// What every call goes through: a channel that adds the bearer token.
pub type Transport = InterceptedService<Channel, BearerToken>;

/// An endpoint must name its port: without one the connection would go to
/// port 80 and fail as an unexplained "tcp connect error".
fn check_has_port(addr: &str) -> Result<(), Error> {
    let port = match addr.rsplit_once(':') {
        // `[::1]` alone ends in `]`; `[::1]:7379` names a port.
        Some((host, port)) if !port.ends_with(']') && !host.is_empty() => port,
        _ => "",
    };
    if port.parse::<u16>().is_err() {
        return Err(Error::InvalidArgument(format!(
            "endpoint {addr:?} has no port: write host:port, e.g. 127.0.0.1:7379 \
             (the client port, 7379 by default)"
        )));
    }
    Ok(())
}

/// The cluster's client endpoints.
#[derive(Debug)]
pub struct Endpoints {
    addrs: Vec<String>,
    channels: Vec<Transport>,
    current: AtomicUsize,
    /// Which endpoints answered since they last failed: the others must
    /// answer a status question within the dial timeout before a call
    /// waits on them (see `dial`).
    live: Liveness,
    /// The last status question each endpoint was asked, shared by calls
    /// that need one at the same moment.
    questions: Questions,
    retry_for: Duration,
    dial_timeout: Duration,
    /// What a failed attempt is read against (TLS or not, the client's
    /// certificate).
    attempted: Attempted,
    /// How failures name the settings to change.
    names: SettingNames,
}

impl Endpoints {
    /// Accepts `host:port`, `http://host:port` or `https://host:port`.
    /// With `tls`, or with any `https://` endpoint, every endpoint speaks
    /// TLS (without `tls`: checked against the platform's trusted roots).
    pub fn new(addrs: &[String], options: &ClientOptions) -> Result<Self, Error> {
        let bearer = BearerToken::new(options.token.as_deref())?;
        if addrs.is_empty() {
            return Err(Error::InvalidArgument("no endpoints given".into()));
        }
        let any_https = addrs.iter().any(|a| a.trim().starts_with("https://"));
        let tls = match &options.tls {
            Some(tls) => Some(tls.clone()),
            None if any_https => Some(ClientTls::default()),
            None => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut channels = Vec::new();
        let mut clean = Vec::new();
        for addr in addrs {
            let addr = addr.trim();
            let addr = addr
                .strip_prefix("https://")
                .or_else(|| addr.strip_prefix("http://"))
                .unwrap_or(addr)
                .trim_end_matches('/')
                .to_string();
            check_has_port(&addr)?;
            let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
                .map_err(|e| Error::InvalidArgument(format!("bad endpoint {addr:?}: {e}")))?
                .connect_timeout(options.dial_timeout)
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(2))
                .keep_alive_timeout(Duration::from_secs(3));
            if let Some(tls) = &tls {
                endpoint = endpoint.tls_config(tls.config()).map_err(|e| {
                    Error::Tls(format!("TLS settings for {addr}: {}", error_chain(&e)))
                })?;
            }
            channels.push(InterceptedService::new(
                endpoint.connect_lazy(),
                bearer.clone(),
            ));
            clean.push(addr);
        }
        let identity = tls.as_ref().and_then(|tls| tls.identity.as_ref());
        let own_cert = identity.and_then(|(cert, _)| CertValidity::from_pem(cert));
        Ok(Endpoints {
            addrs: clean,
            channels,
            current: AtomicUsize::new(0),
            live: Liveness::new(addrs.len()),
            questions: Questions::new(addrs.len()),
            retry_for: options.retry_for,
            dial_timeout: options.dial_timeout,
            attempted: Attempted {
                tls: tls.is_some(),
                presents_cert: identity.is_some(),
                own_cert,
            },
            names: options.setting_names,
        })
    }

    /// The endpoint addresses.
    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    fn pick(&self) -> (usize, Transport) {
        let i = self.current.load(Ordering::Relaxed) % self.channels.len();
        (i, self.channels[i].clone())
    }

    fn move_on(&self, from: usize, status: &Status) {
        let hinted =
            leader_hint(status).and_then(|(_, addr)| self.addrs.iter().position(|a| *a == addr));
        let next = hinted.unwrap_or((from + 1) % self.channels.len());
        let _ = self
            .current
            .compare_exchange(from, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Moves off the current endpoint (its stream broke).
    pub fn skip_current(&self) {
        self.skip(self.current.load(Ordering::Relaxed));
    }

    /// Moves from endpoint `i` to the next one, unless another call did.
    fn skip(&self, i: usize) {
        let next = (i + 1) % self.channels.len();
        let _ = self
            .current
            .compare_exchange(i, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Runs `call` against the current endpoint, retrying retryable
    /// failures (on the named leader or the next endpoint) with backoff
    /// until the retry budget runs out, or `deadline` while no attempt has
    /// reached a node (see [`call_bounded`](Self::call_bounded)). `call`
    /// must re-send the same request id on every attempt.
    pub async fn call<T, F, Fut>(&self, deadline: Option<Instant>, call: F) -> Result<T, Error>
    where
        F: FnMut(Transport) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        self.call_bounded(deadline, None, call).await
    }

    /// Like [`call`](Self::call), but an attempt that has no answer within
    /// `attempt_timeout` counts as a transient failure, so the next attempt
    /// goes to another endpoint. Only for calls that never wait on purpose
    /// (a queued Acquire may legitimately take as long as it likes).
    ///
    /// The caller's `deadline` ends the call while every attempt failed
    /// before reaching a node (nothing listens, a TLS handshake refused):
    /// the request was never served, so giving up says nothing false.
    /// Once an attempt may have reached one (a node answered, or the
    /// connection broke mid-call), a waiting call's outcome may be a grant
    /// the node cannot cancel; the call then keeps retrying with the same
    /// request id to learn it, within the retry budget, past the deadline
    /// if need be (`tests/it/partitions.rs` shows why). When the call ends
    /// without an answer, the error names what went wrong: a TLS problem
    /// any endpoint had, else the last retryable answer of a node, else
    /// the endpoints that could not be reached and why.
    pub async fn call_bounded<T, F, Fut>(
        &self,
        deadline: Option<Instant>,
        attempt_timeout: Option<Duration>,
        mut call: F,
    ) -> Result<T, Error>
    where
        F: FnMut(Transport) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        let budget_end = Instant::now() + self.retry_for;
        let mut failures = Failures::new(self.addrs.len());
        let mut answered: Option<Error> = None;
        let mut reached_a_node = false;
        // How often each endpoint gave no answer in time during this call:
        // each time it is given longer (an overloaded node, not a paused one).
        let mut silent = vec![0u32; self.addrs.len()];
        // How long the last unanswered question waited.
        let mut waited = self.dial_timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            let (i, channel) = self.pick();
            let dial = self.dial_timeout * (1 + silent[i].min(3));
            let sent = self.live.answered(i);
            let status = if sent {
                match self
                    .attempt(i, channel, dial, attempt_timeout, &mut call)
                    .await
                {
                    Ok(v) => return Ok(v),
                    Err(status) => status,
                }
            } else {
                // Connecting never outlasts the call's budget or, while no
                // node may have its request, the caller's timeout.
                let end = match deadline {
                    Some(deadline) if !reached_a_node => deadline.min(budget_end),
                    _ => budget_end,
                };
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(self.outcome(&failures, answered));
                }
                let dial = dial.min(left);
                waited = dial;
                match self.first_answer(i, channel, dial, &silent).await {
                    Ok(skipped) => {
                        if let Some(why) = skipped {
                            answered.get_or_insert(why);
                        }
                        // The call goes where the answer says, without a pause.
                        continue;
                    }
                    // The call itself was not sent: nothing can have reached a node.
                    Err(status) => status,
                }
            };
            if dial::is_no_answer(&status) {
                silent[i] += 1;
            }
            match classify(&status, &self.attempted, &self.addrs[i]).await {
                Some(failure) => {
                    tracing::debug!(endpoint = %self.addrs[i], "attempt failed: {failure:?}");
                    self.live.set(i, false);
                    failures.record(i, failure);
                    if failures.all_settled() {
                        return Err(self.outcome(&failures, answered));
                    }
                }
                // Nothing was sent: an endpoint silent all along.
                None if !sent && silent[i] > 0 => {
                    failures.record(i, Failure::Unreachable(dial::silence(waited)));
                }
                None => {
                    let error = from_status(&status);
                    if !error.is_retryable() {
                        return Err(error);
                    }
                    tracing::debug!(endpoint = %self.addrs[i], "retrying: {error}");
                    if dial::is_no_answer(&status) {
                        // The call was sent before the node stopped answering.
                        self.live.set(i, false);
                    }
                    answered = Some(error);
                    // Only the call itself can have reached a node.
                    reached_a_node |= sent;
                }
            }
            let end = match deadline {
                Some(deadline) if !reached_a_node => deadline.min(budget_end),
                _ => budget_end,
            };
            if Instant::now() + pause > end {
                return Err(self.outcome(&failures, answered));
            }
            self.move_on(i, &status);
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// One attempt of `call` on endpoint `i`, which answered before: given
    /// up if the node stops answering (see [`dial::watch`]) or, with
    /// `attempt_timeout`, once that has passed.
    async fn attempt<T, F, Fut>(
        &self,
        i: usize,
        channel: Transport,
        dial: Duration,
        attempt_timeout: Option<Duration>,
        call: &mut F,
    ) -> Result<T, Status>
    where
        F: FnMut(Transport) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        let addr = &self.addrs[i];
        let sent = Instant::now();
        let check = self.questions.ask(i, channel.clone(), dial, addr, sent);
        let watched = dial::watch(call(channel), check, dial, addr);
        match attempt_timeout {
            Some(limit) => tokio::time::timeout(limit, watched)
                .await
                .unwrap_or_else(|_| {
                    Err(Status::unavailable(format!(
                        "no answer from {addr} within {limit:?}"
                    )))
                }),
            None => watched.await,
        }
    }

    /// The error a call that got no answer ends with.
    fn outcome(&self, failures: &Failures, answered: Option<Error>) -> Error {
        failures
            .settled_error(&self.addrs, &self.names)
            .or(answered)
            .or_else(|| failures.unreachable_error(&self.addrs, &self.names))
            .unwrap_or_else(|| Error::Unavailable("no endpoint answered".into()))
    }
}

/// The earlier of two deadlines, either of which may be absent.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An error and its sources, `: `-separated (tonic's transport errors say
/// only "transport error" themselves).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
