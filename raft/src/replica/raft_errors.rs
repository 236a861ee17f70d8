//! The one mapping of openraft's errors to this crate's [`Error`]: a write,
//! a leadership check or a membership change refused by openraft becomes
//! "not the leader" (naming it), "unavailable" (retry), a bad request, or a
//! stopped node, here and nowhere else.

use openraft::alias::ChangeMembershipErrorOf;
use openraft::error::{
    ChangeMembershipError, ClientWriteError, Fatal, ForwardToLeader, LinearizableReadError,
    RaftError,
};

use raftlock_storage::TypeConfig;

use crate::error::{Error, Internal, Source, Unavailable, ValidationError};

impl From<ForwardToLeader<TypeConfig>> for Error {
    /// Names the leader when openraft knows it; otherwise an election is
    /// under way and the caller should retry.
    fn from(f: ForwardToLeader<TypeConfig>) -> Self {
        match (f.leader_id, f.leader_node) {
            (Some(leader_id), Some(node)) => Error::NotLeader {
                leader_id,
                leader_addr: node.client_addr,
            },
            _ => Unavailable::NoLeader.into(),
        }
    }
}

impl From<ClientWriteError<TypeConfig>> for Error {
    fn from(e: ClientWriteError<TypeConfig>) -> Self {
        match e {
            // The entry was dropped by a new leader; it may still commit.
            // Callers retry with the same request id, which the state
            // machine applies at most once, so a redirect is safe.
            ClientWriteError::ForwardToLeader(f) | ClientWriteError::LogEntryDiscarded(f) => {
                f.into()
            }
            ClientWriteError::PreconditionFailed(e) => {
                Internal::Precondition(Source::new(e)).into()
            }
            ClientWriteError::ChangeMembershipError(e) => e.into(),
        }
    }
}

impl From<ChangeMembershipErrorOf<TypeConfig>> for Error {
    /// A change while another is in progress is retried; any other refusal
    /// (an unknown node, removing every voter, ...) is the caller's mistake.
    fn from(e: ChangeMembershipErrorOf<TypeConfig>) -> Self {
        match e {
            ChangeMembershipError::InProgress(e) => {
                Unavailable::MembershipChanging(Source::new(e)).into()
            }
            ChangeMembershipError::EmptyMembership(e) => rules(e),
            ChangeMembershipError::LearnerNotFound(e) => rules(e),
            ChangeMembershipError::UnsupportedMembershipTransition(e) => rules(e),
            ChangeMembershipError::NodeMetadataChanged(e) => rules(e),
            // A new leader commits an entry of its own term first.
            ChangeMembershipError::UncommittedLeaderLog(e) => {
                Unavailable::LeaderNotReady(Source::new(e)).into()
            }
        }
    }
}

impl From<LinearizableReadError<TypeConfig>> for Error {
    fn from(e: LinearizableReadError<TypeConfig>) -> Self {
        match e {
            LinearizableReadError::ForwardToLeader(f) => f.into(),
            // `e.cluster` is a debug dump of the membership: name the
            // nodes that answered instead.
            LinearizableReadError::QuorumNotEnough(e) => Unavailable::NoQuorum {
                heard_from: e.got.into_iter().collect(),
            }
            .into(),
        }
    }
}

impl From<Fatal<TypeConfig>> for Error {
    /// openraft stopped (the node is shutting down) or failed.
    fn from(e: Fatal<TypeConfig>) -> Self {
        match e {
            Fatal::Stopped => Error::ShuttingDown,
            Fatal::StorageError(e) => Internal::Storage(Source::new(e)).into(),
            Fatal::Panicked => Internal::RaftPanicked.into(),
        }
    }
}

/// openraft refused a membership change by its own rules: the caller's
/// mistake.
fn rules(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    ValidationError::MembershipRules(Source::new(e)).into()
}

impl<E: Into<Error>> From<RaftError<TypeConfig, E>> for Error {
    fn from(e: RaftError<TypeConfig, E>) -> Self {
        match e {
            RaftError::APIError(e) => e.into(),
            RaftError::Fatal(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use openraft::error::{EmptyMembership, QuorumNotEnough};
    use raftlock_storage::{NodeAddr, NodeId};

    use super::*;

    fn forward(to: Option<NodeId>) -> ForwardToLeader<TypeConfig> {
        ForwardToLeader {
            leader_id: to,
            leader_node: to.map(|id| NodeAddr {
                peer_addr: format!("10.0.0.{id}:7380"),
                client_addr: format!("10.0.0.{id}:7379"),
            }),
            reason: Default::default(),
        }
    }

    /// Every openraft refusal a caller can meet maps to a retry, a redirect,
    /// a bad request or a stopped node, never to an internal error.
    #[test]
    fn refusals_map_to_what_the_caller_should_do() {
        let e: Error = RaftError::<TypeConfig, _>::APIError(ClientWriteError::ForwardToLeader(
            forward(Some(2)),
        ))
        .into();
        assert_eq!(
            e,
            Error::NotLeader {
                leader_id: 2,
                leader_addr: "10.0.0.2:7379".into()
            }
        );
        let e: Error = ClientWriteError::LogEntryDiscarded(forward(Some(3))).into();
        assert!(matches!(e, Error::NotLeader { leader_id: 3, .. }), "{e:?}");
        let e: Error = ClientWriteError::ForwardToLeader(forward(None)).into();
        assert_eq!(e, Error::Unavailable(Unavailable::NoLeader));
        let e: Error = LinearizableReadError::<TypeConfig>::QuorumNotEnough(QuorumNotEnough {
            cluster: "{1,2,3}".into(),
            got: Default::default(),
        })
        .into();
        assert_eq!(
            e,
            Error::Unavailable(Unavailable::NoQuorum { heard_from: vec![] })
        );
        assert!(e.is_retryable(), "{e:?}");
        let e: Error = ClientWriteError::<TypeConfig>::ChangeMembershipError(
            ChangeMembershipError::EmptyMembership(EmptyMembership {}),
        )
        .into();
        assert!(
            matches!(
                e,
                Error::InvalidArgument(ValidationError::MembershipRules(_))
            ),
            "{e:?}"
        );
        let e: Error =
            RaftError::<TypeConfig, LinearizableReadError<TypeConfig>>::Fatal(Fatal::Stopped)
                .into();
        assert_eq!(e, Error::ShuttingDown);
    }
}
