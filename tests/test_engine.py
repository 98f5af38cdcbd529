"""The CVT engine on a real LocalCluster with real Zarr stores."""
import os

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_wine
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import PredefinedSplit, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd
from bbc_dask.exceptions import StudyError
from _helpers import rewrite_ledger

LR = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
LR_GRID = {"logisticregression__C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}


def _run(store, X, y, client, **kw):
    args = dict(store=store, metric="roc_auc", n_splits=5, n_repeats=2, random_state=0,
                client=client, progress=False, configs_per_task=4)
    args.update(kw)
    est = args.pop("estimator", LR)
    grid = args.pop("grid", LR_GRID)
    return bd.run_study(est, grid, X, y, **args)


def test_predictions_equal_cross_val_predict(tmp_path, cancer, client):
    X, y = cancer
    study = _run(tmp_path / "s.zarr", X, y, client)
    cube = study.cube
    assert cube["prediction"].dims == ("sample", "config", "repeat")
    assert (study.state == 1).all() and study.n_fits_ == 6 * 2 * 5
    folds = cube["fold"].values
    for c in (0, 3, 5):
        for r in range(2):
            est = clone(LR).set_params(logisticregression__C=LR_GRID["logisticregression__C"][c])
            want = cross_val_predict(est, X, y, cv=PredefinedSplit(folds[:, r]), method="decision_function")
            np.testing.assert_allclose(cube["prediction"].values[:, c, r], want, rtol=0, atol=1e-10)
    # stratified: every fold has both classes in the same proportion (within one sample)
    for r in range(2):
        for k in range(5):
            assert abs(y[folds[:, r] == k].mean() - y.mean()) < 0.02
    assert not np.array_equal(folds[:, 0], folds[:, 1])  # repeats use different partitions
    res = study.bbc(random_state=0, n_bootstraps=200)
    assert res.method == "bbc" and 0.9 < res.estimate <= res.naive_estimate + 1e-9
    assert study.best_index_ == res.selected_config
    assert study.best_params_ == study.params[study.best_index_]
    assert study.final_model.get_params()["logisticregression__C"] == study.best_params_["logisticregression__C"]
    cvr = study.cv_results_
    assert cvr["rank_test_score"][study.best_index_] == 1
    assert np.isclose(cvr["pooled_test_score"][study.best_index_], study.best_score_)
    assert "split9_test_score" in cvr and np.all(np.isfinite(cvr["mean_test_score"]))
    opened = bd.open_study(tmp_path / "s.zarr")
    np.testing.assert_array_equal(opened.bbc(random_state=0, n_bootstraps=200).bootstrap_distribution,
                                  res.bootstrap_distribution)
    assert opened.final_model.predict(X[:5]).tolist() == study.final_model.predict(X[:5]).tolist()


def test_fold_mean_selection_chooses_refits_and_estimates_one_winner(tmp_path, cancer, client):
    """run_study(selection="fold_mean"): the 2024 paper's code's winner — best mean fold
    score, BBC-F's — is best_index_, the model refit and Study.bbc's selected_config, read
    back from the store; another selection on the same store is another study."""
    X, y = cancer
    C = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0]
    kw = dict(grid={"logisticregression__C": C}, n_repeats=2)
    study = _run(tmp_path / "s.zarr", X[:80], y[:80], client, selection="fold_mean", **kw)
    pooled = _run(tmp_path / "p.zarr", X[:80], y[:80], client, refit=False, **kw)
    assert study.selection == "fold_mean" and pooled.selection == "pooled"
    f = study.bbc_f(n_bootstraps=100)
    best = study.best_index_
    assert best == f.selected_config != pooled.best_index_
    assert study.best_score_ == f.naive_estimate == pytest.approx(study.cv_results_["mean_test_score"][best])
    b = study.bbc(n_bootstraps=100)
    assert (b.selected_config, b.naive_estimate, b.selection) == (best, f.naive_estimate, "fold_mean")
    np.testing.assert_array_equal(b.bootstrap_distribution,
                                  pooled.bbc(n_bootstraps=100, random_state=study.seed).bootstrap_distribution)
    assert study.final_model.get_params()["logisticregression__C"] == C[best]
    assert study.cv_results_["rank_test_score"][best] == 1  # ranked by the study's criterion
    assert bd.open_study(tmp_path / "s.zarr").best_index_ == best
    assert study.bbc(n_bootstraps=100, selection="pooled").selected_config == pooled.best_index_
    with pytest.raises(bd.exceptions.StoreMismatchError, match=r"What differs: selection \(stored 'pooled', given 'fold_mean'\)"):
        _run(tmp_path / "p.zarr", X[:80], y[:80], client, refit=False, selection="fold_mean", **kw)
    with pytest.raises(ValueError, match=r"The 'selection' parameter of run_study must be one of"):
        _run(tmp_path / "q.zarr", X, y, client, selection="mean")


def test_fully_grown_trees_are_estimated(tmp_path, client):
    """Pure leaves give probabilities 0 and 1 only: AUC's scores, not labels by mistake
    (they were refused as labels, and such a study could not be estimated)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(100, 10, random_state=0)
    study = _run(tmp_path / "t.zarr", X, y, client, estimator=DecisionTreeClassifier(random_state=0),
                 grid={"criterion": ["gini", "entropy"]}, n_repeats=1)
    assert set(np.unique(study.cube["prediction"].values)) == {0.0, 1.0}
    res = study.bbc(n_bootstraps=50)
    assert 0.5 < res.estimate < 1 and study.bbc_f(n_bootstraps=50).estimate > 0.5


def test_rerun_resumes_without_fitting(tmp_path, cancer, client):
    X, y = cancer
    first = _run(tmp_path / "s.zarr", X, y, client, refit=False)
    again = _run(tmp_path / "s.zarr", X, y, client, refit=False)
    assert first.n_fits_ == 60 and again.n_fits_ == 0
    np.testing.assert_array_equal(first.cube["prediction"].values, again.cube["prediction"].values)
    # a finished study answers without a cluster: an unreachable scheduler is never asked
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        third = _run(tmp_path / "s.zarr", X, y, "tcp://127.0.0.1:1", refit=False)
    assert third.n_fits_ == 0 and third.best_index_ == first.best_index_
    # ... and starts one only when something is left: here the final model
    final = _run(tmp_path / "s.zarr", X, y, client, refit=True)
    assert final.n_fits_ == 0 and final.final_model is not None


def _snapshot(path):
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def test_bad_input_leaves_the_store_untouched(tmp_path, cancer, client):
    X, y = cancer
    store = tmp_path / "s.zarr"
    _run(store, X, y, client, refit=False)
    before = _snapshot(store)
    y_nan = y.astype(float)
    y_nan[3] = np.nan
    y_small = y.copy()
    y_small[:3] = 2  # a class with 3 members
    cases = [
        (dict(X=X[:-1]), r"'X' and 'y' of run_study must have the same number of samples\. Got 568 and 569"),
        (dict(y=y_nan), r"'y' parameter of run_study must not contain NaN"),
        (dict(y=y_small, metric="accuracy"), r"The class 2 of 'y' has 3 members, fewer than n_splits=5"),
        (dict(estimator=SVC(), grid={"C": [1.0]}, metric="roc_auc_ovr"), r"has no predict_proba, which the metric 'roc_auc_ovr' needs"),
        (dict(grid={}), r"holds a different study; .*candidates"),  # one configuration: the estimator as given
        (dict(grid=[]), r"'param_grid' parameter of run_study must be a grid that defines at least one configuration"),
        (dict(metric="accuracy"), r"The store .* holds a different study; .* metric \(stored 'roc_auc', given 'accuracy'\)"),
        (dict(random_state=1), r"holds a different study; .*seed"),
        (dict(X=X * 2), r"holds a different study; .*data\.X"),
        (dict(grid={"logisticregression__C": [1.0, 2.0]}), r"holds a different study; .*candidates"),
        (dict(n_splits=4), r"holds a different study; .*n_splits \(stored 5, given 4\)"),
        (dict(error_score=0.0), r"'error_score' parameter of run_study must be np\.nan or 'raise'"),
        (dict(metric="concordance_index"), r"'concordance_index' is not supported by run_study"),
    ]
    for kw, match in cases:
        X_, y_ = kw.pop("X", X), kw.pop("y", y)
        with pytest.raises(ValueError, match=match):
            _run(store, X_, y_, client, **kw)
        assert _snapshot(store) == before, kw
    a_file = tmp_path / "file.zarr"
    a_file.write_text("not a store")
    with pytest.raises(ValueError, match=r"'store' parameter of run_study must be a directory path .* is a file"):
        _run(a_file, X, y, client)
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("1,2\n")
    with pytest.raises(ValueError, match=r"exists and is not a bbc_dask study store; refusing to touch it"):
        _run(other, X, y, client)
    assert (other / "data.csv").read_text() == "1,2\n"


def test_overwrite_replaces_the_study(tmp_path, cancer, client):
    X, y = cancer
    store = tmp_path / "s.zarr"
    _run(store, X, y, client, refit=False)
    s2 = _run(store, X, y, client, refit=False, metric="accuracy", estimator=DecisionTreeClassifier(random_state=0),
              grid={"max_depth": [1, 2, 3]}, overwrite=True)
    assert s2.metric == "accuracy" and s2.cube["prediction"].shape == (569, 3, 2)
    assert set(np.unique(s2.cube["prediction"].values)) <= {0.0, 1.0}


class _Fails(DecisionTreeClassifier):
    def fit(self, X, y, sample_weight=None, check_input=True):
        if self.max_depth == 2:
            raise RuntimeError("depth 2 is cursed")
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


def test_error_score_nan_records_and_raise_stops(tmp_path, cancer, client):
    X, y = cancer
    est = _Fails(random_state=0)
    grid = {"max_depth": [1, 2, 3]}
    s = _run(tmp_path / "a.zarr", X, y, client, estimator=est, grid=grid, metric="accuracy", refit=False)
    assert (s.state[1] == 2).all() and (s.state[[0, 2]] == 1).all()
    assert np.isnan(s.cube["prediction"].values[:, 1]).all()
    assert "depth 2 is cursed" in s.errors[1]
    res = s.bbc(random_state=0, n_bootstraps=50)
    assert set(res.winners) <= {0, 2}
    _assert_chunked_equal(s, random_state=0, n_bootstraps=50)  # config 1 skipped in chunks too
    with pytest.raises(StudyError, match=r"Configuration 1 \(\{'max_depth': 2\}\) raised .*depth 2 is cursed"):
        _run(tmp_path / "b.zarr", X, y, client, estimator=est, grid=grid, metric="accuracy", error_score="raise")


def test_a_task_says_which_of_its_blocks_raised(cancer):
    """error_score="raise" in the second block of a task: the outcome names that block
    (the executor words the error with its configurations), and nothing is written."""
    from bbc_dask.engine import TaskScoring, _tasks
    from bbc_dask.engine._messages import Placement
    from bbc_dask.metrics import SAMPLE_BLOCK

    X, y = cancer
    folds = (np.arange(len(y)) % 3)[:, None]
    scoring = TaskScoring("accuracy", np.array([0, 1]), 1, 0, "raise", SAMPLE_BLOCK)
    out = _tasks.fit_write_blocks(_Fails(random_state=0), [[{"max_depth": 1}], [{"max_depth": 2}]],
                                  X, y, folds, scoring, None, 0, 0,
                                  [Placement(0, np.array([0])), Placement(1, np.array([0]))])
    assert out.raised_block == 1 and out.raised.index == 0 and not out.parts
    assert "depth 2 is cursed" in out.raised.text


def test_random_search_groups_regression_and_multiclass(tmp_path, client):
    from scipy.stats import loguniform

    X, y = load_diabetes(return_X_y=True)
    s = bd.run_study(Ridge(), None, X, y, param_distributions={"alpha": loguniform(1e-3, 1e2)}, n_iter=5,
                     store=tmp_path / "r.zarr", metric="neg_mean_squared_error", n_splits=4, random_state=3,
                     client=client, progress=False)
    assert len(s.params) == 5 and s.spec["search"] == "random"
    assert s.bbc(random_state=0, n_bootstraps=100).estimate < 0
    groups = np.arange(len(y)) // 10
    g = bd.run_study(Ridge(), {"alpha": [0.1, 1.0]}, X, y, groups=groups, store=tmp_path / "g.zarr",
                     metric="r2", n_splits=4, random_state=0, client=client, progress=False, refit=False)
    folds = g.cube["fold"].values[:, 0]
    for grp in np.unique(groups):
        assert np.unique(folds[groups == grp]).size == 1  # a group never straddles folds
    Xw, yw = load_wine(return_X_y=True)
    w = bd.run_study(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
                     {"logisticregression__C": [0.01, 1.0]}, Xw, yw, store=tmp_path / "w.zarr",
                     metric="roc_auc_ovr", n_splits=3, n_repeats=2, random_state=0, client=client,
                     progress=False, refit=False)
    assert w.cube["prediction"].dims == ("sample", "config", "repeat", "class")
    np.testing.assert_allclose(w.cube["prediction"].values.sum(axis=3), 1.0)
    assert 0.9 < w.bbc(random_state=0, n_bootstraps=100).estimate <= 1.0
    _assert_chunked_equal(w, random_state=0, n_bootstraps=100)
    # the 2024 paper's code's metrics: one-vs-one AUC, squared correlation
    for est, grid, (Xm, ym), metric in [
            (make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
             {"logisticregression__C": [0.01, 1.0]}, (Xw, yw), "roc_auc_ovo"),
            (Ridge(), {"alpha": [0.1, 100.0]}, load_diabetes(return_X_y=True), "r2_corr")]:
        m = bd.run_study(est, grid, Xm, ym, store=tmp_path / f"{metric}.zarr", metric=metric,
                         n_splits=3, n_repeats=2, random_state=0, client=client, progress=False,
                         refit=False)
        F, _ = bd.fold_score_matrix(m.cube["prediction"].values, ym, m.cube["fold"].values, metric=metric)
        np.testing.assert_array_equal(m.fold_scores(), F)  # the tasks' fold scores
        _assert_chunked_equal(m, random_state=0, n_bootstraps=100)


def _assert_chunked_equal(study, **kw):
    """Study.bbc/bbc_f read in configuration chunks by tasks equal the loaded cube's."""
    for method in ("bbc", "bbc_f"):
        mem = getattr(study, method)(chunked=False, **kw)
        got = getattr(study, method)(chunked=True, **kw)
        np.testing.assert_array_equal(got.bootstrap_distribution, mem.bootstrap_distribution)
        np.testing.assert_array_equal(got.winners, mem.winners)
        assert (got.selected_config, got.naive_estimate) == (mem.selected_config, mem.naive_estimate)


def test_study_chunked_estimates_and_bad_input(tmp_path, cancer, client, dask_config):

    X, y = cancer
    s = _run(tmp_path / "s.zarr", X, y, client, refit=False)
    dask_config({"bbc_dask.chunk-bytes": 1})  # one stored chunk (3 configs) per task
    _assert_chunked_equal(s, random_state=4, n_bootstraps=120)
    dask_config({"bbc_dask.in-memory-bytes": 1})  # the automatic choice takes the chunks
    np.testing.assert_array_equal(s.bbc(random_state=4, n_bootstraps=120).bootstrap_distribution,
                                  s.bbc(chunked=False, random_state=4, n_bootstraps=120).bootstrap_distribution)
    with pytest.raises(TypeError, match=r"Study.bbc\(chunked=True\) got an unexpected keyword argument 'bootstrap_indices'"):
        s.bbc(chunked=True, bootstrap_indices=np.zeros((2, len(y)), int))
    # the method called is the door (it said "of Study" before the doors)
    with pytest.raises(TypeError, match=r"The 'chunked' parameter of Study.bbc must be None, True or False"):
        s.bbc(chunked="yes")


def test_the_progress_bar_has_no_stray_line_and_its_wave_label_never_goes_back(tmp_path, client, capsys):
    """The bar is drawn with its total (a bar at 0 of an unknown total stayed behind as
    'wave 1: 0task [00:00, ?task/s]'); on a resume whose tasks span several waves the label
    shows the furthest wave reached."""
    import re

    from sklearn.datasets import load_breast_cancer
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_breast_cancer(return_X_y=True)
    kw = dict(metric="roc_auc", n_splits=4, random_state=0, client=client, progress=True,
              refit=False)
    store = tmp_path / "p.zarr"
    bd.run_study(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3]}, X, y,
                 store=store, **kw)
    err = capsys.readouterr().err
    assert "0task [" not in err and "/12 [" in err, err  # drawn with its total from the start
    from bbc_dask.cube import open_cube

    cube = open_cube(store, mode="r+")
    cube.bind_lock(lambda: None)
    st = cube.state()
    st[:, :, 1:] = 0  # waves 2-4 pending again: a resume runs them
    rewrite_ledger(cube, "state", st)  # as a killed run leaves it
    bd.run_study(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3]}, X, y,
                 store=store, **kw)
    waves = [int(w) for w in re.findall(r"wave (\d+)/4", capsys.readouterr().err)]
    assert waves and waves == sorted(waves), waves


def test_a_run_that_cannot_reach_its_cluster_leaves_a_new_store_absent(tmp_path, cancer):
    """A new store is made only once the cluster is reached (a resumed one is locked
    first, so that a watch reads its run as starting): one that cannot be leaves no
    trace."""
    import dask

    from bbc_dask.exceptions import SchedulerUnreachableError

    X, y = cancer
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), \
            pytest.raises(SchedulerUnreachableError):
        _run(tmp_path / "new.zarr", X, y, "tcp://127.0.0.1:1", refit=False)
    assert not (tmp_path / "new.zarr").exists()
