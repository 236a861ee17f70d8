//! Layers of settings: one key from every layer lands in one field, the
//! last layer's value wins, and a key `Config` does not know is refused.

use std::time::Duration;

use serde::Serialize;

use raftlock_raft::ConfigError;

use super::ConfigLayers;

/// An overlay as a front end writes one: `None` leaves the key alone.
#[derive(Serialize, Default)]
struct Overlay {
    heartbeat_ms: Option<u64>,
    election_timeout_ms: Option<u64>,
    admin_addr: Option<String>,
}

#[test]
fn later_layers_win_key_by_key_over_the_defaults() {
    let file = "heartbeat_ms = 60\nelection_timeout_ms = 600\nquota_leases = 7\n";
    let env = Overlay {
        heartbeat_ms: Some(70),
        election_timeout_ms: Some(700),
        ..Overlay::default()
    };
    let flags = Overlay {
        heartbeat_ms: Some(80),
        ..Overlay::default()
    };
    let layers = ConfigLayers::default()
        .toml("file", file)
        .and_then(|l| l.overlay("env", &env))
        .and_then(|l| l.overlay("flags", &flags))
        .expect("layers fit");
    let config = layers.build().expect("valid");
    assert_eq!(config.replication.heartbeat, Duration::from_millis(80));
    assert_eq!(
        config.replication.election_timeout,
        Duration::from_millis(700)
    );
    assert_eq!(config.serving.quota_leases, 7);
    assert_eq!(
        config.replication.snapshot_after_entries, 10_000,
        "the default"
    );
    assert_eq!(layers.origin("heartbeat_ms"), Some("flags"));
    assert_eq!(layers.origin("election_timeout_ms"), Some("env"));
    assert_eq!(layers.origin("quota_leases"), Some("file"));
    assert_eq!(layers.origin("snapshot_after"), None);
}

/// Without layers the config is `Config::default()`: `raftlock serve`
/// with no flags and `Node::start(Config::default())` run the same node.
#[test]
fn no_layers_is_the_default_config() {
    let config = ConfigLayers::default().build().expect("valid");
    assert_eq!(config, crate::Config::default());
}

/// A typo in a file, or in a front end's overlay, stops the build with
/// the key and the layer named; without `deny_unknown_fields` on `Config`
/// the typo would be dropped and the default used.
#[test]
fn an_unknown_key_is_refused_with_its_layer() {
    let err = ConfigLayers::default()
        .toml("config file node.toml", "heartbeat = 60\n")
        .expect_err("`heartbeat` is `heartbeat_ms`");
    // The TOML reader's own error is kept as the source, not as words.
    let ConfigError::Layer { layer, source } = &err else {
        panic!("not a layer error: {err:?}");
    };
    assert_eq!(layer, "config file node.toml");
    assert!(source.get().is::<toml::de::Error>(), "{source:?}");
    let err = err.to_string();
    assert!(err.starts_with("config file node.toml: "), "{err}");
    assert!(err.contains("unknown field `heartbeat`"), "{err}");

    #[derive(Serialize)]
    struct Typo {
        hearbeat_ms: u64,
    }
    let err = ConfigLayers::default()
        .overlay("flags", &Typo { hearbeat_ms: 1 })
        .expect_err("a key Config does not know")
        .to_string();
    assert!(err.starts_with("flags: "), "{err}");
    assert!(err.contains("hearbeat_ms"), "{err}");
}

/// `admin_addr = "off"` turns the listener off but still names the key, so
/// a front end's own default (serve's 127.0.0.1:7381) stays off too.
#[test]
fn admin_addr_off_is_none_yet_named() {
    let off = Overlay {
        admin_addr: Some("off".into()),
        ..Overlay::default()
    };
    let layers = ConfigLayers::default()
        .toml("file", "admin_addr = \"127.0.0.1:9000\"\n")
        .and_then(|l| l.overlay("flags", &off))
        .expect("layers fit");
    assert_eq!(layers.build().expect("valid").serving.admin_addr, None);
    assert_eq!(layers.origin("admin_addr"), Some("flags"));
}

/// Values are checked once merged: a flag may fix what the file got
/// wrong, and what is still wrong is named by its key.
#[test]
fn the_merged_settings_are_validated() {
    let file = ConfigLayers::default()
        .toml("file", "heartbeat_ms = 200\n")
        .expect("fits");
    let err = file.build().expect_err("election 300 ms < 3 heartbeats");
    assert!(err.to_string().contains("3 heartbeats"), "{err}");
    let fixed = file
        .overlay(
            "flags",
            &Overlay {
                election_timeout_ms: Some(600),
                ..Overlay::default()
            },
        )
        .expect("fits");
    assert!(fixed.build().is_ok());
}
