//! A backup round-trips, refuses damage, and restores into a dir a node
//! opens at the backup's state, past the backup's index.

use std::collections::BTreeMap;

use super::*;
use crate::command::slot;
use crate::command::{Acquire, GrantLease};
use crate::command::{Command, Mode, Request};
use crate::limits::Quotas;
use crate::node_db::{open, OpenOptions};
use crate::state::{Changes, LockState, SlotShift, CLOCK_MARGIN_MS, MAX_ENTRIES_PER_MS};

/// A state with one lease holding one lock, applied at indexes 1 and 2.
fn sample() -> Backup {
    let mut state = LockState::default();
    let mut changes = Changes::default();
    let request = |command| Request {
        origin: None,
        caller: Default::default(),
        time_ms: 0,
        command,
    };
    state.apply(
        slot(1, 0),
        &request(Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
        &Quotas::default(),
        &mut changes,
    );
    state.apply(
        slot(2, 0),
        &request(Command::Acquire(Acquire {
            name: "res".into(),
            owner: "a".into(),
            lease: slot(1, 0),
            mode: Mode::Exclusive,
            wait: false,
            value: None,
            lock_delay_ms: 0,
        })),
        &Quotas::default(),
        &mut changes,
    );
    Backup {
        index: 2,
        cluster_id: Some(Uuid::from_u128(9)),
        taken_at_ms: TAKEN_AT_MS,
        state: state.to_parts(),
    }
}

fn members(n: u64) -> BTreeMap<NodeId, NodeAddr> {
    (1..=n)
        .map(|id| {
            let addr = NodeAddr {
                peer_addr: format!("127.0.0.1:{}", 7000 + id),
                client_addr: format!("127.0.0.1:{}", 8000 + id),
            };
            (id, addr)
        })
        .collect()
}

fn seed(node_id: NodeId, bump: u64) -> Seed {
    Seed {
        node_id,
        members: members(3),
        bootstrap: Bootstrap::Cluster {
            members: "the three".into(),
        },
        bump,
        token: String::new(),
        now_ms: TAKEN_AT_MS + ELAPSED_MS,
    }
}

/// When `sample()` was taken, and how long before the restore.
const TAKEN_AT_MS: u64 = 1;
const ELAPSED_MS: u64 = 2_000;

#[test]
fn a_backup_round_trips_and_refuses_damage() {
    let backup = sample();
    let bytes = backup.encode().unwrap();
    assert_eq!(Backup::decode(&bytes).unwrap(), backup);
    assert_eq!(backup.highest_fence(), slot(2, 0));

    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let e = Backup::decode(&flipped).unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
    let e = Backup::decode(b"{\"not\": \"a backup\"}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("raftlock backup"), "{e}");
    assert!(Backup::decode(&bytes[..bytes.len() / 2]).is_err());
}

#[test]
fn a_restored_dir_opens_at_the_backup_past_its_index() {
    let backup = sample();
    let bytes = backup.encode().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for node in 1..=3 {
        let path = dir.path().join(format!("node{node}"));
        let restored = restore(&path, &bytes, &seed(node, 100)).unwrap();
        assert_eq!(restored.index, 102);
        assert!(restored.fence_floor >= backup.highest_fence());
        // The floor clears what the old cluster could grant in the 2 s
        // between the backup and the restore.
        let ahead = (ELAPSED_MS + CLOCK_MARGIN_MS) * MAX_ENTRIES_PER_MS;
        assert_eq!(restored.fence_floor, slot(103 + ahead, 0) - 1);
        ids.push(restored.cluster_id);

        let options = OpenOptions::new(node, seed(node, 0).bootstrap);
        let (events, _rx) = tokio::sync::mpsc::unbounded_channel();
        let (log, sm) = open(&path, &options, events).unwrap();
        let (applied, membership) = sm.applied().unwrap();
        assert_eq!(applied.map(|l| l.index), Some(102));
        let voters: Vec<_> = membership.membership().voter_ids().collect();
        assert_eq!(voters, vec![1, 2, 3]);
        assert_eq!(log.cluster_id(), Some(restored.cluster_id));
        let state = sm.state();
        let state = state.read().unwrap();
        // The backup's state, with the shift pending from its time: the
        // same on every member, whenever each was restored.
        let mut expected = backup.state.clone();
        expected.slots = SlotShift {
            entries: 0,
            pending_since_ms: Some(TAKEN_AT_MS),
        };
        assert_eq!(state.to_parts(), expected);
        assert_eq!(state.lock("res").unwrap().holders[0].owner, "a");
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one cluster id");
}

#[test]
fn a_restore_refuses_a_used_dir_and_a_stranger() {
    let bytes = sample().encode().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("something"), b"x").unwrap();
    let e = restore(dir.path(), &bytes, &seed(1, 0)).unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let empty = tempfile::tempdir().unwrap();
    let e = restore(&empty.path().join("n"), &bytes, &seed(4, 0)).unwrap_err();
    assert!(e.to_string().contains("not one of the members"), "{e}");
}

/// A backup file written by a build of record format 5 (leases without an
/// account, sessions keyed by client id alone) still decodes: the lease
/// granted by `jobs` is charged to it, its granter's session keyed by that
/// identity, and the lock kept. Other old formats are refused as before.
#[test]
fn a_backup_of_the_previous_format_is_read() {
    use crate::account::Account;
    use crate::codec::{seal, PREVIOUS_FORMAT};
    use crate::state::{ClientSession, SessionKey};

    let current = sample();
    let granter = Uuid::from_u128(5);
    let leases: Vec<_> = current
        .state
        .leases
        .iter()
        .map(|l| (l.id, l.ttl_ms, l.granted_at_ms, Some(granter), Some("jobs")))
        .collect();
    let clients = vec![(granter, ClientSession::default())];
    let state = (leases, &current.state.locks, clients);
    let old = (
        current.index,
        current.cluster_id,
        current.taken_at_ms,
        state,
    );
    let mut record = seal(&postcard::to_stdvec(&old).unwrap());
    record[0] = PREVIOUS_FORMAT;
    // `seal` checksums the payload only, so the format byte may change.
    let mut file = MAGIC.to_vec();
    file.extend(&record);

    let read = Backup::decode(&file).expect("a format-5 backup is read");
    let jobs = Some(Account::Identity("jobs".into()));
    assert_eq!(read.index, current.index);
    assert_eq!(read.state.locks, current.state.locks);
    assert_eq!(read.state.leases[0].account, jobs);
    assert_eq!(read.state.leases[0].identity.as_deref(), Some("jobs"));
    let key = SessionKey {
        account: jobs,
        client: granter,
    };
    assert_eq!(read.state.clients, [(key, ClientSession::default())]);

    file[MAGIC.len()] = PREVIOUS_FORMAT - 1;
    let err = Backup::decode(&file).expect_err("format 4 is refused");
    assert!(
        err.to_string().contains("another raftlock version"),
        "{err}"
    );
}

/// A backup of a format-6 build before named records (its state ends
/// after the client sessions) is read with none; today's keep theirs.
#[test]
fn a_backup_without_named_records_is_read() {
    use crate::codec::seal;
    use crate::state::Kept;

    let mut current = sample();
    let state = (
        &current.state.leases,
        &current.state.locks,
        &current.state.clients,
    );
    let old = (
        current.index,
        current.cluster_id,
        current.taken_at_ms,
        state,
    );
    let mut file = MAGIC.to_vec();
    file.extend(seal(&postcard::to_stdvec(&old).unwrap()));
    assert_eq!(Backup::decode(&file).expect("read"), current);

    current.state.named.schedules = vec![(
        "cron".into(),
        Kept {
            account: None,
            record: 1.5f64.to_bits(),
        },
    )];
    let today = current.encode().unwrap();
    assert_eq!(Backup::decode(&today).expect("read"), current);
}
