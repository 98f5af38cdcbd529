"""Signals during a run: Ctrl-C and SIGTERM stop it the same way.

Kept apart from the engine so that the command line can install it without importing
scikit-learn (``bbc-dask status`` starts in a fraction of a second).
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time

from .exceptions import StudyInterrupted

__all__ = ["deferred_interrupts", "signals_as_interrupts", "wait_done"]


@contextlib.contextmanager
def signals_as_interrupts():
    """SIGTERM raises :class:`StudyInterrupted` in the main thread for the duration (as
    Ctrl-C raises KeyboardInterrupt), so both stop the run the same way: what is
    finished stays saved, the cluster is closed, the lock released. Either signal also
    silences Dask's own logging at once (restored on leaving): the shutdown that follows
    would otherwise be reported worker by worker."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import logging

    log = logging.getLogger("distributed")
    level = log.level

    def on_signal(signum, frame):
        log.setLevel(logging.CRITICAL)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise StudyInterrupted("interrupted", signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        log.setLevel(level)


@contextlib.contextmanager
def deferred_interrupts():
    """Holds Ctrl-C and SIGTERM until the block ends, then acts on them as before.

    For short calls into a Dask client that must not be cut in the middle: an interrupt
    inside ``Future.result()`` can cancel the client's shared gather request before it
    starts, and every later result on that client then fails ("cannot access local
    variable 'result'"), so a user's own client would be unusable after a Ctrl-C. Long
    waits happen outside such blocks. A second signal while one is held acts at once,
    so a hung call can still be stopped. Only Python-level handlers are held: a signal
    that kills the process by default keeps doing so.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = {}

    def hold(signum, frame):
        if held:
            previous[signum](signum, frame)
        held.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            previous[sig] = handler
            signal.signal(sig, hold)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            # also when the call raised: the interrupt then wins (chained to its error),
            # else a Ctrl-C inside a call that fails would be lost and the run go on
            previous[held[0]](held[0], None)


def wait_done(futures):
    """Waits for Dask futures without a client call, so that a Ctrl-C here leaves the
    client intact; fetch their results afterwards inside :func:`deferred_interrupts`."""
    while not all(f.done() for f in futures):
        time.sleep(0.02)
