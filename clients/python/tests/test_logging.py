"""The Rust code's log events (an embedded node's, a client's) are records of
Python's `logging`: logger `raftlock` and its children, levels mapped; the
library writes nothing to stderr itself, events below the loggers' level
are not even sent, a slow handler costs dropped (and reported) records,
never a stalled node; the wheel's `raftlock` command still logs to stderr;
no record carries a token.

Without the bridge (`src/log_bridge`; the node logging to stderr through
its own `tracing` subscriber, as before), the tests that look for records
fail (caplog and the handlers see none) and the stderr test fails (the
node's INFO lines are written to fd 2)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import raftlock
import raftlock.asyncio
from conftest import free_port, raftlock_bin
from raftlock import _native


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def addrs() -> dict[str, str]:
    return {
        "client_addr": f"127.0.0.1:{free_port()}",
        "peer_addr": f"127.0.0.1:{free_port()}",
    }


def raftlock_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "raftlock" or r.name.startswith("raftlock.")]


def fields(record: logging.LogRecord) -> dict[str, object]:
    """The event's fields, which the bridge puts in `record.raftlock_fields`."""
    found: dict[str, object] = getattr(record, "raftlock_fields")  # noqa: B009
    return found


def wait_for_record(
    caplog: pytest.LogCaptureFixture, found: Callable[[logging.LogRecord], bool]
) -> logging.LogRecord:
    """The first record `found` accepts, waited for (records of events on
    other threads arrive through the bridge's thread)."""
    deadline = time.monotonic() + 30
    while True:
        _native.flush_logs()
        for record in raftlock_records(caplog):
            if found(record):
                return record
        assert time.monotonic() < deadline, [r.getMessage() for r in raftlock_records(caplog)]
        time.sleep(0.05)


def run_python(
    code: str, env: dict[str, str] | None = None, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter, nothing of logging configured but
    what it does itself."""
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", textwrap.dedent(code)],
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def test_a_node_start_up_is_an_info_record_of_raftlock(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """Logged when the constructor returns, its stop when `stop()` returns
    (even through a slow handler: they wait, up to a second, for their
    records to be handled), with the event's fields in the text and in
    `record.raftlock_fields`. Without the bridge caplog sees no record;
    without the flush at the end of start (of stop), the slow handler has
    not handled "node started" ("node stopped") when the call returns."""

    class Slow(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            time.sleep(0.05)

    slow = Slow()
    logging.getLogger("raftlock").addHandler(slow)
    caplog.set_level(logging.INFO, logger="raftlock")
    try:
        node = raftlock.Node(id=1, data_dir=data_dir, **addrs())
        try:
            started = [r for r in raftlock_records(caplog) if "node started" in r.getMessage()]
            assert len(started) == 1, [r.getMessage() for r in raftlock_records(caplog)]
            record = started[0]
            assert record.levelno == logging.INFO
            assert record.name == "raftlock.node"
            assert f"client_addr={node.client_addr}" in record.getMessage()
            assert fields(record)["client_addr"] == node.client_addr
            assert fields(record)["id"] == 1
            assert str(record.threadName).startswith("raftlock-node")
            assert abs(record.created - time.time()) < 600
        finally:
            node.stop()
        assert any(r.getMessage().startswith("node stopped") for r in raftlock_records(caplog))
    finally:
        logging.getLogger("raftlock").removeHandler(slow)


async def test_an_asyncio_node_logs_the_same(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """`raftlock.asyncio.Node`: its start and stop records are there when
    the awaits return (the event loop lets the bridge's thread in while it
    waits). Without the bridge no record comes."""
    caplog.set_level(logging.INFO, logger="raftlock")
    async with raftlock.asyncio.Node(id=1, data_dir=data_dir, **addrs()):
        assert any(r.getMessage().startswith("node started") for r in raftlock_records(caplog))
    assert any(r.getMessage().startswith("node stopped") for r in raftlock_records(caplog))


def test_nothing_is_written_to_stderr_unless_logging_is_configured(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A node started and stopped with its INFO events on (`RAFTLOCK_LOG`,
    the `raftlock` logger at INFO) but no handler: stderr stays empty (the
    last resort takes WARNING and above only). With `basicConfig`, the
    same lines come out, formatted by `logging`. (openraft stays off, as
    by default: its stale-message warnings would reach the last resort.)
    Without the bridge, the node's own subscriber writes the INFO lines
    to stderr."""
    code = """
        import logging, sys, tempfile
        import raftlock
        if sys.argv[1] == "configured":
            logging.basicConfig(format="from-logging %(levelname)s %(name)s: %(message)s")
        logging.getLogger("raftlock").setLevel(logging.INFO)
        with tempfile.TemporaryDirectory() as d:
            node = raftlock.Node(data_dir=d, client_addr="127.0.0.1:0", peer_addr="127.0.0.1:0")
            node.wait_ready(timeout=30)
            with node.client() as client:
                with client.lock("logging/quiet"):
                    pass
            node.stop()
        print("done")
    """
    for mode in ("quiet", "configured"):
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), mode],
            text=True,
            timeout=120,
            env={**os.environ, "RAFTLOCK_LOG": "info,openraft=off"},
        )
        assert out.returncode == 0
        captured = capfd.readouterr()
        assert captured.out == "done\n"
        if mode == "quiet":
            assert captured.err == ""
        else:
            assert "from-logging INFO raftlock.node: node started id=1" in captured.err
            assert "from-logging INFO raftlock.node: node stopped" in captured.err


def test_raising_the_level_to_warning_removes_info_records(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """At INFO a node's start and stop give records; at WARNING they give
    none, and are not even sent to Python (the bridge's count stays).
    Without the level check at the callsite (every event sent) the count
    rose (14 against 8); without the level read when a node is made, too
    (the records of its start are sent before the next periodic read)."""
    caplog.set_level(logging.INFO, logger="raftlock")
    raftlock.Node(id=1, data_dir=data_dir, **addrs()).stop()
    assert any(r.levelno == logging.INFO for r in raftlock_records(caplog))
    caplog.clear()

    caplog.set_level(logging.WARNING, logger="raftlock")
    sent_before, _ = _native.log_record_counts()
    node = raftlock.Node(id=1, data_dir=data_dir, **addrs())
    with node.client() as client, client.lock("logging/level"):
        pass
    node.stop()
    assert [r.getMessage() for r in raftlock_records(caplog) if r.levelno < logging.WARNING] == []
    assert _native.log_record_counts()[0] == sent_before


def test_a_level_set_later_reaches_a_running_node(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """The loggers' level is read again while a node runs: set to INFO after
    it started, its stop is logged. Without the periodic read, the stop
    is never logged (the wait for the record times out)."""
    caplog.set_level(logging.WARNING, logger="raftlock")
    node = raftlock.Node(id=1, data_dir=data_dir, **addrs())
    caplog.set_level(logging.INFO, logger="raftlock")
    time.sleep(1.0)  # more than the bridge's refresh (0.25 s)
    node.stop()
    wait_for_record(caplog, lambda r: r.getMessage().startswith("node stopped"))


def test_a_child_logger_set_lower_gets_its_records(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """`raftlock` at WARNING, `raftlock.node` at INFO: the node's start-up
    record (of `raftlock.node`) arrives, and no INFO record of another
    logger does. Without the children's levels in the threshold, the
    start-up record is not sent."""
    caplog.set_level(logging.WARNING, logger="raftlock")
    caplog.set_level(logging.INFO, logger="raftlock.node")
    raftlock.Node(id=1, data_dir=data_dir, **addrs()).stop()
    infos = [r for r in raftlock_records(caplog) if r.levelno == logging.INFO]
    assert any(r.getMessage().startswith("node started") for r in infos), infos
    assert {r.name for r in infos} == {"raftlock.node"}


def test_the_client_logs_under_raftlock_client(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """A client's own events: passing over a dead endpoint is a DEBUG
    record of `raftlock.client.endpoints`. Without the bridge no record
    comes."""
    caplog.set_level(logging.DEBUG, logger="raftlock")
    with raftlock.Node(id=1, data_dir=data_dir, **addrs()) as node:
        dead = f"127.0.0.1:{free_port()}"
        with raftlock.Client([dead, node.client_addr]) as client, client.lock("logging/client"):
            pass
    record = wait_for_record(caplog, lambda r: dead in r.getMessage())
    assert record.name == "raftlock.client.endpoints"
    assert record.levelno == logging.DEBUG
    assert fields(record)["endpoint"] == dead


def test_trace_is_level_5_and_other_crates_log_under_deps() -> None:
    """With `RAFTLOCK_LOG` letting every target log (openraft aside):
    tracing's TRACE events are records at level 5, and another crate's
    events (h2's) are records of `raftlock.deps.h2...`; at DEBUG, no level
    5 record is even sent. Without the bridge no record comes."""
    out = run_python(
        """
        import json, logging, tempfile
        import raftlock
        from raftlock import _native
        seen = []
        class Keep(logging.Handler):
            def emit(self, record):
                seen.append((record.name, record.levelno, record.levelname))
        logger = logging.getLogger("raftlock")
        logger.addHandler(Keep())
        result = {}
        for level in (1, logging.DEBUG):
            logger.setLevel(level)
            seen.clear()
            with tempfile.TemporaryDirectory() as d:
                with raftlock.Node(data_dir=d, client_addr="127.0.0.1:0",
                                   peer_addr="127.0.0.1:0") as node:
                    with node.client() as client, client.lock("logging/trace"):
                        pass
            _native.flush_logs(timeout=30)
            result[level] = sorted(set(seen))
        print(json.dumps(result))
        """,
        {"RAFTLOCK_LOG": "trace,openraft=off"},
        capture_output=True,
    )
    assert out.returncode == 0, out.stderr
    result = json_last_line(out.stdout)
    everything = result["1"]
    assert any(level == 5 and name == "Level 5" for _, level, name in everything)
    assert any(logger.startswith("raftlock.deps.h2") for logger, _, _ in everything)
    assert all(level >= logging.DEBUG for _, level, _ in result[str(logging.DEBUG)])


def test_a_leave_through_a_stopped_node_is_a_warning(
    caplog: pytest.LogCaptureFixture, data_dir: Path
) -> None:
    """A release made after the client's node stopped gives up at once, and
    says so as a WARNING record of `raftlock.python.node_link`. Without the
    bridge no record comes."""
    caplog.set_level(logging.WARNING, logger="raftlock")
    node = raftlock.Node(id=1, data_dir=data_dir, **addrs())
    client = node.client(session_ttl=3)
    try:
        with client.lock("logging/left"):
            node.stop()
    finally:
        client.close()
    record = wait_for_record(caplog, lambda r: "going on without it" in r.getMessage())
    assert record.levelno == logging.WARNING
    assert record.levelname == "WARNING"
    assert record.name == "raftlock.python.node_link"
    assert 'release of lock "logging/left"' in record.getMessage()


def test_no_record_carries_a_token(
    caplog: pytest.LogCaptureFixture, data_dir: Path, tmp_path: Path
) -> None:
    """A node with a join token and an auth file, at every level (TRACE
    included): a client with a token, one with a wrong token, and the
    admin credential's client make calls; no record (text or fields)
    contains any of the secrets. (Without the bridge there are no records
    and the test fails on that; no event carries a secret today, so this
    guards against one that would.)"""
    made = subprocess.run(
        [raftlock_bin(), "auth", "create-token", "--user", "app", "--role", "admin"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    first, entry = made.split("\n", 1)
    token = first.removeprefix("token: ")
    assert token.startswith("rl_")
    auth_file = tmp_path / "auth.toml"
    auth_file.write_text(entry)
    join_secret = "7a" * 32
    wrong = "rl_" + "5c" * 32
    caplog.set_level(1, logger="raftlock")
    node = raftlock.Node(
        id=1, data_dir=data_dir, join_token="rlj1-" + join_secret, auth_file=auth_file, **addrs()
    )
    try:
        node.wait_ready(timeout=30)
        with node.client(token=token) as client, client.lock("logging/secret"):
            pass
        stranger = raftlock.Client(node.client_addr, token=wrong, retry_for=1)
        with pytest.raises(raftlock.Unauthenticated):
            stranger.lock("logging/secret", timeout=5).acquire()
        stranger.close()
        with node.client() as admin:
            admin.force_release("logging/secret")
        admin_token = raftlock.admin_token(data_dir)
    finally:
        node.stop()
    secrets = [token, token.removeprefix("rl_"), join_secret, wrong.removeprefix("rl_")]
    secrets.append(admin_token.removeprefix("rla1-"))
    records = raftlock_records(caplog)
    assert any("auth=true" in r.getMessage() for r in records), "no records: is the bridge on?"
    for record in records:
        text = f"{record.getMessage()} {fields(record)}"
        for secret in secrets:
            assert secret not in text, f"{record.name}: {text}"


def test_a_slow_handler_drops_records_and_says_how_many() -> None:
    """With a handler that blocks, the node's events (TRACE, thousands a
    call) fill the bridge's queue: calls go on (no runtime thread waits for
    Python), the records past the queue are dropped and counted, and a
    WARNING record says how many once the handler is free again. With a
    blocking send instead of `try_send`, the calls stall behind the
    handler and the process times out."""
    out = run_python(
        """
        import json, logging, tempfile, threading
        import raftlock
        from raftlock import _native
        free = threading.Event()
        seen = []
        class Slow(logging.Handler):
            def emit(self, record):
                free.wait()
                seen.append((record.levelno, record.getMessage()))
        logger = logging.getLogger("raftlock")
        logger.setLevel(1)
        logger.addHandler(Slow())
        with tempfile.TemporaryDirectory() as d:
            node = raftlock.Node(data_dir=d, client_addr="127.0.0.1:0", peer_addr="127.0.0.1:0")
            client = node.client()
            for _ in range(40):
                with client.lock("logging/flood"):
                    pass
            dropped = _native.log_record_counts()[1]
            free.set()
            client.close()
            node.stop()
            _native.flush_logs(timeout=30)
        reports = [m for level, m in seen if "log records were dropped" in m and level == 30]
        print(json.dumps({"dropped": dropped, "reports": reports}))
        """,
        {"RAFTLOCK_LOG": "trace,openraft=off"},
        capture_output=True,
    )
    assert out.returncode == 0, out.stderr
    result = json_last_line(out.stdout)
    assert result["dropped"] > 0
    assert result["reports"], result
    reported = sum(int(m.split()[0]) for m in result["reports"])
    assert reported >= result["dropped"]


def json_last_line(stdout: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return found


def test_a_node_left_running_at_exit_logs_its_stop_and_the_process_exits() -> None:
    """No deadlock at interpreter exit: the node stopped by the exit hook
    logs through a configured handler, even a slow one, then the process
    ends. Without the bridge no record comes; without the exit stop's wait
    for its records (the package's last hook closes the bridge right
    after), "node stopped" was still queued behind the slow handler and
    was dropped (seen once in CI on 3.12 without a slow handler, and in 6
    of 6 runs with this one)."""
    out = run_python(
        """
        import logging, sys, tempfile, time
        import raftlock

        class Slow(logging.StreamHandler):
            def emit(self, record):
                if "became leader" in record.getMessage():
                    time.sleep(0.5)
                super().emit(record)

        handler = Slow(sys.stdout)
        handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
        logging.basicConfig(level=logging.INFO, handlers=[handler])
        d = tempfile.mkdtemp()
        node = raftlock.Node(data_dir=d, client_addr="127.0.0.1:0", peer_addr="127.0.0.1:0")
        node.wait_ready(timeout=30)
        """,
        capture_output=True,
    )
    assert out.returncode == 0, out.stderr
    assert "raftlock.node node started" in out.stdout
    assert "raftlock.node node stopped" in out.stdout
    assert out.stderr == ""


def test_the_raftlock_command_still_logs_to_stderr(tmp_path: Path) -> None:
    """The wheel's `raftlock serve` (the same extension, run as a command)
    writes its INFO lines to stderr as the cargo-built binary does. (With
    the bridge installed when the extension loads, the command's lines
    became records nobody handled: none reached stderr.)"""
    err_path = tmp_path / "stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [
                raftlock_bin(),
                "serve",
                "--data-dir",
                str(tmp_path / "data"),
                "--client-addr",
                f"127.0.0.1:{free_port()}",
                "--peer-addr",
                f"127.0.0.1:{free_port()}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while "node started" not in err_path.read_text():
            assert proc.poll() is None, err_path.read_text()
            assert time.monotonic() < deadline, err_path.read_text()
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    log = err_path.read_text()
    assert proc.returncode == 0, log
    started = next(line for line in log.splitlines() if "node started" in line)
    assert "INFO" in started
    assert "shutting down" in log or "node stopped" in log
