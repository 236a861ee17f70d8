"""`import raftlock.grelmicro` says what is wrong when no grelmicro it serves
is installed: none at all, or a version between 0.20 and 0.27 that has
neither `grelmicro.sync` nor `grelmicro.coordination`."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from typing import Any

import pytest


def import_fresh() -> None:
    sys.modules.pop("raftlock.grelmicro", None)
    importlib.import_module("raftlock.grelmicro")


def no_grelmicro(monkeypatch: pytest.MonkeyPatch) -> None:
    def version(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)


@pytest.mark.parametrize(
    ("python", "hint"),
    [
        ((3, 11, 7), r"pip install 'raftlock\[grelmicro\]' \(grelmicro 0\.20 on Python 3\.11\)"),
        ((3, 13, 0), r"pip install 'raftlock\[grelmicro\]' \(grelmicro >= 0\.27 on Python 3\.13\)"),
    ],
)
def test_a_missing_grelmicro_is_named_with_the_install_that_works(
    monkeypatch: pytest.MonkeyPatch, python: tuple[int, int, int], hint: str
) -> None:
    no_grelmicro(monkeypatch)
    monkeypatch.setattr(sys, "version_info", python)
    with pytest.raises(ImportError, match=hint):
        import_fresh()


def test_on_python_3_10_no_install_is_suggested(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, 3.10 was told `pip install 'raftlock[grelmicro]'`, which
    installs no grelmicro there."""
    no_grelmicro(monkeypatch)
    monkeypatch.setattr(sys, "version_info", (3, 10, 13))
    with pytest.raises(ImportError) as refused:
        import_fresh()
    message = str(refused.value)
    assert "none installs on Python 3.10" in message
    assert "grelmicro 0.20 needs Python >= 3.11" in message
    assert "raftlock.asyncio" in message
    assert "pip install" not in message


@pytest.mark.skipif(
    importlib.util.find_spec("grelmicro") is not None, reason="grelmicro is installed here"
)
def test_the_real_import_without_grelmicro_says_what_this_python_can_do() -> None:
    """On the interpreter itself (CPython 3.10 in ci.sh, where no grelmicro
    installs), with no monkeypatching."""
    with pytest.raises(ImportError) as refused:
        import_fresh()
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"Python {running}" in str(refused.value)
    if sys.version_info < (3, 11):
        assert "pip install" not in str(refused.value)


def test_an_unsupported_grelmicro_is_named_with_what_is_supported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    find_spec = importlib.util.find_spec

    def no_grelmicro_modules(name: str, *args: Any) -> Any:
        return None if name.startswith("grelmicro.") else find_spec(name, *args)

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.25.0")
    monkeypatch.setattr(importlib.util, "find_spec", no_grelmicro_modules)
    with pytest.raises(ImportError, match=r"0\.20.*>= 0\.27.*grelmicro 0\.25\.0"):
        import_fresh()
