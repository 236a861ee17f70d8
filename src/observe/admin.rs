//! The admin HTTP listener (`--admin-addr`): plain HTTP/1.1 for
//! Prometheus, probes and a browser, never the client or peer API.
//!
//! | path          | answers                                                   |
//! |---------------|-----------------------------------------------------------|
//! | `/metrics`    | Prometheus metrics (OpenMetrics text)                     |
//! | `/healthz`    | 200 when the Raft core runs, else 503; JSON body          |
//! | `/readyz`     | 200 when ready (leader known, log applied), else 503 with the reason |
//! | `/`           | the status page (HTML; reloads `/api/status` every 2 s)   |
//! | `/api/status` | the status page's data, JSON                              |
//!
//! It only reads: nothing here changes a lock. A request naming a `Host`
//! that is not the listener's own address or a configured name is refused
//! (`admin_host`). Served with axum, which tonic already brings in.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::serving::Serving;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use raftlock_raft::{Health, NodeTls};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::admin_host::{check_host, AllowedHosts};
use super::status_view::StatusSource;

/// The status page, one self-contained file.
const STATUS_PAGE: &str = include_str!("status_page.html");

/// What the handlers share.
struct Admin {
    node: Arc<Serving>,
    status: StatusSource,
}

/// Binds the admin listener at `addr`.
pub async fn bind_admin(addr: &str) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves the admin endpoints of `node` on `listener` until `stop` turns
/// true. `tls`: how the status page reaches the other members; `hosts`:
/// further `Host` names it answers to (`admin_hosts`).
pub fn serve_admin(
    node: Arc<Serving>,
    tls: Option<NodeTls>,
    listener: TcpListener,
    hosts: &[String],
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        tracing::warn!(
            %addr,
            "the admin listener is reachable beyond this machine: anyone who can reach it \
             sees metrics and every lock name and owner on the status page (it has no \
             TLS or auth; keep it on loopback or behind a firewall)"
        );
    }
    let admin = Arc::new(Admin {
        status: StatusSource::new(node.replica().clone(), tls),
        node,
    });
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/", get(page))
        .route("/api/status", get(status))
        .with_state(admin)
        .layer(axum::middleware::from_fn_with_state(
            AllowedHosts::new(addr, hosts),
            check_host,
        ));
    let task = tokio::spawn(async move {
        let shutdown = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(%addr, "admin listener failed: {e}");
        }
    });
    Ok((addr, task))
}

async fn metrics(State(admin): State<Arc<Admin>>) -> Response {
    let body = admin.node.scrape_metrics();
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

async fn healthz(State(admin): State<Arc<Admin>>) -> Response {
    health_answer(&admin.node.replica().liveness())
}

async fn readyz(State(admin): State<Arc<Admin>>) -> Response {
    health_answer(&admin.node.replica().readiness())
}

/// 200 or 503, with the check as JSON.
fn health_answer(health: &Health) -> Response {
    let code = if health.ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(code, health)
}

async fn page() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        STATUS_PAGE,
    )
        .into_response()
}

async fn status(State(admin): State<Arc<Admin>>) -> Response {
    let view = admin.status.view().await;
    json(StatusCode::OK, &view)
}

/// `value` as a JSON response.
fn json(code: StatusCode, value: &impl serde::Serialize) -> Response {
    match serde_json::to_string(value) {
        Ok(body) => (code, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer as JSON: {e}"),
        )
            .into_response(),
    }
}
