"""grelmicro's coordination backends on raftlock, for the grelmicro that is
installed:

- grelmicro >= 0.27 (``grelmicro.coordination``; what pip installs on
  Python 3.12+): :class:`RaftlockProvider` shared by
  :class:`RaftlockLockAdapter`, :class:`RaftlockReadWriteLockAdapter`,
  :class:`RaftlockLeaderElectionAdapter` and
  :class:`RaftlockScheduleAdapter`, as grelmicro's own Redis provider and
  adapters are;
- grelmicro 0.20 (``grelmicro.sync``; the newest on Python 3.10 and 3.11):
  :class:`RaftlockSyncBackend`.

>>> from grelmicro.coordination import Lock                        # doctest: +SKIP
>>> from raftlock.grelmicro import RaftlockLockAdapter, RaftlockProvider  # doctest: +SKIP
>>> async with RaftlockProvider("127.0.0.1:7379") as provider:    # doctest: +SKIP
...     async with RaftlockLockAdapter(provider=provider) as backend:
...         async with Lock("reports", backend=backend):
...             ...

Another grelmicro (0.21 to 0.26) is refused at import with what is
supported, rather than being mistaken for a missing one.
"""

from __future__ import annotations

from importlib import metadata, util

try:
    _version = metadata.version("grelmicro")
except metadata.PackageNotFoundError as missing:
    raise ImportError(
        "raftlock.grelmicro needs grelmicro, which needs Python >= 3.11: "
        "pip install 'raftlock[grelmicro]'"
    ) from missing

if util.find_spec("grelmicro.coordination") is not None:
    from raftlock._grelmicro_coordination import (
        RaftlockLeaderElectionAdapter,
        RaftlockLockAdapter,
        RaftlockProvider,
        RaftlockReadWriteLockAdapter,
        RaftlockScheduleAdapter,
    )

    __all__ = [
        "RaftlockLeaderElectionAdapter",
        "RaftlockLockAdapter",
        "RaftlockProvider",
        "RaftlockReadWriteLockAdapter",
        "RaftlockScheduleAdapter",
    ]
elif util.find_spec("grelmicro.sync") is not None:
    from raftlock._grelmicro_sync import RaftlockSyncBackend

    __all__ = ["RaftlockSyncBackend"]
else:
    raise ImportError(
        f"raftlock.grelmicro supports grelmicro 0.20 (grelmicro.sync) and "
        f">= 0.27 (grelmicro.coordination), but grelmicro {_version} has "
        f"neither: pip install 'grelmicro>=0.27' (Python >= 3.12) or "
        f"'grelmicro==0.20.*'"
    )
