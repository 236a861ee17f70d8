"""grelmicro's coordination backends on raftlock, for the grelmicro that is
installed:

- grelmicro >= 0.27 (``grelmicro.coordination``; what pip installs on
  Python 3.12+): :class:`RaftlockProvider`, grelmicro's ``Provider``, as
  its ``RedisProvider`` is: ``Grelmicro(uses=[RaftlockProvider(...)])``
  gives ``Lock``, ``TaskLock``, ``ReadWriteLock``, ``LeaderElection`` and
  scheduled tasks their raftlock backends (:class:`RaftlockLockAdapter`,
  :class:`RaftlockReadWriteLockAdapter`,
  :class:`RaftlockLeaderElectionAdapter`, :class:`RaftlockScheduleAdapter`,
  which may also be wired by hand);
- grelmicro 0.20 (``grelmicro.sync``; the newest on Python 3.11):
  :class:`RaftlockSyncBackend`.

>>> from grelmicro import Grelmicro                                 # doctest: +SKIP
>>> from grelmicro.coordination import Lock                        # doctest: +SKIP
>>> from raftlock.grelmicro import RaftlockProvider                # doctest: +SKIP
>>> micro = Grelmicro(uses=[RaftlockProvider("127.0.0.1:7379")])   # doctest: +SKIP
>>> async with micro, Lock("reports"):                             # doctest: +SKIP
...     ...

Another grelmicro (0.21 to 0.26) is refused at import with what is
supported, rather than being mistaken for a missing one.
"""

from __future__ import annotations

import sys
from importlib import metadata, util


def _missing_grelmicro() -> str:
    """What to do without grelmicro, on this Python: no grelmicro that
    raftlock serves installs on 3.10, so no install is suggested there."""
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if sys.version_info < (3, 11):
        return (
            f"raftlock.grelmicro needs grelmicro, and none installs on Python {running}: "
            "grelmicro 0.20 needs Python >= 3.11, grelmicro >= 0.27 Python >= 3.12. "
            "On this Python use raftlock.asyncio's locks and elections directly"
        )
    newest = "0.20" if sys.version_info < (3, 12) else ">= 0.27"
    return (
        f"raftlock.grelmicro needs grelmicro: pip install 'raftlock[grelmicro]' "
        f"(grelmicro {newest} on Python {running})"
    )


try:
    _version = metadata.version("grelmicro")
except metadata.PackageNotFoundError as missing:
    raise ImportError(_missing_grelmicro()) from missing

if util.find_spec("grelmicro.coordination") is not None:
    from raftlock._grelmicro_coordination import (
        RaftlockLeaderElectionAdapter,
        RaftlockLockAdapter,
        RaftlockReadWriteLockAdapter,
        RaftlockScheduleAdapter,
    )
    from raftlock._grelmicro_provider import RaftlockProvider

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
