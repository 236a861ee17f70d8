"""The package's build backend (PEP 517): maturin's, with raftlock's settings.

``pip wheel ./clients/python`` and ``pip install ./clients/python`` come here:

- Without ``cargo`` on PATH the build stops at once with a message that names
  the prebuilt wheel, instead of maturin's fallback, which downloads a Rust
  toolchain (about 1.3 GB, into ~/.cache) and compiles for minutes with no
  word of it unless pip runs with ``-v``. ``MATURIN_NO_INSTALL_RUST`` is set
  for maturin's hooks too, so it never fetches one.
- The wheel is built for manylinux2014 (glibc 2.17) with zig as the linker
  (the ``ziglang`` package, pinned below, installed into the build
  environment), so the one abi3 wheel installs on any Linux of the build
  machine's architecture with glibc 2.17 or newer, not only on systems as
  new as the build machine. Build arguments of one's own (``-C maturin.build-args=...`` or
  ``MATURIN_PEP517_ARGS``) that choose a platform tag or zig replace these.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from typing import Any

import maturin

# Not a maturin setting but the environment variable its hooks read.
os.environ["MATURIN_NO_INSTALL_RUST"] = "1"

# The zig that links the manylinux2014 wheel (README.md, "Versions, chosen
# on purpose", says why this one).
ZIGLANG = "ziglang==0.15.2"

# Build arguments given to maturin unless the caller chose the tag or zig.
WHEEL_ARGS = ["--compatibility", "manylinux2014", "--zig"]
_OWN_TAG_ARGS = ("--compatibility", "--manylinux", "--zig")

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]


def _version() -> str:
    """The package's version, from pyproject.toml (the only `version =`
    there is [project]'s)."""
    with open("pyproject.toml", encoding="utf-8") as f:
        found = re.search(r'^version = "([^"]+)"', f.read(), re.MULTILINE)
    return found.group(1) if found else "VERSION"


def _require_cargo() -> None:
    """Stops the build, saying what to do instead, when cargo is missing."""
    if shutil.which("cargo"):
        return
    arch = platform.machine()
    wheel = f"raftlock-{_version()}-cp310-abi3-manylinux2014_{arch}.manylinux_2_17_{arch}.whl"
    sys.stderr.write(
        "\nraftlock: building this package from source needs the Rust toolchain,\n"
        "and there is no `cargo` on PATH. Install the prebuilt wheel instead: it\n"
        "needs no Rust and carries the `raftlock` command (server and CLI):\n\n"
        f"    pip install {wheel}\n\n"
        "It is made once, where Rust is installed, by `pip wheel ./clients/python`\n"
        "(clients/python/README.md). Or install Rust (https://rustup.rs) and build\n"
        "again. No Rust toolchain is downloaded for you.\n\n"
    )
    raise SystemExit(1)


def _build_args(config_settings: Mapping[str, Any] | None) -> list[str]:
    """maturin's build arguments: the caller's (as maturin reads them), after
    the manylinux/zig ones unless the caller's choose a tag or zig."""
    settings = config_settings or {}
    given = settings.get("maturin.build-args", settings.get("build-args"))
    if given is None:
        args = shlex.split(os.environ.get("MATURIN_PEP517_ARGS", ""))
    elif isinstance(given, str):
        args = shlex.split(given)
    else:
        args = [str(arg) for arg in given]
    if any(arg.split("=")[0] in _OWN_TAG_ARGS for arg in args):
        return args
    return [*WHEEL_ARGS, *args]


def _settings(config_settings: Mapping[str, Any] | None) -> dict[str, Any]:
    settings = {k: v for k, v in (config_settings or {}).items() if k != "build-args"}
    settings["maturin.build-args"] = _build_args(config_settings)
    return settings


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    _require_cargo()
    zig = [ZIGLANG] if "--zig" in _build_args(config_settings) else []
    return [*maturin.get_requires_for_build_wheel(_settings(config_settings)), *zig]


def get_requires_for_build_editable(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    return get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    _require_cargo()
    return list(maturin.get_requires_for_build_sdist(config_settings))


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    _require_cargo()
    return str(
        maturin.prepare_metadata_for_build_wheel(metadata_directory, _settings(config_settings))
    )


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Mapping[str, Any] | None = None
) -> str:
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _require_cargo()
    return str(maturin.build_wheel(wheel_directory, _settings(config_settings), metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _require_cargo()
    return str(
        maturin.build_editable(wheel_directory, _settings(config_settings), metadata_directory)
    )


def build_sdist(sdist_directory: str, config_settings: Mapping[str, Any] | None = None) -> str:
    _require_cargo()
    return str(maturin.build_sdist(sdist_directory, config_settings))
