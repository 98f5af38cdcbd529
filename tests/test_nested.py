"""Nested cross-validation on the engine (bd.nested_cv): equal to a plain scikit-learn
nested loop on the same folds, its folds as the protocol says, resumable after a SIGKILL
with nothing finished recomputed, and bad input refused before anything is written."""
import json
import os
import shutil

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import PredefinedSplit, cross_val_predict

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError, StoreMismatchError, StudyNotReadyError

GRID = {"C": [0.003, 0.03, 0.3, 3.0]}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(110, 6, n_informative=3, flip_y=0.15, random_state=3)
    return X, y


def _sklearn_nested(est, grid, X, y, res, method, score):
    """The plain nested loop on the result's folds: per outer fold, cross_val_predict of
    every configuration on PredefinedSplit(inner folds), the best pooled score (first on
    ties), refit on the outer training set, scored on the outer test set."""
    from sklearn.model_selection import ParameterGrid

    params = list(ParameterGrid(grid))
    selected = np.empty(res.selected.shape, dtype=int)
    scores = np.empty(res.outer_scores.shape)
    for r in range(res.n_repeats):
        for o in range(res.n_outer):
            train = np.flatnonzero(res.outer_fold[:, r] != o)
            test = np.flatnonzero(res.outer_fold[:, r] == o)
            ps = PredefinedSplit(res.inner_fold[train, r, o])
            inner = [score(y[train], cross_val_predict(clone(est).set_params(**p), X[train],
                                                        y[train], cv=ps, method=method))
                     for p in params]
            selected[r, o] = int(np.argmax(inner))
            model = clone(est).set_params(**params[selected[r, o]]).fit(X[train], y[train])
            scores[r, o] = score(y[test], getattr(model, method)(X[test]))
    return selected, scores


@pytest.mark.parametrize("metric,method,score", [
    ("roc_auc", "decision_function", roc_auc_score),
    ("accuracy", "predict", accuracy_score)])
def test_nested_cv_equals_a_plain_scikit_learn_nested_loop(tmp_path, client, data, metric, method, score):
    X, y = data
    est = LogisticRegression(max_iter=1000)
    res = bd.nested_cv(est, GRID, X, y, store=tmp_path / "n.zarr", metric=metric, n_outer=3,
                       n_inner=4, n_repeats=2, random_state=7, client=client, progress=False)
    selected, scores = _sklearn_nested(est, GRID, X, y, res, method, score)
    np.testing.assert_array_equal(res.selected, selected)
    np.testing.assert_allclose(res.outer_scores, scores, rtol=0, atol=1e-9)
    assert res.estimate == pytest.approx(scores.mean(), abs=1e-12)
    assert res.params == [{"C": c} for c in GRID["C"]]
    assert res.models_trained == 4 * 4 * 3 * 2 + 3 * 2
    means = scores.mean(axis=1)
    assert res.ci[0] < means.mean() < res.ci[1]
    assert res.fit_seconds > 0 and res.wall_seconds > 0
    # the store reads back to the same result
    again = bd.open_nested(tmp_path / "n.zarr")
    np.testing.assert_array_equal(again.outer_scores, res.outer_scores)
    np.testing.assert_array_equal(again.inner_fold, res.inner_fold)


@pytest.mark.parametrize("case", ["multiclass log loss", "regression"])
def test_class_probabilities_and_regression_equal_the_plain_loop(tmp_path, client, case):
    from sklearn.datasets import load_iris, make_regression
    from sklearn.linear_model import Ridge
    from sklearn.metrics import log_loss, mean_squared_error

    if case == "regression":
        X, y = make_regression(90, 5, noise=10, random_state=0)
        est, grid, metric, method = Ridge(), {"alpha": [0.1, 10, 1000]}, "neg_mean_squared_error", "predict"
        score = lambda a, b: -mean_squared_error(a, b)  # noqa: E731
    else:
        X, y = load_iris(return_X_y=True)
        est, grid, metric, method = (LogisticRegression(max_iter=500), {"C": [0.01, 0.1, 1]},
                                     "neg_log_loss", "predict_proba")
        score = lambda a, b: -log_loss(a, b)  # noqa: E731
    res = bd.nested_cv(est, grid, X, y, store=tmp_path / "n.zarr", metric=metric, n_outer=3,
                       n_inner=3, random_state=0, client=client, progress=False)
    selected, scores = _sklearn_nested(est, grid, X, y, res, method, score)
    np.testing.assert_array_equal(res.selected, selected)
    np.testing.assert_allclose(res.outer_scores, scores, rtol=0, atol=1e-9)


def test_with_one_inner_fold_fewer_the_inner_folds_are_the_other_outer_folds(tmp_path, client, data):
    """The paper's Algorithm 3: the inner CV of outer fold o runs on the other outer folds."""
    X, y = data
    res = bd.nested_cv(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=tmp_path / "n.zarr",
                       metric="accuracy", n_outer=4, n_inner=3, n_repeats=2, random_state=1,
                       client=client, progress=False)
    for r in range(2):
        for o in range(4):
            test = res.outer_fold[:, r] == o
            ids = res.outer_fold[~test, r]
            np.testing.assert_array_equal(res.inner_fold[~test, r, o], ids - (ids > o))
            assert (res.inner_fold[test, r, o] == -1).all()
    selected, scores = _sklearn_nested(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, res,
                                       "predict", accuracy_score)
    np.testing.assert_array_equal(res.selected, selected)
    np.testing.assert_allclose(res.outer_scores, scores, rtol=0, atol=1e-9)


def test_folds_are_nested_stratified_and_grouped(tmp_path, client):
    X, y = make_classification(96, 5, weights=[0.7], random_state=0)
    groups = np.arange(96) // 3  # 32 groups of 3
    res = bd.nested_cv(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=tmp_path / "g.zarr",
                       metric="accuracy", n_outer=3, n_inner=3, groups=groups, random_state=0,
                       client=client, progress=False)
    plain = bd.nested_cv(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=tmp_path / "s.zarr",
                         metric="accuracy", n_outer=3, n_inner=3, random_state=0,
                         client=client, progress=False)
    for r_ in (res, plain):
        assert r_.outer_fold.shape == (96, 1) and r_.inner_fold.shape == (96, 1, 3)
        assert r_.ci is None
        for o in range(3):
            test = r_.outer_fold[:, 0] == o
            inner = r_.inner_fold[:, 0, o]
            assert (inner[test] == -1).all()  # no outer test sample in any inner fold
            assert set(inner[~test]) == {0, 1, 2}
    for o in range(3):  # grouped: no group split by an outer or an inner fold
        for f in (res.outer_fold[:, 0], res.inner_fold[:, 0, o]):
            assert all(len(set(f[groups == g])) == 1 for g in np.unique(groups))
    for o in range(3):  # stratified: every inner fold holds both classes in proportion
        inner = plain.inner_fold[:, 0, o]
        for k in range(3):
            share = y[inner == k].mean()
            assert abs(share - y[inner >= 0].mean()) < 0.1


def _fault(store, point, n):
    """``fault_run.py STORE nested POINT N`` in a process of its own (``_zygote``)."""
    from _zygote import fault_run

    return fault_run([store, "nested", point, n])


def _killed_then_resumed(tmp_path, client, point, frac):
    ref_store = tmp_path / "ref.zarr"
    p = _fault(ref_store, "count", 0)
    assert p.returncode == 0, p.stderr[-2000:]
    calls = json.loads(p.stdout.strip().splitlines()[-1])
    ref = bd.open_nested(ref_store)
    store = tmp_path / "k.zarr"
    n = max(1, round(frac * calls[point]))
    while True:
        p = _fault(store, point, n)
        if p.returncode == -9 or n == 1 or "NOT KILLED" not in p.stdout:
            break
        # fewer writes than in the reference run (outer results that arrive together are
        # recorded by one write; ledger batches depend on timing): kill at an earlier one
        shutil.rmtree(store)
        n = n * 3 // 4
    assert p.returncode == -9, f"not killed at {point} #{n}: {p.stdout[-500:]} {p.stderr[-2000:]}"
    from bbc_dask.cube import open_cube

    try:
        cube = open_cube(store)
        before = int(np.isin(cube.state(), (1, 2)).sum()), len(cube.meta.get("outer", []))
    except Exception:  # killed before the store existed
        before = 0, 0
    from fault_run import study

    got = study(store, "nested", client)
    runs = open_cube(store).meta["runs"]
    # nothing the store kept is fitted again: inner cells nor outer refits
    assert runs[-1].get("fits", 0) == 5 * 3 * 6 - before[0]
    assert runs[-1].get("outer_fits", 0) == 6 - before[1]
    for key in ("outer_scores", "selected", "outer_fold", "inner_fold"):
        np.testing.assert_array_equal(getattr(got, key), getattr(ref, key), err_msg=key)
    assert bd.verify_store(store)[0].ok
    return got


# slow (9 s, as the kills below): CI runs them every time; the default suite's kill tests
# (test_faults) cover the engine's store writes that nested CV shares
@pytest.mark.slow
def test_a_kill_in_the_outer_stage_resumes_identical(tmp_path, client):
    """Killed at the outer stage's second result write (the inner CVs done, some outer
    refits recorded): the resume fits only the outer folds not recorded."""
    _killed_then_resumed(tmp_path, client, "attrs", 0.75)


@pytest.mark.slow
@pytest.mark.parametrize("point,frac", [("array_write", 0.3), ("array_write", 0.8),
                                        ("attrs", 0.5), ("attrs", 1.0)])
def test_a_kill_anywhere_resumes_identical(tmp_path, client, point, frac):
    _killed_then_resumed(tmp_path, client, point, frac)


@pytest.mark.parametrize("kw,name", [
    ({"n_inner": 1}, "n_inner"),
    ({"n_outer": 1}, "n_outer"),
    ({"n_outer": 40}, "n_outer"),  # more outer folds than the smallest class has members
    ({"n_inner": 30}, "n_inner"),  # more inner folds than an outer training set allows
    ({"n_repeats": 0}, "n_repeats"),
    ({"metric": "nope"}, "metric"),
    ({"selection": "best"}, "selection"),
    ({"confidence_level": 1.5}, "confidence_level"),
])
def test_bad_input_is_one_line_naming_the_argument_and_writes_nothing(tmp_path, kw, name):
    X, y = make_classification(60, 4, weights=[0.5], random_state=0)  # 30 per class
    args = dict(store=tmp_path / "bad.zarr", metric="accuracy", n_outer=3, n_inner=3,
                random_state=0, client="tcp://127.0.0.1:1", progress=False) | kw
    with pytest.raises(InvalidParameterError) as e:
        bd.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, **args)
    msg = str(e.value)
    assert "\n" not in msg and f"'{name}'" in msg and "nested_cv" in msg, msg
    assert not (tmp_path / "bad.zarr").exists()


def test_a_nested_store_is_not_a_study_and_vice_versa(tmp_path, client, data):
    X, y = data
    store = tmp_path / "n.zarr"
    bd.nested_cv(LogisticRegression(), {"C": [1.0, 2.0]}, X, y, store=store, metric="accuracy",
                 n_outer=2, n_inner=2, random_state=0, client=client, progress=False)
    with pytest.raises(StoreMismatchError, match="nested cross-validation.*open_nested"):
        bd.open_study(store)
    with pytest.raises(StoreMismatchError, match="different study.*n_splits"):
        bd.nested_cv(LogisticRegression(), {"C": [1.0, 2.0]}, X, y, store=store,
                     metric="accuracy", n_outer=2, n_inner=3, random_state=0, client=client,
                     progress=False)
    study = tmp_path / "s.zarr"
    bd.run_study(LogisticRegression(), {"C": [1.0]}, X, y, store=study, metric="accuracy",
                 n_splits=2, random_state=0, client=client, progress=False)
    with pytest.raises(StoreMismatchError, match="open_study"):
        bd.open_nested(study)


def test_an_unfinished_nested_store_says_so(tmp_path, client, data):
    from bbc_dask.cube import open_cube

    X, y = data
    store = tmp_path / "n.zarr"
    bd.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, store=store, metric="accuracy",
                 n_outer=2, n_inner=2, random_state=0, client=client, progress=False)
    cube = open_cube(store, mode="r+")
    cube.bind_lock(lambda: None)
    cube.set_meta(outer=cube.meta["outer"][:1])
    with pytest.raises(StudyNotReadyError, match="1 of 2 outer folds"):
        bd.open_nested(store)


# slow: four command-line processes (~12 s); the study file's protocol is resolved in the
# default suite below, and nested_cv itself is tested there
@pytest.mark.slow
def test_a_study_file_runs_nested_cv_and_the_command_line_shows_it(tmp_path, client):
    import yaml

    from test_cli import cli

    spec = {"name": "nested", "data": {"sklearn": "breast_cancer"},
            "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier",
                      "params": {"random_state": 0}, "grid": {"max_depth": [1, 2, 3]}}],
            "cv": {"repeats": 2}, "protocol": {"kind": "nested", "n_outer": 3, "n_inner": 2},
            "metric": "roc_auc", "random_state": 3, "store": "n.zarr"}
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    out = cli("run", f, "--scheduler", client.scheduler.address, "--no-progress").stdout
    assert "nested CV (3 outer folds x 2 repeat(s))" in out and "models trained: 42" in out
    got = json.loads(cli("estimate", tmp_path / "n.zarr", "--json").stdout)
    res = bd.open_nested(tmp_path / "n.zarr")
    assert got["estimate"] == res.estimate and np.shape(got["outer_scores"]) == (2, 3)
    assert "inner cells 36 of 36 run; outer folds 6 of 6" in cli("status", tmp_path / "n.zarr").stdout
    cli("report", tmp_path / "n.zarr", "--out", tmp_path / "rep")
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Nested cross-validation" in page and (tmp_path / "rep" / "outer_scores.png").exists()
    # the study file's own keys and model, not the command line's wrapping pipeline's
    assert "max_depth=" in page and "DecisionTreeClassifier" in page and "model__" not in page


@pytest.mark.parametrize("protocol,extra,key", [
    ({"kind": "nested", "n_outer": 1}, {}, "protocol.n_outer"),
    ({"kind": "nested", "outer": 3}, {}, "protocol.outer"),
    ("nestd", {}, "protocol"),
    ("nested", {"dropping": True}, "dropping"),
    ("nested", {"cv": {"splitter": "KFold"}}, "protocol"),
])
def test_a_study_files_bad_protocol_names_its_key(protocol, extra, key):
    from bbc_dask.cli._studyfile import resolve_study_file
    from bbc_dask.exceptions import StudyFileError

    raw = {"data": {"sklearn": "breast_cancer"},
           "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "grid": {"max_depth": [1]}}],
           "protocol": protocol} | extra
    with pytest.raises(StudyFileError, match=rf"^{key.replace('.', '[.]')}\b|'{key}'|{key}:") as e:
        resolve_study_file(raw)
    assert "\n" not in str(e.value)


def test_protocol_nested_alone_is_the_papers_10_and_9():
    from bbc_dask.cli._studyfile import resolve_study_file

    raw = {"data": {"sklearn": "breast_cancer"}, "protocol": "nested",
           "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "grid": {"max_depth": [1]}}]}
    assert resolve_study_file(raw)["protocol"] == {"kind": "nested", "n_outer": 10, "n_inner": 9}


def test_configurations_that_fail_on_some_outer_folds_leave_the_others_to_select(tmp_path, client):
    """Configuration i fails wherever sample i is trained on: each outer fold still has the
    configuration whose sample it tests, so each selects that one (the study's check that
    every configuration failed somewhere does not apply per outer fold)."""
    from _estimators import FailsWhenTrainedOn

    from bbc_dask.exceptions import AllConfigurationsFailedError

    X, y = make_classification(60, 4, random_state=0)
    X = X.copy()
    X[[0, 1], 0] = [1000, 1001]  # samples 0 and 1, marked for the estimator
    probe = bd.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, store=tmp_path / "p.zarr",
                         metric="accuracy", n_outer=2, n_inner=2, random_state=4,
                         client=client, progress=False)
    a, b = probe.outer_fold[0, 0], probe.outer_fold[1, 0]
    assert a != b  # seed 4 puts samples 0 and 1 in different outer folds
    res = bd.nested_cv(FailsWhenTrainedOn(), {"bad": [0, 1]}, X, y, store=tmp_path / "f.zarr",
                       metric="accuracy", n_outer=2, n_inner=2, random_state=4, client=client,
                       progress=False)
    assert res.selected[0, a] == 0 and res.selected[0, b] == 1  # the one that never saw its sample
    assert np.isfinite(res.outer_scores).all()
    with pytest.raises(AllConfigurationsFailedError, match="inner CV of outer fold"):
        bd.nested_cv(FailsWhenTrainedOn(), {"bad": [0]}, X, y, store=tmp_path / "g.zarr",
                     metric="accuracy", n_outer=2, n_inner=2, random_state=4, client=client,
                     progress=False)


def test_too_many_inner_folds_for_the_groups_leaves_an_old_store_as_it_was(tmp_path, client):
    X, y = make_classification(60, 4, random_state=0)
    groups = np.repeat(np.arange(4), 15)
    store = tmp_path / "n.zarr"
    kw = dict(store=store, metric="accuracy", n_outer=2, groups=groups, random_state=0,
              client=client, progress=False)
    done = bd.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, n_inner=2, **kw)
    before = sorted(os.listdir(store))
    with pytest.raises(InvalidParameterError, match="'n_inner' parameter of nested_cv.*groups"):
        bd.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, n_inner=3, overwrite=True, **kw)
    assert sorted(os.listdir(store)) == before
    assert bd.open_nested(store).estimate == done.estimate
    fresh = tmp_path / "fresh.zarr"
    with pytest.raises(InvalidParameterError, match="'n_inner'"):
        bd.nested_cv(LogisticRegression(), {"C": [1.0]}, X, y, n_inner=3, **(kw | {"store": fresh}))
    assert not fresh.exists()
