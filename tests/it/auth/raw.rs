//! The attacker's and the honest client's raw gRPC calls: every RPC of the
//! client API once, as one identity, aimed at what a victim holds.

use super::*;

/// Raw gRPC to one node, with a token or none: exactly what a hostile
/// client can send.
pub(super) struct Raw {
    channel: Channel,
    token: Option<&'static str>,
}

impl Raw {
    pub(super) fn new(cluster: &TestCluster, node: u64, token: Option<&'static str>) -> Raw {
        let addr = cluster.addrs[&node].0;
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect_lazy();
        Raw { channel, token }
    }

    pub(super) fn req<T>(&self, message: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(message);
        if let Some(token) = self.token {
            let value = format!("Bearer {token}").parse().expect("metadata");
            req.metadata_mut().insert("authorization", value);
        }
        req.set_timeout(Duration::from_secs(10));
        req
    }

    pub(super) fn lease(&self) -> LeaseClient<Channel> {
        LeaseClient::new(self.channel.clone())
    }
    pub(super) fn lock(&self) -> LockClient<Channel> {
        LockClient::new(self.channel.clone())
    }
    pub(super) fn election(&self) -> ElectionClient<Channel> {
        ElectionClient::new(self.channel.clone())
    }
    pub(super) fn cluster(&self) -> ClusterClient<Channel> {
        ClusterClient::new(self.channel.clone())
    }

    pub(super) async fn grant(&self) -> Result<u64, Status> {
        let req = pb::LeaseGrantRequest {
            request_id: None,
            ttl_ms: 60_000,
        };
        Ok(self.lease().grant(self.req(req)).await?.into_inner().id)
    }

    pub(super) async fn acquire(&self, name: &str, owner: &str, lease: u64) -> Result<u64, Status> {
        let req = pb::AcquireRequest {
            name: name.into(),
            owner: owner.into(),
            lease,
            ..Default::default()
        };
        let reply = self.lock().acquire(self.req(req)).await?.into_inner();
        assert!(reply.acquired, "{name} was busy");
        Ok(reply.fence)
    }

    pub(super) async fn campaign(
        &self,
        name: &str,
        owner: &str,
        lease: u64,
    ) -> Result<u64, Status> {
        let req = pb::CampaignRequest {
            name: name.into(),
            owner: owner.into(),
            lease,
            value: b"v".to_vec(),
            ..Default::default()
        };
        Ok(self
            .election()
            .campaign(self.req(req))
            .await?
            .into_inner()
            .fence)
    }

    /// Every RPC of the client API once, as this caller, aimed at what
    /// `victim` holds: `(rpc, outcome)`.
    pub(super) async fn every_rpc(
        &self,
        victim: &Victim,
    ) -> Vec<(&'static str, Result<(), Status>)> {
        let lease = victim.lease;
        let lock = |name: &str, owner: &str| (name.to_string(), owner.to_string());
        let (name, owner) = lock(&victim.lock, &victim.owner);
        let (election, candidate) = lock(&victim.election, &victim.candidate);
        let mut out = Vec::new();
        macro_rules! call {
            ($rpc:literal, $e:expr) => {
                out.push(($rpc, $e.await.map(drop)));
            };
        }
        call!("Lease.Grant", self.grant());
        call!(
            "Lease.Revoke",
            self.lease().revoke(self.req(pb::LeaseRevokeRequest {
                request_id: None,
                id: lease,
            }))
        );
        call!(
            "Lease.SetTtl",
            self.lease().set_ttl(self.req(pb::LeaseSetTtlRequest {
                request_id: None,
                id: lease,
                ttl_ms: 1,
            }))
        );
        call!(
            "Lease.KeepAlive",
            self.lease()
                .keep_alive(self.req(pb::LeaseKeepAliveRequest { id: lease }))
        );
        call!("Lease.KeepAliveStream", async {
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tx.send(pb::LeaseKeepAliveRequest { id: lease })
                .await
                .expect("queue a keep-alive");
            let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
            let mut replies = self.lease().keep_alive_stream(self.req(stream)).await?;
            let reply = replies.get_mut().message().await?;
            drop(tx);
            reply.ok_or_else(|| Status::unknown("stream ended without a reply"))
        });
        call!(
            "Lease.RevokeAll",
            self.lease().revoke_all(self.req(pb::LeaseRevokeAllRequest {
                request_id: None,
                account: Some(pb::lease_revoke_all_request::Account::Identity(
                    "jobs".into()
                )),
            }))
        );
        call!(
            "Lease.TimeToLive",
            self.lease()
                .time_to_live(self.req(pb::LeaseTimeToLiveRequest {
                    id: lease,
                    local: false
                }))
        );
        call!(
            "Lease.List",
            self.lease()
                .list(self.req(pb::LeaseListRequest { local: false }))
        );
        call!(
            "Lock.Acquire (re-enter as the victim)",
            self.acquire(&name, &owner, lease)
        );
        call!(
            "Lock.Acquire (victim's lease)",
            self.acquire("shared/other", "intruder", lease)
        );
        call!(
            "Lock.Release",
            self.lock().release(self.req(pb::ReleaseRequest {
                request_id: None,
                name: name.clone(),
                owner: owner.clone(),
            }))
        );
        call!(
            "Lock.Cancel",
            self.lock().cancel(self.req(pb::CancelRequest {
                request_id: None,
                name: name.clone(),
                owner: owner.clone(),
            }))
        );
        call!(
            "Lock.ForceRelease",
            self.lock().force_release(self.req(pb::ForceReleaseRequest {
                request_id: None,
                name: name.clone(),
            }))
        );
        call!(
            "Lock.Check",
            self.lock().check(self.req(pb::CheckRequest {
                name: name.clone(),
                fence: victim.fence,
                local: false,
            }))
        );
        call!(
            "Lock.Describe",
            self.lock().describe(self.req(pb::DescribeRequest {
                name: name.clone(),
                local: false,
            }))
        );
        call!(
            "Lock.List",
            self.lock().list(self.req(pb::ListLocksRequest::default()))
        );
        call!(
            "Election.Campaign",
            self.campaign(&election, "intruder", lease)
        );
        call!(
            "Election.Proclaim",
            self.election().proclaim(self.req(pb::ProclaimRequest {
                request_id: None,
                name: election.clone(),
                owner: candidate.clone(),
                value: b"forged".to_vec(),
            }))
        );
        call!(
            "Election.Resign",
            self.election().resign(self.req(pb::ResignRequest {
                request_id: None,
                name: election.clone(),
                owner: candidate.clone(),
            }))
        );
        call!(
            "Election.Leader",
            self.election().leader(self.req(pb::LeaderRequest {
                name: election.clone(),
                local: false,
            }))
        );
        call!(
            "Election.Observe",
            self.election().observe(self.req(pb::ObserveRequest {
                name: election.clone(),
            }))
        );
        call!(
            "Cluster.Status",
            self.cluster()
                .status(self.req(pb::StatusRequest::default()))
        );
        call!(
            "Cluster.AddLearner",
            self.cluster().add_learner(self.req(pb::AddLearnerRequest {
                id: 9,
                peer_addr: "127.0.0.1:1".into(),
                client_addr: "127.0.0.1:2".into(),
            }))
        );
        call!(
            "Cluster.Promote",
            self.cluster()
                .promote(self.req(pb::PromoteRequest { id: 3 }))
        );
        call!(
            "Cluster.Remove",
            self.cluster().remove(self.req(pb::RemoveRequest { id: 3 }))
        );
        out
    }
}

/// What the honest `jobs` client holds: a lease, a lock and a leadership.
pub(super) struct Victim {
    pub(super) lease: u64,
    pub(super) lock: String,
    pub(super) owner: String,
    pub(super) fence: u64,
    pub(super) election: String,
    pub(super) candidate: String,
}

pub(super) async fn victim(jobs: &Raw) -> Victim {
    let lease = jobs.grant().await.expect("jobs grants a lease");
    let fence = jobs
        .acquire("shared/db", "jobs-task", lease)
        .await
        .expect("jobs takes shared/db");
    jobs.campaign("shared/leader", "jobs-cand", lease)
        .await
        .expect("jobs leads shared/leader");
    Victim {
        lease,
        lock: "shared/db".into(),
        owner: "jobs-task".into(),
        fence,
        election: "shared/leader".into(),
        candidate: "jobs-cand".into(),
    }
}
