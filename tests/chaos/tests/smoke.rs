//! The smoke runs in the default test command: about two minutes of
//! nemesis and workload against a 3-node cluster, and 45 seconds of the
//! same with TLS, mutual TLS between peers and client authentication
//! (`--secure`), which must each end with `violations: 0`.
//!
//! The nodes are this package's own `raftlock-chaos` binary in its
//! `serve` mode — the same node code as the `raftlock` binary, built by the
//! same `cargo` invocation as this test, so it can never be stale or
//! missing. Set `CHAOS_SMOKE_SECS` (`CHAOS_SECURE_SMOKE_SECS`) to change the
//! length, `CHAOS_SEED` to replay a seed; the run's files are kept in
//! `CHAOS_SMOKE_OUT/chaos` and `CHAOS_SMOKE_OUT/chaos-secure` if set.

mod common;

use std::process::Command;

#[test]
fn two_minutes_of_faults_break_nothing() {
    let secs = std::env::var("CHAOS_SMOKE_SECS").unwrap_or_else(|_| "110".into());
    smoke(&secs, &[], "chaos");
}

#[test]
fn faults_on_a_secured_cluster_break_nothing() {
    let secs = std::env::var("CHAOS_SECURE_SMOKE_SECS").unwrap_or_else(|_| "45".into());
    smoke(&secs, &["--secure"], "chaos-secure");
}

/// Runs `raftlock-chaos` for `secs` seconds with `extra` flags; fails
/// unless it reports `violations: 0`.
fn smoke(secs: &str, extra: &[&str], name: &str) {
    let exe = env!("CARGO_BIN_EXE_raftlock-chaos");
    let seed = common::seed("CHAOS_SEED");
    let temp = tempfile::tempdir().expect("temp dir");
    // Under CHAOS_SMOKE_OUT, each run in its own sub-dir (they run at once).
    let out = common::out_dir("CHAOS_SMOKE_OUT", temp.path(), name).join(name);
    let mut run = Command::new(exe);
    run.args(["--nodes", "3", "--clients", "4"])
        .args(extra)
        .args(["--duration", &format!("{secs}s")])
        .args(["--seed", &seed])
        .arg("--out")
        .arg(&out);
    common::expect_no_violations(&mut run, "chaos smoke run", &seed, &out, temp, &[]);
}
