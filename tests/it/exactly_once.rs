//! Exactly-once against a real cluster, driven by raw gRPC requests with
//! hand-made request ids: an id reused for another command is refused and
//! changes nothing on any node, the real retry replays, a client id the
//! cluster does not know but that claims earlier replies is refused as
//! "outcome unknown", and a caller at another address sending the same
//! client id cannot disturb the first client's retries.

use raftlock::pb;
use raftlock::pb::lease_client::LeaseClient;
use raftlock::pb::lock_client::LockClient;
use raftlock::status::{OUTCOME_KEY, OUTCOME_UNKNOWN};
use raftlock_client::{error::from_status, Error};
use tonic::transport::Channel;
use tonic::Code;

use crate::cluster::TestCluster;
use crate::connection_attacks::channel_from;

fn request_id(client: u128, seq: u64, acked_below: u64) -> Option<pb::RequestId> {
    Some(pb::RequestId {
        client_id: client.to_be_bytes().to_vec(),
        seq,
        acked_below,
        attempt: 0,
    })
}

fn acquire(id: Option<pb::RequestId>, name: &str, lease: u64) -> pb::AcquireRequest {
    pb::AcquireRequest {
        request_id: id,
        name: name.into(),
        owner: "owner".into(),
        lease,
        mode: pb::LockMode::Exclusive as i32,
        wait: false,
        ..Default::default()
    }
}

/// (owner, fence, count) of every holder of `name`, read on `node` alone.
async fn holders(cluster: &TestCluster, node: u64, name: &str) -> Vec<(String, u64, u32)> {
    let addr = format!("http://{}", cluster.addrs[&node].0);
    let mut locks = LockClient::connect(addr).await.unwrap();
    let described = locks
        .describe(pb::DescribeRequest {
            name: name.into(),
            local: true,
        })
        .await
        .unwrap()
        .into_inner();
    described
        .lock
        .map(|l| l.holders)
        .unwrap_or_default()
        .into_iter()
        .map(|h| (h.owner, h.fence, h.count))
        .collect()
}

/// Under the client id `client`, grants a lease (request 1) and takes "m"
/// on it (request 2), which must be granted: the lease, the Acquire and
/// its answer.
async fn lease_and_m(
    leases: &mut LeaseClient<Channel>,
    locks: &mut LockClient<Channel>,
    client: u128,
) -> (u64, pb::AcquireRequest, pb::AcquireResponse) {
    let lease = leases
        .grant(pb::LeaseGrantRequest {
            request_id: request_id(client, 1, 1),
            ttl_ms: 30_000,
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let take = acquire(request_id(client, 2, 2), "m", lease);
    let granted = locks.acquire(take.clone()).await.unwrap().into_inner();
    assert!(granted.acquired);
    (lease, take, granted)
}

/// A client reuses the request id of its granted Acquire of "m" for an
/// Acquire of "free" and for a Release of "m", through a follower. Both are
/// refused with INVALID_ARGUMENT, and every node still shows "m" held once
/// and "free" unheld; the real retry gets the original grant. Without the
/// state machine's fingerprint check, the reuse is answered `acquired: true`
/// for "free", which nobody holds, and the Release is answered as the
/// Acquire was.
#[tokio::test]
async fn a_reused_request_id_is_refused_and_changes_nothing() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let channel = Channel::from_shared(format!("http://{}", cluster.addrs[&follower].0))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut leases = LeaseClient::new(channel.clone());
    let mut locks = LockClient::new(channel);
    const CLIENT: u128 = 0x5eed_0000_0000_0000_0000_0000_0000_0001;

    let (lease, take_m, granted) = lease_and_m(&mut leases, &mut locks, CLIENT).await;
    assert_eq!(granted.count, 1);

    let other_lock = acquire(request_id(CLIENT, 2, 2), "free", lease);
    let refused = locks.acquire(other_lock).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("already used for a different command"),
        "{}",
        refused.message()
    );
    let release_m = pb::ReleaseRequest {
        request_id: request_id(CLIENT, 2, 2),
        name: "m".into(),
        owner: "owner".into(),
    };
    let refused = locks.release(release_m).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");

    let retried = locks.acquire(take_m).await.unwrap().into_inner();
    assert_eq!(
        (retried.acquired, retried.fence, retried.count),
        (true, granted.fence, 1),
        "the real retry replays the grant"
    );

    let applied = cluster.node(leader).status().applied_index;
    for node in cluster.running() {
        cluster.wait_applied(node, applied).await;
        let m = holders(&cluster, node, "m").await;
        assert_eq!(m, [("owner".to_string(), granted.fence, 1)], "node {node}");
        assert!(
            holders(&cluster, node, "free").await.is_empty(),
            "node {node}"
        );
    }
    cluster.shutdown().await;
}

/// A client id the cluster has never seen, whose request says it received
/// replies before (acked_below 4), is refused as FAILED_PRECONDITION with
/// `raftlock-outcome: unknown`, which the Rust client reads as
/// `Error::OutcomeUnknown`; nothing is granted. Without the check the
/// request is applied as if it were the client's first.
#[tokio::test]
async fn a_forgotten_client_is_refused_as_outcome_unknown() {
    let cluster = TestCluster::new(1).await;
    let addr = format!("http://{}", cluster.addrs[&1].0);
    let mut leases = LeaseClient::connect(addr).await.unwrap();
    let refused = leases
        .grant(pb::LeaseGrantRequest {
            request_id: request_id(0xf0f0, 5, 4),
            ttl_ms: 30_000,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    let outcome = refused.metadata().get(OUTCOME_KEY).map(|v| v.as_bytes());
    assert_eq!(outcome, Some(OUTCOME_UNKNOWN.as_bytes()));
    assert!(matches!(from_status(&refused), Error::OutcomeUnknown(_)));

    let client = cluster.client().await;
    let live = client.leases().await.unwrap();
    assert!(live.is_empty(), "nothing was granted: {live:?}");
    // The same client id starting over from 1 is admitted.
    let granted = leases
        .grant(pb::LeaseGrantRequest {
            request_id: request_id(0xf0f0, 1, 1),
            ttl_ms: 30_000,
        })
        .await;
    assert!(granted.is_ok(), "{granted:?}");
    cluster.shutdown().await;
}

/// Without authentication, sessions belong to a source address: a client
/// at 127.0.0.1 is granted a lock whose reply it loses, and a caller at
/// 127.0.0.2 (through a follower) sends requests under the same client id,
/// the last with seq and `acked_below` 2^63. The first client's retry still replays
/// its grant and its next request is applied. With sessions keyed by
/// client id alone, both were refused as "may or may not have been
/// applied".
#[tokio::test]
async fn another_source_under_the_same_client_id_cannot_disturb_its_retries() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    const CLIENT: u128 = 0x5eed_0000_0000_0000_0000_0000_0000_0002;
    // Each source address as another machine would be.
    let honest = channel_from(1, cluster.addrs[&leader].0).await;
    let mut leases = LeaseClient::new(honest.clone());
    let mut locks = LockClient::new(honest);
    let (_lease, take, granted) = lease_and_m(&mut leases, &mut locks, CLIENT).await;

    // Whatever the intruder is answered is its own business.
    let mut intruder = LeaseClient::new(channel_from(2, cluster.addrs[&follower].0).await);
    let far = 1u64 << 63;
    for (seq, acked_below) in [(1, 1), (far, far)] {
        let _ = intruder
            .grant(pb::LeaseGrantRequest {
                request_id: request_id(CLIENT, seq, acked_below),
                ttl_ms: 30_000,
            })
            .await;
    }

    let retried = locks
        .acquire(take)
        .await
        .unwrap_or_else(|e| panic!("the retry of the lost acquire: {e:?}"))
        .into_inner();
    assert_eq!(
        (retried.acquired, retried.fence, retried.count),
        (true, granted.fence, 1),
        "the retry replays the original grant"
    );
    let released = locks
        .release(pb::ReleaseRequest {
            request_id: request_id(CLIENT, 3, 3),
            name: "m".into(),
            owner: "owner".into(),
        })
        .await
        .unwrap_or_else(|e| panic!("the client's next request: {e:?}"))
        .into_inner();
    assert_eq!(released.remaining, 0);
    cluster.shutdown().await;
}
