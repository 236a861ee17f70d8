//! The one place where internal errors become gRPC statuses. The client maps
//! them back in `raftlock_client::error`, and nowhere else; the metadata
//! keys both sides use live in `raftlock_client::metadata`.

use raftlock_raft::Error;
use raftlock_storage::CommandError;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

pub use raftlock_client::metadata::{LEADER_ADDR_KEY, LEADER_ID_KEY, OUTCOME_KEY, OUTCOME_UNKNOWN};

/// Maps a replication-layer error to the status a client sees. The
/// message says what happened in words once: the code already says
/// "invalid argument", "unavailable" or "deadline exceeded", and the client
/// puts those words back in front (`client::error`).
pub fn to_status(e: Error) -> Status {
    let message = match &e {
        Error::InvalidArgument(m) | Error::Unavailable(m) | Error::Timeout(m) => m.clone(),
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
        Error::Timeout(_) => Status::deadline_exceeded(message),
        Error::WaitEnded(_) => Status::aborted(message),
        Error::InvalidArgument(_) => Status::invalid_argument(message),
        _ => Status::internal(message),
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
        // `CommandError` is non-exhaustive across crates; every variant
        // there is today is named above.
        _ => Code::Internal,
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
    use super::*;

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
        ];
        for (e, code) in cases {
            let unknown = outcome_unknown(&e);
            let status = to_status(Error::Rejected(e.clone()));
            assert_eq!(status.code(), code, "{e}");
            // Said once: the client puts the code's words back in front.
            let back = crate::error::from_status(&status);
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
                matches!(back, crate::Error::OutcomeUnknown(_)),
                unknown,
                "{e}: {back:?}"
            );
            assert!(!back.is_retryable(), "{e}: {back:?}");
        }
    }
}
