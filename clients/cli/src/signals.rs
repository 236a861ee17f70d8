//! SIGINT and SIGTERM, watched from the start of a command so neither can
//! kill the process before it has cleaned up (revoked its lease, stopped its
//! child).

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Which signal asked us to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
}

impl Stop {
    /// The signal's name for `kill -s`.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "INT",
            Stop::Terminate => "TERM",
        }
    }

    /// The shell's exit code for a process ended by this signal.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
        }
    }
}

/// Registered SIGINT and SIGTERM handlers.
pub struct Interrupts {
    int: Signal,
    term: Signal,
}

impl Interrupts {
    /// Takes over SIGINT and SIGTERM for the rest of the process.
    pub fn watch() -> Result<Interrupts, String> {
        let int =
            signal(SignalKind::interrupt()).map_err(|e| format!("cannot watch SIGINT: {e}"))?;
        let term =
            signal(SignalKind::terminate()).map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
        Ok(Interrupts { int, term })
    }

    /// Waits for the next SIGINT or SIGTERM.
    pub async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.int.recv() => Stop::Interrupt,
            _ = self.term.recv() => Stop::Terminate,
        }
    }
}
