use super::*;

fn with(replication: raftlock_raft::Config) -> Config {
    Config {
        replication,
        ..Config::default()
    }
}

#[test]
fn warns_when_exposed_without_tls_or_auth() {
    assert_eq!(Config::default().exposure_warning(), None);
    let local = with(raftlock_raft::Config {
        client_addr: "localhost:7379".into(),
        peer_addr: "[::1]:7380".into(),
        ..Default::default()
    });
    assert_eq!(local.exposure_warning(), None);
    let exposed = raftlock_raft::Config {
        client_addr: "0.0.0.0:7379".into(),
        ..Default::default()
    };
    let warning = with(exposed.clone()).exposure_warning().expect("a warning");
    assert!(warning.contains("0.0.0.0:7379") && !warning.contains("7380"));
    let named = with(raftlock_raft::Config {
        peer_addr: "node1.example:7380".into(),
        ..Default::default()
    });
    assert!(named.exposure_warning().is_some());
    let with_tls = with(raftlock_raft::Config {
        tls_cert: Some("n.crt".into()),
        tls_key: Some("n.key".into()),
        tls_ca: Some("ca.crt".into()),
        ..exposed
    });
    let warning = with_tls.exposure_warning().expect("a warning without auth");
    assert!(
        warning.contains("without client authentication"),
        "{warning}"
    );
    let mut with_auth = with_tls.clone();
    with_auth.serving.auth_file = Some("auth.toml".into());
    assert_eq!(with_auth.exposure_warning(), None);
    let mut with_certs = with_tls;
    with_certs.serving.client_cert_auth = true;
    assert_eq!(with_certs.exposure_warning(), None);
}

#[test]
fn client_certificates_need_tls_and_connection_caps_admit_someone() {
    let mut auth_only = Config::default();
    auth_only.serving.client_cert_auth = true;
    assert_eq!(
        auth_only.validate(),
        Err(ConfigError::ClientCertAuthWithoutTls)
    );
    let mut caps = Config::default();
    caps.serving.max_connections_per_ip = caps.serving.max_client_connections + 1;
    assert!(matches!(
        caps.validate(),
        Err(ConfigError::ConnectionLimits { .. })
    ));
    let mut delay = Config::default();
    delay.serving.lock_delay = Duration::from_millis(MAX_LOCK_DELAY_MS + 1);
    assert!(matches!(
        delay.validate(),
        Err(ConfigError::OutOfRange {
            key: "lock_delay_ms",
            ..
        })
    ));
}

/// One flat table: each part takes its keys, and a key neither knows is
/// refused (the serving part alone would let it through).
#[test]
fn one_flat_table_fills_both_parts_and_refuses_unknown_keys() {
    let config: Config = toml::from_str(
        "heartbeat_ms = 60\nelection_timeout_ms = 600\nauth_file = \"a.toml\"\nlock_delay_ms = 5\nadmin_addr = \"off\"\n",
    )
    .expect("parses");
    assert_eq!(config.replication.heartbeat, Duration::from_millis(60));
    assert_eq!(config.serving.auth_file, Some("a.toml".into()));
    assert_eq!(config.serving.lock_delay, Duration::from_millis(5));
    assert_eq!(config.serving.admin_addr, None);
    let err = toml::from_str::<Config>("quota_streams = 3\nheartbeat = 5\n")
        .expect_err("unknown key")
        .to_string();
    assert!(err.contains("unknown field `heartbeat`"), "{err}");
    let printed = toml::to_string(&config).expect("prints");
    assert_eq!(
        toml::from_str::<Config>(&printed).expect("reads back"),
        config
    );
}
