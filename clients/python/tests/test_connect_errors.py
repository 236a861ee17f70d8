"""A cluster that cannot be reached, from Python: the call gives up by its
`timeout=` (connecting included), and the error names each address tried,
why, and the next step in Python's terms (keyword arguments and
environment variables, never the command line's flags)."""

from __future__ import annotations

import time

import pytest
import raftlock
import raftlock.asyncio
from conftest import free_port

#: The bound on a call with `timeout=2`: the timeout, plus slack for a
#: loaded machine (before the fix: 14.7 s, the whole retry budget).
BOUND = 8.0


def unreachable_message(dead: str) -> str:
    return (
        f"cannot reach raftlock at {dead} (connection refused): is `raftlock serve` running "
        "there? Point endpoints= (or RAFTLOCK_ENDPOINTS) at the client addresses of running "
        "nodes"
    )


def test_a_lock_timeout_bounds_connecting_to_a_dead_address() -> None:
    dead = f"127.0.0.1:{free_port()}"
    client = raftlock.Client(dead)  # retries for 15 s by default
    started = time.monotonic()
    with pytest.raises(raftlock.Unavailable) as failed:
        client.lock("x", timeout=2).acquire()
    took = time.monotonic() - started
    assert took < BOUND, f"took {took:.1f}s"
    assert str(failed.value) == unreachable_message(dead)
    assert isinstance(failed.value, ConnectionError)


async def test_asyncio_lock_timeout_bounds_connecting_to_a_dead_address() -> None:
    dead = f"127.0.0.1:{free_port()}"
    client = raftlock.asyncio.Client(dead)
    started = time.monotonic()
    with pytest.raises(raftlock.Unavailable) as failed:
        async with client.lock("x", timeout=2):
            pass
    took = time.monotonic() - started
    assert took < BOUND, f"took {took:.1f}s"
    assert str(failed.value) == unreachable_message(dead)


def test_every_dead_address_is_named() -> None:
    dead = [f"127.0.0.1:{free_port()}" for _ in range(2)]
    client = raftlock.Client(dead, retry_for=1)
    with pytest.raises(raftlock.Unavailable) as failed:
        client.grant_lease(5)
    message = str(failed.value)
    assert message.startswith(
        f"cannot reach raftlock at {dead[0]} (connection refused), {dead[1]} (connection refused): "
    ), message
    assert "--" not in message


def test_a_certificate_without_its_key_names_the_keyword_arguments() -> None:
    with pytest.raises(raftlock.InvalidArgument) as failed:
        raftlock.Client("127.0.0.1:7379", cert="client.crt")
    assert str(failed.value) == "cert= needs key= (the client certificate's private key)"
