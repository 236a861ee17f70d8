//! `raftlock-chaos`: parse flags and hand over to the library.
//!
//! `raftlock-chaos serve ...` runs a raftlock node (the very code of the
//! `raftlock` binary), so the suite can also run on a cluster of itself.

use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return raftlock_cli::main();
    }
    raftlock_chaos::cli::main()
}
