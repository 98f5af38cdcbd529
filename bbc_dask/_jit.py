"""Numba kernels bound on first call.

Importing numba and loading its compiler costs a process ~140 MiB — more than half of
what a Dask worker of the chunked bootstraps holds. With these decorators a module's
kernels are plain Python objects until one is called: then numba is imported, every
serial kernel of that module becomes a numba dispatcher (so that kernels calling kernels
compile as numba functions; a parallel kernel keeps its wrapper, and is called from
Python only) and ``prange`` becomes numba's. A worker whose tasks call no
kernel (pointwise sums of integer features go through BLAS) never loads numba.
Compiled code is cached on disk as before (``cache=True``).
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading

__all__ = ["njit", "one_blas_thread", "pin_blas_thread", "prange"]

#: ``range`` until a kernel of the module is bound: then ``numba.prange``.
prange = range


class _Kernel:
    """A function to be compiled by ``numba.njit(**options)`` when first called."""

    def __init__(self, fn, options):
        self.fn, self.options, self._dispatcher = fn, options, None
        functools.update_wrapper(self, fn)

    def dispatcher(self):
        if self._dispatcher is None:
            import numba

            self._dispatcher = numba.njit(**self.options)(self.fn)
            _bind(self.fn.__globals__, numba)
        return self._dispatcher

    def __call__(self, *args):
        dispatcher = self.dispatcher()
        if self.options.get("parallel"):
            _one_thread_in_dask_workers()
        return dispatcher(*args)

    def __reduce__(self):  # pickled by reference, as a module-level function
        return getattr, (_module(self.fn), self.fn.__name__)


_THREAD = threading.local()


def _one_thread_in_dask_workers():
    """A parallel kernel called from a task of a Dask worker runs on that task's thread
    alone, as Dask has BLAS and OpenMP do in its workers (its nanny sets
    ``OMP_NUM_THREADS=1``): a worker's parallelism is its threads, and numba's pool of a
    thread per core behind each of them oversubscribes the machine (measured: ranking
    blocks scored on 2 workers of a 2-core machine took 1.3x the time). Set once per
    thread; ``NUMBA_NUM_THREADS`` in the environment is left to decide."""
    if getattr(_THREAD, "checked", False):
        return
    _THREAD.checked = True
    if "NUMBA_NUM_THREADS" in os.environ or "distributed" not in sys.modules:
        return
    try:
        sys.modules["distributed"].get_worker()
    except (AttributeError, ValueError):  # not in a worker's task thread
        return
    import numba

    numba.set_num_threads(1)


def _module(fn):
    import importlib

    return importlib.import_module(fn.__module__)


def _bind(namespace, numba):
    """Every serial kernel of a module's ``namespace`` replaced by its dispatcher (created,
    not yet compiled: numba compiles on the first call with given types), so that kernels
    calling it compile. Parallel kernels keep their wrapper: called from Python only, each
    call sets a Dask worker's task thread to one numba thread first — a thread other than
    the one that bound them would otherwise run numba's whole pool."""
    if namespace.get("prange") is range:
        namespace["prange"] = numba.prange
    for name, value in list(namespace.items()):
        if isinstance(value, _Kernel) and not value.options.get("parallel"):
            namespace[name] = value.dispatcher()


def njit(**options):
    """``numba.njit(**options)``, bound on first call (see the module doc)."""
    def wrap(fn):
        return _Kernel(fn, options)

    return wrap


_BLAS = {"lock": threading.Lock(), "users": 0, "saved": {}, "libs": None}


def _blas_libs():
    if _BLAS["libs"] is None:
        from threadpoolctl import ThreadpoolController

        _BLAS["libs"] = ThreadpoolController().select(user_api="blas").lib_controllers
    return _BLAS["libs"]


def pin_blas_thread():
    """Set every BLAS library back to one thread if something changed it (another
    thread's own limit ending, say) while :func:`one_blas_thread` holds: called before
    each product. A library already at one thread — as in Dask's workers — is left
    untouched, so nothing is set there at all."""
    with _BLAS["lock"]:
        for lib in _blas_libs():
            n = lib.num_threads
            if n != 1:
                _BLAS["saved"].setdefault(id(lib), (lib, n))
                lib.set_num_threads(1)


@contextlib.contextmanager
def one_blas_thread():
    """BLAS at one thread while any caller is inside (threads of this process may enter
    at once: the first sets it, the last restores what it changed — BLAS alone).

    A float64 product's bits depend on how many threads BLAS splits it over (measured,
    OpenBLAS: 1 of 150 log-loss bootstraps differed by an ulp between 1 and 2 threads),
    so the pointwise sums run at one thread everywhere — in memory as in Dask's workers,
    which hold BLAS at one thread already — and give the same bits on any machine and
    any number of workers. The cost is small either way (docs/performance.md, "Tuning
    constants"): panels of 64 columns split poorly over threads. As with any thread limit (threadpoolctl's caveat), a BLAS call
    another thread of the process makes meanwhile runs at one thread too."""
    entered = False
    try:
        with _BLAS["lock"]:
            _BLAS["users"] += 1
            entered = True
        pin_blas_thread()
        yield
    finally:
        if entered:
            with _BLAS["lock"]:
                _BLAS["users"] -= 1
                if _BLAS["users"] == 0:
                    for lib, n in _BLAS["saved"].values():
                        lib.set_num_threads(n)
                    _BLAS["saved"].clear()
