//! The Coordination service on a real 3-node cluster: holds found again by
//! their owner token, read-write steps with intents, election records and
//! schedule fires — each kept through the loss of the Raft leader, and a
//! bad request refused with nothing changed.

use std::collections::HashMap;
use std::time::Duration;

use raftlock_client::{Error, ReadWriteOp};

use crate::cluster::TestCluster;

const TTL: Duration = Duration::from_secs(30);

#[tokio::test]
async fn holds_intents_records_and_fires_outlive_the_raft_leader() {
    let mut cluster = TestCluster::new(3).await;
    let client = cluster.client().await;

    let held = client
        .hold("job", "tok-a", TTL)
        .await
        .unwrap()
        .expect("free");
    assert_eq!(client.hold("job", "tok-b", TTL).await.unwrap(), None);

    let step = |op, owner: &'static str| {
        let client = client.clone();
        async move { client.read_write("rw", owner, op, TTL, true).await.unwrap() }
    };
    assert!(step(ReadWriteOp::Read, "r1").await.granted);
    assert!(
        !step(ReadWriteOp::Write, "w").await.granted,
        "a reader holds it"
    );
    assert!(
        !step(ReadWriteOp::Read, "r2").await.granted,
        "w's intent keeps r2 out"
    );

    let mut metadata = HashMap::new();
    metadata.insert("pod".to_string(), "app-0".to_string());
    let led = client
        .lead("leader", "tok-a", TTL, metadata.clone())
        .await
        .unwrap();
    assert_eq!((led.holder.as_str(), led.transitions), ("tok-a", 0));
    assert!(client.claim_fire("cron", 60.0).await.unwrap());

    let leader = cluster.wait_for_leader().await;
    cluster.kill(leader).await;
    let new_leader = cluster.wait_for_leader().await;
    assert_ne!(leader, new_leader);
    let client = cluster.client_of(new_leader).await;

    // The same owner renews its hold: same fence; the intent still lives.
    let renewed = client.hold("job", "tok-a", TTL).await.unwrap();
    assert_eq!(renewed, Some(held));
    let state = client.read_write_state("rw").await.unwrap();
    assert_eq!((state.readers, state.waiting_writers), (1, 1));
    assert!(
        client
            .read_write("rw", "r1", ReadWriteOp::ReleaseRead, TTL, false)
            .await
            .unwrap()
            .granted
    );
    let write = client
        .read_write("rw", "w", ReadWriteOp::Write, TTL, true)
        .await
        .unwrap();
    assert!(write.granted && !write.poisoned);
    assert_eq!(
        client.read_write_state("rw").await.unwrap().generation,
        write.generation
    );

    let record = client
        .leader_record("leader")
        .await
        .unwrap()
        .expect("tok-a leads");
    assert_eq!(
        (record.holder.as_str(), record.metadata),
        ("tok-a", metadata)
    );
    assert!(
        !client.claim_fire("cron", 60.0).await.unwrap(),
        "a fire is won once"
    );
    assert_eq!(client.last_fired("cron").await.unwrap(), Some(60.0));

    assert!(client.unhold("leader", "tok-a").await.unwrap());
    assert_eq!(client.leader_record("leader").await.unwrap(), None);
    cluster.shutdown().await;
}

#[tokio::test]
async fn bad_coordination_requests_are_refused_and_change_nothing() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    let refused = |result: Result<_, Error>| match result {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("not refused as invalid: {other:?}"),
    };
    refused(client.hold("job", "tok", Duration::ZERO).await.map(|_| ()));
    refused(client.claim_fire("cron", f64::NAN).await.map(|_| ()));
    refused(client.claim_fire("cron", -5.0).await.map(|_| ()));
    let bad = HashMap::from([(String::new(), "v".to_string())]);
    refused(client.lead("e", "tok", TTL, bad).await.map(|_| ()));
    assert_eq!(client.describe("job").await.unwrap(), None);
    assert_eq!(client.last_fired("cron").await.unwrap(), None);
    assert_eq!(client.leader_record("e").await.unwrap(), None);
    cluster.shutdown().await;
}
