//! Snapshot bytes: framed, checked, and refused when damaged, foreign or
//! not what their meta claims.

use std::collections::BTreeMap;

use openraft::vote::RaftLeaderId;

use crate::state::{Holder, Lease, Lock};
use crate::types::{CommittedLeaderId, Membership};
use crate::{slot, Mode};

use super::*;

fn log_id(index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(2, 1), index)
}

/// A snapshot at index 10 holding one lease and one held lock.
fn payload() -> (SnapshotMeta, SnapshotPayload) {
    let lease = slot(4, 0);
    let members = BTreeMap::from([(1, Default::default())]);
    let membership = StoredMembership::new(
        Some(log_id(1)),
        Membership::new(vec![[1].into()], members).expect("a membership"),
    );
    let state = StateParts {
        leases: vec![Lease {
            id: lease,
            ttl_ms: 5_000,
            granted_at_ms: 0,
            granted_by: None,
            identity: None,
            account: None,
        }],
        locks: vec![Lock {
            name: "a".into(),
            semaphore_limit: None,
            holders: vec![Holder {
                owner: "o".into(),
                lease,
                mode: Mode::Exclusive,
                fence: slot(7, 0),
                count: 1,
                granted_at_ms: 0,
                value: None,
                claim: None,
                lock_delay_ms: 0,
            }],
            waiters: Default::default(),
            delay: None,
        }],
        clients: Vec::new(),
        named: Default::default(),
        slots: Default::default(),
        retired_nodes: Default::default(),
    };
    let meta = SnapshotMeta {
        last_log_id: Some(log_id(10)),
        last_membership: membership.clone(),
    };
    let payload = SnapshotPayload {
        last_applied: Some(log_id(10)),
        membership,
        state,
    };
    (meta, payload)
}

const OURS: Uuid = Uuid::from_u128(7);

/// `payload` in the checked frame marked `marker`, built in [`OURS`], as
/// the build that wrote that marker framed it.
fn framed_as(marker: u8, payload: &[u8]) -> Vec<u8> {
    let mut framed = vec![marker];
    framed.extend_from_slice(OURS.as_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(OURS.as_bytes()), payload);
    framed.extend_from_slice(&crc.to_le_bytes());
    framed.extend(payload);
    framed
}

#[test]
fn a_snapshot_round_trips_with_its_cluster_and_checksum() {
    let (meta, payload) = payload();
    let data = payload.encode(Some(OURS)).unwrap();
    assert_eq!(data[0], CHECKED_SNAPSHOT);
    let back = SnapshotPayload::decode(&meta, &data, Some(OURS)).unwrap();
    assert_eq!(back, payload);
    // A node that knows no cluster yet accepts it.
    verify_snapshot(&meta, &data, None).unwrap();
}

#[test]
fn garbage_and_damaged_bytes_are_refused() {
    let (meta, payload) = payload();
    for garbage in [
        &b""[..],
        b"\0",
        b"garbage",
        &[CHECKED_SNAPSHOT; 8],
        &[0xB1, 0xFF],
    ] {
        assert!(verify_snapshot(&meta, garbage, Some(OURS)).is_err());
    }
    let data = payload.encode(Some(OURS)).unwrap();
    for i in 1..data.len() {
        let mut bad = data.clone();
        bad[i] ^= 0x10;
        assert!(
            verify_snapshot(&meta, &bad, Some(OURS)).is_err(),
            "a flipped bit in byte {i} went unnoticed"
        );
    }
    for len in 0..data.len() {
        assert!(verify_snapshot(&meta, &data[..len], Some(OURS)).is_err());
    }
}

#[test]
fn a_snapshot_of_another_cluster_or_of_none_is_refused() {
    let (meta, payload) = payload();
    let theirs = payload.encode(Some(Uuid::from_u128(8))).unwrap();
    let err = verify_snapshot(&meta, &theirs, Some(OURS)).unwrap_err();
    assert!(err.to_string().contains("built in cluster"), "{err}");
    let none = payload.encode(None).unwrap();
    let err = verify_snapshot(&meta, &none, Some(OURS)).unwrap_err();
    assert!(err.to_string().contains("names no cluster"), "{err}");
}

#[test]
fn a_meta_that_claims_more_or_other_than_the_data_is_refused() {
    let (meta, payload) = payload();
    let data = payload.encode(Some(OURS)).unwrap();
    let further = SnapshotMeta {
        last_log_id: Some(log_id(1_000)),
        ..meta.clone()
    };
    let err = verify_snapshot(&further, &data, Some(OURS)).unwrap_err();
    assert!(err.to_string().contains("meta says"), "{err}");
    let other_members = SnapshotMeta {
        last_membership: StoredMembership::default(),
        ..meta.clone()
    };
    let err = verify_snapshot(&other_members, &data, Some(OURS)).unwrap_err();
    assert!(err.to_string().contains("membership"), "{err}");
}

#[test]
fn records_made_after_the_snapshot_position_are_refused() {
    let (meta, mut payload) = payload();
    payload.state.locks[0].holders[0].fence = slot(11, 0);
    let data = payload.encode(Some(OURS)).unwrap();
    let err = verify_snapshot(&meta, &data, Some(OURS)).unwrap_err();
    assert!(err.to_string().contains("index 11"), "{err}");
    let (meta, mut payload) = payload_with_client(slot(99, 0));
    payload.state.leases.clear();
    let data = payload.encode(Some(OURS)).unwrap();
    assert!(verify_snapshot(&meta, &data, Some(OURS)).is_err());
}

fn payload_with_client(last_index: u64) -> (SnapshotMeta, SnapshotPayload) {
    let (meta, mut payload) = payload();
    let session = crate::state::ClientSession {
        last_index,
        ..Default::default()
    };
    let key = crate::state::SessionKey {
        account: None,
        client: Uuid::from_u128(1),
    };
    payload.state.clients.push((key, session));
    (meta, payload)
}

#[test]
fn encode_snapshot_writes_what_the_payload_would() {
    let (meta, payload) = payload();
    let data = encode_snapshot(&meta, &payload.state, Some(OURS)).unwrap();
    assert_eq!(data, payload.encode(Some(OURS)).unwrap());
}

/// [`payload`] as a format-5 build encoded it: a lease without an
/// account (a tuple encodes as the struct did), client sessions keyed by
/// client id alone (none here).
fn payload_v5_bytes() -> Vec<u8> {
    let (_, payload) = payload();
    let leases: Vec<_> = payload
        .state
        .leases
        .iter()
        .map(|l| (l.id, l.ttl_ms, l.granted_at_ms, l.granted_by, &l.identity))
        .collect();
    let clients: Vec<(Uuid, crate::state::ClientSession)> = Vec::new();
    let state = (leases, &payload.state.locks, clients);
    postcard::to_stdvec(&(payload.last_applied, &payload.membership, state)).unwrap()
}

/// Snapshots of earlier builds still install: the checked frame of
/// format-5 builds, the unchecked postcard before it, in the state layout
/// those builds wrote (see `state::legacy_parts`).
#[test]
fn snapshots_of_earlier_builds_are_still_read() {
    let (meta, payload) = payload();
    let old = payload_v5_bytes();
    let mut unchecked = vec![POSTCARD_SNAPSHOT];
    unchecked.extend(&old);
    assert_eq!(
        SnapshotPayload::decode(&meta, &unchecked, Some(OURS)).unwrap(),
        payload
    );
    let checked = framed_as(CHECKED_SNAPSHOT_V5, &old);
    assert_eq!(
        SnapshotPayload::decode(&meta, &checked, Some(OURS)).unwrap(),
        payload
    );
    // Today's layout in the old frame does not pass as the old layout.
    let mut mislabelled = payload.encode(Some(OURS)).unwrap();
    mislabelled[0] = CHECKED_SNAPSHOT_V5;
    assert!(SnapshotPayload::decode(&meta, &mislabelled, Some(OURS)).is_err());
}

/// Snapshots of format-6 builds before named records (marked
/// [`CHECKED_SNAPSHOT_V6`]) install with none; today's carry them.
#[test]
fn snapshots_without_named_records_are_still_read() {
    let (meta, mut payload) = payload();
    let state = (
        &payload.state.leases,
        &payload.state.locks,
        &payload.state.clients,
    );
    let old = postcard::to_stdvec(&(payload.last_applied, &payload.membership, state)).unwrap();
    let framed = framed_as(CHECKED_SNAPSHOT_V6, &old);
    assert_eq!(
        SnapshotPayload::decode(&meta, &framed, Some(OURS)).unwrap(),
        payload
    );
    payload.state.named.schedules = vec![(
        "cron".into(),
        crate::state::Kept {
            account: None,
            record: 2.5f64.to_bits(),
        },
    )];
    let today = payload.encode(Some(OURS)).unwrap();
    assert_eq!(today[0], CHECKED_SNAPSHOT);
    assert_eq!(
        SnapshotPayload::decode(&meta, &today, Some(OURS)).unwrap(),
        payload
    );
}

/// Snapshots of format-6 builds before slot shifts (marked
/// [`CHECKED_SNAPSHOT_V6_NAMED`]) install with slots at log positions;
/// today's carry the shift, and a shifted state may hold slots that far
/// past its index, no further.
#[test]
fn snapshots_without_a_slot_shift_are_still_read_and_shifted_ones_checked() {
    let (meta, mut payload) = payload();
    let state = (
        &payload.state.leases,
        &payload.state.locks,
        &payload.state.clients,
        &payload.state.named,
    );
    let old = postcard::to_stdvec(&(payload.last_applied, &payload.membership, state)).unwrap();
    let framed = framed_as(CHECKED_SNAPSHOT_V6_NAMED, &old);
    assert_eq!(
        SnapshotPayload::decode(&meta, &framed, Some(OURS)).unwrap(),
        payload
    );
    // At index 10 with a shift of 5, slots up to index 15 are the past.
    payload.state.slots = crate::state::SlotShift {
        entries: 5,
        pending_since_ms: None,
    };
    payload.state.locks[0].holders[0].fence = slot(15, 3);
    let today = payload.encode(Some(OURS)).unwrap();
    assert_eq!(today[0], CHECKED_SNAPSHOT);
    assert_eq!(
        SnapshotPayload::decode(&meta, &today, Some(OURS)).unwrap(),
        payload
    );
    payload.state.locks[0].holders[0].fence = slot(16, 0);
    let future = payload.encode(Some(OURS)).unwrap();
    let err = SnapshotPayload::decode(&meta, &future, Some(OURS)).unwrap_err();
    assert!(err.to_string().contains("after it"), "{err}");
}

/// A read-write record naming a write grant or an intent lease after the
/// snapshot's position is refused as the other records are.
#[test]
fn named_records_made_after_the_snapshot_position_are_refused() {
    use crate::state::{Intent, Kept, ReadWriteRecord};
    let future = slot(11, 0);
    for record in [
        ReadWriteRecord {
            generation: future,
            ..ReadWriteRecord::default()
        },
        ReadWriteRecord {
            intents: vec![Intent {
                owner: "w".into(),
                lease: future,
            }],
            ..ReadWriteRecord::default()
        },
    ] {
        let (meta, mut payload) = payload();
        payload.state.named.read_write = vec![(
            "rw".into(),
            Kept {
                account: None,
                record,
            },
        )];
        let data = payload.encode(Some(OURS)).unwrap();
        let err = SnapshotPayload::decode(&meta, &data, Some(OURS)).unwrap_err();
        assert!(err.to_string().contains("after it"), "{err}");
    }
}
