//! Exactly-once sessions belong to an identity: another identity sending
//! requests under a client id it has seen (or guessed) gets a session of
//! its own and cannot touch the victim's sequence.

use super::*;

/// A client id `jobs` uses, which `billing` learns.
const JOBS_CLIENT: u128 = 0x7ab5_0000_0000_0000_0000_0000_0000_0001;

fn request_id(seq: u64, acked_below: u64) -> Option<pb::RequestId> {
    Some(pb::RequestId {
        client_id: JOBS_CLIENT.to_be_bytes().to_vec(),
        seq,
        acked_below,
        attempt: 0,
    })
}

/// The attack: `jobs` is granted a lock whose reply it loses;
/// `billing`, through a follower, sends requests under `jobs`'s client id,
/// the last with seq and `acked_below` 2^63. `jobs`'s retry of the acquire still
/// replays the original grant (same fence, count 1), and its next request
/// is applied. With sessions keyed by client id alone, billing's request
/// moved `jobs`'s session past 2^63: the retry and the release both failed
/// with "may or may not have been applied".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_identity_under_the_same_client_id_cannot_disturb_its_retries() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = cluster(&dir).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let jobs = Raw::new(&cluster, leader, Some(JOBS_TOKEN));
    let lease = jobs
        .lease()
        .grant(jobs.req(pb::LeaseGrantRequest {
            request_id: request_id(1, 1),
            ttl_ms: 60_000,
        }))
        .await
        .expect("jobs grants a lease")
        .into_inner()
        .id;
    let take = pb::AcquireRequest {
        request_id: request_id(2, 2),
        name: "jobs/nightly".into(),
        owner: "jobs-task".into(),
        lease,
        ..Default::default()
    };
    let granted = jobs
        .lock()
        .acquire(jobs.req(take.clone()))
        .await
        .expect("jobs takes jobs/nightly")
        .into_inner();
    assert!(granted.acquired);

    let billing = Raw::new(&cluster, follower, Some(BILLING_TOKEN));
    // Whatever billing is answered is its own business.
    let far = 1u64 << 63;
    for (seq, acked_below) in [(1, 1), (far, far)] {
        let _ = billing
            .lease()
            .grant(billing.req(pb::LeaseGrantRequest {
                request_id: request_id(seq, acked_below),
                ttl_ms: 60_000,
            }))
            .await;
    }

    let retried = jobs
        .lock()
        .acquire(jobs.req(take))
        .await
        .unwrap_or_else(|e| panic!("jobs's retry of its lost acquire: {e:?}"))
        .into_inner();
    assert_eq!(
        (retried.acquired, retried.fence, retried.count),
        (true, granted.fence, 1),
        "the retry replays the original grant"
    );
    let released = jobs
        .lock()
        .release(jobs.req(pb::ReleaseRequest {
            request_id: request_id(3, 3),
            name: "jobs/nightly".into(),
            owner: "jobs-task".into(),
        }))
        .await
        .unwrap_or_else(|e| panic!("jobs's next request: {e:?}"))
        .into_inner();
    assert_eq!(released.remaining, 0, "one release frees the lock");
    cluster.shutdown().await;
}
