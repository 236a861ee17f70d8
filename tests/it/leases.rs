//! Lease calls over the keep-alive stream.

use std::time::Duration;

use raftlock::Error;

use crate::cluster::TestCluster;

#[tokio::test]
async fn keep_alive_stream_renews_reports_gone_leases_and_ends_on_bad_input() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let live = client.grant_lease(Duration::from_secs(5)).await.unwrap();
    let gone = client.grant_lease(Duration::from_secs(5)).await.unwrap();
    client.revoke(gone).await.unwrap();

    let mut stream = client.keep_alive_stream().await.unwrap();
    assert_eq!(
        stream.keep_alive(live).await.unwrap(),
        Duration::from_secs(5)
    );
    // A gone lease is an answer, not the end of the stream.
    assert!(matches!(
        stream.keep_alive(gone).await,
        Err(Error::LeaseExpired(_))
    ));
    assert_eq!(
        stream.keep_alive(live).await.unwrap(),
        Duration::from_secs(5)
    );
    // Bad input ends the stream with a clear error and changes nothing.
    assert!(matches!(
        stream.keep_alive(0).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(stream.keep_alive(live).await.is_err());
    // The lease is still there, and a new stream works.
    let mut again = client.keep_alive_stream().await.unwrap();
    assert_eq!(
        again.keep_alive(live).await.unwrap(),
        Duration::from_secs(5)
    );
    cluster.shutdown().await;
}
