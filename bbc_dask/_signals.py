"""Signals during a run: Ctrl-C and SIGTERM stop it the same way.

Kept apart from the engine so that the command line can install it without importing
scikit-learn (``bbc-dask status`` starts in a fraction of a second).
"""
from __future__ import annotations

import contextlib
import signal
import threading

from .exceptions import StudyInterrupted

__all__ = ["signals_as_interrupts"]


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
