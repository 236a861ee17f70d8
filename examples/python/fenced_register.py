"""A stand-in for the database a scheduled job writes to: a file that
accepts a write only with a fencing token at least as high as every one it
accepted before, as a table with a `fence` column and a conditional update
would. Replicas on one machine share it; a refused write is recorded too,
so a test can tell that a deposed leader tried to write."""

from __future__ import annotations

import fcntl
import json
import time
from pathlib import Path


class StaleFenceError(Exception):
    """A write carried a fence older than one already accepted."""


class FencedRegister:
    """Append-only records of who ran the job, guarded by fencing tokens."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.refused = self.path.with_name(self.path.name + ".refused")

    def write(self, fence: int, replica: str) -> None:
        """Records one run by ``replica`` under ``fence``; raises
        :class:`StaleFenceError` (and records the attempt) if a higher
        fence was accepted before."""
        record = {"fence": fence, "replica": replica, "unix_ms": int(time.time() * 1000)}
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            highest = max((json.loads(line)["fence"] for line in f if line.strip()), default=0)
            if fence < highest:
                with open(self.refused, "a") as r:
                    r.write(json.dumps(record) + "\n")
                raise StaleFenceError(f"fence {fence} is older than {highest}")
            f.write(json.dumps(record) + "\n")

    def records(self) -> list[dict[str, int | str]]:
        """Every accepted write, oldest first."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def refusals(self) -> list[dict[str, int | str]]:
        """Every refused write."""
        if not self.refused.exists():
            return []
        return [json.loads(line) for line in self.refused.read_text().splitlines() if line]
