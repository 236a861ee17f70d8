//! What the smoke tests share: a seed and an output dir, each taken from
//! an environment variable when set, and the verdict on a run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `$var`, or a fresh seed from the clock (it widens coverage run to run,
/// and the run prints it for replay).
pub fn seed(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
            % 100_000)
            .to_string()
    })
}

/// `$var`, or `name` inside `temp`.
pub fn out_dir(var: &str, temp: &Path, name: &str) -> PathBuf {
    std::env::var(var)
        .map(PathBuf::from)
        .unwrap_or_else(|_| temp.join(name))
}

/// Runs `run` (a `raftlock-chaos` run with seed `seed`, writing its files
/// to `out`), prints its output, and panics naming `what`, the seed and the
/// kept files unless it printed `violations: 0` and exited 0.
pub fn expect_no_violations(
    run: &mut Command,
    what: &str,
    seed: &str,
    out: &Path,
    temp: tempfile::TempDir,
    also: &[String],
) {
    let result = run.output().expect("run raftlock-chaos");
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    let printed = |line: &str| stdout.lines().any(|l| l == line);
    let passed =
        printed("violations: 0") && also.iter().all(|l| printed(l)) && result.status.success();
    if !passed {
        // Keep the node logs, history and timeline for whoever looks next.
        let kept = temp.keep();
        panic!(
            "{what} (seed {seed}) failed: {} (exit 3: violations found, 1: the run itself \
             failed; exit 0: a line of {also:?} is missing); files in {} (or {})",
            result.status,
            out.display(),
            kept.display()
        );
    }
}
