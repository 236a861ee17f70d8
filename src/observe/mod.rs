//! Seeing a node from outside: the admin HTTP listener (Prometheus
//! metrics, health and readiness, the status page), the gRPC health
//! service and the per-call metrics layer of the client listener.
//!
//! - `admin`: the admin listener and its routes; `admin_host`: the
//!   `Host` names it answers to.
//! - `status_view`: the status page's data (`/api/status`);
//!   `status_page.html` shows it.
//! - `request_metrics`: counts and times every client API call.
//! - `grpc_health`: `grpc.health.v1.Health` from the node's readiness.
//!
//! The metrics themselves live with the replica
//! (`raftlock_raft::metrics`), which counts where things happen.

mod admin;
mod admin_host;
mod grpc_health;
mod request_metrics;
mod status_view;

pub use admin::{bind_admin, serve_admin};
pub use grpc_health::{health_service, NodeHealth};
pub use request_metrics::{RequestMetrics, RequestMetricsLayer};
pub use status_view::{HolderView, LeaseView, LockView, MemberView, StatusSource, StatusView};
