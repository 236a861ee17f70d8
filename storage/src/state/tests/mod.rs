//! Unit tests for the lock state machine: a small harness that applies
//! commands at increasing log indexes and checks the invariants after each.

mod authority;
mod claims;
mod coordination;
mod dedup_attacks;
mod flood_recovery;
mod leases;
mod lock_delay;
mod locks;
mod own_ttl;
mod quotas;
mod random;
mod rejections;
mod sessions;

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::queue::Occupancy;
use super::{
    AccountUse, Changes, ClientSession, Lease, LockState, SessionKey, StateParts, StoredReply,
};
use crate::account::Account;
use crate::command::{Acquire, Cancel, GrantLease, Release};
use crate::command::{Claim, ClientSeq, Command, CommandError, LeaseId, Mode, Request, Response};
use crate::event::Event;
use crate::limits::Quotas;

/// A state plus the next log index to apply at.
struct Harness {
    state: LockState,
    /// Index of the last applied entry.
    index: u64,
    /// The quotas every entry carries.
    quotas: Quotas,
}

impl Harness {
    fn new() -> Self {
        Self {
            state: LockState::default(),
            index: 0,
            quotas: Quotas::default(),
        }
    }

    /// A harness whose state remembers at most `capacity` clients.
    fn with_client_capacity(capacity: usize) -> Self {
        Self {
            state: LockState::default().with_client_capacity(capacity),
            index: 0,
            quotas: Quotas::default(),
        }
    }

    /// A harness whose state holds leases `1..=n` (1 s TTL, granted for
    /// `account`) and nothing else, `n` entries applied.
    fn with_leases(n: u64, account: Option<&Account>) -> Self {
        let leases = (1..=n)
            .map(|id| Lease {
                id,
                ttl_ms: 1_000,
                granted_at_ms: 0,
                granted_by: None,
                identity: None,
                account: account.cloned(),
            })
            .collect();
        Self {
            state: LockState::from_parts(StateParts {
                leases,
                ..StateParts::default()
            }),
            index: n,
            quotas: Quotas::default(),
        }
    }

    /// Applies `command` (no client origin) at the next index.
    fn run(&mut self, command: Command) -> (Response, Changes) {
        self.run_request(Request {
            origin: None,
            caller: Default::default(),
            time_ms: 1_000 + self.index,
            command,
        })
    }

    /// Applies `command` on behalf of a client.
    fn run_as(&mut self, origin: ClientSeq, command: Command) -> (Response, Changes) {
        self.run_request(Request {
            origin: Some(origin),
            caller: Default::default(),
            time_ms: 1_000 + self.index,
            command,
        })
    }

    fn run_request(&mut self, request: Request) -> (Response, Changes) {
        self.index += 1;
        let mut changes = Changes::default();
        let reply = self
            .state
            .apply(self.index, &request, &self.quotas, &mut changes);
        for event in &changes.events {
            if let Event::Granted { fence, .. } = event {
                assert_eq!(*fence, self.index, "a grant's fence is its entry's index");
            }
        }
        check_invariants(&self.state);
        (reply, changes)
    }

    /// Applies and returns only the reply.
    fn reply(&mut self, command: Command) -> Response {
        self.run(command).0
    }

    /// Grants a lease and returns its id.
    fn lease(&mut self) -> LeaseId {
        match self.reply(Command::GrantLease(GrantLease { ttl_ms: 10_000 })) {
            Response::LeaseGranted { id, .. } => id,
            other => panic!("lease grant failed: {other:?}"),
        }
    }

    fn holders(&self, name: &str) -> Vec<String> {
        self.state
            .lock(name)
            .map(|l| l.holders.iter().map(|h| h.owner.clone()).collect())
            .unwrap_or_default()
    }

    fn waiters(&self, name: &str) -> Vec<String> {
        self.state
            .lock(name)
            .map(|l| l.waiters.iter().map(|w| w.owner.clone()).collect())
            .unwrap_or_default()
    }
}

fn acquire(name: &str, owner: &str, lease: LeaseId, mode: Mode, wait: bool) -> Command {
    Command::Acquire(Acquire {
        name: name.into(),
        owner: owner.into(),
        lease,
        mode,
        wait,
        value: None,
        lock_delay_ms: 0,
    })
}

fn release(name: &str, owner: &str) -> Command {
    Command::Release(Release {
        name: name.into(),
        owner: owner.into(),
    })
}

fn cancel(name: &str, owner: &str) -> Command {
    Command::Cancel(Cancel {
        name: name.into(),
        owner: owner.into(),
        call: None,
    })
}

/// A request id: client `client`'s request `seq`, having received the
/// replies to every request below `acked_below`.
fn seq(client: Uuid, seq: u64, acked_below: u64) -> ClientSeq {
    ClientSeq {
        client,
        seq,
        acked_below,
        attempt: 0,
        anonymous: false,
    }
}

/// What the reply table keeps of `response` to `command`.
fn stored(command: &Command, response: Response) -> Box<StoredReply> {
    Box::new(StoredReply {
        fingerprint: Request {
            origin: None,
            caller: Default::default(),
            time_ms: 0,
            command: command.clone(),
        }
        .fingerprint(),
        response,
    })
}

fn permits(count: u32, limit: u32) -> Mode {
    Mode::Permits { count, limit }
}

/// The grants an apply step announced, as (name, owner).
fn grants(changes: &Changes) -> Vec<(String, String)> {
    changes
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Granted { name, owner, .. } => Some((name.clone(), owner.clone())),
            _ => None,
        })
        .collect()
}

/// Replaces client `id`'s session in `parts` (removes it, for `None`),
/// keeping client order as [`LockState::to_parts`] lists them: what a step
/// that only touched that one session should leave.
fn set_session(parts: &mut StateParts, id: Uuid, session: Option<ClientSession>) {
    let key = SessionKey {
        account: None,
        client: id,
    };
    parts.clients.retain(|(k, _)| *k != key);
    if let Some(session) = session {
        parts.clients.push((key, session));
        parts.clients.sort_by(|a, b| a.0.cmp(&b.0));
    }
}

/// Checks everything that must hold after any apply step.
fn check_invariants(state: &LockState) {
    let live: BTreeSet<LeaseId> = state.leases().map(|l| l.id).collect();
    let mut expected: BTreeMap<LeaseId, Vec<(String, String, bool)>> = BTreeMap::new();
    for lock in state.locks() {
        let name = &lock.name;
        assert!(
            !lock.holders.is_empty() || !lock.waiters.is_empty() || lock.delay.is_some(),
            "{name}: empty lock kept"
        );
        let mut owners = BTreeSet::new();
        for holder in &lock.holders {
            assert!(
                owners.insert(&holder.owner),
                "{name}: {} appears twice",
                holder.owner
            );
            assert!(holder.count >= 1, "{name}: zero count");
            assert!(state.check(name, holder.fence));
            expected.entry(holder.lease).or_default().push((
                name.clone(),
                holder.owner.clone(),
                true,
            ));
        }
        for waiter in &lock.waiters {
            assert!(
                owners.insert(&waiter.owner),
                "{name}: {} appears twice",
                waiter.owner
            );
            expected.entry(waiter.lease).or_default().push((
                name.clone(),
                waiter.owner.clone(),
                false,
            ));
        }
        let exclusive = lock
            .holders
            .iter()
            .filter(|h| h.mode == Mode::Exclusive)
            .count();
        assert!(
            exclusive == 0 || lock.holders.len() == 1,
            "{name}: exclusive holder shares"
        );
        match lock.semaphore_limit {
            Some(limit) => {
                let mut held = 0u64;
                for mode in lock
                    .holders
                    .iter()
                    .map(|h| h.mode)
                    .chain(lock.waiters.iter().map(|w| w.mode))
                {
                    assert!(
                        matches!(mode, Mode::Permits { limit: l, .. } if l == limit),
                        "{name}: {mode:?}"
                    );
                }
                for holder in &lock.holders {
                    if let Mode::Permits { count, .. } = holder.mode {
                        held += u64::from(count);
                    }
                }
                assert!(
                    held <= u64::from(limit),
                    "{name}: {held} permits held of {limit}"
                );
            }
            None => {
                let modes = lock
                    .holders
                    .iter()
                    .map(|h| h.mode)
                    .chain(lock.waiters.iter().map(|w| w.mode));
                for mode in modes {
                    assert!(
                        !matches!(mode, Mode::Permits { .. }),
                        "{name}: permits on a mutex"
                    );
                }
            }
        }
        // A lock-delay holds every waiter back until it ends.
        if let Some(head) = lock.waiters.front().filter(|_| lock.delay.is_none()) {
            let fits = Occupancy::of(lock).fits(head.mode, lock.semaphore_limit);
            assert!(
                !fits,
                "{name}: head waiter {} fits but was not granted",
                head.owner
            );
        }
    }
    for (lease, attachments) in &mut expected {
        assert!(
            live.contains(lease),
            "lease {lease} is gone but still attached"
        );
        attachments.sort();
    }
    for id in &live {
        let want = expected.remove(id).unwrap_or_default();
        assert_eq!(state.lease_attachments(*id), want, "lease {id} index");
    }
    check_named(state, &live);
    check_account_use(state);
}

/// Intents live on live leases, one per owner; the writer a record names,
/// when it holds, holds at or after the generation recorded.
fn check_named(state: &LockState, live: &BTreeSet<LeaseId>) {
    for (name, kept) in state.to_parts().named.read_write {
        let record = kept.record;
        let mut owners = BTreeSet::new();
        for intent in &record.intents {
            assert!(
                owners.insert(&intent.owner),
                "{name}: two intents of one owner"
            );
            assert!(
                live.contains(&intent.lease),
                "{name}: intent on a dead lease"
            );
        }
        let writer = state
            .lock(&name)
            .and_then(|l| l.holders.iter().find(|h| h.mode == Mode::Exclusive));
        if let (Some(holder), Some(recorded)) = (writer, &record.writer) {
            if &holder.owner == recorded {
                // Equal when the hold is that write grant; later when the
                // writer lost it and took the lock again another way.
                assert!(holder.fence >= record.generation, "{name}: generation");
            }
        }
    }
}

/// What each account holds, counted afresh, is what the state's indexes
/// say.
fn check_account_use(state: &LockState) {
    let mut counted: BTreeMap<Account, AccountUse> = BTreeMap::new();
    let account_of = |lease: LeaseId| state.lease(lease).and_then(|l| l.account.clone());
    for lease in state.leases() {
        if let Some(account) = &lease.account {
            counted.entry(account.clone()).or_default().leases += 1;
        }
    }
    for waiter in state.locks().flat_map(|l| &l.waiters) {
        if let Some(account) = account_of(waiter.lease) {
            counted.entry(account).or_default().waiters += 1;
        }
    }
    for (key, _) in state.clients() {
        if let Some(account) = &key.account {
            counted.entry(account.clone()).or_default().clients += 1;
        }
    }
    let named = state.to_parts().named;
    let accounts = named
        .elections
        .iter()
        .map(|(_, k)| &k.account)
        .chain(named.schedules.iter().map(|(_, k)| &k.account))
        .chain(named.read_write.iter().map(|(_, k)| &k.account));
    for account in accounts.flatten() {
        counted.entry(account.clone()).or_default().records += 1;
    }
    for (account, usage) in &counted {
        assert_eq!(&state.account_use(account), usage, "{account}");
    }
}
