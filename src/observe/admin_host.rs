//! Which `Host` the admin listener answers to. Its status page shows every
//! lock name and owner and it has no authentication, so a web page that
//! rebinds its own DNS name to 127.0.0.1 (DNS rebinding) could read it
//! through the visitor's browser: such a request names the page's host
//! (`evil.example:7381`), never the listener's address. Only the bound
//! address (`127.0.0.1:7381`; any IP with the bound port when bound to
//! every interface), `localhost:PORT` on loopback, and the names the
//! operator lists (`admin_hosts`) are answered; anything else gets 421
//! Misdirected Request.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The hosts one admin listener answers to.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    bound: SocketAddr,
    /// Configured names, lowercase: `name` (any port) or `name:port`.
    names: Vec<String>,
}

impl AllowedHosts {
    /// The listener bound at `bound`, with the operator's `names`.
    pub fn new(bound: SocketAddr, names: &[String]) -> Self {
        AllowedHosts {
            bound,
            names: names
                .iter()
                .map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// Whether a request with `Host: host` is for this listener.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = split_host(&host);
        let name = name.trim_end_matches('.');
        let port_ok = port == Some(self.bound.port());
        let ip = self.bound.ip();
        if let Ok(asked) = name.parse::<IpAddr>() {
            if port_ok && (asked == ip || ip.is_unspecified()) {
                return true;
            }
        }
        if name == "localhost" && port_ok && (ip.is_loopback() || ip.is_unspecified()) {
            return true;
        }
        self.names.iter().any(|allowed| match split_host(allowed) {
            (n, None) => n == name,
            (n, Some(p)) => n == name && port == Some(p),
        })
    }

    /// What the refusal says: the hosts that would be answered.
    fn describe(&self) -> String {
        let mut hosts = vec![self.bound.to_string()];
        if self.bound.ip().is_loopback() {
            hosts.push(format!("localhost:{}", self.bound.port()));
        }
        hosts.extend(self.names.iter().cloned());
        hosts.join(", ")
    }
}

/// `name` and port of `host:port`, `[v6]:port`, `name` or `[v6]`.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, tail)) => (ip, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, port.parse().ok()),
        _ => (host, None),
    }
}

/// The middleware: 421 for a request whose `Host` is not allowed. A
/// request without one (HTTP/1.0) is not from a browser and is answered.
pub async fn check_host(State(allowed): State<AllowedHosts>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("(not text)").to_owned())
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    match host {
        Some(host) if !allowed.allows(&host) => (
            StatusCode::MISDIRECTED_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!(
                "421 Misdirected Request: this admin listener answers to {} only, not to \
                 Host {host:?} (a page of another site may not read it). Reach it by one of \
                 those, or add the name with --admin-hosts (RAFTLOCK_ADMIN_HOSTS, \
                 admin_hosts).\n",
                allowed.describe()
            ),
        )
            .into_response(),
        _ => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listeners_own_address_and_listed_names_are_answered() {
        let loopback = AllowedHosts::new("127.0.0.1:7381".parse().unwrap(), &[]);
        for ok in [
            "127.0.0.1:7381",
            "localhost:7381",
            "LOCALHOST:7381",
            "localhost.:7381",
        ] {
            assert!(loopback.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example:7381",
            "evil.example",
            "127.0.0.1",
            "127.0.0.1:80",
            "localhost",
            "127.0.0.2:7381",
            "127.0.0.1.evil.example:7381",
            "",
            "[::1]:7381",
        ] {
            assert!(!loopback.allows(refused), "{refused}");
        }
        let named = AllowedHosts::new(
            "10.0.0.1:7381".parse().unwrap(),
            &["db1.example".into(), "proxy.example:443".into()],
        );
        for ok in [
            "10.0.0.1:7381",
            "db1.example:7381",
            "db1.example",
            "proxy.example:443",
        ] {
            assert!(named.allows(ok), "{ok}");
        }
        for refused in ["localhost:7381", "proxy.example:80", "evil.example:7381"] {
            assert!(!named.allows(refused), "{refused}");
        }
        let any = AllowedHosts::new("0.0.0.0:7381".parse().unwrap(), &[]);
        assert!(any.allows("192.168.1.5:7381") && any.allows("localhost:7381"));
        assert!(!any.allows("evil.example:7381"));
        let v6 = AllowedHosts::new("[::1]:7381".parse().unwrap(), &[]);
        assert!(v6.allows("[::1]:7381") && v6.allows("localhost:7381"));
        assert!(!v6.allows("[::2]:7381"));
    }
}
