"""`raftlock.Node`'s keywords are typed and are exactly `raftlock serve`'s
options: read from the command's own `--help`, so a flag added to the
server and not to `raftlock._node_options.NodeOptions` fails here, and a
misspelled option is caught by mypy before anything runs."""

from __future__ import annotations

import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import raftlock
import raftlock.asyncio
from conftest import raftlock_bin
from raftlock._node_options import NodeOptions

# `--help` entries that are actions of the command, not settings of a node,
# and `--log-format`, the `raftlock` process's own stderr (an embedded
# node's logs go to Python's `logging`).
NOT_SETTINGS = {"help", "print-config", "version", "log-format"}


def serve_flags() -> dict[str, bool]:
    """Each settings flag of `raftlock serve --help` as its keyword, and
    whether it is a switch (a flag without a `<VALUE>`)."""
    shown = subprocess.run(
        [raftlock_bin(), "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flags: dict[str, bool] = {}
    for flag, value in re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]*)( <[A-Z_]+>)?", shown, re.M):
        if flag not in NOT_SETTINGS:
            flags[flag.replace("-", "_")] = not value
    return flags


def test_the_typed_keywords_are_the_serve_flags() -> None:
    """Fails when `raftlock serve` gains, loses or renames a flag that
    `NodeOptions` does not follow, or when a switch is typed as a value
    (or a value as a switch)."""
    flags = serve_flags()
    assert len(flags) > 30, flags  # the help was read
    hints = typing.get_type_hints(NodeOptions)
    assert set(hints) == set(flags), (
        f"only in `raftlock serve`: {sorted(set(flags) - set(hints))}; "
        f"only in NodeOptions: {sorted(set(hints) - set(flags))}"
    )
    for name, switch in flags.items():
        kinds = set(typing.get_args(hints[name])) - {type(None)}
        if switch:
            assert kinds == {bool}, f"{name} is a switch, typed {hints[name]}"
        else:
            assert bool not in kinds, f"{name} takes a value, typed {hints[name]}"
    # And the node itself accepts exactly these.
    assert set(raftlock.Node.options()) == set(flags)


def test_mypy_catches_a_misspelled_or_mistyped_option(tmp_path: Path) -> None:
    """Without the typed keywords (`**options: NodeOption`), mypy accepted
    all four calls below."""
    pytest.importorskip("mypy")
    app = tmp_path / "app.py"
    app.write_text(
        "import raftlock\n"
        "import raftlock.asyncio\n"
        "raftlock.Node(data_dir='d', heartbeat_ms=50, join=False, initial_cluster=['1=a/b'])\n"
        "raftlock.Node(bogus_option=1)\n"
        "raftlock.asyncio.Node(heartbeat_ms='fast')\n"
        "raftlock.Node(join='yes')\n"
        "raftlock.asyncio.Node(tls_ca=7)\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(app)],
        capture_output=True,
        text=True,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    assert lines == [4, 5, 6, 7], checked.stdout
    assert 'Unexpected keyword argument "bogus_option"' in checked.stdout
    assert '"heartbeat_ms"' in checked.stdout


def test_a_misspelled_option_is_refused_at_run_time_naming_it() -> None:
    """A caller without a type checker still gets the option named, and
    nothing starts."""
    options: dict[str, typing.Any] = {"bogus_option": 1}
    with pytest.raises(raftlock.InvalidArgument, match="has no option bogus_option="):
        raftlock.Node(**options)
    with pytest.raises(raftlock.InvalidArgument, match="heartbeat_ms"):
        raftlock.asyncio.Node(heartbeat_ms=typing.cast(int, "fast"))
