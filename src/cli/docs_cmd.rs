//! `raftlock completions SHELL` and `raftlock man`: shell completions and
//! a man page, both generated from the same clap definition as `--help`,
//! so they never drift from the flags.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

use super::{Cli, EXIT_SUCCESS};

/// Writes completions for `shell` to stdout (e.g. `raftlock completions
/// bash > /etc/bash_completion.d/raftlock`).
pub fn completions(shell: Shell) -> Result<u8, String> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "raftlock", &mut out);
    write_out(&out, "completions")
}

/// Writes the `raftlock(1)` man page (roff) to stdout (e.g. `raftlock man
/// > /usr/local/share/man/man1/raftlock.1`).
pub fn man() -> Result<u8, String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| format!("cannot render the man page: {e}"))?;
    write_out(&out, "the man page")
}

/// Writes `bytes` to stdout; a reader that went away (`| head`) is fine.
fn write_out(bytes: &[u8], what: &str) -> Result<u8, String> {
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write {what}: {e}"))
        }
        _ => Ok(EXIT_SUCCESS),
    }
}
