"""What the blocking and the asyncio API share: argument checks and names."""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Sequence
from typing import Any

from raftlock.errors import InvalidArgument, Timeout

#: Where ``raftlock serve`` listens with no flags.
DEFAULT_ENDPOINT = "127.0.0.1:7379"

#: The longest lease raftlock grants, in seconds: one day.
MAX_DURATION = 86_400.0


def lease_ttl(duration: float) -> float:
    """``duration`` seconds as a lease TTL, rounded up to whole milliseconds;
    InvalidArgument unless more than 0 and at most :data:`MAX_DURATION`."""
    if isinstance(duration, bool) or not duration > 0 or duration > MAX_DURATION:
        raise InvalidArgument(
            f"duration must be more than 0 and at most {MAX_DURATION:.0f} seconds, not {duration!r}"
        )
    return max(math.ceil(duration * 1000), 1) / 1000


def ttl_seconds(what: str, value: float, minimum: float = 0.001) -> float:
    """``value`` if it is a lease TTL the cluster grants (``minimum``, 1 ms
    by default, to a day), in seconds; else InvalidArgument naming
    ``what``, before any call."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{what} must be a number of seconds, not {value!r}")
    if not minimum <= value <= MAX_DURATION:
        shown = int(value) if float(value).is_integer() else value
        raise InvalidArgument(f"{what} {shown} s is outside {minimum:g}..{MAX_DURATION:.0f} s")
    return float(value)


#: The shortest session TTL a client keeps alive (the Rust client's bound:
#: a keep-alive must cross a loaded network within it).
MIN_SESSION_TTL = 0.1


def session_ttl_seconds(value: float | None) -> float | None:
    """A client's ``session_ttl`` (``None``: the default), checked as
    :func:`ttl_seconds` does, from :data:`MIN_SESSION_TTL`."""
    return None if value is None else ttl_seconds("session_ttl", value, MIN_SESSION_TTL)


def endpoints_from(endpoints: str | Sequence[str] | None) -> list[str]:
    """``host:port`` endpoints from a list, a comma-separated string, or
    (``None``) ``RAFTLOCK_ENDPOINTS``, as the CLI reads it, else the default."""
    if endpoints is None:
        endpoints = os.environ.get("RAFTLOCK_ENDPOINTS") or DEFAULT_ENDPOINT
    if isinstance(endpoints, str):
        endpoints = endpoints.split(",")
    found = [e.strip() for e in endpoints if e.strip()]
    if not found:
        raise InvalidArgument("no endpoints given")
    return found


def seconds(what: str, value: float | None) -> float | None:
    """``value`` if it is a positive number of seconds (or ``None``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{what} must be a number of seconds, not {value!r}")
    if not value > 0 or value != value or value == float("inf"):
        raise InvalidArgument(f"{what} must be a positive number of seconds, not {value!r}")
    return float(value)


def wait_seconds(what: str, value: float | None) -> float | None:
    """``value`` if it is a number of seconds ``>= 0`` (or ``None``); 0 is
    one try, as for ``threading.Lock.acquire(timeout=0)``."""
    if value is not None and not isinstance(value, bool) and value == 0:
        return 0.0
    return seconds(what, value)


def wait_limit(
    blocking: bool, timeout: float | None, default: float | None
) -> tuple[bool, float | None]:
    """Whether an acquire waits, and for how long: ``timeout`` (``-1`` or
    ``None``: the lock's default, which ``None`` makes unbounded; 0: one
    try, no wait), as ``threading.Lock`` reads it."""
    if not blocking:
        if timeout is not None and timeout != -1:
            raise InvalidArgument("a timeout needs blocking=True")
        return False, None
    limit = default if timeout is None or timeout == -1 else wait_seconds("timeout", timeout)
    if limit == 0:
        return False, None
    return True, limit


def elected(name: str, leadership: Any) -> Any:
    """A campaign's native leadership; ``None`` (a ``timeout=0`` try that
    found another leader) raises :class:`~raftlock.Timeout`, as a wait
    that ran out does."""
    if leadership is None:
        raise Timeout(f"election {name!r} has a leader: campaign(timeout=0) tried once")
    return leadership


def as_bytes(value: bytes | str) -> bytes:
    """An election value: bytes as given, text as UTF-8."""
    return value.encode() if isinstance(value, str) else bytes(value)


def resolve(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """Completes an awaited native call on its loop (``call_soon_threadsafe``
    from the Rust side): its result, or ``value`` raised; nothing if the
    awaiting task gave up meanwhile."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
