"""BBCD-CV: the dropping test against a plain loop, and in the engine."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import bbc_dask as bd
from bbc_dask._doors import entered

import run_study_cli
from _helpers import store_state


def plain_dropping(pred, y, avail, idx, alpha):
    """The 2018 paper's §4.1 test, one bootstrap and one configuration at a time."""
    n, c, r = pred.shape

    def score(rows, j):
        vals = []
        for rep in range(r):
            keep = rows[avail[rows, rep]]
            vals.append(roc_auc_score(y[keep], pred[keep, j, rep]))
        return np.mean(vals)

    allrows = np.arange(n)
    full = [score(allrows, j) for j in range(c)]
    best = int(np.argmax(full))
    worse = np.zeros(c)
    for b in range(idx.shape[0]):
        s = [score(idx[b], j) for j in range(c)]
        worse += np.array(s) < s[best]
    p = worse / idx.shape[0]
    drop = p > alpha
    drop[best] = False
    return best, p, drop


@pytest.mark.parametrize("n_repeats", [1, 2])
def test_dropping_equals_plain_loop(n_repeats):
    rng = np.random.default_rng(0)
    n, c = 80, 12
    y = rng.integers(0, 2, n)
    strength = np.linspace(0.0, 2.0, c)
    pred = rng.normal(size=(n, c, n_repeats)) + y[:, None, None] * strength[None, :, None]
    avail = rng.random((n, n_repeats)) < 0.7  # predictions collected so far
    pred[~avail[:, None, :].repeat(c, axis=1)] = np.nan
    idx = rng.integers(0, n, size=(60, n))
    res = bd.dropping_test(pred, y, avail, metric="roc_auc", alpha=0.9, bootstrap_indices=idx)
    best, p, drop = plain_dropping(pred, y, avail, idx, 0.9)
    assert res.best == best and best >= c // 2
    np.testing.assert_array_equal(res.p_hat, p)
    np.testing.assert_array_equal(res.drop, drop)
    assert drop.sum() >= 3 and not drop[best]


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy"])
def test_bootstraps_draw_the_available_rows_as_many_as_there_are(metric):
    """The 2018 paper's test (and its Matlab code) bootstraps the rows with a prediction:
    n_available draws among them. So with one repeat the test on a cube with rows not
    yet predicted is the test on the available rows alone, seed for seed."""
    rng = np.random.default_rng(3)
    n, c = 300, 15
    y = rng.integers(0, 2, n)
    pred = rng.normal(size=(n, c)) + y[:, None] * np.linspace(0, 1.5, c)
    if metric == "accuracy":
        pred = (pred > 0.75).astype(float)
    avail = rng.random(n) < 0.3
    pred[~avail] = np.nan
    kw = dict(metric=metric, alpha=0.9, n_bootstraps=300, random_state=7)
    got = bd.dropping_test(pred, y, avail, **kw)
    alone = bd.dropping_test(pred[avail], y[avail], np.ones(avail.sum(), bool), **kw)
    np.testing.assert_array_equal(got.p_hat, alone.p_hat)
    np.testing.assert_array_equal(got.drop, alone.drop)
    assert got.best == alone.best and got.n_redrawn == alone.n_redrawn and got.drop.sum() >= 3


@pytest.mark.parametrize("sample_block", [None, 64])
def test_frame_draws_put_every_draw_on_its_members(sample_block):
    """Each bootstrap of a Frame draws exactly M of its M members, nothing elsewhere,
    uniformly — over one sample block or several (Multinomial totals per block, then
    positions among the block's members)."""
    from bbc_dask._random import as_seed_sequence
    from bbc_dask.stats._bootstrap import Frame, draw_counts

    rng = np.random.default_rng(4)
    mask = rng.random(500) < 0.35
    mask[:64] = False  # a sample block with no member
    frame = Frame.of(mask)
    counts, _ = draw_counts(as_seed_sequence(1), "dropping", 0, 4000, 500, sample_block=sample_block,
                            frame=frame)
    assert (counts[:, ~mask] == 0).all() and (counts.sum(axis=1) == mask.sum()).all()
    per_member = counts[:, mask].mean(axis=0)  # each member is drawn once per bootstrap on average
    assert abs(per_member.mean() - 1) < 1e-12 and np.abs(per_member - 1).max() < 0.1
    assert Frame.of(np.ones(10, bool)) is None
    with pytest.raises(ValueError, match=r"The 'available' parameter of dropping_test must be a mask "
                                         r"with some sample available .* Got no sample available"):
        with entered("dropping_test"):  # a private helper: the door is its public caller's
            Frame.of(np.zeros(10, bool))


def test_best_is_never_dropped_and_ties_survive():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    col = rng.normal(size=200) + y
    pred = np.stack([col, col, rng.normal(size=200)], axis=1)  # 0 and 1 identical
    res = bd.dropping_test(pred, y, np.ones(200, bool), metric="roc_auc", alpha=0.51, random_state=0)
    assert res.best == 0 and res.p_hat[0] == 0 and res.p_hat[1] == 0
    assert list(res.drop) == [False, False, True]


def test_dropping_bad_input():
    with pytest.raises(ValueError, match=r"The 'alpha' parameter of Dropping must be a float in the range \(0\.5, 1\.0\)\. Got 0\.3"):
        bd.Dropping(alpha=0.3)
    with pytest.raises(ValueError, match=r"The 'alpha' parameter of Dropping .* Got 1\.0"):
        bd.Dropping(alpha=1.0)
    with pytest.raises(ValueError, match=r"The 'n_bootstraps' parameter of Dropping must be an int in the range \[1, inf\)\. Got 0"):
        bd.Dropping(n_bootstraps=0)
    with pytest.raises(ValueError, match=r"The 'min_predictions' parameter of Dropping must be an int .* Got -5"):
        bd.Dropping(min_predictions=-5)




def test_nothing_is_tested_before_min_predictions(tmp_path, client):
    from sklearn.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(100, 10, random_state=0)
    grid = {"max_depth": [1, 2, 3, 5, 8], "min_samples_leaf": [1, 5, 10, 20]}
    s = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "s.zarr",
                     metric="roc_auc", n_splits=10, random_state=0, client=client, progress=False,
                     dropping=bd.Dropping(alpha=0.9, n_bootstraps=300, min_predictions=50))
    log = s.dropping_log
    # 10 predictions per wave: waves 0..3 hold 10..40 < 50 predictions, wave 4 holds 50.
    assert [e["tested"] for e in log[:4]] == [False] * 4
    assert all("min_predictions=50" in e["reason"] for e in log[:4])
    assert log[4]["tested"]
    assert all(d["wave"] >= 4 for d in s.dropped)
    st = s.state
    for d in s.dropped:  # finished cells stay; the rest is marked dropped (3), not failed
        assert (st[d["config"], 0, : d["wave"] + 1] == 1).all()
        assert (st[d["config"], 0, d["wave"] + 1 :] == 3).all()
        assert d["p_hat"] > 0.9
    trained, full = s.models_trained
    assert trained == full - int((st == 3).sum())
    res = s.bbc(random_state=0, n_bootstraps=200)
    assert res.method == "bbcd" and res.selected_config not in {d["config"] for d in s.dropped}
    # what the estimate is conditioned on: the survivors; or, with include_incomplete,
    # every configuration, each on the samples it predicted (the 2018 paper's §3)
    dropped = {d["config"] for d in s.dropped}
    assert dropped and set(res.configs.tolist()) == set(range(20)) - dropped
    inc = s.bbc(random_state=0, n_bootstraps=200, include_incomplete=True)
    assert inc.configs.tolist() == list(range(20)) and inc.method == "bbcd"
    assert (inc.selected_config, inc.naive_estimate) == (res.selected_config, res.naive_estimate)
    assert set(inc.winners.tolist()) & dropped  # the dropped compete in some bootstraps
    pred = s.cube["prediction"].values.copy()
    folds = s.cube["fold"].values
    for r in range(folds.shape[1]):
        pred[:, :, r][st[:, r, folds[:, r]].T != 1] = np.nan
    want = bd.bbc(pred, y, metric="roc_auc", random_state=0, n_bootstraps=200, include_incomplete=True)
    np.testing.assert_array_equal(inc.bootstrap_distribution, want.bootstrap_distribution)
    np.testing.assert_array_equal(inc.winners, want.winners)
    # by configuration blocks on the cluster: the same numbers, the dropped included
    assert s.bbc(random_state=0, n_bootstraps=200, include_incomplete=True, chunked=True) == inc


def test_the_last_wave_is_tested_and_bbcd_estimates_the_survivors(tmp_path, client):
    """As the 2018 paper's Matlab code: the dropping test runs after the last fold wave
    too, and BBCD-CV's BBC runs on the configurations that survive it — those dropped
    then have every cell trained, but are not candidates. Dropping(test_last_wave=False)
    stops testing before the last wave (and is another study on the same store)."""
    from sklearn.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(200, 10, flip_y=0.1, random_state=1)
    grid = {"max_depth": [1, 2, 3, 4, 6, 8], "min_samples_leaf": [1, 3, 10, 30]}
    kw = dict(metric="roc_auc", n_splits=5, random_state=0, client=client, progress=False)
    # 200 predictions: the test runs after the last wave alone
    drop = bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=200)
    s = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "s.zarr",
                     dropping=drop, **kw)
    log = s.dropping_log
    assert [e["wave"] for e in log] == [0, 1, 2, 3, 4] and [e["tested"] for e in log] == [False] * 4 + [True]
    last = [d["config"] for d in s.dropped if d["wave"] == 4]
    assert last, s.dropped  # configurations lost the last test with every cell trained
    assert all((s.state[c] == 1).all() for c in last)
    survivors = set(s.candidates().tolist())
    assert survivors == set(s.complete_configs().tolist()) - set(last)
    res = s.bbc(n_bootstraps=200)
    assert res.method == "bbcd" and set(res.winners.tolist()) <= survivors
    assert s.best_index_ in survivors and s.bbc_f(n_bootstraps=100).selected_config in survivors
    with pytest.raises(bd.exceptions.StoreMismatchError, match=r"dropping\.test_last_wave \(stored True, given False\)"):
        bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "s.zarr",
                     dropping=bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=200,
                                          test_last_wave=False), **kw)
    before = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "b.zarr",
                          dropping=bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=200,
                                               test_last_wave=False), **kw)
    assert [e["wave"] for e in before.dropping_log] == [0, 1, 2, 3] and not before.dropped
    assert set(before.candidates().tolist()) == survivors | set(last)


def test_fold_mean_study_never_drops_its_own_best_and_old_stores_resume(tmp_path, client):
    """With selection="fold_mean" the test's θo is the study's best mean fold score over
    the waves so far, which is never dropped (the pooled best is then an ordinary
    configuration). A store from before test_last_wave and selection existed (its spec
    without them) resumes with Dropping(test_last_wave=False), and says so otherwise."""
    import zarr
    from sklearn.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(200, 10, flip_y=0.1, random_state=1)
    grid = {"max_depth": [1, 2, 3, 4, 6, 8], "min_samples_leaf": [1, 3, 10, 30]}
    kw = dict(metric="roc_auc", n_splits=5, random_state=0, client=client, progress=False, refit=False)
    s = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "f.zarr",
                     selection="fold_mean", dropping=bd.Dropping(alpha=0.6, n_bootstraps=300,
                                                                 min_predictions=80), **kw)
    fs, gone = s.cube["fold_score"].values, {}
    tested = [e for e in s.dropping_log if e["tested"]]
    assert tested and s.dropped
    for e in tested:
        k = e["wave"]
        active = [c for c in range(24) if gone.get(c, k) >= k]
        means = fs[active][:, :, : k + 1].reshape(len(active), -1).mean(axis=1)
        assert e["best"] == active[int(np.argmax(means))] and e["best"] not in e["dropped"]
        gone.update({c: k for c in e["dropped"]})
    assert s.best_index_ == s.bbc_f(n_bootstraps=50).selected_config
    assert s.cv_results_["rank_test_score"][s.best_index_] == 1
    # a store of before: its spec without test_last_wave and selection
    old = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "o.zarr",
                       dropping=bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=80,
                                            test_last_wave=False), **kw)
    g = zarr.open_group(str(tmp_path / "o.zarr"), mode="r+")
    meta = dict(g.attrs["bbc_dask"])
    meta["spec"] = dict(meta["spec"], dropping={k: v for k, v in meta["spec"]["dropping"].items()
                                                if k != "test_last_wave"})
    meta.pop("attributes_digest")  # stores of before had none
    g.attrs["bbc_dask"] = meta
    with pytest.raises(bd.exceptions.StoreMismatchError,
                       match=r"test_last_wave \(stored False, given True\).*resume it with Dropping\(test_last_wave=False\)"):
        bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "o.zarr",
                     dropping=bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=80), **kw)
    again = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "o.zarr",
                         dropping=bd.Dropping(alpha=0.6, n_bootstraps=300, min_predictions=80,
                                              test_last_wave=False), **kw)
    assert again.n_fits_ == 0 and again.selection == "pooled" and again.dropped == old.dropped


def test_untested_waves_run_as_one_stage_with_the_same_results(tmp_path, client, monkeypatch):
    """Waves after which no test can run (too few predictions) have no barrier between
    them; the study equals one that waits after every wave."""
    from sklearn.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    from bbc_dask.engine import _waves

    folds = np.repeat(np.arange(10), 10)[:, None]
    stages = _waves._stages(folds, 10, bd.Dropping(min_predictions=50))
    assert stages == [[0, 1, 2, 3, 4], [5], [6], [7], [8], [9]]
    assert _waves._stages(folds, 10, bd.Dropping(min_predictions=1)) == [[k] for k in range(10)]

    X, y = make_classification(100, 10, random_state=0)
    grid = {"max_depth": [1, 2, 3, 5, 8], "min_samples_leaf": [1, 5, 10, 20]}
    out = []
    for name in ("merged", "wave-by-wave"):
        if name == "wave-by-wave":
            monkeypatch.setattr(_waves, "_stages", lambda f, n, d: [[k] for k in range(n)])
        out.append(bd.run_study(
            DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / f"{name}.zarr",
            metric="roc_auc", n_splits=10, random_state=0, client=client, progress=False,
            refit=False, dropping=bd.Dropping(alpha=0.9, n_bootstraps=300, min_predictions=50)))
    a, b = out
    assert a.dropped and a.dropping_log == b.dropping_log
    np.testing.assert_array_equal(a.state, b.state)
    np.testing.assert_array_equal(a.cube["prediction"].values, b.cube["prediction"].values)


def test_single_configuration_warns(tmp_path, client):
    from sklearn.datasets import load_breast_cancer
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_breast_cancer(return_X_y=True)
    with pytest.warns(UserWarning, match=r"dropping has no effect in run_study with a single configuration"):
        bd.run_study(DecisionTreeClassifier(random_state=0), {"max_depth": [2]}, X, y,
                     store=tmp_path / "s.zarr", metric="roc_auc", n_splits=3, client=client,
                     progress=False, dropping=True, refit=False)


@pytest.mark.slow  # make test keeps test_faults' BBCD kill; CI runs these every time
@pytest.mark.parametrize("kill_at", [0.3, 0.6])
def test_kill_and_resume_reproduces_decisions(tmp_path, client, kill_at):
    ref = run_study_cli.run(tmp_path / "ref.zarr", "trees", dropping=True, client=client)
    assert ref.dropped, "the workload must drop something for this test to mean anything"
    store = tmp_path / "killed.zarr"
    proc = subprocess.Popen(
        [sys.executable, run_study_cli.__file__, str(store), "trees", "dropping"],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    total = ref.state.size
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            st = store_state(store)
            if st is not None and ((st == 1) | (st == 3)).sum() >= kill_at * total:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    st = store_state(store)
    unfinished = int((st == 0).sum())
    assert unfinished > 0, "the run finished before the kill; make the workload bigger"
    resumed = run_study_cli.run(store, "trees", dropping=True, client=client)
    assert resumed.n_fits_ <= unfinished
    np.testing.assert_array_equal(resumed.cube["prediction"].values, ref.cube["prediction"].values)
    np.testing.assert_array_equal(resumed.state, ref.state)
    assert resumed.dropped == ref.dropped
    assert [e for e in resumed.dropping_log] == [e for e in ref.dropping_log]


def _studies_alike(tmp_path, client, monkeypatch, metric, alpha, path, off):
    """A BBCD study run twice — its dropping test by ``path`` (a function of the chunked
    dispatcher, spied on), then with ``off`` (the dispatcher's switch to it) made false,
    over configuration blocks: the test ran by ``path`` every time, and the two studies
    dropped the same configurations at the same waves."""
    from sklearn.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    from bbc_dask.chunked import _lazy_dropping as lazy_dropping

    calls, real = [], getattr(lazy_dropping, path)
    monkeypatch.setattr(lazy_dropping, path, lambda *a: calls.append(1) or real(*a))
    X, y = make_classification(600, 10, random_state=0)
    grid = {"max_depth": [1, 2, 3, 5, 8], "min_samples_leaf": [1, 5, 10, 20]}
    out = []
    for name in ("chunked", "configurations"):
        if name == "configurations":
            monkeypatch.setattr(lazy_dropping, off, lambda *a: False)
        out.append(bd.run_study(
            DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / f"{name}.zarr",
            metric=metric, n_splits=5, random_state=0, client=client, progress=False,
            refit=False, dropping=bd.Dropping(alpha=alpha, n_bootstraps=200, min_predictions=50)))
    a, b = out
    tested = sum(e["tested"] for e in a.dropping_log)
    assert tested >= 3 and len(calls) == tested  # the first run only, every test
    assert a.dropped and a.dropping_log == b.dropping_log
    np.testing.assert_array_equal(a.state, b.state)


def test_a_study_tests_a_pointwise_metric_by_sample_blocks(tmp_path, client, monkeypatch):
    """Between waves, a study's dropping test of a pointwise metric over more than one
    sample block reads runs of sample blocks of the store (a task's memory does not grow
    with N); its decisions, and so the study, equal those of the test over
    configuration blocks holding every sample."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)  # 600 samples: 5 blocks
    _studies_alike(tmp_path, client, monkeypatch, "accuracy", 0.8, "_dropping_by_samples",
                   "_by_samples")


def test_a_study_tests_a_ranking_metric_by_pairs_of_tiles(tmp_path, client, monkeypatch, dask_config):
    """Between waves, a study's dropping test of AUC beyond RANK_SAMPLES goes by pairs of
    sample tiles (600 samples in tiles of 128); its decisions, and so the study, equal
    those of the test over configuration blocks holding every sample."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    dask_config({"bbc_dask.rank-tile": 128, "bbc_dask.rank-samples": 256})
    _studies_alike(tmp_path, client, monkeypatch, "roc_auc", 0.99, "_dropping_by_tiles",
                   "_by_tiles")
