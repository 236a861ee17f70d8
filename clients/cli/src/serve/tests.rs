//! `raftlock serve`'s settings: flags, env, file and defaults merged.

use clap::Parser;

use crate::{Cli, Command, LogFormat};

/// The config `raftlock serve ARGS` describes, and the log format.
fn parse(args: &[&str]) -> (raftlock::Config, LogFormat) {
    let argv = ["raftlock", "serve"].iter().chain(args);
    let cli = Cli::try_parse_from(argv).expect("flags parse");
    let Command::Serve(serve) = cli.command else {
        panic!("not serve")
    };
    (serve.to_config().expect("valid config"), cli.log_format)
}

#[test]
fn admin_listener_is_off_unless_asked_for() {
    let (config, format) = parse(&[]);
    assert_eq!(config.serving.admin_addr, None);
    assert_eq!(format, LogFormat::Text);
    let (config, format) = parse(&["--admin-addr", "127.0.0.1:7381", "--log-format", "json"]);
    assert_eq!(config.serving.admin_addr.as_deref(), Some("127.0.0.1:7381"));
    assert_eq!(format, LogFormat::Json);
    let (config, _) = parse(&["--admin-addr", "off"]);
    assert_eq!(config.serving.admin_addr, None);
}

#[test]
fn connection_limits_come_from_flags_and_are_checked() {
    let (config, _) = parse(&[
        "--max-client-connections",
        "100",
        "--max-connections-per-ip",
        "10",
        "--handshake-timeout-ms",
        "2000",
        "--idle-timeout-ms",
        "30000",
    ]);
    let limits = config.client_listener_limits();
    assert_eq!(
        (limits.max_connections, limits.max_connections_per_ip),
        (100, 10)
    );
    assert_eq!(limits.handshake_timeout, std::time::Duration::from_secs(2));
    assert_eq!(
        limits.keepalive_interval,
        std::time::Duration::from_millis(7500)
    );
    let peer = config.replication.peer_listener_limits();
    assert_eq!(peer.idle_timeout, std::time::Duration::from_secs(30));
    let argv = ["raftlock", "serve", "--max-connections-per-ip", "0"];
    let Command::Serve(serve) = Cli::try_parse_from(argv).expect("flags parse").command else {
        panic!("not serve")
    };
    let err = serve.to_config().expect_err("a cap of 0 admits nobody");
    assert!(err.contains("max_connections_per_ip"), "{err}");
}

/// The quotas come from flags (and default to the documented values), the
/// leader's entries carry them, and a quota of 0 is refused with its key.
#[test]
fn quotas_come_from_flags_and_are_checked() {
    let (config, _) = parse(&[]);
    let defaults = raftlock_storage::Quotas::default();
    assert_eq!(config.serving.quotas(), defaults);
    assert_eq!(
        (defaults.leases, defaults.clients, defaults.waiters),
        (10_000, 10_000, 10_000)
    );
    assert_eq!(config.serving.quota_streams, 10_000);
    let (config, _) = parse(&[
        "--quota-leases",
        "5",
        "--quota-clients",
        "6",
        "--quota-waiters",
        "7",
        "--quota-streams",
        "8",
    ]);
    let quotas = config.serving.quotas();
    assert_eq!((quotas.leases, quotas.clients, quotas.waiters), (5, 6, 7));
    assert_eq!(config.serving.quota_streams, 8);
    let argv = ["raftlock", "serve", "--quota-leases", "0"];
    let Command::Serve(serve) = Cli::try_parse_from(argv).expect("flags parse").command else {
        panic!("not serve")
    };
    let err = serve
        .to_config()
        .expect_err("a quota of 0 refuses everyone");
    assert!(err.contains("quota_leases"), "{err}");
}

fn args_of(argv: &[&str]) -> (super::ServeArgs, clap::ArgMatches) {
    use clap::{CommandFactory, FromArgMatches};
    let argv = ["raftlock", "serve"].iter().chain(argv);
    let matches = Cli::command()
        .try_get_matches_from(argv)
        .expect("flags parse");
    let cli = Cli::from_arg_matches(&matches).expect("flags parse");
    let Command::Serve(serve) = cli.command else {
        panic!("not serve")
    };
    let serve_matches = matches.subcommand_matches("serve").expect("serve").clone();
    (*serve, serve_matches)
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(f.path(), text).expect("write");
    f
}

/// A key the file does not know — a typo, or the old `heartbeat` for
/// `heartbeat_ms` — stops the node with the key named; so does a value
/// out of range, from the file or a flag. Without `deny_unknown_fields`
/// the typo is ignored and the node runs on the default.
#[test]
fn unknown_keys_and_values_out_of_range_are_refused_with_the_key() {
    for (text, named) in [
        ("idd = 3\n", "idd"),
        ("heartbeat = 500\n", "heartbeat"),
        ("client_adr = \"x\"\n", "client_adr"),
        (
            "election_timeout_ms = 10000000000000\n",
            "election_timeout_ms",
        ),
        ("initial_cluster = [\"2=a\"]\n", "2=a"),
    ] {
        let f = file(text);
        let path = f.path().to_str().expect("utf-8 path");
        let (serve, _) = args_of(&["--config", path]);
        let err = serve.to_config().expect_err(text);
        assert!(err.contains(named), "{text}: {err}");
    }
    let (serve, _) = args_of(&["--heartbeat-ms", "20000"]);
    let err = serve.to_config().expect_err("heartbeat of 20 s");
    assert!(err.contains("heartbeat_ms = 20000"), "{err}");
}

/// The file's keys are the flags' names, and the printed config says
/// where each value came from; it parses back to the same settings.
#[test]
fn print_config_names_each_source_and_reads_back() {
    let f = file(
        "id = 2\nheartbeat_ms = 60\ninitial_cluster = [\"2=127.0.0.1:7380/127.0.0.1:7379\"]\n",
    );
    let path = f.path().to_str().expect("utf-8 path");
    let (serve, matches) = args_of(&["--config", path, "--election-timeout-ms", "400"]);
    let printed = serve.print_config(Some(&matches)).expect("print");
    let source_of = |key: &str| {
        printed
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .and_then(|l| l.rsplit_once("# "))
            .map(|(_, s)| s.to_string())
            .unwrap_or_else(|| panic!("{key} missing from\n{printed}"))
    };
    assert_eq!(source_of("heartbeat_ms"), "file");
    assert_eq!(source_of("initial_cluster"), "file");
    assert_eq!(source_of("election_timeout_ms"), "flag");
    assert_eq!(source_of("snapshot_after"), "default");
    let back: raftlock::Config = toml::from_str(&printed).expect("printed config parses");
    assert_eq!(back, serve.to_config().expect("valid"));
}

/// Every setting flag of `serve` is a key of `Config`, by the same name:
/// the flags are one layer of `ConfigLayers`, read by `Config`'s own
/// `Deserialize`, so a flag whose field is misnamed is refused here
/// rather than dropped.
#[test]
fn every_setting_flag_is_a_config_key() {
    let options = crate::serve_options();
    let mut argv = vec![];
    for option in options.iter().filter(|o| o.flag != "config") {
        argv.push(format!("--{}", option.flag));
        if !option.switch {
            let value = match option.flag.as_str() {
                "initial-cluster" => "1=127.0.0.1:7380/127.0.0.1:7379",
                _ => "1",
            };
            argv.push(value.to_owned());
        }
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (serve, _) = args_of(&argv);
    let layers = raftlock::config_layers::ConfigLayers::default()
        .overlay("flags", &serve)
        .expect("every flag is a config key");
    for option in options.iter().filter(|o| o.flag != "config") {
        let key = option.flag.replace('-', "_");
        assert_eq!(layers.origin(&key), Some("flags"), "--{}", option.flag);
    }
}
