"""The engine against real scheduler/worker processes, kills, and the store lock."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier

import bbc_dask as bd
from bbc_dask.exceptions import StoreLockedError

import run_study_cli
from _helpers import store_state, wait_until


def _forest_study(store, client):
    X, y = load_breast_cancer(return_X_y=True)
    grid = {"max_depth": [2, 4, 6, 8, None], "min_samples_leaf": [1, 3, 10, 30]}
    return bd.run_study(RandomForestClassifier(n_estimators=30, random_state=0, n_jobs=1), grid,
                        X, y, store=store, metric="roc_auc", n_splits=5, n_repeats=2,
                        random_state=0, client=client, progress=False, configs_per_task=2,
                        refit=False)


@pytest.mark.slow  # the default suite loses workers in test_reliability.py
def test_worker_killed_mid_wave(tmp_path, dask_processes, client):
    address, workers = dask_processes
    store = tmp_path / "disturbed.zarr"
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("study", _forest_study(store, address)))
    t.start()
    wait_until(lambda: (s := store_state(store)) is not None and (s == 1).sum() >= 20, 120, "first cells")
    os.killpg(workers[0].pid, signal.SIGKILL)  # a worker dies with tasks in flight
    t.join(timeout=300)
    assert not t.is_alive()
    study = out["study"]
    assert (study.state == 1).all()
    calm = _forest_study(tmp_path / "calm.zarr", client)
    np.testing.assert_array_equal(study.cube["prediction"].values, calm.cube["prediction"].values)




def _start(store, kind="trees"):
    return subprocess.Popen([sys.executable, run_study_cli.__file__, str(store), kind],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow  # make test keeps test_faults' kills; CI runs these every time
@pytest.mark.parametrize("kill_at", [0.15, 0.5, 0.85])
def test_kill_and_resume(tmp_path, client, kill_at):
    # late kills need a run whose last 15% outlasts a ledger flush (tasks are grouped)
    kind = "forest" if kill_at > 0.6 else "trees"
    ref = run_study_cli.run(tmp_path / "ref.zarr", kind, client=client)
    store = tmp_path / "killed.zarr"
    proc = _start(store, kind)
    total = ref.state.size
    try:
        wait_until(lambda: proc.poll() is not None
                   or ((s := store_state(store)) is not None and (s == 1).sum() >= kill_at * total),
                   120, "progress")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    st = store_state(store)
    unfinished = int((st != 1).sum())
    assert unfinished > 0, "the run finished before the kill; make the workload bigger"
    resumed = run_study_cli.run(store, kind, client=client)
    assert 0 < resumed.n_fits_ <= unfinished  # finished work is never refit
    assert (resumed.state == 1).all()
    np.testing.assert_array_equal(resumed.cube["prediction"].values, ref.cube["prediction"].values)


def test_second_run_is_refused_while_the_first_holds_the_lock(tmp_path, client):
    store = tmp_path / "busy.zarr"
    proc = _start(store)
    try:
        wait_until(lambda: store_state(store) is not None, 120, "store created")
        with pytest.raises(StoreLockedError, match=r"is in use by a running study \(pid \d+"):
            run_study_cli.run(store, "trees", client=client)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    resumed = run_study_cli.run(store, "trees", client=client)  # the lock died with its process
    assert (resumed.state == 1).all()
