//! What both listeners (client and peer) share: the connection budget,
//! TLS (certificate files, rustls settings, handshakes) and the gRPC codec.

pub mod bounded_listener;
pub mod message_codec;
pub mod tls;
pub mod tls_acceptor;
pub mod tls_error;
