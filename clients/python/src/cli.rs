//! The `raftlock` command line inside the extension module: what the
//! wheel's `raftlock` script (`raftlock._cli.main`) calls, so `pip install
//! raftlock` gives the whole CLI and server with no second binary.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `raftlock` command line `argv` (the program's name first, as
/// `sys.argv`) in this process and returns its exit code, exactly as the
/// cargo-built binary's `main` would. Blocks until the command ends (for
/// `raftlock serve`, until SIGINT or SIGTERM), with the GIL released.
#[pyfunction]
pub fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| raftlock_cli::run(argv))
}
