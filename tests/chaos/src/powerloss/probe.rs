//! Check (b), fences never go back: after a restart, each probed name is
//! freed (its holders release, its leader resigns — as themselves, through
//! the ledger) and granted anew to a probe owner. Every grant made after
//! the restart must carry a fence strictly above every fence acknowledged
//! for that name before the cut. Also noted: the highest fence
//! acknowledged anywhere before the cut and the lowest granted after.
//!
//! Probes run after checks (a) and (c), since they change what those read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use rand::seq::IteratorRandom;
use rand_chacha::ChaCha8Rng;

use super::answer::Answer;
use super::calls::Calls;
use super::findings::{Findings, Taint, Totals};
use super::selection::Selection;
use super::verify::{holders, read, PARALLEL};

/// Lock names probed per round at most.
const MAX_LOCKS: usize = 300;
/// Election names probed per round at most.
const MAX_ELECTIONS: usize = 60;
/// How long a probe campaign waits.
const CAMPAIGN_WAIT: Duration = Duration::from_millis(300);

/// One round's probes.
struct Probe<'a> {
    calls: &'a Calls,
    lease: u64,
    cut: u32,
    next: AtomicU64,
}

/// Probes a sample of `sel` after cut `cut` (on `lease`), adding to
/// `found`. Answers the lowest fence granted after the restart, if any.
pub async fn run(
    calls: &Calls,
    lease: u64,
    sel: &Selection,
    cut: u32,
    rng: &mut ChaCha8Rng,
    found: &mut Findings,
) -> Option<u64> {
    let probe = Probe {
        calls,
        lease,
        cut,
        next: AtomicU64::new(0),
    };
    let locks = sel.locks.iter().choose_multiple(rng, MAX_LOCKS);
    let elections = sel.elections.iter().choose_multiple(rng, MAX_ELECTIONS);
    let mut round = Totals::default();
    let mut lowest = u64::MAX;
    let lock_probes = futures::stream::iter(locks)
        .map(|(name, e)| probe.lock(name, e.max_fence))
        .buffer_unordered(PARALLEL);
    let election_probes = futures::stream::iter(elections)
        .map(|(name, e)| probe.election(name, e.max_fence))
        .buffer_unordered(PARALLEL);
    for (t, low) in lock_probes.chain(election_probes).collect::<Vec<_>>().await {
        round.merge(t);
        lowest = lowest.min(low);
    }
    found.fences.merge(round);
    if lowest == u64::MAX {
        return None;
    }
    // Fences are raftlock's log positions, so across names too the first
    // grant after a restart should be above everything before. Only a
    // name's own order is promised, so this is shown, not judged.
    if lowest > sel.max_fence {
        found
            .fences
            .add("cuts after which every fence was above all before", 1);
    } else {
        found
            .fences
            .add("cuts after which a fence was not above all before", 1);
    }
    Some(lowest)
}

impl Probe<'_> {
    fn owner(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}-probe-{n}", self.cut)
    }

    /// Judges a grant made after the restart; answers its fence.
    fn judge(&self, t: &mut Totals, name: &str, fence: u64, before: u64) -> u64 {
        t.add("grants after restart", 1);
        if fence <= before {
            t.taint.push(Taint::Name(name.to_string()));
            t.violate(format!(
                "after cut {}: {name}: granted fence {fence}, not above fence {before} acknowledged before",
                self.cut
            ));
        }
        fence
    }

    /// Frees `name` and grants it to a probe owner; answers the lowest
    /// fence granted after the restart (`u64::MAX`: none).
    async fn lock(&self, name: &str, before: u64) -> (Totals, u64) {
        let mut t = Totals::default();
        let Answer::Ok(held) = holders(&self.calls.client, name).await else {
            t.unanswered += 1;
            return (t, u64::MAX);
        };
        for (owner, _) in &held {
            self.calls.release(name, owner).await;
        }
        let owner = self.owner();
        let mut low = u64::MAX;
        match self.calls.acquire(name, &owner, self.lease, None).await {
            Answer::Ok(Some(fence)) => low = self.judge(&mut t, name, fence, before),
            // Busy: a waiter queued before the cut was granted on a
            // release above. That is a grant after the restart too.
            Answer::Ok(None) => match holders(&self.calls.client, name).await {
                Answer::Ok(now) => {
                    for (o, fence) in now.iter().filter(|h| !held.contains(h)) {
                        let _ = o;
                        low = low.min(self.judge(&mut t, name, *fence, before));
                    }
                }
                _ => t.unanswered += 1,
            },
            Answer::Fail(_) | Answer::Unknown(_) => t.unanswered += 1,
        }
        (t, low)
    }

    /// The same for an election: the leader resigns, a probe campaigns.
    async fn election(&self, name: &str, before: u64) -> (Totals, u64) {
        let mut t = Totals::default();
        let client = &self.calls.client;
        let Answer::Ok(now) = read(|| client.leader(name)).await else {
            t.unanswered += 1;
            return (t, u64::MAX);
        };
        if now.has_leader {
            self.calls.resign(name, &now.owner).await;
        }
        let owner = self.owner();
        let value = owner.as_bytes();
        let answer = self
            .calls
            .campaign(name, &owner, self.lease, value, CAMPAIGN_WAIT)
            .await;
        let mut low = u64::MAX;
        match answer {
            Answer::Ok(fence) => low = self.judge(&mut t, name, fence, before),
            Answer::Fail(_) => match read(|| client.leader(name)).await {
                Answer::Ok(l) if l.has_leader && l.fence != now.fence => {
                    low = self.judge(&mut t, name, l.fence, before);
                }
                Answer::Ok(_) => {}
                _ => t.unanswered += 1,
            },
            Answer::Unknown(_) => t.unanswered += 1,
        }
        (t, low)
    }
}
