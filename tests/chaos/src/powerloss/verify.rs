//! Checks (a) and (c) after a restart: the cluster, read linearizably,
//! still shows every acknowledged hold, release, lease, leader and value
//! of the selection — and whatever an unanswered call may have done is
//! consistent with the rest.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use raftlock_client::Client;

use super::answer::{settle, Answer};
use super::findings::{Findings, Taint, Totals};
use super::ledger::{Digest, ElectionEntry, Hold, LockEntry, Seat};
use super::selection::Selection;

/// Reads in flight at once.
pub const PARALLEL: usize = 8;
/// Tries per read before it counts as unanswered.
const READ_ATTEMPTS: u32 = 3;

/// A read, retried while its answer is unknown.
pub async fn read<T, F, Fut>(mut call: F) -> Answer<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, raftlock_client::Error>>,
{
    let mut answer = settle(call()).await;
    for _ in 1..READ_ATTEMPTS {
        if !matches!(answer, Answer::Unknown(_)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        answer = settle(call()).await;
    }
    answer
}

/// Runs checks (a) and (c) on `sel` after cut `cut`, adding to `found`.
pub async fn check(client: &Client, sel: &Selection, cut: u32, found: &mut Findings) {
    let locks = futures::stream::iter(&sel.locks)
        .map(|(name, entry)| check_lock(client, name, entry, cut))
        .buffer_unordered(PARALLEL);
    for t in locks.collect::<Vec<_>>().await {
        found.holds.merge(t);
    }
    let elections = futures::stream::iter(&sel.elections)
        .map(|(name, entry)| check_election(client, name, entry, cut))
        .buffer_unordered(PARALLEL);
    for t in elections.collect::<Vec<_>>().await {
        found.elections.merge(t);
    }
    let leases = futures::stream::iter(&sel.leases)
        .map(|id| check_lease(client, *id, cut))
        .buffer_unordered(PARALLEL);
    for t in leases.collect::<Vec<_>>().await {
        found.leases.merge(t);
    }
}

/// The holders of `name` as (owner, fence), read linearizably.
pub async fn holders(client: &Client, name: &str) -> Answer<Vec<(String, u64)>> {
    read(|| client.describe(name)).await.map(|info| {
        info.map(|l| l.holders.into_iter().map(|h| (h.owner, h.fence)).collect())
            .unwrap_or_default()
    })
}

async fn check_lock(client: &Client, name: &str, entry: &LockEntry, cut: u32) -> Totals {
    match holders(client, name).await {
        Answer::Ok(now) => judge_lock(name, entry, &now, cut),
        _ => Totals {
            unanswered: 1,
            ..Totals::default()
        },
    }
}

/// Judges `name`'s holders `now` (owner, fence) after cut `cut` against
/// what the ledger knows.
pub fn judge_lock(name: &str, entry: &LockEntry, now: &[(String, u64)], cut: u32) -> Totals {
    tainting(name, judge_lock_owners(name, entry, now, cut))
}

/// A name with a violation is set aside (see [`Taint`]).
fn tainting(name: &str, mut t: Totals) -> Totals {
    if !t.violations.is_empty() {
        t.taint.push(Taint::Name(name.to_string()));
    }
    t
}

fn judge_lock_owners(name: &str, entry: &LockEntry, now: &[(String, u64)], cut: u32) -> Totals {
    let mut t = Totals::default();
    t.add("names", 1);
    let fence_of = |owner: &str| now.iter().find(|(o, _)| o == owner).map(|(_, f)| *f);
    for (owner, hold) in &entry.owners {
        let seen = fence_of(owner);
        match (*hold, seen) {
            (Hold::Held { fence }, Some(f)) if f == fence => t.add("holds", 1),
            (Hold::Held { fence }, Some(f)) => {
                t.add("holds", 1);
                t.violate(format!("after cut {cut}: {name}: {owner}'s acknowledged grant had fence {fence}, now {f}"));
            }
            (Hold::Held { fence }, None) => {
                t.add("holds", 1);
                t.violate(format!("after cut {cut}: {name}: acknowledged grant to {owner} (fence {fence}) is gone"));
            }
            (Hold::Released { fence }, seen) => {
                t.add("releases", 1);
                if seen.is_some() {
                    t.violate(format!("after cut {cut}: {name}: {owner}'s acknowledged release (fence {fence}) was undone"));
                }
            }
            (Hold::Releasing { fence }, Some(f)) if f != fence => t.violate(format!(
                "after cut {cut}: {name}: {owner} holds with fence {f}, was granted {fence}"
            )),
            (Hold::Asked, Some(f)) => {
                t.add("unanswered acquires that took effect", 1);
                let above = others_max(entry, owner);
                if f <= above {
                    t.violate(format!("after cut {cut}: {name}: {owner} holds with fence {f}, not above fence {above} acknowledged before"));
                }
            }
            (Hold::Releasing { .. } | Hold::Asked, _) => {}
        }
    }
    for (owner, f) in now {
        if !entry.owners.contains_key(owner) {
            t.violate(format!(
                "after cut {cut}: {name}: held by {owner} (fence {f}), which never asked for it"
            ));
        }
    }
    t
}

/// The highest fence acknowledged to an owner of the entry other than
/// `owner`.
fn others_max(entry: &LockEntry, owner: &str) -> u64 {
    entry
        .owners
        .iter()
        .filter(|(o, _)| o.as_str() != owner)
        .filter_map(|(_, h)| match *h {
            Hold::Held { fence } | Hold::Releasing { fence } | Hold::Released { fence } => {
                Some(fence)
            }
            Hold::Asked => None,
        })
        .max()
        .unwrap_or(0)
}

async fn check_election(client: &Client, name: &str, entry: &ElectionEntry, cut: u32) -> Totals {
    let Answer::Ok(now) = read(|| client.leader(name)).await else {
        return Totals {
            unanswered: 1,
            ..Totals::default()
        };
    };
    let shown = now
        .has_leader
        .then(|| (now.owner.as_str(), now.fence, Digest::of(&now.value)));
    judge_election(name, entry, shown, cut)
}

/// Judges `name`'s leader as read after cut `cut` — `shown` is (owner,
/// fence, value) or `None` for no leader — against the ledger.
pub fn judge_election(
    name: &str,
    entry: &ElectionEntry,
    shown: Option<(&str, u64, Digest)>,
    cut: u32,
) -> Totals {
    tainting(name, judge_seats(name, entry, shown, cut))
}

fn judge_seats(
    name: &str,
    entry: &ElectionEntry,
    shown: Option<(&str, u64, Digest)>,
    cut: u32,
) -> Totals {
    let mut t = Totals::default();
    t.add("elections", 1);
    let leading: Vec<_> = entry
        .seats
        .iter()
        .filter_map(|(o, s)| match s {
            Seat::Leading { fence, values } => Some((o.as_str(), *fence, values)),
            _ => None,
        })
        .collect();
    t.add("leaders", leading.len() as u64);
    if leading.len() > 1 {
        t.violate(format!(
            "before cut {cut}: {name}: {} leaders were acknowledged at once",
            leading.len()
        ));
    }
    let resigned = entry
        .seats
        .values()
        .filter(|s| matches!(s, Seat::Resigned { .. }));
    t.add("resigns", resigned.count() as u64);
    let Some((owner, fence, value)) = shown else {
        if let Some((o, f, _)) = leading.first() {
            t.violate(format!(
                "after cut {cut}: {name}: acknowledged leader {o} (fence {f}) is gone; no leader"
            ));
        }
        return t;
    };
    let (want_fence, values) = match (leading.first(), entry.seats.get(owner)) {
        (Some((o, f, values)), _) if *o == owner => (Some(*f), (*values).clone()),
        (Some((o, f, _)), _) => {
            t.violate(format!("after cut {cut}: {name}: acknowledged leader {o} (fence {f}) replaced by {owner} (fence {fence})"));
            return t;
        }
        (None, Some(Seat::Resigning { fence, values })) => (Some(*fence), values.clone()),
        (None, Some(Seat::Campaigning { values })) => (None, values.clone()),
        (None, Some(Seat::Resigned { fence: f })) => {
            t.violate(format!("after cut {cut}: {name}: {owner} resigned (fence {f}, acknowledged) but leads again (fence {fence})"));
            return t;
        }
        (None, _) => {
            t.violate(format!(
                "after cut {cut}: {name}: led by {owner} (fence {fence}), which never campaigned"
            ));
            return t;
        }
    };
    match want_fence {
        Some(f) if f != fence => t.violate(format!(
            "after cut {cut}: {name}: {owner} leads with fence {fence}, was elected with {f}"
        )),
        None if fence <= entry.max_fence => t.violate(format!("after cut {cut}: {name}: {owner} leads with fence {fence}, not above fence {} acknowledged before", entry.max_fence)),
        _ => {}
    }
    if values.contains(&value) {
        t.add("values", 1);
    } else {
        t.add("values", 1);
        let acked = values.first().map(|d| d.len).unwrap_or(0);
        t.violate(format!("after cut {cut}: {name}: {owner}'s value is not the acknowledged one ({} bytes shown, {acked} bytes acknowledged)", value.len));
    }
    t
}

async fn check_lease(client: &Client, id: u64, cut: u32) -> Totals {
    let mut t = Totals::default();
    match read(|| client.time_to_live(id)).await {
        Answer::Ok(_) => t.add("leases", 1),
        Answer::Fail(e) => {
            t.add("leases", 1);
            t.taint.push(Taint::Lease(id));
            t.violate(format!(
                "after cut {cut}: acknowledged lease {id} is gone ({e})"
            ));
        }
        Answer::Unknown(_) => t.unanswered += 1,
    }
    t
}
