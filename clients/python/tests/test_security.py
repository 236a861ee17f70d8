"""TLS and client authentication from Python: the options of the Rust
client (`cacert`, `cert`, `key`, `token`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import raftlock
import raftlock.asyncio
from conftest import Cluster


@pytest.fixture(scope="module")
def secure_cluster() -> Iterator[Cluster]:
    c = Cluster(3, secure=True)
    yield c
    c.stop()


def test_tls_with_a_client_certificate_and_tokens(secure_cluster: Cluster) -> None:
    c = secure_cluster
    admin = raftlock.Client(c.endpoints, cacert=c.ca, cert=c.admin_cert, key=c.admin_key)
    with admin.lock("anything/at-all") as lock:
        assert lock.fence > 0

    jobs = raftlock.Client(c.endpoints, cacert=c.ca, token=c.token)
    with jobs.lock("jobs/nightly") as lock:
        assert admin.check("jobs/nightly", lock.fence)
        with pytest.raises(raftlock.PermissionDenied) as denied:
            jobs.force_release("jobs/nightly")  # an admin call
        assert isinstance(denied.value, PermissionError)
    with pytest.raises(raftlock.PermissionDenied):
        jobs.lock("billing/run").acquire()

    anonymous = raftlock.Client(c.endpoints, cacert=c.ca, retry_for=2)
    with pytest.raises(raftlock.Unauthenticated):
        anonymous.lock("jobs/nightly").acquire()
    wrong = raftlock.Client(c.endpoints, cacert=c.ca, token="rl_" + "0" * 64, retry_for=2)
    with pytest.raises(raftlock.Unauthenticated):
        wrong.grant_lease(5)
    # Without the CA the server's certificate is not trusted.
    untrusting = raftlock.Client([f"https://{e}" for e in c.endpoints], token=c.token, retry_for=2)
    with pytest.raises(raftlock.Unavailable):
        untrusting.grant_lease(5)
    with pytest.raises(raftlock.TlsError):
        raftlock.Client(c.endpoints, cacert=c.dir / "missing.crt")
    admin.close()
    jobs.close()


async def test_asyncio_takes_the_same_options(secure_cluster: Cluster) -> None:
    c = secure_cluster
    client = raftlock.asyncio.Client(c.endpoints, cacert=c.ca, token=c.token)
    async with client.lock("jobs/async") as lock:
        assert await client.check("jobs/async", lock.fence)
    await client.close()
