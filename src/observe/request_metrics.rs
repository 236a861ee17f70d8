//! A tower layer on the client listener that counts every call by RPC and
//! gRPC status code and times it, into `raftlock_grpc_requests_total` and
//! `raftlock_grpc_request_duration_seconds`.
//!
//! A gRPC status travels in the response headers when a call fails before
//! any message ("trailers only"), and otherwise in the trailers after the
//! last message; so the call is recorded when the response body ends, and
//! a body dropped before its end (the client went away) counts as
//! `Cancelled`. A stream's time is its whole life.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{HeaderMap, Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use raftlock_raft::Replica;
use tonic::body::Body;

/// Wraps the client API service in [`RequestMetrics`].
#[derive(Clone)]
pub struct RequestMetricsLayer {
    node: Arc<Replica>,
}

impl RequestMetricsLayer {
    /// Records into `node`'s metrics.
    pub fn new(node: Arc<Replica>) -> Self {
        RequestMetricsLayer { node }
    }
}

impl<S> tower_layer::Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetrics {
            inner,
            node: self.node.clone(),
        }
    }
}

/// The service [`RequestMetricsLayer`] makes.
#[derive(Clone)]
pub struct RequestMetrics<S> {
    inner: S,
    node: Arc<Replica>,
}

impl<S, ReqBody> tower_service::Service<Request<ReqBody>> for RequestMetrics<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        // "/raftlock.v1.Lock/Acquire" -> "raftlock.v1.Lock/Acquire".
        let rpc = req.uri().path().trim_start_matches('/').to_string();
        let call = Call {
            node: self.node.clone(),
            rpc,
            started: Instant::now(),
            code: None,
        };
        let future = self.inner.call(req);
        Box::pin(async move {
            let response = future.await?;
            let (parts, body) = response.into_parts();
            let call = Call {
                code: grpc_code(&parts.headers),
                ..call
            };
            let body = Body::new(MeteredBody {
                inner: body,
                call: Some(call),
            });
            Ok(Response::from_parts(parts, body))
        })
    }
}

/// A call waiting for its status.
struct Call {
    node: Arc<Replica>,
    rpc: String,
    started: Instant,
    /// From the headers of a trailers-only response.
    code: Option<tonic::Code>,
}

impl Call {
    fn record(self, code: tonic::Code) {
        // Any path can be called; only served ones get their own series,
        // so a client cannot grow the label set without bound.
        let rpc = if code == tonic::Code::Unimplemented {
            "unknown"
        } else {
            self.rpc.as_str()
        };
        let code = format!("{code:?}");
        self.node
            .metrics()
            .on_request(rpc, &code, self.started.elapsed());
    }
}

/// The `grpc-status` in `headers`, if any.
fn grpc_code(headers: &HeaderMap) -> Option<tonic::Code> {
    let value = headers.get("grpc-status")?;
    Some(tonic::Code::from_bytes(value.as_bytes()))
}

/// A response body that records its call when it ends.
struct MeteredBody {
    inner: Body,
    call: Option<Call>,
}

impl MeteredBody {
    fn finish(&mut self, code: Option<tonic::Code>) {
        if let Some(call) = self.call.take() {
            let code = code.or(call.code).unwrap_or(tonic::Code::Ok);
            call.record(code);
        }
    }
}

impl HttpBody for MeteredBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let code = grpc_code(trailers);
                    this.finish(code);
                }
            }
            Poll::Ready(Some(Err(status))) => this.finish(Some(status.code())),
            Poll::Ready(None) => this.finish(None),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for MeteredBody {
    fn drop(&mut self) {
        // Ended before its status was sent: the client went away.
        if let Some(call) = self.call.take() {
            let code = call.code.unwrap_or(tonic::Code::Cancelled);
            call.record(code);
        }
    }
}
