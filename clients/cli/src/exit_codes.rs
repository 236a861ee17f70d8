//! What each command's exit codes mean, one entry per command that has
//! codes of its own; the man pages' EXIT STATUS sections are read from
//! here (and `raftlock lock --help` shows the lock table), so a command
//! added to the CLI gets a page at once and, by one entry here, its codes.
//!
//! To give a command codes of its own, add `(&["group", "command"],
//! "text")` to [`TABLE`]: the entry whose path is the longest prefix of a
//! command's path applies to it (so `&["cluster"]` covers every `cluster`
//! subcommand that has no entry of its own).

/// The codes of every command without an entry of its own.
const COMMON: &str = "\
Exit codes:
  0          success
  1          failed: one line on stderr says what went wrong and what to do
  2          usage error: unknown flag, bad value, missing argument";

/// (command path, its codes), most specific first is not needed: the
/// longest matching path wins.
const TABLE: &[(&[&str], &str)] = &[
    (&["lock"], super::lock_cmd::EXIT_CODES_HELP),
    (
        &["cluster", "status"],
        super::cluster_status::HEALTH_EXIT_CODES,
    ),
    (
        &["endpoint", "health"],
        super::cluster_status::HEALTH_EXIT_CODES,
    ),
    (
        &["cluster", "add-learner"],
        super::cluster::MEMBERSHIP_EXIT_CODES,
    ),
    (
        &["cluster", "promote"],
        super::cluster::MEMBERSHIP_EXIT_CODES,
    ),
    (
        &["cluster", "remove"],
        super::cluster::MEMBERSHIP_EXIT_CODES,
    ),
    (
        &["locks", "check"],
        "\
Exit codes:
  0          valid: the fence still holds the lock
  1          not valid: the fence no longer holds it
  2          cannot tell (cluster unreachable, refused) or usage error",
    ),
    (
        &["serve"],
        "\
Exit codes:
  0          stopped cleanly (SIGINT or SIGTERM), or removed from the cluster
  1          could not start (the message says why and what to do), or the
             node failed while running (e.g. its disk is full)
  2          usage error: unknown flag, bad value",
    ),
    (
        &["elect"],
        "\
Exit codes:
  0          resigned after SIGINT or SIGTERM (or --leader / --observe ended)
  1          failed: leadership lost, cluster unreachable, refused
  2          usage error: unknown flag, bad value, missing argument",
    ),
];

/// The exit codes of the command at `path` (its names below `raftlock`,
/// e.g. `["lease", "grant"]`; empty for `raftlock` itself).
pub fn for_command(path: &[&str]) -> &'static str {
    TABLE
        .iter()
        .filter(|(prefix, _)| path.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(COMMON, |(_, codes)| codes)
}

/// The codes `raftlock(1)` lists: the common ones, then each command's own.
pub fn overview() -> String {
    let mut text = format!("{COMMON}\n");
    for (path, codes) in TABLE {
        let body = codes.strip_prefix("Exit codes:\n").unwrap_or(codes);
        text.push_str(&format!("\nraftlock {}:\n{body}\n", path.join(" ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_matching_path_wins() {
        assert!(for_command(&["lock"]).contains("121"));
        assert!(for_command(&["locks", "check"]).contains("cannot tell"));
        assert_eq!(for_command(&["locks", "describe"]), COMMON);
        assert_eq!(for_command(&[]), COMMON);
        assert!(overview().contains("raftlock lock:"));
        assert!(for_command(&["cluster", "status"]).contains("no quorum"));
        assert!(for_command(&["endpoint", "health"]).contains("linearizable read"));
        assert!(for_command(&["cluster", "promote"]).contains("catching up"));
    }
}
