//! Applying entries: events per entry, nothing written to disk, and one
//! slot per request inside a shared entry.

use raftlock_storage::command::{GrantLease, Release, RevokeLease};
use raftlock_storage::state::StateParts;
use raftlock_storage::{slot, Applied, Command, EndReason, Event, Proposal, Request, Response};

mod common;
use common::*;
use openraft::storage::RaftStateMachine;

#[tokio::test]
async fn apply_reports_events_per_entry_and_writes_nothing_to_disk() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let (_log, mut sm, mut rx) = open_dir(dir.path())?;
        sm.apply_entries(vec![
            normal(1, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
            normal(2, Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
            normal(3, acquire("a", "owner-1", slot(1, 0))),
        ])
        .await?;
        // Events arrive per entry, in log order.
        let mut indexes = Vec::new();
        while let Ok(Applied::Entry { index, events }) = rx.try_recv() {
            assert!(!events.is_empty());
            indexes.push(index);
        }
        assert_eq!(indexes, vec![1, 2, 3]);
        // Revoking lease 1 releases "a": the lock record and the lease go.
        sm.apply_entries(vec![normal(
            4,
            Command::RevokeLease(RevokeLease { id: slot(1, 0) }),
        )])
        .await?;
        match rx.try_recv()? {
            Applied::Entry { index: 4, events } => {
                assert!(events.contains(&Event::LeaseEnded {
                    id: slot(1, 0),
                    reason: EndReason::LeaseRevoked
                }))
            }
            other => return Err(format!("unexpected {other:?}").into()),
        }
        let state = parts(&sm);
        assert_eq!(state.leases.len(), 1);
        assert!(state.locks.is_empty());
    }
    // No state-machine tree: without a snapshot the state lives in the log.
    let mut trees = tree_names(dir.path())?;
    trees.sort();
    assert_eq!(
        trees,
        vec![b"__sled__default".to_vec(), b"snapshot".to_vec()]
    );
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    assert_eq!(parts(&sm), StateParts::default());
    assert_eq!(sm.applied_state().await?.0, None);
    Ok(())
}

#[tokio::test]
async fn requests_sharing_an_entry_get_their_own_increasing_slots() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (_log, mut sm, _rx) = open_dir(dir.path())?;
    let request = |command| Request {
        origin: None,
        caller: Default::default(),
        time_ms: 1000,
        command,
    };
    let release = |owner: &str| {
        Command::Release(Release {
            name: "a".into(),
            owner: owner.into(),
        })
    };
    let entry = Entry {
        log_id: log_id(1, 1, 7),
        payload: EntryPayload::Normal(Proposal {
            requests: vec![
                request(Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
                request(Command::GrantLease(GrantLease { ttl_ms: 5_000 })),
                request(acquire("a", "owner-1", slot(7, 0))),
                request(release("owner-1")),
                request(acquire("a", "owner-2", slot(7, 1))),
            ],
            quotas: Default::default(),
        }),
    };
    let responses = sm.apply_entries(vec![entry]).await?;
    assert_eq!(
        responses,
        vec![vec![
            Response::LeaseGranted {
                id: slot(7, 0),
                ttl_ms: 5_000
            },
            Response::LeaseGranted {
                id: slot(7, 1),
                ttl_ms: 5_000
            },
            Response::Granted {
                fence: slot(7, 2),
                count: 1
            },
            Response::Released { remaining: 0 },
            // The second grant of "a" in the same entry has a larger fence.
            Response::Granted {
                fence: slot(7, 4),
                count: 1
            },
        ]]
    );
    assert!(slot(7, 4) < slot(8, 0));
    Ok(())
}
