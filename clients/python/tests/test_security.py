"""TLS and client authentication from Python: the options of the Rust
client (`cacert`, `cert`, `key`, `token`)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

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
    with pytest.raises(raftlock.TlsError) as untrusted:
        untrusting.grant_lease(5)
    assert "cacert= must be the CA that signed the nodes' certificates" in str(untrusted.value)
    with pytest.raises(raftlock.TlsError) as missing:
        raftlock.Client(c.endpoints, cacert=c.dir / "missing.crt")
    assert str(missing.value).startswith(f"cannot read cacert= {c.dir / 'missing.crt'}: ")
    admin.close()
    jobs.close()


async def test_asyncio_takes_the_same_options(secure_cluster: Cluster) -> None:
    c = secure_cluster
    client = raftlock.asyncio.Client(c.endpoints, cacert=c.ca, token=c.token)
    async with client.lock("jobs/async") as lock:
        assert await client.check("jobs/async", lock.fence)
    await client.close()


def test_a_plain_text_client_at_a_tls_cluster_is_told_to_pass_cacert(
    secure_cluster: Cluster,
) -> None:
    c = secure_cluster
    plain = raftlock.Client(c.endpoints, token=c.token)
    with pytest.raises(raftlock.TlsError) as failed:
        plain.lock("jobs/x").acquire()
    # Was: InternalError "h2 protocol error: http2 error".
    assert str(failed.value) == (
        f"the nodes at {', '.join(c.endpoints)} serve TLS and this client speaks plain text: "
        'pass the cluster\'s CA certificate, raftlock.Client(..., cacert="ca.crt")'
    )


def test_a_tls_client_at_a_plain_text_cluster_is_told_so(
    secure_cluster: Cluster, cluster: Cluster
) -> None:
    client = raftlock.Client(cluster.endpoints, cacert=secure_cluster.ca)
    with pytest.raises(raftlock.TlsError) as failed:
        client.grant_lease(5)
    message = str(failed.value)
    assert message.startswith(
        f"the nodes at {', '.join(cluster.endpoints)} answered in plain text, but this client "
        "speaks TLS to them (cacert=, cert= or key= given, or an https:// endpoint)"
    ), message
    assert "--" not in message


def expired_client_certificate(c: Cluster, into: Path) -> tuple[Path, Path]:
    """A certificate for the admin user, from the cluster's CA, that was
    valid in 2020 only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca = x509.load_pem_x509_certificate(c.ca.read_bytes())
    ca_key = serialization.load_pem_private_key((c.dir / "certs" / "ca.key").read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    utc = datetime.timezone.utc
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "admin")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=utc))
        .not_valid_after(datetime.datetime(2021, 1, 1, tzinfo=utc))
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = into / "expired.crt", into / "expired.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_an_expired_client_certificate_is_named_with_its_dates(
    secure_cluster: Cluster, tmp_path: Path
) -> None:
    c = secure_cluster
    cert, key = expired_client_certificate(c, tmp_path)
    client = raftlock.Client(c.endpoints, cacert=c.ca, cert=cert, key=key)
    with pytest.raises(raftlock.TlsError) as failed:
        client.grant_lease(5)
    # Was: Unavailable "transport error", after 15 s of retries.
    message = str(failed.value)
    assert message.startswith(
        "the client certificate CN=admin (cert=, valid 2020-01-01T00:00:00Z to "
        "2021-01-01T00:00:00Z) has expired (this machine's clock says "
    ), message
    assert message.endswith(
        f"so the nodes at {', '.join(c.endpoints)} refused it: make a new one with "
        "`raftlock certs create-client` and pass it with cert= and key=, or check the clocks"
    ), message


def test_operator_calls_need_the_admin_token_without_an_auth_file(cluster: Cluster) -> None:
    """On the default cluster (a join token, no auth file) a force-release
    without the admin credential is refused and leaves the hold; with the
    one `raftlock.admin_token` derives from a member's data dir it is
    done. Fails without the node's admin gate: the first force-release
    succeeds."""
    holder = raftlock.Client(cluster.endpoints, session_ttl=3)
    anyone = raftlock.Client(cluster.endpoints, retry_for=2)
    lock = holder.lock("py/admin-gate")
    lock.acquire()
    with pytest.raises(raftlock.PermissionDenied) as denied:
        anyone.force_release("py/admin-gate")
    assert "--data-dir" in str(denied.value)
    assert anyone.check("py/admin-gate", lock.fence)
    token = raftlock.admin_token(cluster.data_dir(2))
    assert token.startswith("rla1-")
    assert cluster.join_token_hex() not in token
    operator = raftlock.Client(cluster.endpoints, token=token)
    assert operator.force_release("py/admin-gate") == 1
    assert not anyone.check("py/admin-gate", lock.fence)
    operator.close()
    with pytest.raises(ValueError, match="cannot read"):
        raftlock.admin_token(cluster.dir / "no-such-dir" / "file")
    holder.close()
    anyone.close()
