"""Subprocess entry point of the fault-injection matrix: run a small study and SIGKILL this
process (driver and its in-process workers at once) at a chosen internal call.

Usage: python fault_run.py STORE KIND POINT N [overwrite]
KIND: "cvt" (7 configurations, 3 folds x 2 repeats, final model refit), "bbcd" (the same
with dropping after every wave), "nested" (nested CV: 5 configurations, 3 outer x 3 inner
folds x 2 repeats) or "repair" (``verify_store(STORE, repair=True)`` of a damaged store). POINT: where to die (see POINTS), at its N-th call (1-based);
POINT "count" dies nowhere and prints the number of calls of every point as JSON.
"""
import collections
import json
import os
import signal
import sys

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd

CALLS = collections.Counter()


def study(store, kind, client, overwrite=False):
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:240, :6], y[:240]
    if kind == "nested":
        return bd.nested_cv(LogisticRegression(max_iter=500), {"C": list(np.logspace(-3, 2, 5))},
                            X, y, store=store, metric="roc_auc", n_outer=3, n_inner=3,
                            n_repeats=2, random_state=1, client=client, progress=False,
                            configs_per_task=2, overwrite=overwrite)
    drop = bd.Dropping(alpha=0.6, n_bootstraps=100, min_predictions=30) if kind == "bbcd" else None
    return bd.run_study(LogisticRegression(max_iter=500), {"C": list(np.logspace(-3, 2, 7))}, X, y,
                        store=store, metric="roc_auc", n_splits=3, n_repeats=2, random_state=1,
                        client=client, progress=False, configs_per_task=3, dropping=drop,
                        overwrite=overwrite)


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def _wrap(owner, name, point, target, after=False):
    original = getattr(owner, name)
    is_async = name == "_set_selection"

    def hit():
        CALLS[point] += 1
        return target is not None and target == (point, CALLS[point])

    if is_async:
        async def wrapped(*a, **kw):
            if hit() and not after:
                _die()
            return await original(*a, **kw)
    else:
        def wrapped(*a, **kw):
            kill = hit()
            if kill and not after:
                _die()
            out = original(*a, **kw)
            if kill:
                _die()
            return out
    setattr(owner, name, wrapped)


def install(target, store):
    """Every point a kill can hit: each write of any array (ledger, creation, and the
    tasks' chunks: the workers run in this process), each attribute write, each file the
    location writes or removes (creation marker, model file), each entry a wipe deletes."""
    import shutil

    import zarr.core.array as za

    from bbc_dask.cube import _direct, _location, _schema

    _wrap(za.AsyncArray, "_set_selection", "array_write", target)
    _wrap(_direct.DirectChunks, "put", "array_write", target)  # the tasks' chunks
    _wrap(_schema.Cube, "set_meta", "attrs", target)
    _wrap(_schema.Cube, "record_decision", "decision", target)
    _wrap(_location.StoreLocation, "write_bytes", "file_write_after", target, after=True)
    _wrap(_location.StoreLocation, "remove", "file_remove", target)
    rmtree = shutil.rmtree
    store = os.path.abspath(store)

    def wipe_entry(path, *a, **kw):  # the store's entries only, not Dask's scratch space
        if os.path.abspath(str(path)).startswith(store + os.sep):
            CALLS["wipe_entry"] += 1
            if target == ("wipe_entry", CALLS["wipe_entry"]):
                _die()
        return rmtree(path, *a, **kw)

    shutil.rmtree = wipe_entry


def main(argv):
    """``argv``: STORE KIND POINT N [overwrite] (see the module doc)."""
    from distributed import Client, LocalCluster

    store, kind, point, n = argv[:4]
    overwrite = len(argv) > 4 and argv[4] == "overwrite"
    install(None if point == "count" else (point, int(n)), store)
    if kind == "repair":  # `verify --repair` of a damaged study, killed mid-way
        bd.verify_store(store, repair=True)
    else:
        with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                          dashboard_address=":0") as cl, Client(cl) as c:
            study(store, kind, c, overwrite=overwrite)
    if point == "count":
        print(json.dumps(dict(CALLS)))
    else:
        print("NOT KILLED")


if __name__ == "__main__":
    main(sys.argv[1:])
