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


def test_a_missing_grelmicro_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def version(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(ImportError, match=r"needs grelmicro.*raftlock\[grelmicro\]"):
        import_fresh()


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
