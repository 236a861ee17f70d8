//! `raftlock._native`: the Rust client bound for Python, and the `raftlock`
//! command line the wheel runs as its `raftlock` script.
//!
//! One implementation of sessions, keep-alives, leader following and
//! exactly-once retries serves Rust and Python alike: this module only
//! carries calls across. Every call blocks the calling thread (with the GIL
//! released, Ctrl-C honoured) or, with `aio=True`, answers an asyncio
//! awaitable; both run on one tokio runtime shared by the process. The
//! Python package (`python/raftlock`) builds the API people use on top:
//! context managers, the lost event, re-entry, the Redis and grelmicro
//! adapters. Errors become the exceptions of `raftlock.errors`, one class
//! per `raftlock_client::Error` variant.
//!
//! - `cli`: the `raftlock` command line (server and CLI), for the
//!   package's `raftlock` script;
//! - `client`: `NativeClient`, the calls of `raftlock_client::Client`;
//! - `guards`: what a program holds (lock, leadership, task lock);
//! - `observer`: an election's leader changes;
//! - `node`: `NativeNode`, a raftlock node run inside the Python process
//!   on a runtime of its own; `node_options` reads its keywords as
//!   `raftlock serve` reads its flags; `node_status` is its view of the
//!   cluster;
//! - `convert`: durations and the read-only records crossing to Python;
//! - `run`: blocking or awaiting a call, and errors as exceptions;
//! - `loop_port`: where awaited calls end, on their event loop's thread;
//!   `call_future` is the asyncio future they answer there;
//! - `log_bridge`: the Rust code's `tracing` events as records of Python's
//!   `logging` (logger `raftlock`).

mod call_future;
mod cli;
mod client;
mod client_options;
mod convert;
mod coordination;
mod guards;
mod log_bridge;
mod loop_port;
mod node;
mod node_link;
mod node_options;
mod node_status;
mod observer;
mod py_errors;
mod run;
mod runtime;

use pyo3::prelude::*;

/// mimalloc, as in the `raftlock` binary: this module also runs the
/// `raftlock serve` of the wheel's `raftlock` command, which should
/// allocate as the cargo-built server does (docs/decisions.md,
/// "Allocator"). It serves the Rust code of this module only; Python
/// objects keep Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native half of the `raftlock` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli::run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(run::interpreter_exiting, m)?)?;
    m.add_function(wrap_pyfunction!(client::new_owner, m)?)?;
    m.add_function(wrap_pyfunction!(client_options::admin_token, m)?)?;
    m.add_function(wrap_pyfunction!(log_bridge::flush_logs, m)?)?;
    m.add_function(wrap_pyfunction!(log_bridge::log_record_counts, m)?)?;
    m.add_class::<client::NativeClient>()?;
    m.add_class::<coordination::NativeCoordination>()?;
    m.add_class::<loop_port::LoopPort>()?;
    m.add_class::<call_future::CallFuture>()?;
    m.add_class::<guards::NativeGuard>()?;
    m.add_class::<guards::NativeLeadership>()?;
    m.add_class::<guards::NativeTaskGuard>()?;
    m.add_class::<observer::NativeObserver>()?;
    m.add_class::<node::NativeNode>()?;
    m.add_class::<node_status::NodeStatus>()?;
    m.add_class::<node_status::Member>()?;
    m.add_class::<convert::LockInfo>()?;
    m.add_class::<convert::Holder>()?;
    m.add_class::<convert::Waiter>()?;
    m.add_class::<convert::LeaderInfo>()?;
    m.add_class::<convert::LeaseTtl>()?;
    m.add_class::<convert::LeadRecord>()?;
    Ok(())
}
