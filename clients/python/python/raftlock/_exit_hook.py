"""The package's last ``atexit`` hook: registered before any other (atexit
runs hooks last-registered first), so it runs after the nodes have
stopped and after every hook of the application that imported raftlock.
From then on no Rust thread enters the exiting interpreter: a call that
ends now is dropped, where entering a finalizing CPython would crash the
process (see ``run.rs``)."""

from __future__ import annotations

import atexit

from raftlock import _native

atexit.register(_native.interpreter_exiting)
