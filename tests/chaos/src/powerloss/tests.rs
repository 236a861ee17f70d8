//! Unit tests of the power-loss bookkeeping and judging: hand-made ledger
//! entries against hand-made cluster answers, each kind of loss the
//! checks exist for, and the answers a correct cluster may give.

use std::time::Duration;

use super::answer::Answer;
use super::ledger::{Digest, Hold, Ledger, Seat};
use super::round::plan;
use super::stage::Stage;
use super::terms::{verdict, TermLog};
use super::verify::{judge_election, judge_lock};

fn held(now: &[(&str, u64)]) -> Vec<(String, u64)> {
    now.iter().map(|(o, f)| (o.to_string(), *f)).collect()
}

/// A lock `x` where `a` holds fence 10 (acknowledged), `b` released fence
/// 5, `c` asked without an answer.
fn ledger_x() -> Ledger {
    let l = Ledger::default();
    l.acquire_begin("try_acquire", "x", "b");
    l.acquire_done("try_acquire", "x", "b", &Answer::Ok(Some(5)));
    l.release_begin("x", "b");
    l.release_done("x", "b", &Answer::Ok(0));
    l.acquire_begin("try_acquire", "x", "a");
    l.acquire_done("try_acquire", "x", "a", &Answer::Ok(Some(10)));
    l.acquire_begin("acquire", "x", "c");
    l
}

#[test]
fn the_ledger_keeps_what_was_answered_and_what_was_not() {
    let l = ledger_x();
    l.acquire_begin("try_acquire", "x", "d");
    l.acquire_done("try_acquire", "x", "d", &Answer::Ok(None));
    l.release_begin("x", "a");
    let book = l.book();
    let owners = &book.locks["x"].owners;
    assert_eq!(owners["a"], Hold::Releasing { fence: 10 });
    assert_eq!(owners["b"], Hold::Released { fence: 5 });
    assert_eq!(owners["c"], Hold::Asked);
    assert!(!owners.contains_key("d"), "a busy try-lock holds nothing");
    assert_eq!(book.locks["x"].max_fence, 10);
    assert_eq!(book.tally["release"].cut(), 1);
}

#[test]
fn a_lock_as_acknowledged_passes() {
    let l = ledger_x();
    let entry = l.book().locks["x"].clone();
    let t = judge_lock("x", &entry, &held(&[("a", 10)]), 1);
    assert!(t.violations.is_empty(), "{:?}", t.violations);
}

#[test]
fn an_unanswered_acquire_may_hold_above_every_acknowledged_fence() {
    let l = ledger_x();
    l.release_begin("x", "a");
    l.release_done("x", "a", &Answer::Ok(0));
    let entry = l.book().locks["x"].clone();
    let t = judge_lock("x", &entry, &held(&[("c", 12)]), 1);
    assert!(t.violations.is_empty(), "{:?}", t.violations);
    let t = judge_lock("x", &entry, &held(&[("c", 7)]), 1);
    assert_eq!(t.violations.len(), 1, "fence 7 is below a's 10");
}

#[test]
fn a_lost_grant_is_a_violation() {
    let entry = ledger_x().book().locks["x"].clone();
    let t = judge_lock("x", &entry, &[], 1);
    assert_eq!(t.violations.len(), 1);
    assert!(t.violations[0].contains("is gone"), "{}", t.violations[0]);
}

#[test]
fn a_grant_with_another_fence_is_a_violation() {
    let entry = ledger_x().book().locks["x"].clone();
    let t = judge_lock("x", &entry, &held(&[("a", 11)]), 1);
    assert_eq!(t.violations.len(), 1);
}

#[test]
fn an_undone_release_is_a_violation() {
    let entry = ledger_x().book().locks["x"].clone();
    let t = judge_lock("x", &entry, &held(&[("a", 10), ("b", 5)]), 1);
    assert_eq!(t.violations.len(), 1);
    assert!(t.violations[0].contains("undone"), "{}", t.violations[0]);
}

#[test]
fn a_holder_nobody_asked_for_is_a_violation() {
    let entry = ledger_x().book().locks["x"].clone();
    let t = judge_lock("x", &entry, &held(&[("a", 10), ("z", 99)]), 1);
    assert_eq!(t.violations.len(), 1);
}

/// An election `e` where `p` leads with fence 20 and value `v1`, then
/// proclaimed `v2` (acknowledged) and `v3` (no answer); `q` resigned.
fn ledger_e() -> Ledger {
    let l = Ledger::default();
    l.campaign_begin("e", "q", Digest::of(b"q"));
    l.campaign_done("e", "q", &Answer::Ok(15));
    l.resign_begin("e", "q");
    l.resign_done("e", "q", &Answer::Ok(()));
    l.campaign_begin("e", "p", Digest::of(b"v1"));
    l.campaign_done("e", "p", &Answer::Ok(20));
    l.proclaim_begin("e", "p", Digest::of(b"v2"));
    l.proclaim_done("e", "p", Digest::of(b"v2"), &Answer::Ok(()));
    l.proclaim_begin("e", "p", Digest::of(b"v3"));
    l
}

#[test]
fn an_election_as_acknowledged_passes_with_either_value() {
    let entry = ledger_e().book().elections["e"].clone();
    for v in [b"v2", b"v3"] {
        let t = judge_election("e", &entry, Some(("p", 20, Digest::of(v))), 1);
        assert!(t.violations.is_empty(), "{:?}", t.violations);
    }
    let t = judge_election("e", &entry, Some(("p", 20, Digest::of(b"v1"))), 1);
    assert_eq!(
        t.violations.len(),
        1,
        "v1 was replaced by an acknowledged v2"
    );
}

#[test]
fn a_lost_leader_is_a_violation() {
    let entry = ledger_e().book().elections["e"].clone();
    let t = judge_election("e", &entry, None, 1);
    assert_eq!(t.violations.len(), 1);
    let t = judge_election("e", &entry, Some(("q", 15, Digest::of(b"q"))), 1);
    assert_eq!(t.violations.len(), 1, "q resigned");
}

#[test]
fn a_resigned_leader_that_comes_back_is_a_violation() {
    let l = ledger_e();
    l.resign_begin("e", "p");
    l.resign_done("e", "p", &Answer::Ok(()));
    let entry = l.book().elections["e"].clone();
    assert!(matches!(entry.seats["p"], Seat::Resigned { fence: 20 }));
    assert!(judge_election("e", &entry, None, 1).violations.is_empty());
    let t = judge_election("e", &entry, Some(("p", 20, Digest::of(b"v2"))), 1);
    assert_eq!(t.violations.len(), 1);
}

#[test]
fn a_vote_that_goes_back_is_a_violation_and_two_leaders_in_a_term_are_not() {
    let mut log = TermLog::default();
    log.enter(1, 5, 1, 10);
    log.enter(2, 5, 2, 11);
    log.enter(2, 6, 0, 12);
    assert!(verdict(&log).violations.is_empty());
    log.enter(2, 5, 1, 13);
    log.enter(1, 5, 1, 14);
    assert_eq!(
        verdict(&log).violations.len(),
        1,
        "n2 went from term 6 to 5"
    );
    log.enter(1, 5, 0, 15);
    log.enter(1, 6, 3, 16);
    log.enter(1, 6, 2, 17);
    assert_eq!(
        verdict(&log).violations.len(),
        2,
        "n1 went from n3 to n2 in term 6"
    );
}

#[test]
fn the_first_two_rounds_cut_all_nodes_once_and_two_nodes_once() {
    for seed in 0..20 {
        let p = plan(seed, 2, Duration::from_secs(6), &[1, 2, 3], Stage::Timed);
        let mut sizes: Vec<usize> = p.iter().map(|r| r.victims.len()).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [2, 3], "seed {seed}");
        assert!(p.iter().all(|r| r.load >= Duration::from_secs(2)));
    }
    let a = plan(7, 10, Duration::from_secs(6), &[1, 2, 3], Stage::Timed);
    let b = plan(7, 10, Duration::from_secs(6), &[1, 2, 3], Stage::Timed);
    assert_eq!(
        format!("{a:?}"),
        format!("{b:?}"),
        "a seed replays its plan"
    );
}
