//! The one place where internal errors become gRPC statuses. The client maps
//! them back in `raftlock_client::error`, and nowhere else; the metadata
//! keys both sides use live in `raftlock_api::metadata`.

use raftlock_raft::Error;

use crate::serving::grant_wait::{WaitEnd, WaitError};
use raftlock_storage::CommandError;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

pub use raftlock_api::metadata::{
    LEADER_ADDR_KEY, LEADER_ID_KEY, OUTCOME_KEY, OUTCOME_UNKNOWN, WAIT_GONE, WAIT_KEY,
};

/// Maps a replication-layer error to the status a client sees. The
/// message says what happened in words once: the code already says
/// "invalid argument", "unavailable" or "deadline exceeded", and the client
/// puts those words back in front (`client::error`).
pub fn to_status(e: Error) -> Status {
    let message = match &e {
        Error::InvalidArgument(v) => v.to_string(),
        Error::Unavailable(u) => u.to_string(),
        Error::Rejected(CommandError::InvalidArgument(m)) => m.clone(),
        other => other.to_string(),
    };
    match e {
        Error::Rejected(c) => {
            let mut status = Status::new(command_code(&c), message);
            if outcome_unknown(&c) {
                let value = MetadataValue::from_static(OUTCOME_UNKNOWN);
                status.metadata_mut().insert(OUTCOME_KEY, value);
            }
            status
        }
        Error::NotLeader {
            leader_id,
            leader_addr,
        } => {
            let mut status = Status::unavailable(message);
            if let Ok(v) = leader_id.to_string().parse() {
                status.metadata_mut().insert(LEADER_ID_KEY, v);
            }
            if let Ok(v) = leader_addr.parse() {
                status.metadata_mut().insert(LEADER_ADDR_KEY, v);
            }
            status
        }
        Error::Unavailable(_) | Error::ShuttingDown => Status::unavailable(message),
        Error::InvalidArgument(_) => Status::invalid_argument(message),
        Error::Internal(_) => Status::internal(message),
    }
}

/// Maps why an Acquire or Campaign gave no grant to the status a client
/// sees: a wait that ran out of time is DEADLINE_EXCEEDED, one that ended
/// otherwise ABORTED; when no wait was left under the request to end (an
/// earlier attempt's was cancelled), the answer says so ([`WAIT_KEY`]), and
/// the client asks again under a new request id.
pub fn wait_status(e: WaitError) -> Status {
    let message = e.message();
    match e {
        WaitError::Replica(e) => to_status(e),
        WaitError::Timeout { .. } => Status::deadline_exceeded(message),
        WaitError::Ended {
            why: WaitEnd::NoGrant,
            ..
        } => {
            let mut status = Status::aborted(message);
            let value = MetadataValue::from_static(WAIT_GONE);
            status.metadata_mut().insert(WAIT_KEY, value);
            status
        }
        WaitError::Ended { .. } => Status::aborted(message),
        WaitError::Unsettled { .. } | WaitError::Stopping => Status::unavailable(message),
    }
}

fn command_code(e: &CommandError) -> Code {
    match e {
        CommandError::InvalidArgument(_) | CommandError::RequestIdReused { .. } => {
            Code::InvalidArgument
        }
        CommandError::LeaseNotFound(_) => Code::NotFound,
        CommandError::NotHolder { .. }
        | CommandError::Conflict { .. }
        | CommandError::StaleRequest { .. }
        | CommandError::SessionExpired { .. } => Code::FailedPrecondition,
        CommandError::TooManyWaiters { .. }
        | CommandError::TooManyLeases(_)
        | CommandError::TooManyClients(_)
        | CommandError::TooManyRecords(_)
        | CommandError::QuotaExceeded { .. } => Code::ResourceExhausted,
        CommandError::PermissionDenied(_) => Code::PermissionDenied,
    }
}

/// Whether the refused request may nevertheless have been applied earlier.
fn outcome_unknown(e: &CommandError) -> bool {
    matches!(
        e,
        CommandError::StaleRequest { .. } | CommandError::SessionExpired { .. }
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use raftlock_raft::error::{Internal, Problem, Unavailable, ValidationError};
    use raftlock_storage::EndReason;

    use super::*;
    use crate::serving::grant_wait::Unsettle;

    #[test]
    fn not_leader_names_the_leader() {
        let s = to_status(Error::NotLeader {
            leader_id: 3,
            leader_addr: "127.0.0.1:7379".into(),
        });
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(s.metadata().get(LEADER_ID_KEY).unwrap(), "3");
        assert_eq!(s.metadata().get(LEADER_ADDR_KEY).unwrap(), "127.0.0.1:7379");
    }

    /// Only a wait that found nothing left under its request is marked
    /// (the client asks again under a new request id); one the state
    /// machine ended for a reason is not, and both stay WaitEnded.
    #[test]
    fn a_wait_with_nothing_left_is_marked_gone() {
        let gone = wait_status(WaitError::Ended {
            name: "jobs".into(),
            why: WaitEnd::NoGrant,
        });
        assert_eq!(gone.code(), Code::Aborted);
        assert_eq!(gone.metadata().get(WAIT_KEY).unwrap(), WAIT_GONE);
        let expired = wait_status(WaitError::Ended {
            name: "jobs".into(),
            why: WaitEnd::Ended(EndReason::LeaseExpired),
        });
        assert_eq!(expired.code(), Code::Aborted);
        assert!(expired.metadata().get(WAIT_KEY).is_none());
        for status in [gone, expired] {
            assert!(matches!(
                raftlock_client::error::from_status(&status),
                raftlock_client::Error::WaitEnded(_)
            ));
        }
    }

    #[test]
    fn every_rejection_has_its_code() {
        let client = uuid::Uuid::from_u128(7);
        let cases = [
            (
                CommandError::InvalidArgument("x".into()),
                Code::InvalidArgument,
            ),
            (CommandError::LeaseNotFound(4), Code::NotFound),
            (
                CommandError::NotHolder {
                    name: "a".into(),
                    owner: "b".into(),
                },
                Code::FailedPrecondition,
            ),
            (
                CommandError::TooManyWaiters {
                    name: "a".into(),
                    limit: 1,
                },
                Code::ResourceExhausted,
            ),
            (CommandError::TooManyLeases(1), Code::ResourceExhausted),
            (
                CommandError::Conflict {
                    name: "a".into(),
                    detail: "d".into(),
                },
                Code::FailedPrecondition,
            ),
            (
                CommandError::StaleRequest { seq: 1 },
                Code::FailedPrecondition,
            ),
            (
                CommandError::SessionExpired {
                    client,
                    seq: 3,
                    acked_below: 2,
                },
                Code::FailedPrecondition,
            ),
            (
                CommandError::RequestIdReused { client, seq: 1 },
                Code::InvalidArgument,
            ),
            (CommandError::TooManyClients(1), Code::ResourceExhausted),
            (
                CommandError::QuotaExceeded {
                    quota: raftlock_storage::Quota::Leases,
                    account: raftlock_storage::Account::Identity("billing".into()),
                    count: 2,
                    limit: 2,
                },
                Code::ResourceExhausted,
            ),
            (
                CommandError::PermissionDenied("x".into()),
                Code::PermissionDenied,
            ),
            (CommandError::TooManyRecords(1), Code::ResourceExhausted),
        ];
        let listed: std::collections::BTreeSet<usize> =
            cases.iter().map(|(e, _)| rejection_index(e)).collect();
        assert_eq!(listed.len(), REJECTIONS, "a refusal is not listed");
        for (e, code) in cases {
            let unknown = outcome_unknown(&e);
            let status = to_status(Error::Rejected(e.clone()));
            assert_eq!(status.code(), code, "{e}");
            // Said once: the client puts the code's words back in front.
            let back = raftlock_client::error::from_status(&status);
            assert_eq!(
                back.to_string().matches(&e.to_string()).count(),
                1,
                "{back}"
            );
            assert!(
                !back.to_string().contains("invalid argument: invalid"),
                "{back}"
            );
            let marked = status.metadata().get(OUTCOME_KEY).is_some();
            assert_eq!(marked, unknown, "{e}");
            // The client maps it back to the same kind of error.
            assert_eq!(
                matches!(back, raftlock_client::Error::OutcomeUnknown(_)),
                unknown,
                "{e}: {back:?}"
            );
            assert!(!back.is_retryable(), "{e}: {back:?}");
        }
    }

    /// How many variants `CommandError` has; [`rejection_index`] does not
    /// compile when one is added, so the list above must grow with it.
    const REJECTIONS: usize = 13;

    fn rejection_index(e: &CommandError) -> usize {
        match e {
            CommandError::InvalidArgument(_) => 0,
            CommandError::LeaseNotFound(_) => 1,
            CommandError::NotHolder { .. } => 2,
            CommandError::TooManyWaiters { .. } => 3,
            CommandError::TooManyLeases(_) => 4,
            CommandError::Conflict { .. } => 5,
            CommandError::StaleRequest { .. } => 6,
            CommandError::SessionExpired { .. } => 7,
            CommandError::RequestIdReused { .. } => 8,
            CommandError::TooManyClients(_) => 9,
            CommandError::PermissionDenied(_) => 10,
            CommandError::QuotaExceeded { .. } => 11,
            CommandError::TooManyRecords(_) => 12,
        }
    }

    /// Every variant of the replication layer's error, with its code; the
    /// match in [`error_index`] fails to compile when one is added.
    #[test]
    fn every_error_has_its_code() {
        let cases = [
            (
                Error::Rejected(CommandError::LeaseNotFound(1)),
                Code::NotFound,
            ),
            (
                Error::NotLeader {
                    leader_id: 2,
                    leader_addr: "127.0.0.1:1".into(),
                },
                Code::Unavailable,
            ),
            (Unavailable::NoLeader.into(), Code::Unavailable),
            (
                ValidationError::field("x", Problem::Missing).into(),
                Code::InvalidArgument,
            ),
            (Error::ShuttingDown, Code::Unavailable),
            (Internal::RaftPanicked.into(), Code::Internal),
        ];
        let listed: std::collections::BTreeSet<usize> =
            cases.iter().map(|(e, _)| error_index(e)).collect();
        assert_eq!(listed.len(), 6, "an error is not listed");
        for (e, code) in cases {
            let status = to_status(e.clone());
            assert_eq!(status.code(), code, "{e}");
            assert!(!status.message().is_empty(), "{e}");
        }
    }

    fn error_index(e: &Error) -> usize {
        match e {
            Error::Rejected(_) => 0,
            Error::NotLeader { .. } => 1,
            Error::Unavailable(_) => 2,
            Error::InvalidArgument(_) => 3,
            Error::ShuttingDown => 4,
            Error::Internal(_) => 5,
        }
    }

    /// The typed reasons reach the client in the words it always read:
    /// once, without the code's own words in front. With the whole error's
    /// words as the message (no arm for `Unavailable`), it fails on
    /// "unavailable: no leader elected".
    #[test]
    fn typed_reasons_give_the_words_clients_read() {
        let cases = [
            (Unavailable::NoLeader.into(), "no leader elected"),
            (
                ValidationError::field("request_id.seq", Problem::AtLeast { min: 1 }).into(),
                "request_id.seq must be at least 1",
            ),
            (
                Internal::RaftPanicked.into(),
                "internal error: the Raft core panicked",
            ),
        ];
        for (e, words) in cases {
            let e: Error = e;
            assert_eq!(to_status(e).message(), words);
        }
        let unsettled = WaitError::Unsettled {
            name: "jobs".into(),
            waited: Duration::from_secs(2),
            why: Unsettle::CancelFailed(Box::new(Unavailable::NoLeader.into())),
        };
        assert_eq!(
            wait_status(unsettled).message(),
            "waited 2s for jobs, but could not cancel the wait (unavailable: no leader \
             elected): it may still be queued or granted; retry with a higher attempt to \
             learn how it ended"
        );
        assert_eq!(
            wait_status(WaitError::Stopping).message(),
            "node is shutting down; retry on another node"
        );
        let ended = WaitError::Ended {
            name: "jobs".into(),
            why: WaitEnd::Ended(EndReason::ForceReleased),
        };
        assert_eq!(
            wait_status(ended).message(),
            "wait for jobs ended: force-released"
        );
    }

    /// Every way a wait ends without a grant, with its code; the match in
    /// the test fails to compile when one is added.
    #[test]
    fn every_wait_error_has_its_code() {
        let (name, waited) = ("a".to_string(), Duration::from_secs(1));
        let cases = [
            (
                WaitError::Replica(Unavailable::NoLeader.into()),
                Code::Unavailable,
            ),
            (
                WaitError::Timeout {
                    name: name.clone(),
                    waited,
                },
                Code::DeadlineExceeded,
            ),
            (
                WaitError::Ended {
                    name: name.clone(),
                    why: WaitEnd::Ended(EndReason::LeaseExpired),
                },
                Code::Aborted,
            ),
            (
                WaitError::Unsettled {
                    name,
                    waited,
                    why: Unsettle::Superseded,
                },
                Code::Unavailable,
            ),
            (WaitError::Stopping, Code::Unavailable),
        ];
        for (e, code) in cases {
            let index = match &e {
                WaitError::Replica(_) => 0,
                WaitError::Timeout { .. } => 1,
                WaitError::Ended { .. } => 2,
                WaitError::Unsettled { .. } => 3,
                WaitError::Stopping => 4,
            };
            let status = wait_status(e.clone());
            assert_eq!(status.code(), code, "{e} ({index})");
            assert!(!status.message().is_empty(), "{e}");
        }
    }
}
