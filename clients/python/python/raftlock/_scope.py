"""The ``with`` and ``async with`` of the classes that hold something: the
block's end calls the one method that ends it (``close``, ``release``,
``resign``, ``finish``, ``stop``), whether or not the block raised; an
exception it raised propagates. A class calls that method in ``_on_exit``
and overrides ``__enter__`` / ``__aenter__`` when entering does more
than answer the object itself."""

from __future__ import annotations

from typing import TypeVar

S = TypeVar("S")


class Scoped:
    """``with obj:`` answers ``obj`` and calls ``obj._on_exit()`` at the end."""

    def _on_exit(self) -> None:
        raise NotImplementedError

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._on_exit()


class AsyncScoped:
    """``async with obj:`` answers ``obj`` and awaits ``obj._on_exit()`` at the end."""

    async def _on_exit(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: S) -> S:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._on_exit()
