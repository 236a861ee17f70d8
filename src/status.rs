//! The one place where internal errors become gRPC statuses. The client maps
//! them back in `client::error`, and nowhere else.

use raftlock_raft::Error;
use raftlock_storage::CommandError;
use tonic::{Code, Status};

/// Metadata key naming the leader's node id in a not-leader answer.
pub const LEADER_ID_KEY: &str = "raftlock-leader-id";
/// Metadata key naming the leader's client address in a not-leader answer.
pub const LEADER_ADDR_KEY: &str = "raftlock-leader-addr";

/// Maps a replication-layer error to the status a client sees.
pub fn to_status(e: Error) -> Status {
    let message = e.to_string();
    match e {
        Error::Rejected(c) => Status::new(command_code(&c), message),
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
        CommandError::InvalidArgument(_) => Code::InvalidArgument,
        CommandError::LeaseNotFound(_) => Code::NotFound,
        CommandError::NotHolder { .. }
        | CommandError::Conflict { .. }
        | CommandError::StaleRequest { .. } => Code::FailedPrecondition,
        CommandError::TooManyWaiters { .. } | CommandError::TooManyLeases(_) => {
            Code::ResourceExhausted
        }
        _ => Code::Internal,
    }
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
    fn rejections_keep_their_meaning() {
        let code = |e| to_status(Error::Rejected(e)).code();
        assert_eq!(code(CommandError::LeaseNotFound(4)), Code::NotFound);
        assert_eq!(
            code(CommandError::InvalidArgument("x".into())),
            Code::InvalidArgument
        );
        assert_eq!(
            code(CommandError::NotHolder {
                name: "a".into(),
                owner: "b".into()
            }),
            Code::FailedPrecondition
        );
        assert_eq!(
            code(CommandError::TooManyWaiters {
                name: "a".into(),
                limit: 1
            }),
            Code::ResourceExhausted
        );
    }
}
