//! The library without the command line: an application that embeds a
//! node depends on `raftlock` and gets none of what only the `raftlock`
//! binary (the `raftlock-cli` package) needs.

use std::process::Command;

/// Crates only the command line and the binary use: argument parsing, its
/// man page and completions, certificate generation (`raftlock certs`),
/// the log subscriber (an application sets its own), mimalloc (an
/// application keeps its allocator) and the client crate (the lock, lease,
/// elect and cluster commands are a client; the library is not).
const COMMAND_LINE_ONLY: [&str; 7] = [
    "clap",
    "clap_mangen",
    "clap_complete",
    "rcgen",
    "tracing-subscriber",
    "mimalloc",
    "raftlock-client",
];

/// `cargo tree -p raftlock -e normal`, with the default features, lists
/// none of [`COMMAND_LINE_ONLY`]. Fails when one of them is made a
/// dependency of the library again (or another normal dependency pulls it
/// in); it failed so while the command line was the library's default
/// `cli` feature, listing all seven.
#[test]
fn the_library_alone_has_no_command_line_crates() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "raftlock", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(crate::repo_root())
        .output()
        .expect("run cargo tree");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(names.contains(&"raftlock-raft"), "{stdout}");
    let found: Vec<&str> = COMMAND_LINE_ONLY
        .into_iter()
        .filter(|name| names.contains(name))
        .collect();
    assert!(found.is_empty(), "the library depends on {found:?}");
}
