//! The one way this layer makes a [`Request`] to replicate: who asks (a
//! client's call, or the cluster itself) and the command, stamped with
//! the proposer's wall clock.

use raftlock_raft::clock::wall_clock_ms;
use raftlock_storage::{Caller, ClientSeq, Command, Request};

/// `command` for `caller`, under the call's `origin` (`None` for a
/// command made on a caller's behalf that no retry repeats, a cancel).
pub fn stamped(origin: Option<ClientSeq>, caller: Caller, command: Command) -> Request {
    Request {
        origin,
        caller,
        time_ms: wall_clock_ms(),
        command,
    }
}

/// `command` issued by the cluster itself (a lease expiry, a lock-delay's
/// end): no origin and no caller.
pub fn by_cluster(command: Command) -> Request {
    stamped(None, Caller::default(), command)
}
