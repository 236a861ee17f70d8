"""The ``raftlock`` command (server and CLI) that the wheel installs.

``pip install raftlock`` puts a ``raftlock`` script on PATH whose entry point
is :func:`main`. It runs the same Rust command line as the cargo-built
binary (``raftlock::cli::run``, compiled into ``raftlock._native``), inside
this process: no second process, so the pid a supervisor sees is the
server's, signals reach the command line's own handlers, and the exit code
is the command's (for ``raftlock lock NAME -- CMD``, CMD's own).
"""

from __future__ import annotations

import signal
import sys

from raftlock._native import run_cli

# Python changed these at start-up (SIGINT raises KeyboardInterrupt, SIGXFSZ
# is ignored); a Rust binary starts with them at the default, and a command
# run under `raftlock lock` inherits an ignored signal.
_RESET_TO_DEFAULT = (signal.SIGINT, signal.SIGXFSZ)


def main() -> int:
    """Runs ``raftlock`` with this process's arguments; returns its exit code."""
    for signum in _RESET_TO_DEFAULT:
        signal.signal(signum, signal.SIG_DFL)
    return run_cli(sys.argv)
