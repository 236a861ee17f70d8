//! The client listener: the gRPC services of `raftlock.v1` on the node's
//! client port, within its connection budget, until the node stops.

use std::sync::Arc;

use raftlock_raft::config::ListenerLimits;
use raftlock_raft::transport::bounded_listener::bounded_incoming;
use raftlock_raft::transport::tls_acceptor::{tls_incoming, TlsAcceptor};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::Auth;
use crate::observe::{health_service, RequestMetricsLayer};
use crate::pb;
use crate::service::{
    ClusterService, CoordinationService, ElectionService, LeaseService, LockService, StreamQuota,
};
use crate::serving::Serving;

/// Most concurrent calls on one client connection.
const MAX_STREAMS_PER_CONNECTION: u32 = 65_536;

/// Largest header block of one client call (a bearer token and request
/// metadata fit many times over).
const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// Serves the client API on `listener` until `stop` turns true or the
/// Raft core stops.
pub(super) async fn serve_clients(
    serving: Arc<Serving>,
    auth: Auth,
    listener: TcpListener,
    limits: ListenerLimits,
    quota_streams: u32,
    tls: Option<TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let node = serving.replica().clone();
    // A node whose Raft core stopped on its own stops serving clients at
    // once, embedded or not: it must not answer as a zombie (forwarding
    // writes, say) until its process exits.
    let core = node.clone();
    // One count of open calls per account, shared by the services.
    let streams = StreamQuota::new(quota_streams);
    let incoming = bounded_incoming(
        listener,
        limits.clone(),
        "client",
        node.metrics().listener("client"),
    );
    let router = tonic::transport::Server::builder()
        .layer(RequestMetricsLayer::new(node.clone()))
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        // Headers of a client call are small; a flood of huge ones is not.
        .http2_max_header_list_size(Some(MAX_HEADER_LIST_BYTES))
        // Every queued Acquire or Campaign is an open stream; a client with
        // many waiting tasks shares one connection.
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .add_service(pb::lease_server::LeaseServer::new(LeaseService {
            node: serving.clone(),
            auth: auth.clone(),
            streams: streams.clone(),
        }))
        .add_service(pb::lock_server::LockServer::new(LockService {
            node: serving.clone(),
            auth: auth.clone(),
            streams: streams.clone(),
        }))
        .add_service(pb::election_server::ElectionServer::new(ElectionService {
            node: serving.clone(),
            auth: auth.clone(),
            streams,
        }))
        .add_service(pb::coordination_server::CoordinationServer::new(
            CoordinationService {
                node: serving,
                auth: auth.clone(),
            },
        ))
        .add_service(health_service(node.clone()))
        .add_service(pb::cluster_server::ClusterServer::new(ClusterService {
            node,
            auth,
        }));
    let stopped = async move {
        tokio::select! {
            _ = stop.changed() => {}
            reason = core.failed() => {
                tracing::error!("client listener closed: {reason}");
            }
            why = core.removed() => {
                tracing::warn!("client listener closed: removed from the cluster: {why}");
            }
        }
    };
    let result = match tls {
        Some(tls) => {
            let incoming = tls_incoming(incoming, tls, "client");
            router.serve_with_incoming_shutdown(incoming, stopped).await
        }
        None => router.serve_with_incoming_shutdown(incoming, stopped).await,
    };
    if let Err(e) = result {
        tracing::error!("client listener failed: {e}");
    }
}
