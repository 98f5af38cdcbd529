"""What a user waits for (issue 38): the phases of a run, timed; the pooled scores computed
along the waves, not in a pass of their own at the end, with the same bits."""
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
from bbc_dask.engine import _pooled
from bbc_dask.metrics import get_metric

GRID = {"C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}


def _run(store, data, client, estimator=None, **kw):
    X, y = data
    estimator = LogisticRegression(max_iter=500) if estimator is None else estimator
    return bd.run_study(estimator, GRID, X, y, store=str(store),
                        metric="roc_auc", n_splits=4, random_state=0, client=client,
                        progress=False, refit=True, **kw)


def test_a_run_says_where_its_time_went(tmp_path, cancer_standardised, client):
    """run_seconds_: the phases in the order they ran, each >= 0, adding up to no more
    than the call's wall time; the waves have the time (24 fits that sleep 0.1 s on 2
    workers: at least 1.2 s, against the refit's one fit); an opened study has none."""
    import time

    from _estimators import Sleepy

    t0 = time.perf_counter()
    s = _run(tmp_path / "s.zarr", cancer_standardised, client, Sleepy(nap=0.1, max_iter=500))
    wall = time.perf_counter() - t0
    phases = s.run_seconds_
    assert list(phases) == ["request", "plan", "connect", "store", "waves", "ledger", "pooled",
                            "winner", "close"]
    assert all(v >= 0 for v in phases.values())
    assert sum(phases.values()) <= wall
    assert phases["waves"] == max(phases.values())
    assert bd.open_study(str(tmp_path / "s.zarr")).run_seconds_ == {}
    again = _run(tmp_path / "s.zarr", cancer_standardised, client,  # nothing left to fit
                 Sleepy(nap=0.1, max_iter=500))
    assert "waves" not in again.run_seconds_ or again.run_seconds_["waves"] >= 0


@pytest.mark.parametrize("per_task", [1, 4])
def test_pooled_scores_along_the_waves_are_the_pass_bits(tmp_path, cancer_standardised, client,
                                                         monkeypatch, per_task):
    """Without dropping, every pooled score is computed by a task submitted among the
    waves' tasks, as soon as its window of configurations is complete (the pass at the
    end finds nothing to do); the values are the bits the pass computes."""
    submitted, passes = [], []
    along = _pooled.PooledAlong.submit
    monkeypatch.setattr(_pooled.PooledAlong, "submit",
                        lambda self, block: submitted.append(block.configs) or along(self, block))
    real_pass = _pooled.pooled_pass

    def counting_pass(cube, *a):
        passes.append(int(np.isnan(cube.pooled()).any(axis=1).sum()))
        return real_pass(cube, *a)

    monkeypatch.setattr("bbc_dask.engine._waves.pooled_pass", counting_pass)
    s = _run(tmp_path / "s.zarr", cancer_standardised, client, configs_per_task=per_task)
    assert passes == [0]  # every score was in before the pass
    assert sorted(np.concatenate(submitted).tolist()) == list(range(len(GRID["C"])))
    got = s._cube.pooled().copy()
    assert np.isfinite(got).all()
    # the same store scored by the pass alone
    s._cube.bind_lock(lambda: None)
    s._cube.record_pooled(np.arange(len(GRID["C"])), np.full_like(got, np.nan))
    real_pass(s._cube, client, get_metric("roc_auc"), SimpleNamespace(pos_code=1))
    np.testing.assert_array_equal(s._cube.pooled(), got)


def test_a_pooled_task_lost_along_the_waves_is_scored_by_the_pass(tmp_path, cancer_standardised,
                                                                  client, monkeypatch):
    """A pooled task cancelled (its worker lost) leaves its configurations to the pass at
    the end: the study's pooled scores are complete and equal an undisturbed run's."""
    ref = _run(tmp_path / "ref.zarr", cancer_standardised, client, configs_per_task=2)
    along = _pooled.PooledAlong.submit
    cancelled = []

    def cancelling(self, block):
        fut = along(self, block)
        if not cancelled:
            cancelled.append(block.configs)
            client.cancel([fut])
        return fut

    monkeypatch.setattr(_pooled.PooledAlong, "submit", cancelling)
    s = _run(tmp_path / "s.zarr", cancer_standardised, client, configs_per_task=2)
    assert cancelled
    np.testing.assert_array_equal(s._cube.pooled(), ref._cube.pooled())
    assert s.best_index_ == ref.best_index_


def test_a_ledger_batch_that_fails_takes_its_pooled_scores_with_it(tmp_path, cancer_standardised,
                                                                   client, monkeypatch, dask_config):
    """A ledger batch that fails half-way (here: after the first task's part of it, as a
    full disk or a Ctrl-C could) must not leave a pooled score for configurations whose
    cells are not all recorded; the resume computes every score again, equal to an
    undisturbed run's."""
    from bbc_dask.cube import DONE
    from bbc_dask.cube._schema import Cube

    ref = _run(tmp_path / "ref.zarr", cancer_standardised, client, configs_per_task=2)
    real, real_take = Cube.record, _pooled.PooledAlong.take
    taken = []

    def take(self):
        out = real_take(self)
        taken.append(len(out))
        return out

    def failing(self, results):
        if taken and taken[-1] and results:  # the batch that carries pooled scores
            real(self, results[:1])
            raise OSError("the disk filled up")
        return real(self, results)

    # one batch at the end: the cells and the pooled scores of the whole run in it
    dask_config({"bbc_dask.ledger-interval": 1e9})
    monkeypatch.setattr(_pooled.PooledAlong, "take", take)
    monkeypatch.setattr(Cube, "record", failing)
    with pytest.raises(OSError, match="disk filled"):
        _run(tmp_path / "s.zarr", cancer_standardised, client, configs_per_task=2)
    assert any(taken)
    monkeypatch.undo()
    cube = bd.open_study(str(tmp_path / "s.zarr"))._cube
    done = np.all(cube.state() == DONE, axis=(1, 2))
    assert not done.all()
    assert not np.isfinite(cube.pooled()[~done]).any()
    s = _run(tmp_path / "s.zarr", cancer_standardised, client, configs_per_task=2)
    np.testing.assert_array_equal(s._cube.pooled(), ref._cube.pooled())


@pytest.mark.parametrize("profile", [False, True])
def test_local_workers_run_without_the_task_profiler_unless_asked(profile):
    """make_client's local workers run without distributed's statistical profiler (it
    sampled every fit, 4-8% of its time); ``profile=True`` keeps it."""
    import dask

    with bd.make_client("local", n_workers=1, dashboard_address=":0", profile=profile) as c:
        seen = c.run(lambda: dask.config.get("distributed.worker.profile.enabled"))
    assert list(seen.values()) == [profile]
    assert dask.config.get("distributed.worker.profile.enabled") is True  # ours untouched
