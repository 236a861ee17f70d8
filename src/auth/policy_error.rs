//! Why an auth file cannot be used ([`AuthFileError`]), and what in it
//! cannot work ([`PolicyProblem`]): the user, role or key at fault, as
//! data. No variant holds a token: the file keeps only their hashes, and
//! none is repeated here.

use std::path::PathBuf;

use raftlock_raft::error::Source;

/// An auth file that cannot be used; the node does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFileError {
    /// The file cannot be read.
    #[error("cannot read auth file {}: {source}", path.display())]
    Read { path: PathBuf, source: Source },
    /// The file says something that cannot work.
    #[error("auth file {}: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        problem: PolicyProblem,
    },
}

/// What in an auth file's text cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyProblem {
    /// Not TOML of the auth file's shape (an unknown key, a wrong type).
    #[error("{0}")]
    Toml(Source),
    /// The built-in admin role is defined again.
    #[error("role {role:?} is built in and cannot be defined")]
    AdminDefined { role: &'static str },
    /// A role that names no lock names.
    #[error("role {role:?} lists no names")]
    EmptyRole { role: String },
    /// A user without a name.
    #[error("a user has an empty name")]
    EmptyUserName,
    /// A user listed twice.
    #[error("user {user:?} is listed twice")]
    DuplicateUser { user: String },
    /// A user without roles.
    #[error("user {user:?} has no roles")]
    NoRoles { user: String },
    /// A user with a role the file does not define.
    #[error("user {user:?} has role {role:?}, which is not defined")]
    UnknownRole { user: String, role: String },
    /// A token hash that is not 64 hex digits.
    #[error("user {user:?}: token_sha256 must be 64 hex digits (`raftlock auth create-token`)")]
    BadTokenHash { user: String },
    /// Two users with one token.
    #[error("users {first:?} and {second:?} have the same token")]
    SharedToken { first: String, second: String },
}
