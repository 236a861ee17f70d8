//! How `cluster add-learner` and `cluster promote` wait for a learner to
//! catch up: the leader waits a few seconds inside the call
//! (`raftlock_raft::membership::catch_up`); a longer catch-up (a large log,
//! a snapshot to send) is waited out here, by asking the learner itself
//! which log index it holds, until it holds the target or `--timeout`
//! ends. A line on stderr tells the operator how far it got while they
//! wait.

use std::time::Duration;

use tokio::time::Instant;

use super::cluster_status::ask_node;
use raftlock_client::ClientOptions;

/// A long catch-up shows its first progress line after this long.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);
/// Then one line every this long.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// How often the learner is asked.
const POLL: Duration = Duration::from_millis(250);
/// How long one question may take.
const ASK_LIMIT: Duration = Duration::from_secs(2);

/// A learner to wait for.
pub struct Learner<'a> {
    pub id: u64,
    /// Its client address, where it is asked.
    pub client_addr: &'a str,
}

/// Waits until `learner` holds log index `target`, until `timeout` after
/// `start` (when the command began); the error says how far it got and
/// what to do.
pub async fn wait_caught_up(
    options: &ClientOptions,
    learner: &Learner<'_>,
    target: u64,
    (start, timeout): (Instant, Duration),
) -> Result<(), String> {
    let mut next_line = start + PROGRESS_AFTER;
    loop {
        let answer = ask_node(options, learner.client_addr, ASK_LIMIT, false).await;
        let held = answer.as_ref().ok().map(|s| s.last_log_index);
        if held.is_some_and(|held| held >= target) {
            return Ok(());
        }
        let where_ = match &answer {
            Ok(s) => format!("it holds log index {} of {target}", s.last_log_index),
            Err(e) => format!(
                "it does not answer at {} ({e}), so its progress is unknown",
                learner.client_addr
            ),
        };
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(format!(
                "learner {} is still catching up after {}: {where_}. It stays a learner and \
                 keeps catching up; watch its LAST_LOG in `raftlock cluster status`, then run \
                 `raftlock cluster promote {}` (or give a longer --timeout)",
                learner.id,
                raftlock::duration::format_duration(timeout),
                learner.id
            ));
        }
        if Instant::now() >= next_line {
            eprintln!(
                "learner {} is catching up: {where_} ({:.0} s so far, waiting up to {})",
                learner.id,
                waited.as_secs_f64(),
                raftlock::duration::format_duration(timeout)
            );
            next_line = Instant::now() + PROGRESS_EVERY;
        }
        let left = timeout.saturating_sub(start.elapsed());
        tokio::time::sleep(POLL.min(left)).await;
    }
}
