"""`raftlock.Node` and `raftlock.asyncio.Node`: a node inside the Python
process. Its options are `raftlock serve`'s, bad ones are refused with
nothing started, and the node stops at `stop()`, `with`, and interpreter
exit; a second node on one data dir and a forked child are refused."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import raftlock
import raftlock.asyncio
from conftest import free_port, raftlock_bin


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="raftlock-node-") as d:
        yield Path(d) / "data"


def addrs() -> dict[str, str]:
    return {
        "client_addr": f"127.0.0.1:{free_port()}",
        "peer_addr": f"127.0.0.1:{free_port()}",
    }


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_options_are_the_flags_of_raftlock_serve() -> None:
    """Every setting `raftlock serve --help` lists is a keyword, and no other."""
    help_text = subprocess.run(
        [raftlock_bin(), "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flags = set(re.findall(r"^\s+--([a-z-]+)", help_text, re.MULTILINE))
    # --log-format belongs to every command; a node's records are formatted
    # by Python's logging.
    settings = {f.replace("-", "_") for f in flags} - {"print_config", "help", "log_format"}
    assert set(raftlock.Node.options()) == settings
    assert set(raftlock.asyncio.Node.options()) == settings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"no_such": 1}, "has no option no_such="),
        ({"id": 0}, "node id must be at least 1"),
        ({"heartbeat_ms": "x"}, "heartbeat_ms="),
        ({"join": "yes"}, "join= is True or False"),
        ({"id": True}, "id= takes a value"),
        ({"id": 1.5}, "id= must be text"),
        ({"join": True, "initial_cluster": "1=a:1/a:2"}, "exclude each other"),
        ({"initial_cluster": "1=nonsense"}, "bad initial-cluster member"),
        ({"election_timeout_ms": 10, "heartbeat_ms": 50}, "at least 3 heartbeats"),
        ({"print_config": True}, "has no option print_config="),
    ],
)
def test_bad_options_are_refused_and_start_nothing(
    data_dir: Path, options: dict[str, object], message: str
) -> None:
    with pytest.raises(raftlock.InvalidArgument, match=re.escape(message)):
        raftlock.Node(data_dir=data_dir, **addrs(), **options)  # type: ignore[arg-type]
    with pytest.raises(raftlock.InvalidArgument, match=re.escape(message)):
        raftlock.asyncio.Node(data_dir=data_dir, **addrs(), **options)  # type: ignore[arg-type]
    assert not data_dir.exists()


def test_a_one_node_cluster_serves_its_own_client(data_dir: Path) -> None:
    with raftlock.Node(data_dir=data_dir, **addrs()) as node:
        with pytest.raises(raftlock.InvalidArgument, match="timeout"):
            node.wait_ready(timeout=-1)
        assert node.wait_ready(timeout=30) == 1
        assert node.is_leader
        assert node.leader_id == 1
        status = node.status()
        assert (status.id, status.role, [m.id for m in status.members]) == (1, "leader", [1])
        assert node.admin_addr is None
        client = node.client(session_ttl=3)
        with client.lock("jobs/nightly") as lock:
            first = lock.fence
        client.close()
    assert not node.running
    with pytest.raises(raftlock.NodeError, match="not running"):
        node.status()
    node.stop()  # again: nothing to do

    # Restarted on its data dir in the same process: the lock state is back.
    with raftlock.Node(data_dir=data_dir, **addrs()) as node:
        node.wait_ready(timeout=30)
        client = node.client(session_ttl=3)
        with client.lock("jobs/nightly") as lock:
            assert lock.fence > first
        client.close()


def test_config_file_and_environment_fill_what_is_not_passed(data_dir: Path) -> None:
    """Keywords over RAFTLOCK_* over the TOML file, as for `raftlock serve`."""
    config = data_dir.parent / "node.toml"
    config.write_text("heartbeat_ms = 40\nelection_timeout_ms = 400\nid = 5\n")
    port = free_port()
    node = raftlock.Node(
        config=config,
        data_dir=data_dir,
        client_addr=f"127.0.0.1:{port}",
        peer_addr=f"127.0.0.1:{free_port()}",
    )
    try:
        assert node.id == 5
        assert node.client_addr == f"127.0.0.1:{port}"
    finally:
        node.stop()
    # The environment alone, as in a Kubernetes pod.
    port = free_port()
    done = run_python(
        """
        import raftlock
        with raftlock.Node() as node:
            print(node.id, node.wait_ready(timeout=30), node.client_addr)
        """,
        env={
            "RAFTLOCK_ID": "7",
            "RAFTLOCK_DATA_DIR": str(data_dir.parent / "from-env"),
            "RAFTLOCK_CLIENT_ADDR": f"127.0.0.1:{port}",
            "RAFTLOCK_PEER_ADDR": f"127.0.0.1:{free_port()}",
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "7", f"127.0.0.1:{port}"]
    assert (data_dir.parent / "from-env").is_dir()


def test_a_second_node_on_one_data_dir_is_refused(data_dir: Path) -> None:
    with raftlock.Node(data_dir=data_dir, **addrs()) as node:
        node.wait_ready(timeout=30)
        with pytest.raises(raftlock.NodeError, match=r"in use by another raftlock\.Node of this"):
            raftlock.Node(data_dir=data_dir, **addrs())
        # The relative spelling of the same dir is the same dir.
        relative = os.path.relpath(data_dir)
        with pytest.raises(raftlock.NodeError, match="in use"):
            raftlock.Node(data_dir=relative, **addrs())
        other = run_python(
            f"""
            import raftlock
            try:
                raftlock.Node(data_dir={str(data_dir)!r}, client_addr="127.0.0.1:{free_port()}",
                              peer_addr="127.0.0.1:{free_port()}")
            except raftlock.NodeError as e:
                print("refused:", e)
            """
        )
        assert "refused:" in other.stdout, other.stderr
        assert f"in use by another process (pid {os.getpid()}" in other.stdout
        assert node.is_leader  # still serving


def test_a_taken_port_is_refused(data_dir: Path) -> None:
    with (
        raftlock.Node(data_dir=data_dir, **addrs()) as node,
        pytest.raises(raftlock.NodeError, match="cannot listen on"),
    ):
        raftlock.Node(
            data_dir=data_dir.parent / "other",
            client_addr=node.client_addr,
            peer_addr=f"127.0.0.1:{free_port()}",
        )
    # Nothing was left claimed: the dir of the refused node is free.
    with raftlock.Node(data_dir=data_dir.parent / "other", **addrs()) as node:
        node.wait_ready(timeout=30)


# Python 3.12+ warns that forking a process with threads may deadlock the
# child: the refusal is what this test checks.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_fork_after_start_is_refused(data_dir: Path) -> None:
    with raftlock.Node(data_dir=data_dir, **addrs()) as node:
        node.wait_ready(timeout=30)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: answers what it was told, never runs the tests
            try:
                node.status()
                os.write(write, b"served")
            except RuntimeError as e:
                os.write(write, str(e).encode())
            finally:
                os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        answer = os.read(read, 1000).decode()
        os.close(read)
        assert "started before the process forked" in answer
        assert node.is_leader  # the parent's node is untouched


def test_interpreter_exit_stops_the_node_in_order(data_dir: Path) -> None:
    """Without stop(), the node is shut down at exit (its "node stopped"
    record, through logging); without the exit hook the process would end
    with Raft mid-way."""
    done = run_python(
        f"""
        import logging
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
        import raftlock, raftlock.asyncio, asyncio
        node = raftlock.Node(data_dir={str(data_dir)!r}, client_addr="127.0.0.1:{free_port()}",
                             peer_addr="127.0.0.1:{free_port()}")
        node.wait_ready(timeout=30)
        async def main():
            other = raftlock.asyncio.Node(data_dir={str(data_dir / "b")!r},
                client_addr="127.0.0.1:{free_port()}", peer_addr="127.0.0.1:{free_port()}")
            await other.start()
            await other.wait_ready(timeout=30)
            return other
        kept = asyncio.run(main())
        print("exiting")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exiting"
    assert done.stderr.count("node stopped") == 2, done.stderr


def test_a_thread_holding_the_gil_does_not_stall_the_node(data_dir: Path) -> None:
    """The node's threads never take the GIL: while this process spins in
    pure Python with the GIL held (no other Python thread asks for it), the
    node still answers a client in another process. A node that needed the
    GIL (Raft driven from Python, or sharing threads with Python callbacks)
    would not answer until the spin ends."""
    port = free_port()
    hog = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time, raftlock
                node = raftlock.Node(data_dir={str(data_dir)!r}, client_addr="127.0.0.1:{port}",
                                     peer_addr="127.0.0.1:{free_port()}")
                node.wait_ready(timeout=30)
                sys.setswitchinterval(100.0)
                print("spinning", flush=True)
                end = time.monotonic() + 60
                n = 0
                while time.monotonic() < end:
                    n += 1
                print("done", flush=True)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert hog.stdout is not None
        assert hog.stdout.readline().strip() == "spinning"
        client = raftlock.Client(f"127.0.0.1:{port}", session_ttl=5)
        with client.lock("gil/free", timeout=30) as lock:
            time.sleep(8)  # beyond the session TTL: its keep-alives were answered
            assert client.check("gil/free", lock.fence)
        client.close()
        assert hog.poll() is None, "the spinning process ended early"
    finally:
        hog.kill()
        hog.wait()


async def test_asyncio_node(data_dir: Path) -> None:
    async with raftlock.asyncio.Node(data_dir=data_dir, **addrs()) as node:
        assert await node.wait_ready(timeout=30) == 1
        assert node.is_leader
        client = node.client(session_ttl=3)
        async with client.lock("aio/node") as lock:
            assert lock.fence > 0
        await client.close()
        with pytest.raises(raftlock.NodeError, match="already running"):
            await node.start()
    assert not node.running
    unstarted = raftlock.asyncio.Node(data_dir=data_dir, **addrs())
    with pytest.raises(raftlock.NodeError, match="not running"):
        await unstarted.wait_ready(timeout=1)


def test_wait_ready_times_out_without_a_quorum(data_dir: Path) -> None:
    """One member of three, alone: it never knows a leader."""
    peers = [free_port() for _ in range(3)]
    clients = [free_port() for _ in range(3)]
    initial = ",".join(f"{i + 1}=127.0.0.1:{peers[i]}/127.0.0.1:{clients[i]}" for i in range(3))
    with raftlock.Node(
        id=1, data_dir=data_dir, initial_cluster=initial.split(","), insecure=True
    ) as node:
        started = time.monotonic()
        with pytest.raises(raftlock.Timeout, match="knows no leader"):
            node.wait_ready(timeout=2)
        assert time.monotonic() - started < 30
        assert node.leader_id is None


def test_stop_from_another_thread_ends_a_wait(data_dir: Path) -> None:
    peers = [free_port() for _ in range(3)]
    initial = [f"{i}=127.0.0.1:{peers[i - 1]}/127.0.0.1:{free_port()}" for i in (1, 2, 3)]
    node = raftlock.Node(id=1, data_dir=data_dir, initial_cluster=initial, insecure=True)
    stopper = threading.Timer(1.0, node.stop)
    stopper.start()
    with pytest.raises(raftlock.NodeError, match="stopped"):
        node.wait_ready(timeout=60)
    stopper.join()


def test_a_tls_node_gives_a_client_that_presents_the_node_certificate(data_dir: Path) -> None:
    """TLS keywords as `raftlock serve` takes them; with client certificates
    required, `node.client()` gets in with the node's own certificate,
    while a client without one is refused."""
    certs = data_dir.parent / "certs"

    def cli(*args: str) -> None:
        subprocess.run([raftlock_bin(), *args], check=True, capture_output=True, timeout=60)

    cli("certs", "create-ca", "--certs-dir", str(certs))
    cli("certs", "create-node", "--id", "1", "--host", "127.0.0.1", "--certs-dir", str(certs))
    with raftlock.Node(
        data_dir=data_dir,
        tls_cert=certs / "node-1.crt",
        tls_key=certs / "node-1.key",
        tls_ca=certs / "ca.crt",
        client_cert_auth=True,
        **addrs(),
    ) as node:
        node.wait_ready(timeout=30)
        client = node.client(session_ttl=3)
        with client.lock("tls/node") as lock:
            assert lock.fence > 0
        client.close()
        stranger = raftlock.Client(node.client_addr, cacert=certs / "ca.crt", retry_for=2)
        # (The handshake fails without a certificate: the call finds no node.)
        with pytest.raises((raftlock.Unavailable, raftlock.TlsError, raftlock.Unauthenticated)):
            stranger.lock("tls/node", timeout=5).acquire()
