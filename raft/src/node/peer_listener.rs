//! The peer API's listener: connections bounded per address, TLS that
//! takes only node certificates of the cluster CA, and HTTP/2 settings
//! fit for openraft's traffic, in front of the [`PeerService`]. Apart
//! from the service, which judges each message, because this decides
//! which connections get to send one.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::service::interceptor::InterceptedService;

use super::peer_service::PeerService;
use crate::pb::peer_server::PeerServer;
use crate::replica::Replica;
use crate::transport::bounded_listener::bounded_incoming;
use crate::transport::tls::peer_node_id;
use crate::transport::tls_acceptor::{tls_incoming, TlsAcceptor};

/// Serves the peer API until `stop`. With `tls`, every connection must
/// present a certificate signed by the cluster CA, and every call one that
/// names a node (a client certificate from the same CA is refused).
pub(super) async fn serve_peers(
    node: Arc<Replica>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let tls_on = tls.is_some();
    let limit = node.config.max_peer_message_bytes;
    let limits = node.config.peer_listener_limits();
    let incoming = bounded_incoming(
        listener,
        limits.clone(),
        "peer",
        node.metrics.listener("peer"),
    );
    let service = PeerServer::new(PeerService::new(node))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let service = InterceptedService::new(service, move |req: tonic::Request<()>| {
        if tls_on && peer_node_id(&req).is_none() {
            return Err(tonic::Status::unauthenticated(
                "the peer API needs a node certificate (DNS name node-N.raftlock) \
                 from the cluster CA",
            ));
        }
        Ok(req)
    });
    let router = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        // openraft drops a leadership check's slower RPC once a quorum has
        // answered, which resets its stream; h2's default budget of 20 such
        // resets would make this server close the leader's connection.
        .http2_max_pending_accept_reset_streams(Some(65_536))
        .add_service(service);
    let stopped = async move {
        let _ = stop.changed().await;
    };
    let result = match tls {
        Some(tls) => {
            let incoming = tls_incoming(incoming, tls, "peer");
            router.serve_with_incoming_shutdown(incoming, stopped).await
        }
        None => router.serve_with_incoming_shutdown(incoming, stopped).await,
    };
    if let Err(e) = result {
        tracing::error!("peer listener failed: {e}");
    }
}
