"""Small helpers shared by the tests and tests/conftest.py: waiting for a condition, running a
study in a thread, and reading a study's ledger while another process may be writing it."""
import threading
import time

import zarr


def wait_until(pred, timeout, what, every=0.05):
    """Poll ``pred()`` every ``every`` seconds until it is true; TimeoutError(what) after
    ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(every)
    raise TimeoutError(what)


def store_state(store):
    """The ``state`` array of the study store at ``store``, or None while it cannot be read
    (not created yet, or being created)."""
    try:
        state = zarr.open_group(str(store), mode="r")["state"][...]
    except Exception:
        return None
    # a creation writes the ledger's template after the array: until then its cells hold
    # the fill value (MISSING, -1), which a count of "cells not pending" would take for
    # saved ones (a test then signalled a run still creating its store)
    return None if (state < 0).any() else state


def rewrite_ledger(cube, name, values):
    """Write the whole ledger array ``name`` as the study writes it (its checksums
    recorded with it): the ledger a killed run leaves, replayed by a test."""
    import numpy as np

    from bbc_dask.cube._ledger_check import LedgerEdit

    values = np.asarray(values)
    edit = LedgerEdit(cube)
    step = edit.step
    for i in range(-(-values.shape[0] // step)):
        for r in range(values.shape[1] if name != "error" else 1):
            part = values[i * step:(i + 1) * step]
            edit.replace(name, i, r, part if name == "error" else part[:, r])
    edit.commit()


def run_in_thread(**kw):
    """``bd.run_study(**kw)`` in a daemon thread; returns the thread and a dict whose
    ``"study"`` will be the Study, or the exception the run raised."""
    import bbc_dask as bd

    out = {}

    def run():
        try:
            out["study"] = bd.run_study(**kw)
        except Exception as e:  # noqa: BLE001 - reported by the test
            out["study"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out
