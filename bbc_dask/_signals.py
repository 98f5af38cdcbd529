"""Signals during a run: Ctrl-C and SIGTERM stop it the same way.

Kept apart from the engine so that the command line can install it without importing
scikit-learn (``bbc-dask status`` starts in a fraction of a second).
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading

from .exceptions import StudyInterrupted

__all__ = ["deferred_interrupts", "raise_swallowed", "signals_as_interrupts", "wait_done"]

#: The signals whose interrupt the handler raised, until the run's block ends. The
#: interpreter swallows an exception raised in a garbage-collection callback or a
#: ``__del__`` (it prints "Exception ignored"), and a signal can land there (seen: in
#: distributed's GC diagnosis): the run then raises it again at its next safe point.
_RAISED = []


def _interrupt(signum):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise StudyInterrupted("interrupted", signum)


def raise_swallowed():
    """Raise again the interrupt of a signal that the interpreter swallowed (see
    ``_RAISED``). Only where no exception is propagating or being handled: the cleanup
    that follows an interrupt which did propagate is never cut by it again."""
    if _RAISED and sys.exc_info()[0] is None:
        _interrupt(_RAISED[-1])


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
    from . import _dask_logs as dask_logs

    def on_signal(signum, frame):
        dask_logs.silence()
        _RAISED.append(signum)
        _interrupt(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(sig) is not signal.SIG_IGN}
    with dask_logs.restored():
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            _RAISED.clear()


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
    client intact; fetch their results afterwards inside :func:`deferred_interrupts`.
    Woken by the futures' own done callbacks, not by a polling sleep: a small study waits
    on a few short tasks per fit, and a 20 ms poll cost it ~10 ms at each; the timeout
    only lets a swallowed Ctrl-C be raised again."""
    pending = [f for f in futures if not f.done()]
    if not pending:
        return
    left = [len(pending)]
    lock = threading.Lock()
    event = threading.Event()

    def one_done(_):
        with lock:
            left[0] -= 1
            if left[0] <= 0:
                event.set()

    for f in pending:
        f.add_done_callback(one_done)
    while not event.wait(0.1):
        raise_swallowed()
        if all(f.done() for f in pending):  # a callback lost with a closed client
            return
