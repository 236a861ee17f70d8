//! What the README and docs promise of the command line, run as typed
//! against the real binary: bare seconds wherever a duration is taken, an
//! unknown flag of `lock` refused as a flag (125) rather than run as the
//! command, `auth create-token` output that `auth check` and a node
//! accept, the complete key list in a config error, `snapshot save`
//! that keeps an existing file, and a man page for every command with its
//! exit codes.

use std::time::Duration;

use super::{describe, lease_cmd, next_line, node_dir, raftlock, run, spawn, stderr_of, BIN};
use crate::cluster::TestCluster;

/// `raftlock lock --ttl 10 --timeout 5 --grace 1 --lock-delay 1 -- true`
/// and `raftlock elect NAME VALUE --ttl 10`: bare numbers are seconds on
/// every duration flag, as the README says of TTLs. Before, `lock` and
/// `elect` refused them ("\"10\" has no unit", exit 125 and 2), and this
/// test failed at the first `lock`.
#[tokio::test]
async fn cli_duration_flags_take_bare_seconds() {
    let cluster = TestCluster::new(1).await;
    let out = run(
        &cluster,
        &[
            "lock",
            "bare",
            "--ttl",
            "10",
            "--timeout",
            "5",
            "--grace",
            "1",
            "--lock-delay",
            "1",
            "--",
            "true",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let out = run(&cluster, &["lock", "bare", "--timeout", "0", "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));

    let (mut elect, mut lines) = spawn(&cluster, &["elect", "bare-e", "v1", "--ttl", "10"]);
    let line = tokio::select! {
        line = next_line(&mut lines) => line,
        exit = elect.wait() => panic!("elect --ttl 10 exited: {exit:?}"),
    };
    assert!(line.contains("elected leader of bare-e"), "{line}");
    super::terminate(&elect);
    let exit = super::wait_exit(&mut elect, Duration::from_secs(15)).await;
    assert!(exit.success(), "{exit}");

    let ttl = run(&cluster, &["lease", "grant", "10", "--output", "json"]).await;
    assert!(ttl.status.success(), "{}", describe(&ttl));
    cluster.shutdown().await;
}

/// `raftlock lock other --bogus -- true`: an unknown flag before `--` is
/// a usage error, exit 125 naming the flag, and nothing runs. Before,
/// `--bogus` was taken as the command to run and the exit was 127
/// ("cannot run --bogus"); this test failed at the exit code.
#[tokio::test]
async fn cli_lock_refuses_an_unknown_flag_before_the_command() {
    let cluster = TestCluster::new(1).await;
    let marker = tempfile::tempdir().expect("temp dir");
    let ran = marker.path().join("ran");
    let touch = format!("touch {}", ran.display());
    for args in [
        &["lock", "other", "--bogus", "--", "sh", "-c", &touch][..],
        &[
            "lock", "other", "--ttl", "10", "--bogus", "sh", "-c", &touch,
        ],
    ] {
        let out = run(&cluster, args).await;
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", describe(&out));
        let err = stderr_of(&out);
        assert!(err.contains("--bogus"), "{err}");
        assert!(!ran.exists(), "{args:?} ran the command");
    }
    // After `--`, or once the command began, dashes belong to the command.
    let out = run(&cluster, &["lock", "other", "sh", "-c", &touch, "--bogus"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(ran.exists());
    let out = run(&cluster, &["lock", "other", "--", "--bogus"]).await;
    assert_eq!(out.status.code(), Some(127), "{}", describe(&out));
    cluster.shutdown().await;
}

/// docs/security.md as typed: `raftlock auth create-token --user
/// scheduler --role jobs`, its entry put in auth.toml, `raftlock auth
/// check --auth-file auth.toml` accepts it, and a node started with that
/// file lets the token lock `jobs/nightly`. Before, the entry named the
/// role `jobs` without defining it, `auth check` refused the file ("role
/// \"jobs\" ... is not defined") and this test failed there.
#[tokio::test]
async fn cli_auth_create_token_prints_an_entry_auth_check_and_a_node_accept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let made = std::process::Command::new(BIN)
        .args([
            "auth",
            "create-token",
            "--user",
            "scheduler",
            "--role",
            "jobs",
        ])
        .output()
        .expect("run create-token");
    assert!(made.status.success(), "{}", describe(&made));
    let text = String::from_utf8_lossy(&made.stdout).into_owned();
    let token = text
        .lines()
        .find_map(|l| l.strip_prefix("token: "))
        .expect("a token line")
        .to_owned();
    let entry: String = text
        .lines()
        .filter(|l| !l.starts_with("token: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        !entry.contains(&token),
        "the entry holds the token: {entry}"
    );
    let auth = dir.path().join("auth.toml");
    std::fs::write(&auth, &entry).expect("write auth.toml");
    let check = std::process::Command::new(BIN)
        .args(["auth", "check", "--auth-file"])
        .arg(&auth)
        .output()
        .expect("run auth check");
    assert!(check.status.success(), "{entry}\n{}", describe(&check));

    // A second user for the same role, with --auth-file: the role is not
    // defined twice, and the file still checks.
    let more = std::process::Command::new(BIN)
        .args([
            "auth",
            "create-token",
            "--user",
            "cron",
            "--role",
            "jobs",
            "--auth-file",
        ])
        .arg(&auth)
        .output()
        .expect("run create-token");
    assert!(more.status.success(), "{}", describe(&more));
    let more: String = String::from_utf8_lossy(&more.stdout)
        .lines()
        .filter(|l| !l.starts_with("token: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!more.contains("[roles."), "{more}");
    let both = dir.path().join("both.toml");
    std::fs::write(&both, format!("{entry}\n{more}")).expect("write");
    let check = std::process::Command::new(BIN)
        .args(["auth", "check", "--auth-file"])
        .arg(&both)
        .output()
        .expect("run auth check");
    assert!(check.status.success(), "{}", describe(&check));

    let mut base = crate::cluster::test_config();
    base.serving.auth_file = Some(auth);
    let cluster = TestCluster::with_config(1, base).await;
    let out = lease_cmd::run_as(&cluster, &token, &["lock", "jobs/nightly", "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let out = lease_cmd::run_as(&cluster, &token, &["lock", "billing/x", "--", "true"]).await;
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    cluster.shutdown().await;
}

/// `raftlock serve --config FILE` with a mistyped key: the error offers
/// every key the config reads, `admin_addr`, `auth_file` and
/// `lock_delay_ms` included (each key `serve --print-config` prints,
/// and the optional ones). Before, the list was replication's alone and
/// this test failed at `admin_addr`.
#[tokio::test]
async fn cli_serve_config_error_lists_every_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("node.toml");
    std::fs::write(&file, "lock_delay = 5\n").expect("write");
    let out = std::process::Command::new(BIN)
        .arg("serve")
        .arg("--config")
        .arg(&file)
        .env_remove("RAFTLOCK_LOG")
        .output()
        .expect("run serve");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    let printed = std::process::Command::new(BIN)
        .args(["serve", "--print-config"])
        .current_dir(dir.path())
        .env_remove("RAFTLOCK_LOG")
        .output()
        .expect("run serve --print-config");
    assert!(printed.status.success(), "{}", describe(&printed));
    let printed = String::from_utf8_lossy(&printed.stdout).into_owned();
    let keys = printed
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim().to_owned()));
    let optional = [
        "admin_addr",
        "auth_file",
        "advertise_client_addr",
        "advertise_peer_addr",
        "tls_cert",
        "tls_key",
        "tls_ca",
        "join_token",
        "join_token_file",
    ];
    for key in keys.chain(optional.iter().map(|k| k.to_string())) {
        assert!(
            err.contains(&format!("`{key}`")),
            "{key} is not offered: {err}"
        );
    }
    for key in raftlock::config::keys::all() {
        assert!(
            err.contains(&format!("`{key}`")),
            "{key} is not offered: {err}"
        );
    }
}

/// `raftlock snapshot save FILE` onto an existing FILE is refused (exit 1,
/// the file named, `--force` offered) and leaves the file as it was;
/// with `--force` it replaces it. Before, the file was replaced silently
/// and this test failed at the exit code.
#[tokio::test]
async fn cli_snapshot_save_keeps_an_existing_file_unless_forced() {
    let cluster = TestCluster::new(1).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("backup.snap");
    std::fs::write(&file, b"an older backup").expect("write");
    let file_arg = file.to_str().expect("utf-8");
    let data_dir = node_dir(&cluster);
    let admin = ["--data-dir", data_dir.as_str()];
    let mut args = vec!["snapshot", "save", file_arg];
    args.extend(admin);
    let out = run(&cluster, &args).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert!(err.contains(file_arg) && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&file).expect("read"), b"an older backup");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");

    args.push("--force");
    let out = run(&cluster, &args).await;
    assert!(out.status.success(), "{}", describe(&out));
    let status = raftlock(&cluster, &["snapshot", "status", file_arg])
        .output()
        .await
        .expect("run status");
    assert!(status.status.success(), "{}", describe(&status));
    cluster.shutdown().await;
}

/// `raftlock man --dir DIR` writes raftlock.1 and a page for every command
/// (`raftlock-lock.1`, `raftlock-lease-grant.1`, ...): every
/// `raftlock-...(1)` a page refers to exists, and every page has an EXIT
/// STATUS section, `lock`'s with its 121–127 codes and `locks check`'s
/// with its own; `raftlock man lock` prints the same page as the file.
/// Before, only raftlock(1) could be generated, it referred to pages that
/// could not be, listed no exit codes, and this test failed at `--dir`.
#[tokio::test]
async fn cli_man_writes_a_page_per_command_with_its_exit_codes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(BIN)
        .args(["man", "--dir"])
        .arg(dir.path().join("man1"))
        .output()
        .expect("run man");
    assert!(out.status.success(), "{}", describe(&out));
    let pages: std::collections::BTreeMap<String, String> =
        std::fs::read_dir(dir.path().join("man1"))
            .expect("list")
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(e.path()).expect("read page"))
            })
            .collect();
    for page in [
        "raftlock.1",
        "raftlock-lock.1",
        "raftlock-lease-grant.1",
        "raftlock-locks-check.1",
    ] {
        assert!(
            pages.contains_key(page),
            "{page} missing: {:?}",
            pages.keys()
        );
    }
    let mut references = 0;
    for (name, text) in &pages {
        assert!(
            text.contains(".SH \"EXIT STATUS\""),
            "{name} has no EXIT STATUS"
        );
        // References: `raftlock\-lease\-grant(1)` (roff escapes the dashes).
        let mut rest = text.as_str();
        while let Some(at) = rest.find("raftlock\\-") {
            let tail = &rest[at..];
            let len = tail
                .find(|c: char| !(c.is_ascii_lowercase() || c == '\\' || c == '-'))
                .unwrap_or(tail.len());
            if tail[len..].starts_with("(1)") {
                let file = format!("{}.1", tail[..len].replace("\\-", "-"));
                assert!(
                    pages.contains_key(&file),
                    "{name} refers to {file}, not written"
                );
                references += 1;
            }
            rest = &tail[len..];
        }
    }
    assert!(references > 20, "only {references} page references found");
    let lock = &pages["raftlock-lock.1"];
    for code in ["121", "122", "123", "124", "125", "126", "127"] {
        assert!(
            lock.contains(code),
            "raftlock-lock.1 lacks exit code {code}"
        );
    }
    assert!(pages["raftlock-locks-check.1"].contains("cannot tell"));
    assert!(pages["raftlock.1"].contains("raftlock lock:"));

    let one = std::process::Command::new(BIN)
        .args(["man", "lock"])
        .output()
        .expect("run man lock");
    assert!(one.status.success(), "{}", describe(&one));
    assert_eq!(String::from_utf8_lossy(&one.stdout), *lock);
    let bad = std::process::Command::new(BIN)
        .args(["man", "nosuch"])
        .output()
        .expect("run man nosuch");
    assert_eq!(bad.status.code(), Some(1), "{}", describe(&bad));
    assert!(stderr_of(&bad).contains("nosuch"), "{}", describe(&bad));
}
