"""The wall seconds of a run's phases (``Study.run_seconds_``)."""
from __future__ import annotations

import contextlib
import time

__all__ = ["Phases"]


class Phases:
    """The wall seconds of a run's phases, in the order they ran: what a user waits for,
    shown by ``benchmarks/bench_engine.py`` (``Study.run_seconds_``). A phase entered
    twice adds up; a phase timed inside another is taken out of the outer one, so the
    seconds add up to the run's wall time but for the few steps between phases.
    :meth:`__call__` is the context manager of one phase; :meth:`add` records seconds
    timed by the caller."""

    def __init__(self):
        self.seconds = {}
        self._inner = []  # per open phase: the seconds of the phases timed inside it

    @contextlib.contextmanager
    def __call__(self, name):
        t0 = time.perf_counter()
        self.seconds.setdefault(name, 0.0)  # in the order phases begin
        self._inner.append(0.0)
        try:
            yield
        finally:
            inner = self._inner.pop()
            self.add(name, time.perf_counter() - t0 - inner, nested=inner)

    def add(self, name, seconds, nested=0.0):
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        if self._inner:
            self._inner[-1] += seconds + nested
