"""A study on a cluster whose workers change while it runs: workers that join are given
its tasks, a worker retired gracefully loses nothing and refits nothing recorded, and an
adaptive cluster (``cluster.adapt``) is asked for workers while a stage has work and for
fewer once BBCD has dropped configurations. Real `dask scheduler` and `dask worker`
processes started from the command line (and a LocalCluster for ``adapt``, which needs a
cluster manager); the estimators wait at file gates, so every step acts on a run that is
surely still going, however fast or slow the machine."""
import os
import threading

import numpy as np
import pytest

import _estimators
import bbc_dask as bd
from _helpers import run_in_thread, store_state, wait_until
from conftest import dask_processes_cluster, kill_sessions, start_dask_worker
from bbc_dask.engine import _waves

TESTS = os.path.dirname(os.path.abspath(__file__))
#: the command-line workers import the test estimators from here
ENV = {"PYTHONPATH": os.pathsep.join(p for p in (TESTS, os.environ.get("PYTHONPATH")) if p)}


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.7 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _study(tmp_path, n_configs):
    """A gate directory and the arguments of a study of ``n_configs`` values of C x 5
    folds, one configuration per block."""
    X, y = _data()
    gate = tmp_path / "gate"
    gate.mkdir()
    return gate, dict(param_grid={"C": list(np.logspace(-2, 2, n_configs))}, X=X, y=y,
                      metric="roc_auc", n_splits=5, random_state=0, progress=False,
                      refit=False, configs_per_task=1)


def _done(store):
    """Cells recorded done in ``store`` (0 while it cannot be read)."""
    state = store_state(store)
    return 0 if state is None else int((state == 1).sum())


def _finished(t, out):
    t.join(300)
    study = out.get("study")
    assert not t.is_alive(), "the run did not finish"
    assert not isinstance(study, Exception), repr(study)
    return study


@pytest.mark.slow  # 11 s: make test keeps its margin; CI runs it every time
def test_workers_that_join_a_running_study_are_given_its_tasks(tmp_path):
    """One worker, held inside a fit; two `dask worker` processes join (one with the
    package's preload): the study goes on on them alone while the first is held, and
    ends equal to a study on a fixed cluster."""
    gate, kw = _study(tmp_path, 20)
    with dask_processes_cluster(tmp_path, n_workers=1, env=ENV) as (address, _, _sec):
        joined = []
        try:
            with bd.make_client("address", address=address) as c:
                (first,) = c.run(os.getpid).values()
                (gate / f"hold-{first}").touch()
                t, out = run_in_thread(estimator=_estimators.HeldIn(nap=0.02, gate=str(gate)),
                                        store=tmp_path / "s.zarr", client=c, **kw)
                wait_until((gate / f"blocked-{first}").exists, 120, "the first worker held")
                joined = [start_dask_worker(address, "late-0", env=ENV),
                          start_dask_worker(address, "late-1", env=ENV,
                                            preload=["bbc_dask.preload"])]
                c.wait_for_workers(3, timeout=120)
                late = set(c.run(os.getpid).values()) - {first}
                # every fit from here on is the late workers' while the first is held: both
                # are given tasks, and their cells are recorded
                def by_late():
                    return {pid: n for pid, n in _estimators.fits_by_process(gate).items()
                            if pid in late}

                wait_until(lambda: len(by_late()) == 2 and sum(by_late().values()) >= 40, 240,
                           "fits by both workers that joined")
                wait_until(lambda: _done(tmp_path / "s.zarr") >= 30, 120,
                           "their cells recorded while the first worker is held")
                (gate / f"hold-{first}").unlink()
                study = _finished(t, out)
        finally:
            kill_sessions(joined)
    assert (study.state == 1).all()
    calm = bd.run_study(_estimators.HeldIn(nap=0.0, gate=str(gate)), store=tmp_path / "calm.zarr",
                        client=None, **kw)
    np.testing.assert_array_equal(study.cube["prediction"].values, calm.cube["prediction"].values)
    np.testing.assert_array_equal(study.cube["fold_score"].values, calm.cube["fold_score"].values)


@pytest.mark.slow  # 9 s: make test keeps its margin; CI runs it every time
def test_a_worker_retired_while_a_study_runs_loses_and_refits_nothing(tmp_path, dask_config):
    """Three `dask worker` processes; once one of them has fitted, it is held inside a
    fit and retired gracefully (``Client.retire_workers``): distributed runs that task
    again elsewhere, so the held fit is the only one done twice — no cell recorded is
    lost or fitted again — and the retired worker writes nothing after it left (the
    store equals a calm study's bit for bit)."""
    # a task is one configuration: the retired worker's held task holds one fit
    dask_config({"bbc_dask.target-task-seconds": 0.0, "bbc_dask.driver-share": 1e9})
    gate, kw = _study(tmp_path, 16)
    cells = 16 * 5
    with dask_processes_cluster(tmp_path, n_workers=3, env=ENV) as (address, _, _sec):
        with bd.make_client("address", address=address) as c:
            pids = c.run(os.getpid)
            leaving, pid = sorted(pids.items())[0]
            t, out = run_in_thread(estimator=_estimators.HeldIn(nap=0.05, gate=str(gate)),
                                    store=tmp_path / "s.zarr", client=c, **kw)
            wait_until(lambda: _estimators.fits_by_process(gate).get(pid, 0) >= 3, 120,
                       "fits by the worker to retire")
            (gate / f"hold-{pid}").touch()
            wait_until((gate / f"blocked-{pid}").exists, 120, "the worker held in a fit")
            before = _estimators.fits_by_process(gate).get(pid, 0)
            assert _done(tmp_path / "s.zarr") < cells  # still going
            retire = threading.Thread(target=c.retire_workers, args=([leaving],), daemon=True)
            retire.start()
            wait_until(lambda: leaving not in c.scheduler_info()["workers"], 120,
                       "the worker retired")
            (gate / f"hold-{pid}").unlink()  # its held fit ends, on a worker that left
            study = _finished(t, out)
            retire.join(60)
    assert (study.state == 1).all()
    fits = _estimators.fits_by_process(gate)
    assert fits[pid] == before  # nothing fitted on the retired worker after it was held
    assert sum(fits.values()) == cells + 1  # the held fit alone was done twice
    calm = bd.run_study(_estimators.HeldIn(nap=0.0, gate=str(tmp_path)), store=tmp_path / "calm.zarr",
                        client=None, **kw)
    np.testing.assert_array_equal(study.cube["prediction"].values, calm.cube["prediction"].values)
    assert bd.verify_store(tmp_path / "s.zarr")[0].ok


@pytest.mark.slow  # 16 s: make test keeps its margin; CI runs it every time
def test_an_adaptive_cluster_grows_with_a_stage_and_is_asked_for_less_after_bbcd_drops(tmp_path, monkeypatch):
    """``cluster.adapt(minimum=1, maximum=3)`` on the package's local cluster, a BBCD
    study of 4 good and 36 poor configurations: while the first stage (waves 0 and 1,
    before the first test) is held with its work queued, the scheduler asks for more
    workers and they join; after the test dropped the poor ones, the work it sees — and
    so the workers it asks for — is less; the study equals the same study on a fixed
    cluster."""
    X, y = _data(400, seed=1)
    gate = tmp_path / "gate"
    gate.mkdir()
    grid = {"noise": [0.0, 0.01, 0.02, 0.03] + [4.0 + i for i in range(36)]}
    kw = dict(param_grid=grid, X=X, y=y, metric="roc_auc", n_splits=10, random_state=0,
              progress=False, refit=False, configs_per_task=1,
              dropping=bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=80))
    decided = []
    decide = _waves._decide

    def deciding(cube, client, *args, **kwargs):
        active = decide(cube, client, *args, **kwargs)
        if active.sum() < 40 and not decided:  # the first test that dropped
            decided.append(int(active.sum()))
            (gate / "hold-all").touch()  # the next wave waits, its tasks submitted
        return active

    monkeypatch.setattr(_waves, "_decide", deciding)

    def target(dask_scheduler):
        return dask_scheduler.adaptive_target()

    with bd.make_client(n_workers=1, dashboard_address=":0") as c:
        c.cluster.adapt(minimum=1, maximum=3, interval="200ms", wait_count=2)
        t, out = run_in_thread(estimator=_estimators.HeldIn(nap=0.2, gate=str(gate)),
                                store=tmp_path / "s.zarr", client=c, **kw)
        # once the first tasks are timed, the stage's work is queued: 80 fits of 0.2 s,
        # 16 s for one worker, more than adapt's 5 s target duration
        wait_until(lambda: sum(_estimators.fits_by_process(gate).values()) >= 6, 120,
                   "the first fits")
        (gate / "hold-all").touch()
        wait_until(lambda: any(n.startswith("blocked-") for n in os.listdir(gate)), 120,
                   "the first stage held")
        # 74 fits of 0.2 s left: the scheduler asks for 3 workers or more
        wait_until(lambda: c.run_on_scheduler(target) >= 3, 120, "a larger target")
        wait_until(lambda: len(c.scheduler_info()["workers"]) >= 2, 180, "workers added")
        first = max(c.run_on_scheduler(target) for _ in range(5))
        held_at = os.path.getmtime(gate / "hold-all")
        (gate / "hold-all").unlink()
        wait_until(lambda: decided and (gate / "hold-all").exists(), 240, "the first test")
        assert decided[0] <= 10, decided  # the poor configurations were dropped
        wait_until(lambda: any(n.startswith("blocked-") and os.path.getmtime(gate / n) > held_at
                               for n in os.listdir(gate)), 120, "a later wave held")
        later = max(c.run_on_scheduler(target) for _ in range(5))
        (gate / "hold-all").unlink()
        study = _finished(t, out)
    assert later < first, (first, later)
    monkeypatch.setattr(_waves, "_decide", decide)
    fixed = bd.run_study(_estimators.HeldIn(nap=0.0, gate=str(tmp_path)), store=tmp_path / "fixed.zarr",
                         client=None, **kw)
    assert study.dropping_log == fixed.dropping_log
    np.testing.assert_array_equal(study.cube["prediction"].values, fixed.cube["prediction"].values)
    np.testing.assert_array_equal(study.state, fixed.state)
