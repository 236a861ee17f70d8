"""The `raftlock` command the wheel installs, run as a user would: the
version, `raftlock serve` with no flags in an empty directory becoming a
ready one-node cluster, `raftlock lock NAME -- CMD` passing CMD's exit code
and forwarding SIGTERM and SIGINT as the cargo-built binary does, and a
Python client locking against that server.

The command is the one beside this interpreter (the venv's `bin/raftlock`),
not RAFTLOCK_BIN: these tests are about what `pip install` put there.
Without `raftlock._cli` resetting SIGINT to its default, the SIGINT test
fails (the Python host raises KeyboardInterrupt after CMD exits, and the
process dies of SIGINT instead of exiting with CMD's code); without its
SIGXFSZ reset, the signal-disposition test fails (CMD inherits Python's
ignored SIGXFSZ).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import raftlock

RAFTLOCK = Path(sysconfig.get_path("scripts")) / "raftlock"
# `raftlock serve` without flags: clients, peers, admin listener.
CLIENT_ADDR = "127.0.0.1:7379"
DEFAULT_PORTS = (7379, 7380, 7381)
ADMIN_URL = "http://127.0.0.1:7381"


def user_env() -> dict[str, str]:
    """This environment without RAFTLOCK_* settings, so every default holds."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAFTLOCK_")}


def raftlock_cmd(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RAFTLOCK), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=user_env(),
        check=False,
    )


def port_taken(port: int) -> bool:
    """Whether something listens on 127.0.0.1:`port`. SO_REUSEADDR, as the
    server's own listener: connections of an earlier server in TIME_WAIT do
    not count."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def readyz() -> int:
    """The admin listener's answer to GET /readyz (0: no answer)."""
    try:
        with urllib.request.urlopen(f"{ADMIN_URL}/readyz", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code
    except OSError:
        return 0


def ready() -> bool:
    """A leader, and /readyz says so: the node serves (the client listener
    answers a moment before the cluster is formed)."""
    status = raftlock_cmd("cluster", "status", "--output", "json")
    if status.returncode != 0 or json.loads(status.stdout).get("leader") is None:
        return False
    return readyz() == 200


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`raftlock serve` with no flags, in an empty working directory (the
    fixture's value); it must stop cleanly (exit 0) on SIGTERM."""
    if not RAFTLOCK.is_file():
        pytest.fail(f"no {RAFTLOCK}: install the wheel (pip install raftlock-*.whl)")
    # Another `raftlock serve` without flags (another test run) may hold the
    # ports for a while.
    deadline = time.monotonic() + 60
    while taken := [port for port in DEFAULT_PORTS if port_taken(port)]:
        if time.monotonic() > deadline:
            pytest.fail(
                f"127.0.0.1 ports {taken} are taken; `raftlock serve` without flags needs them"
            )
        time.sleep(0.5)
    cwd = tmp_path_factory.mktemp("serve")
    log_path = tmp_path_factory.mktemp("serve-log") / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(RAFTLOCK), "serve"],
            cwd=cwd,
            env=user_env(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 60
        while not ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"`raftlock serve` not ready: {log_path.read_text()}")
            time.sleep(0.2)
        yield cwd
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    log = log_path.read_text()
    assert code == 0, log
    assert "shutting down" in log, log


def test_version_is_the_packages() -> None:
    out = raftlock_cmd("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"raftlock {raftlock_version()}"


def raftlock_version() -> str:
    from importlib.metadata import version

    return version("raftlock")


def test_python_m_raftlock_is_the_same_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "raftlock", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"raftlock {raftlock_version()}"


def test_serve_without_flags_is_a_ready_one_node_cluster(server: Path) -> None:
    out = raftlock_cmd("cluster", "status", "--output", "json")
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert status["leader"] == 1, status
    assert status["nodes"][0]["client_addr"] == CLIENT_ADDR, status
    assert status["nodes"][0]["role"] == "leader", status
    assert (server / "raftlock-data").is_dir()
    assert readyz() == 200


@pytest.mark.parametrize(
    ("script", "code"),
    [("exit 7", 7), ("exit 0", 0), ("exit 124", 124), ("kill -TERM $$", 128 + 15)],
)
def test_lock_passes_the_commands_exit_code(server: Path, script: str, code: int) -> None:
    out = raftlock_cmd("lock", f"py-cli/{uuid.uuid4().hex[:8]}", "--", "sh", "-c", script)
    assert out.returncode == code, out.stderr
    assert out.stderr == "", "raftlock said something"


def test_lock_gives_the_command_its_fence(server: Path) -> None:
    out = raftlock_cmd("lock", "py-cli/env", "--", "sh", "-c", 'echo "$RAFTLOCK_FENCE"')
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 0


def test_a_python_client_locks_against_it(server: Path) -> None:
    name = f"py-cli/{uuid.uuid4().hex[:8]}"
    client = raftlock.Client(CLIENT_ADDR, session_ttl=5)
    try:
        with client.lock(name, timeout=10) as held:
            assert held.fence > 0
            assert client.check(name, held.fence)
            # The command line sees the same lock: busy while Python holds it.
            busy = raftlock_cmd("lock", name, "--timeout", "0s", "--", "true")
            assert busy.returncode == 123, busy.stderr
        after = raftlock_cmd("lock", name, "--timeout", "0s", "--", "sh", "-c", "exit 7")
        assert after.returncode == 7, after.stderr
    finally:
        client.close()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--ttl", "5x", "--", "true"], 125),  # a usage error: a TTL that is no duration
        (["--bogus", "--", "true"], 125),  # a usage error: an unknown flag
        (["--", "/nonexistent/command"], 127),
        (["--endpoints", "127.0.0.1:1", "--", "true"], 122),
    ],
)
def test_lock_keeps_its_own_exit_codes(server: Path, args: list[str], code: int) -> None:
    out = raftlock_cmd("lock", "py-cli/own", *args)
    assert out.returncode == code, out.stderr
    assert out.stderr.startswith("error:"), out.stderr


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 42), (signal.SIGINT, 43)])
def test_lock_forwards_sigterm_and_sigint_to_the_command(
    server: Path, tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    ready = tmp_path / "ready"
    script = f"trap 'exit 42' TERM; trap 'exit 43' INT; touch {ready}; while :; do sleep 0.05; done"
    proc = subprocess.Popen(
        [str(RAFTLOCK), "lock", "py-cli/signals", "--", "sh", "-c", script],
        env=user_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    # Exited with the command's code (not killed by the signal, no traceback).
    assert proc.returncode == code, err
    assert "Traceback" not in err, err


def ignored_signals(argv: list[str]) -> set[int]:
    """The standard signals (1-31) that `grep` finds ignored in its own
    /proc status, when run by `argv`. Signals 32 and 33 are glibc's own:
    posix_spawn leaves them ignored in every command a Rust binary starts."""
    out = subprocess.run(
        [*argv, "grep", "SigIgn", "/proc/self/status"],
        capture_output=True,
        text=True,
        env=user_env(),
        timeout=60,
        check=True,
    )
    mask = int(out.stdout.split()[1], 16)
    return {signum for signum in range(1, 32) if mask & (1 << (signum - 1))}


def test_a_command_inherits_the_signal_dispositions_a_rust_binary_gives(server: Path) -> None:
    """What the test process starts directly, CMD must get through `raftlock
    lock`: a Rust binary ignores SIGPIPE itself but resets it for the
    commands it runs, and leaves every other signal as it found it."""
    direct = ignored_signals([])
    through = ignored_signals([str(RAFTLOCK), "lock", "py-cli/sigign", "--"])
    assert through == direct
