//! `Node::start` fails with a [`NodeError`] whose variant and source say
//! what went wrong, and leaves nothing running: an embedding application
//! can tell a taken port from bad settings from a data dir it must not use.

use std::io::ErrorKind;

use raftlock::{Config, ConfigError, Node, NodeError};
use raftlock_raft::node::StartError;

fn config_in(dir: &std::path::Path) -> Config {
    let mut config = Config::default();
    config.replication.data_dir = dir.join("data");
    config.replication.client_addr = "127.0.0.1:0".into();
    config.replication.peer_addr = "127.0.0.1:0".into();
    config
}

#[tokio::test]
async fn each_way_a_start_fails_is_its_own_variant() {
    let dir = tempfile::tempdir().expect("temp dir");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut config = config_in(dir.path());
    config.replication.client_addr = taken.local_addr().expect("addr").to_string();
    match Node::start(config).await.map(|_| ()) {
        Err(NodeError::Listen {
            which: "client",
            source,
            ..
        }) => assert_eq!(source.kind(), ErrorKind::AddrInUse),
        other => panic!("a taken client port: {other:?}"),
    }

    let mut config = config_in(dir.path());
    config.serving.client_cert_auth = true;
    match Node::start(config).await.map(|_| ()) {
        Err(NodeError::Config(ConfigError::ClientCertAuthWithoutTls)) => {}
        other => panic!("client certificates without TLS: {other:?}"),
    }

    let mut config = config_in(dir.path());
    config.serving.auth_file = Some(dir.path().join("missing-auth.toml"));
    match Node::start(config).await.map(|_| ()) {
        Err(NodeError::AuthFile { path, .. }) => assert!(path.contains("missing-auth"), "{path}"),
        other => panic!("a missing auth file: {other:?}"),
    }

    // A data dir that is a file: replication cannot open it.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a dir").expect("write");
    let mut config = config_in(dir.path());
    config.replication.data_dir = file;
    match Node::start(config).await.map(|_| ()) {
        Err(NodeError::Replication(StartError::Io { .. })) => {}
        other => panic!("a data dir that is a file: {other:?}"),
    }

    // Nothing was left running: the same settings start a node now.
    let node = Node::start(config_in(dir.path())).await.expect("starts");
    node.shutdown().await;
}
