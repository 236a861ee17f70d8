"""The Python half of the bridge from the Rust code's ``tracing`` events to
:mod:`logging` (``src/log_bridge``): the level the ``raftlock`` loggers
take, read by the bridge's thread every quarter of a second, and the
records it hands over, in batches.

Records go to the logger ``raftlock`` or a child by module
(``raftlock.serving.grant``, ``raftlock.client.session``,
``raftlock.raft.peer``, ``raftlock.python.node_link``); no handler is
added here: an application that configures nothing sees WARNING and above
through Python's last resort, as for any library."""

from __future__ import annotations

import logging

#: Where the records go, and the parent of the loggers by module.
LOGGER = "raftlock"

#: tracing's TRACE, below ``logging.DEBUG``.
TRACE = 5

_PREFIX = LOGGER + "."


def threshold() -> int:
    """The lowest level a ``raftlock`` logger takes now: the ``raftlock``
    logger's effective level, or a lower one set on a child, raised by
    :func:`logging.disable`. An event below it is not even formatted."""
    level = logging.getLogger(LOGGER).getEffectiveLevel()
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if (
            name.startswith(_PREFIX)
            and isinstance(logger, logging.Logger)
            and logger.level != logging.NOTSET
        ):
            level = min(level, logger.level)
    return max(level, logging.root.manager.disable + 1)


Item = tuple[str, int, str, dict[str, object], float, str, str, int]


def emit(records: list[Item], dropped: int) -> None:
    """Hands ``records`` (logger, level, text, fields, created, thread
    name, file, line) to their loggers, each record at the time and with
    the thread name of its event; reports ``dropped`` records first."""
    if dropped:
        logging.getLogger(LOGGER).warning(
            "%d raftlock log records were dropped: the logging handlers did not keep up",
            dropped,
        )
    for name, level, text, fields, created, thread, file, line in records:
        logger = logging.getLogger(name)
        if not logger.isEnabledFor(level):
            continue
        record = logger.makeRecord(
            name, level, file, line, text, (), None, extra={"raftlock_fields": fields}
        )
        # The event's time, not the handing over's.
        record.relativeCreated += (created - record.created) * 1000
        record.created = created
        record.msecs = (created - int(created)) * 1000
        record.threadName = thread
        logger.handle(record)
