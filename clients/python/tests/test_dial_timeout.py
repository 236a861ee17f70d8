"""The dial timeout from Python: an endpoint that accepts connections and
never answers (as a node paused with SIGSTOP does), listed first, costs a
call about `dial_timeout`, then the next endpoint serves it; the variable
`RAFTLOCK_DIAL_TIMEOUT` sets it when the keyword is not given."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest
import raftlock
import raftlock.asyncio
from conftest import Cluster


@pytest.fixture
def silent() -> Iterator[str]:
    """A listener whose backlog accepts connections; nothing answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"127.0.0.1:{s.getsockname()[1]}"


def test_a_silent_first_endpoint_is_passed_over(cluster: Cluster, silent: str) -> None:
    """Without the dial timeout the call waited on the silent endpoint
    until HTTP/2 keep-alive gave up (5 s), past `retry_for=3`, and raised
    Unavailable."""
    client = raftlock.Client(
        [silent, *cluster.endpoints], session_ttl=3, retry_for=3, dial_timeout=0.3
    )
    with client.lock(f"dial-{uuid.uuid4()}") as lock:
        assert lock.fence > 0
    client.close()


async def test_asyncio_takes_the_dial_timeout_from_the_environment(
    cluster: Cluster, silent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAFTLOCK_DIAL_TIMEOUT", "300ms")
    client = raftlock.asyncio.Client([silent, *cluster.endpoints], session_ttl=3, retry_for=3)
    async with client.lock(f"dial-{uuid.uuid4()}") as lock:
        assert lock.fence > 0
    await client.close()


def test_a_bad_dial_timeout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(raftlock.InvalidArgument, match="dial_timeout"):
        raftlock.Client("127.0.0.1:7379", dial_timeout=0)
    monkeypatch.setenv("RAFTLOCK_DIAL_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="RAFTLOCK_DIAL_TIMEOUT"):
        raftlock.Client("127.0.0.1:7379")
