"""``python -m raftlock ...``: the ``raftlock`` command, for when the
environment's scripts directory is not on PATH."""

import sys

from raftlock._cli import main

sys.exit(main())
