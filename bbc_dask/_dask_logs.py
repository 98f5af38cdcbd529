"""Dask's log level, set in one place.

distributed logs to the ``distributed`` logger of each process. The package silences it
where its lines are noise on a user's terminal: while a run closes the cluster it started
(worker by worker shutdown notes), when Ctrl-C or SIGTERM stops a run, on the workers of
a cluster about to be closed, and in the command line's process (``--debug`` keeps it).
"""
from __future__ import annotations

import contextlib
import logging
import threading

__all__ = ["is_quiet", "quiet", "restored", "silence"]

_QUIET = {"lock": threading.Lock(), "users": 0, "level": None}


def _log():
    return logging.getLogger("distributed")


def silence(level=logging.CRITICAL):
    """Only ``level`` and above from now on, in this process (a worker about to be closed,
    the command line's process, a run being stopped by a signal)."""
    _log().setLevel(level)


def is_quiet(level=logging.ERROR):
    """Whether this process logs distributed's lines only from ``level``."""
    return _log().level >= level


@contextlib.contextmanager
def restored():
    """The level as it is now, restored on leaving whatever silenced it meanwhile."""
    level = _log().level
    try:
        yield
    finally:
        _log().setLevel(level)


@contextlib.contextmanager
def quiet(level=logging.CRITICAL):
    """Silenced for the duration; runs in threads that do this at once share it (the
    first saves the level, the last restores it)."""
    with _QUIET["lock"]:
        if _QUIET["users"] == 0:
            _QUIET["level"] = _log().level
            _log().setLevel(level)
        _QUIET["users"] += 1
    try:
        yield
    finally:
        with _QUIET["lock"]:
            _QUIET["users"] -= 1
            if _QUIET["users"] == 0:
                _log().setLevel(_QUIET["level"])
