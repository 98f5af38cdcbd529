"""An any-time study: the estimate a study gives while a run fills it, read by
``bbc-dask status`` without disturbing the run."""
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
from sklearn.datasets import make_classification

import bbc_dask as bd
import _estimators
from _cli import run_cli
from _helpers import run_in_thread

CLI = [os.path.join(os.path.dirname(sys.executable), "bbc-dask")]


def start_held_run(gate, store, client):
    """A study of 3 configurations x 4 folds x 2 repeats run in a thread on ``client``, one
    fold of one configuration held per repeat while ``gate/hold`` exists (created here;
    HeldUntestedOn); returns the thread and a dict whose ``"study"`` will be the Study, or
    the exception the run raised."""
    X, y = make_classification(120, 5, random_state=0)
    X[0, 0] = 1000  # marks sample 0 (HeldUntestedOn)
    gate.mkdir()
    (gate / "hold").touch()
    return run_in_thread(
        estimator=_estimators.HeldUntestedOn(gate=str(gate)), param_grid={"C": [0.1, 1.0, 10.0]},
        X=X, y=y, store=store, metric="roc_auc", n_splits=4, n_repeats=2, random_state=0,
        client=client, progress=False, refit=False, configs_per_task=1)


def test_status_watch_shows_the_live_estimate_of_a_running_study(tmp_path, make_local_client):
    """A run held with one fold of one configuration pending per repeat: ``status --watch``
    (JSON lines) shows BBC on the incomplete CV while the run holds the store, then, once
    the run goes on, the complete CV's estimate, equal to the library's, and stops; the
    run finishes as it would unwatched."""
    gate, store = tmp_path / "gate", tmp_path / "s.zarr"
    with make_local_client(n_workers=2, threads_per_worker=2) as client:
        t, out = start_held_run(gate, store, client)
        watch = None
        try:
            deadline = time.time() + 300
            while not (gate / "blocked").exists() and time.time() < deadline:
                time.sleep(0.05)
            assert (gate / "blocked").exists(), out
            watch = subprocess.Popen(CLI + ["status", str(store), "--watch", "0.2", "--json",
                                            "--bootstraps", "200"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = []  # read as they come: the pipe never holds a backlog of old states
            reader = threading.Thread(target=lambda: lines.extend(
                json.loads(x) for x in iter(watch.stdout.readline, "")), daemon=True)
            reader.start()
            # a line of the watch computed on a state the library reads too (each cell goes
            # from pending to done only: as many done cells, the same cells); the held run
            # settles, so this ends, but its ledger may lag the fits: read again until
            # they agree
            settle = time.time() + 300
            held = None
            while held is None:
                assert time.time() < settle, "no line of the watch matched the store"
                study = bd.open_study(store)
                before = study.state
                if not study.incomplete_estimable():
                    time.sleep(0.2)
                    continue
                want = study.bbc(include_incomplete=True, n_bootstraps=200)
                if not np.array_equal(before, bd.open_study(store).state):
                    continue
                time.sleep(0.5)  # a line or two more of the watch
                assert watch.poll() is None, watch.stderr.read()
                same = [x for x in list(lines) if x["done"] == int((before == 1).sum())]
                held = same[-1] if same else None
            assert held["running"] and held["pending"] > 0, held
            assert held["estimate_basis"] == "incomplete CV", held
            assert held["estimate"]["estimate"] == want.estimate
            assert held["estimate"]["confidence_interval"] == list(want.confidence_interval)
            assert held["estimate"]["n_configs"] == 3
            (gate / "hold").unlink()
            watch.wait(timeout=300)
            reader.join(60)
            err = watch.stderr.read()
        finally:
            (gate / "hold").unlink(missing_ok=True)
            if watch is not None and watch.poll() is None:
                watch.kill()
            t.join(300)
    assert watch.returncode == 0, err
    assert not isinstance(out["study"], Exception), repr(out["study"])
    last = lines[-1]
    assert last["pending"] == 0 and last["estimate_basis"] == "complete CV"
    final = bd.open_study(store)
    want = final.bbc(n_bootstraps=200)
    assert last["estimate"]["estimate"] == want.estimate and last["estimate"]["method"] == "bbc"
    assert bd.verify_store(store)[0].ok  # the watched run's store is whole
    assert np.array_equal(final.state, np.ones_like(final.state))  # every cell done


def test_the_ledger_records_finished_fits_while_the_others_run(tmp_path, make_local_client,
                                                              dask_config):
    """Results that finish within ``bbc_dask.ledger-interval`` of the last ledger write are
    written once the interval has passed, not held until another task finishes: with one
    fold of one configuration held per repeat, the store shows every other cell done while
    the run holds (a live estimate does not lag the fits by the longest task)."""
    from _helpers import store_state, wait_until

    # long enough that the last results of the unheld fits arrive within it of a write
    dask_config({"bbc_dask.ledger-interval": 2})
    # one block per task: a task that grouped the held block with its fold's other
    # configurations (as the engine does once fits prove short, a busy driver's floor)
    # would hold their cells too
    dask_config({"bbc_dask.target-task-seconds": 0, "bbc_dask.driver-task-seconds": 0,
                 "bbc_dask.driver-tasks-measured": 10**9})
    gate, store = tmp_path / "gate", tmp_path / "s.zarr"
    with make_local_client(n_workers=2, threads_per_worker=2) as client:
        t, out = start_held_run(gate, store, client)
        try:
            def all_but_held():
                state = store_state(store)
                return state is not None and int((state == 1).sum()) == state.size - 2
            wait_until(all_but_held, 300, "the unheld cells in the ledger while the run holds")
            assert t.is_alive() and (gate / "hold").exists()
        finally:
            (gate / "hold").unlink(missing_ok=True)
            t.join(300)
    assert not isinstance(out["study"], Exception), repr(out["study"])
    assert np.array_equal(out["study"].state, np.ones_like(out["study"].state))


def test_status_estimates_a_finished_study_once(tmp_path, client):
    """``status`` on a finished study: its BBC on the complete CV (``--watch`` prints
    once and stops: nothing is pending); ``--no-estimate`` leaves it out."""
    X, y = make_classification(80, 4, random_state=1)
    store = tmp_path / "f.zarr"
    study = bd.run_study(_estimates_lr(), {"C": [0.1, 1.0]}, X, y, store=store, metric="roc_auc",
                         n_splits=3, random_state=0, client=client, progress=False, refit=False)
    p = run_cli("status", store, "--watch", "0.2", "--bootstraps", "100")
    assert p.returncode == 0, p.stderr
    want = study.bbc(n_bootstraps=100)
    assert p.stdout.count("not running;") == 1 and "on the complete CV" in p.stdout
    assert f"BBC {want.estimate:.4f}" in p.stdout, p.stdout
    p = run_cli("status", store, "--no-estimate")
    assert p.returncode == 0 and "estimate" not in p.stdout, p.stdout


def _estimates_lr():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=300)


def test_status_of_a_study_whose_every_configuration_failed(tmp_path, client):
    """No estimate, said so, and ``--watch`` stops: nothing pending can complete one."""
    import pytest
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(60, 4, random_state=2)
    store = tmp_path / "failed.zarr"
    with pytest.raises(Exception):
        bd.run_study(LogisticRegression(), {"C": [-1.0, -2.0]}, X, y, store=store,
                     metric="roc_auc", n_splits=3, random_state=0, client=client,
                     progress=False, refit=False)
    p = run_cli("status", store, "--watch", "0.2")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("not running;") == 1 and "every configuration failed" in p.stdout


def test_a_copy_of_a_study_has_estimates_of_its_own(tmp_path, client):
    """``said_unfinished`` set on a copy leaves the original's warnings; the delegated
    methods pickle by their name, and a pickled study estimates as the original."""
    import copy
    import pickle

    X, y = make_classification(60, 4, random_state=3)
    study = bd.run_study(_estimates_lr(), {"C": [0.1, 1.0]}, X, y, store=tmp_path / "c.zarr",
                         metric="roc_auc", n_splits=3, random_state=0, client=client,
                         progress=False, refit=False)
    other = copy.copy(study)
    other.said_unfinished = True
    assert not study.said_unfinished and other.said_unfinished
    assert pickle.loads(pickle.dumps(bd.Study.bbc)) is bd.Study.bbc
    again = pickle.loads(pickle.dumps(study))
    assert again.bbc(n_bootstraps=50).estimate == study.bbc(n_bootstraps=50).estimate


def test_the_estimate_line_counts_dropped_and_failed_cells_as_settled():
    """A finished BBCD study whose dropped cells were never run is 100% settled, and the
    line says how many cells were done."""
    from bbc_dask.cli._tables import estimate_line

    sim = bd.simulate.auc_matrix(60, 4, random_state=0)
    res = bd.bbc(sim.predictions, sim.y, metric="roc_auc", n_bootstraps=20, random_state=0)
    res = dataclasses.replace(res, configs=np.arange(4))  # as a study's estimate holds them
    st = {"cells": 40, "done": 25, "failed": 3, "dropped": 12, "pending": 0}
    line = estimate_line(res, "complete CV", st)
    assert "40 of 40 cells settled, 100%: 25 done" in line, line
    st = {"cells": 40, "done": 30, "failed": 0, "dropped": 0, "pending": 10}
    assert "30 of 40 cells settled, 75%)" in estimate_line(res, "incomplete CV", st)


def test_the_estimate_line_says_an_interval_of_one_point_is_too_early():
    """Early in a run, a configuration with a few predictions ranked perfectly wins every
    bootstrap: BBC then says 1.0 [1.0, 1.0], which the line says is too early to read."""
    from bbc_dask.cli._tables import estimate_line

    sim = bd.simulate.auc_matrix(60, 4, random_state=0)
    res = bd.bbc(sim.predictions, sim.y, metric="roc_auc", n_bootstraps=20, random_state=0)
    st = {"cells": 40, "done": 4, "failed": 0, "dropped": 0, "pending": 36}
    one = dataclasses.replace(res, configs=np.arange(4),
                              confidence_interval=bd.ConfidenceInterval(1.0, 1.0))
    assert "(width 0.0000; one point: every bootstrap scored alike, too few predictions yet)" \
        in estimate_line(one, "incomplete CV", st)
    two = dataclasses.replace(one, confidence_interval=bd.ConfidenceInterval(0.8, 0.9))
    assert "one point" not in estimate_line(two, "incomplete CV", st)
