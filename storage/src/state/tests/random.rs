//! Random command sequences from two source addresses under small quotas:
//! invariants after every step (quotas included), retries replay, and a
//! state rebuilt from its parts behaves exactly like the original. A third
//! address sends each request from a fresh client id (or none): it keeps
//! meeting its client quota, and its revokes, force-releases and calls
//! without a request id are applied all the same.

use std::net::IpAddr;

use uuid::Uuid;

use super::*;
use crate::command::{
    Acquire, Cancel, ClaimFire, ExpireLeases, ForceRelease, GrantLease, Hold, Lead, Proclaim,
    ReadWrite, Release, RevokeAccountLeases, RevokeLease, Unhold,
};
use crate::command::{Caller, ReadWriteOp};
use crate::limits::Quota;
use crate::state::StateParts;

/// The quotas every step runs under: small, so they are met often.
const QUOTAS: Quotas = Quotas {
    leases: 2,
    clients: 2,
    waiters: 3,
};

/// The address whose every request comes from a fresh client id.
fn fresh_ids_host() -> Caller {
    Caller {
        source: Some(IpAddr::from([10, 0, 0, 3])),
        ..Caller::default()
    }
}

/// Whether `request` may never be refused for want of a client place.
fn always_admitted(request: &Request) -> bool {
    let recovery = matches!(
        request.command,
        Command::RevokeLease(_) | Command::RevokeAccountLeases(_) | Command::ForceRelease(_)
    );
    recovery || request.origin.is_some_and(|o| o.anonymous)
}

/// The callers: two source addresses, and the cluster itself.
fn callers() -> [Caller; 3] {
    let from = |host: u8| Caller {
        source: Some(IpAddr::from([10, 0, 0, host])),
        ..Caller::default()
    };
    [from(1), from(2), Caller::default()]
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const NAMES: [&str; 4] = ["m", "rw", "s", "e"];
const OWNERS: [&str; 5] = ["o0", "o1", "o2", "o3", "o4"];

fn random_mode(rng: &mut Rng, name: &str) -> Mode {
    if rng.below(20) == 0 {
        // Occasionally the wrong kind for the name.
        return *rng.pick(&[Mode::Exclusive, Mode::Shared, permits(1, 3), permits(0, 1)]);
    }
    match name {
        "rw" => *rng.pick(&[Mode::Shared, Mode::Shared, Mode::Exclusive]),
        "s" => permits(1 + rng.below(4) as u32, 4),
        _ => Mode::Exclusive,
    }
}

/// A lease id: mostly a live one, sometimes one that ended (or never was).
fn random_lease(rng: &mut Rng, live: &[LeaseId], ever: &[LeaseId]) -> LeaseId {
    let pool = if rng.below(5) == 0 || live.is_empty() {
        ever
    } else {
        live
    };
    pool.get(rng.below(pool.len().max(1) as u64) as usize)
        .copied()
        .unwrap_or(0)
}

fn random_command(rng: &mut Rng, live: &[LeaseId], ever: &[LeaseId]) -> Command {
    let lease = random_lease(rng, live, ever);
    let name = rng.pick(&NAMES).to_string();
    let owner = rng.pick(&OWNERS).to_string();
    match rng.below(125) {
        0..=7 => Command::GrantLease(GrantLease {
            ttl_ms: *rng.pick(&[1_000, 1_000, 1_000, 0]),
        }),
        8..=11 => Command::RevokeLease(RevokeLease { id: lease }),
        12..=15 => {
            let ids = (0..=rng.below(3))
                .map(|_| random_lease(rng, live, ever))
                .collect();
            Command::ExpireLeases(ExpireLeases { ids })
        }
        16..=59 => Command::Acquire(Acquire {
            mode: random_mode(rng, &name),
            value: (name == "e").then(|| owner.clone().into_bytes()),
            lock_delay_ms: 0,
            wait: rng.below(5) != 0,
            name,
            owner,
            lease,
        }),
        60..=79 => Command::Release(Release { name, owner }),
        80..=83 => Command::Cancel(Cancel {
            name,
            owner,
            call: None,
        }),
        // A server's cancel for a call that gave up: some claim or other.
        84..=87 => Command::Cancel(Cancel {
            name,
            owner,
            call: Some(Claim {
                client: Uuid::from_u128(u128::from(rng.below(3))),
                seq: rng.below(64),
                attempt: rng.below(3) as u32,
            }),
        }),
        88..=91 => Command::ForceRelease(ForceRelease { name }),
        92..=93 => Command::RevokeAccountLeases(RevokeAccountLeases {
            account: Account::source(IpAddr::from([10, 0, 0, 1 + rng.below(2) as u8])),
        }),
        94..=99 => Command::Proclaim(Proclaim {
            name,
            owner,
            value: vec![rng.below(256) as u8],
        }),
        100..=104 => Command::Hold(Hold {
            name,
            owner,
            ttl_ms: *rng.pick(&[1_000, 0]),
        }),
        105..=107 => Command::Unhold(Unhold { name, owner }),
        108..=117 => {
            let ttl_ms = *rng.pick(&[1_000, 1_000, 0]);
            let op = *rng.pick(&[
                ReadWriteOp::Read { ttl_ms },
                ReadWriteOp::Write {
                    ttl_ms,
                    intent: true,
                },
                ReadWriteOp::Write {
                    ttl_ms,
                    intent: false,
                },
                ReadWriteOp::ReleaseRead,
                ReadWriteOp::ReleaseWrite,
                ReadWriteOp::CancelIntent,
                ReadWriteOp::Downgrade { ttl_ms },
            ]);
            Command::ReadWrite(ReadWrite { name, owner, op })
        }
        118..=121 => Command::Lead(Lead {
            name,
            owner: owner.clone(),
            ttl_ms: 1_000,
            metadata: vec![("owner".into(), owner)],
        }),
        _ => Command::ClaimFire(ClaimFire {
            name,
            due: (rng.below(4) as f64).to_bits(),
        }),
    }
}

/// Rebuilds a state from its parts, through JSON as the store would.
fn round_trip(state: &LockState) -> LockState {
    let parts = state.to_parts();
    let json = serde_json::to_string(&parts).unwrap_or_else(|e| panic!("parts serialize: {e}"));
    let back: StateParts =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("parts deserialize: {e}"));
    assert_eq!(back, parts);
    let rebuilt = LockState::from_parts(back);
    assert_eq!(rebuilt, *state, "from_parts(to_parts(s)) != s");
    rebuilt
}

/// Checks the answer to `reused`, the id of `original` (answered `answer`)
/// sent with another random command: refused with no effect, unless the
/// command happens to be the same, which replays.
fn check_reuse(
    original: &Request,
    answer: &Response,
    reused: &Request,
    reply: &Response,
    before: &StateParts,
    state: &LockState,
) {
    if reused.command == original.command {
        assert_eq!(reply, answer, "the same command replays");
        return;
    }
    let Some(origin) = reused.origin else {
        unreachable!("only client requests are reused")
    };
    let refused = CommandError::RequestIdReused {
        client: origin.client,
        seq: origin.seq,
    };
    assert_eq!(reply, &Response::Rejected(refused), "{:?}", reused.command);
    assert_eq!(
        &state.to_parts(),
        before,
        "a refused reuse changed the state"
    );
}

/// Runs `steps` random requests from `seed`; returns how many requests
/// were applied without a session (always admitted, no place left).
fn run_seed(seed: u64, steps: usize) -> usize {
    let mut rng = Rng(seed);
    let mut h = Harness::new();
    h.quotas = QUOTAS;
    let callers = callers();
    let mut shadow = LockState::default();
    let mut leases: Vec<LeaseId> = Vec::new();
    let mut max_fence: BTreeMap<String, u64> = BTreeMap::new();
    let clients = [Uuid::from_u128(1), Uuid::from_u128(2)];
    let mut next_seq = [0u64; 2];
    let mut last: [Option<(Request, Response)>; 2] = [None, None];
    let fresh_ids = fresh_ids_host();
    let fresh_account = fresh_ids.account();
    let mut unrecorded = 0;

    for step in 0..steps {
        if step % 97 == 0 {
            shadow = round_trip(&h.state);
        }
        let who = rng.below(5) as usize;
        let roll = rng.below(20);
        let retry = who < 2 && roll < 2 && last[who].is_some();
        // The last request id again, with whatever command comes up.
        let reuse = who < 2 && roll == 2 && last[who].is_some();
        let request = if retry || reuse {
            let (last_request, _) = last[who].as_ref().unwrap_or_else(|| unreachable!());
            let mut request = last_request.clone();
            if reuse {
                let live: Vec<LeaseId> = h.state.leases().map(|l| l.id).collect();
                request.command = random_command(&mut rng, &live, &leases);
            }
            request
        } else {
            let live: Vec<LeaseId> = h.state.leases().map(|l| l.id).collect();
            let command = random_command(&mut rng, &live, &leases);
            let origin = match who {
                0 | 1 => {
                    next_seq[who] += 1;
                    let acked_below = next_seq[who].saturating_sub(rng.below(4));
                    Some(ClientSeq {
                        client: clients[who],
                        seq: next_seq[who],
                        acked_below,
                        attempt: 0,
                        anonymous: false,
                    })
                }
                4 => Some(ClientSeq {
                    client: Uuid::from_u128(1_000 + step as u128),
                    seq: 1,
                    acked_below: rng.below(2),
                    attempt: 0,
                    anonymous: rng.below(2) == 0,
                }),
                _ => None,
            };
            // Each client from its own address; the others from any.
            let caller = match who {
                0 | 1 => callers[who].clone(),
                4 => fresh_ids.clone(),
                _ => rng.pick(&callers).clone(),
            };
            Request {
                origin,
                caller,
                time_ms: step as u64,
                command,
            }
        };
        let before = (retry || reuse).then(|| h.state.to_parts());
        let (reply, changes) = h.run_request(request.clone());

        let mut shadow_changes = Changes::default();
        let shadow_reply = shadow.apply(h.index, &request, &h.quotas, &mut shadow_changes);
        assert_eq!(
            shadow_reply, reply,
            "step {step}: rebuilt state answered differently"
        );
        assert_eq!(shadow_changes.events, changes.events);
        assert_eq!(shadow, h.state, "step {step}: rebuilt state diverged");

        if let (true, Some(before), Some(Some((original, answer)))) =
            (reuse, &before, last.get(who))
        {
            check_reuse(original, answer, &request, &reply, before, &h.state);
            assert!(changes.events.is_empty());
            continue;
        }
        if let (Some(before), Some(Some((_, original)))) = (before, last.get(who)) {
            assert_eq!(&reply, original, "step {step}: a retry must replay");
            let after = h.state.to_parts();
            assert_eq!((before.leases, before.locks), (after.leases, after.locks));
            assert!(changes.events.is_empty());
        } else if who < 2 {
            last[who] = Some((request.clone(), reply.clone()));
        }

        if who == 4 {
            let admitted_anyway = always_admitted(&request);
            let no_place = matches!(
                reply,
                Response::Rejected(
                    CommandError::QuotaExceeded {
                        quota: Quota::Clients,
                        ..
                    } | CommandError::TooManyClients(_)
                )
            );
            assert!(
                !(admitted_anyway && no_place),
                "step {step}: {request:?} refused: {reply:?}"
            );
            let origin = request.origin.unwrap_or_else(|| unreachable!());
            let kept = h.state.client(fresh_account.as_ref(), &origin.client);
            if admitted_anyway && kept.is_none() {
                unrecorded += 1;
            }
            let usage = h
                .state
                .account_use(fresh_account.as_ref().unwrap_or_else(|| unreachable!()));
            assert!(
                usage.clients <= QUOTAS.clients as usize,
                "step {step}: {usage:?}"
            );
        }
        if let Response::LeaseGranted { id, .. } = reply {
            leases.push(id);
        }
        for account in callers.iter().filter_map(Caller::account) {
            let usage = h.state.account_use(&account);
            assert!(
                usage.leases <= QUOTAS.leases as usize,
                "step {step}: {usage:?}"
            );
            assert!(
                usage.waiters <= u64::from(QUOTAS.waiters),
                "step {step}: {usage:?}"
            );
        }
        if let Response::Granted { fence, .. } = reply {
            if let Command::Acquire(Acquire { name, owner, .. }) = &request.command {
                let held = h
                    .state
                    .lock(name)
                    .and_then(|l| l.holder(owner))
                    .map(|x| x.fence);
                if !retry {
                    assert_eq!(
                        held,
                        Some(fence),
                        "step {step}: reply fence is the hold's fence"
                    );
                }
            }
        }
        for event in &changes.events {
            if let Event::Granted { name, fence, .. } = event {
                let previous = max_fence.get(name).copied().unwrap_or(0);
                assert!(
                    *fence > previous,
                    "step {step}: fence {fence} for {name} not above {previous}"
                );
            }
        }
        for event in &changes.events {
            if let Event::Granted { name, fence, .. } = event {
                max_fence.insert(name.clone(), *fence);
            }
        }
    }
    round_trip(&h.state);
    unrecorded
}

#[test]
fn random_sequences_keep_the_invariants() {
    let mut unrecorded = 0;
    for seed in [1, 2, 3, 0x9E37_79B9_7F4A_7C15, 42] {
        unrecorded += run_seed(seed, 3_000);
    }
    assert!(unrecorded > 0, "no request met a full client quota");
}

#[test]
fn an_empty_state_round_trips() {
    let state = LockState::default();
    assert_eq!(state.to_parts(), StateParts::default());
    assert_eq!(round_trip(&state), state);
}
