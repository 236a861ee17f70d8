//! The client's errors as the exceptions of `raftlock.errors`.

use pyo3::prelude::*;
use raftlock_client::Error;

/// The exception of `raftlock.errors` for `e`: one class per variant, its
/// message without the variant's words (the class says them).
pub fn to_py(e: Error) -> PyErr {
    let (class, message) = match &e {
        Error::InvalidArgument(m) => ("InvalidArgument", m.clone()),
        Error::LeaseExpired(m) => ("LeaseExpired", m.clone()),
        Error::NotHeld(m) => ("NotHeld", m.clone()),
        Error::Timeout(m) => ("Timeout", m.clone()),
        Error::WaitEnded(m) => ("WaitEnded", m.clone()),
        Error::LimitReached(m) => ("LimitReached", m.clone()),
        Error::LockLost(m) => ("LockLost", m.clone()),
        Error::StaleFence { .. } => ("StaleFence", e.to_string()),
        Error::OutcomeUnknown(m) => ("OutcomeUnknown", m.clone()),
        Error::Unauthenticated(m) => ("Unauthenticated", m.clone()),
        Error::PermissionDenied(m) => ("PermissionDenied", m.clone()),
        Error::NotServed(_) => ("NotServed", e.to_string()),
        Error::Unavailable(m) => ("Unavailable", m.clone()),
        Error::Tls(m) => ("TlsError", m.clone()),
        Error::Startup(m) => ("NodeError", m.clone()),
        _ => ("InternalError", e.to_string()),
    };
    Python::attach(|py| {
        let made = py
            .import("raftlock.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|cls| cls.call1((message.clone(),)));
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(import) => import,
        }
    })
}
