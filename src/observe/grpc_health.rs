//! The standard gRPC health service (`grpc.health.v1.Health`) on the
//! client listener, for load balancers and `grpc_health_probe`.
//!
//! SERVING means ready (see `raftlock_raft::replica::health`): the node knows a
//! leader and has applied its log. The overall service (`""`) and each
//! `raftlock.v1` service answer alike; other names are unknown. The
//! answer is computed when asked, so no task keeps it up to date; `Watch`
//! re-checks every second and sends each change.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use raftlock_raft::Replica;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

/// Service names the health service knows.
const SERVICES: [&str; 6] = [
    "",
    "raftlock.v1.Lease",
    "raftlock.v1.Lock",
    "raftlock.v1.Election",
    "raftlock.v1.Coordination",
    "raftlock.v1.Cluster",
];

/// How often `Watch` re-checks.
const WATCH_PERIOD: Duration = Duration::from_secs(1);

/// The health service of `node`.
pub fn health_service(node: Arc<Replica>) -> HealthServer<NodeHealth> {
    HealthServer::new(NodeHealth { node })
}

/// Answers health checks from the node's readiness.
pub struct NodeHealth {
    node: Arc<Replica>,
}

/// The status of `service` on `node`.
fn serving(node: &Replica, service: &str) -> ServingStatus {
    if !SERVICES.contains(&service) {
        ServingStatus::ServiceUnknown
    } else if node.readiness().ok {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    }
}

fn answer(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status.into(),
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for NodeHealth {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = request.into_inner().service;
        match serving(&self.node, &service) {
            ServingStatus::ServiceUnknown => {
                Err(Status::not_found(format!("unknown service {service:?}")))
            }
            status => Ok(Response::new(answer(status))),
        }
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let service = request.into_inner().service;
        let node = self.node.clone();
        // State: the last status sent, and whether the node stopped.
        let start: (Option<ServingStatus>, bool) = (None, false);
        let stream = futures::stream::unfold(start, move |(last, done)| {
            let node = node.clone();
            let service = service.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    if last.is_some() {
                        tokio::select! {
                            _ = tokio::time::sleep(WATCH_PERIOD) => {}
                            _ = node.stopped() => {
                                let stopped = ServingStatus::NotServing;
                                return Some((Ok(answer(stopped)), (Some(stopped), true)));
                            }
                        }
                    }
                    let now = serving(&node, &service);
                    if last != Some(now) {
                        return Some((Ok(answer(now)), (Some(now), false)));
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}
