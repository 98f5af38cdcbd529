"""The protocol seam: a study runs the plan of splits its request's protocol gives. The
second protocol, the user's own splits (any scikit-learn splitter or a list of (train,
test) pairs), from the three front doors: run_study(cv=...), BBCSearchCV(cv=...) and the
study file's cv.splitter / cv.column."""
import os

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    RepeatedStratifiedKFold,
    ShuffleSplit,
    TimeSeriesSplit,
)

import bbc_dask as bd
from bbc_dask.cli import main

GRID = {"C": [0.01, 0.1, 1.0]}
THREADS = {"kind": "local", "n_workers": 1, "threads_per_worker": 2, "processes": False}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=90, n_features=5, random_state=0)
    return X, y, np.arange(90) % 9


def _run(tmp_path, name, X, y, **kw):
    return bd.run_study(LogisticRegression(), GRID, X, y, store=str(tmp_path / name),
                        metric="roc_auc", random_state=0, progress=False, client=THREADS, **kw)


def test_own_pairs_equal_the_kfold_study_on_the_same_partitions(tmp_path, data):
    """The seam carries nothing but the partitions: a list of pairs that are the K-fold
    study's own partitions gives the same predictions and estimates, bit for bit."""
    X, y, _ = data
    kfold = _run(tmp_path, "kfold.zarr", X, y, n_splits=3, n_repeats=2)
    folds = kfold.cube["fold"].values
    pairs = [(np.flatnonzero(folds[:, r] != k), np.flatnonzero(folds[:, r] == k))
             for r in range(2) for k in range(3)]
    own = _run(tmp_path, "own.zarr", X, y, cv=pairs)
    np.testing.assert_array_equal(own.cube["fold"].values, folds)
    idx = np.arange(len(GRID["C"]))
    np.testing.assert_array_equal(own._cube.predictions(idx), kfold._cube.predictions(idx))
    for method in ("bbc", "bbc_f"):
        a = getattr(own, method)(n_bootstraps=200, random_state=1)
        b = getattr(kfold, method)(n_bootstraps=200, random_state=1)
        assert (a.estimate, a.confidence_interval) == (b.estimate, b.confidence_interval)
    assert own.best_index_ == kfold.best_index_


def test_a_splitter_gives_its_partitions_and_repeats_and_resumes(tmp_path, data):
    X, y, groups = data
    cv = RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=0)
    study = _run(tmp_path, "rskf.zarr", X, y, cv=cv)
    folds = study.cube["fold"].values
    assert folds.shape == (90, 2)
    for i, (_, test) in enumerate(cv.split(X, y)):
        assert np.all(folds[test, i // 3] == i % 3)
    assert _run(tmp_path, "rskf.zarr", X, y, cv=cv).n_fits_ == 0  # resumed: nothing refitted
    bd.bbc(study._cube.predictions(np.arange(3)), y, metric="roc_auc", folds=folds)
    grouped = _run(tmp_path, "groups.zarr", X, y, cv=GroupKFold(3), groups=groups)
    g_folds = grouped.cube["fold"].values[:, 0]
    assert all(np.unique(g_folds[groups == g]).size == 1 for g in range(9))  # groups kept whole


def test_other_splits_refuse_to_resume_the_store(tmp_path, data):
    X, y, _ = data
    _run(tmp_path, "s.zarr", X, y, cv=KFold(3, shuffle=True, random_state=0))
    with pytest.raises(bd.exceptions.StoreMismatchError, match=r"protocol\.folds \(stored"):
        _run(tmp_path, "s.zarr", X, y, cv=KFold(3, shuffle=True, random_state=1))


@pytest.mark.parametrize("cv,why", [
    (TimeSeriesSplit(3), r"TimeSeriesSplit \(the training set of split 0 is not all the samples"),
    (ShuffleSplit(3, test_size=0.5, random_state=0), r"repeats samples of an earlier one"),
    ([(np.arange(45, 90), np.arange(45))], r"leave samples in no test set"),
    ([(np.arange(45, 90), np.arange(45)), (np.arange(45), np.arange(45, 90)),
      (np.arange(30, 90), np.arange(30)), (np.r_[:30, 60:90], np.arange(30, 60)),
      (np.arange(60), np.arange(60, 90))], r"its repeats have \[2, 3\] folds"),
    ([(np.arange(90), np.arange(90, 92))], r"are not positions 0\.\.89"),
    ([(1, 2, 3)], r"split 0 is not a \(train, test\) pair"),
    ("nope", r"must be an int, a scikit-learn splitter or an iterable of \(train, test\) index "
             r"pairs\. Got 'nope' instead"),
    (3.5, r"must be an int, a scikit-learn splitter or an iterable"),
])
def test_splits_that_are_not_partitions_are_refused_before_anything_runs(tmp_path, data, cv, why):
    X, y, _ = data
    with pytest.raises(bd.exceptions.InvalidParameterError, match=why) as err:
        _run(tmp_path, "bad.zarr", X, y, cv=cv)
    assert "\n" not in str(err.value) and "'cv' parameter of run_study" in str(err.value)
    assert not os.path.exists(tmp_path / "bad.zarr")


def test_cv_and_n_splits_together_are_refused(tmp_path, data):
    X, y, _ = data
    assert _run(tmp_path, "int.zarr", X, y, cv=3).cube["fold"].values.max() == 2  # an int: K
    with pytest.raises(bd.exceptions.InvalidParameterError,
                       match=r"'cv' parameter of run_study must be None when 'n_splits' is given \(it sets the splits\)\. Got KFold"):
        _run(tmp_path, "x.zarr", X, y, cv=KFold(3), n_splits=3)


def test_bbcsearchcv_takes_a_splitter(tmp_path, data):
    X, y, groups = data
    search = bd.BBCSearchCV(LogisticRegression(), GRID, cv=GroupKFold(3), client=THREADS,
                            random_state=0, n_bootstraps=100, store=str(tmp_path / "s.zarr"))
    search.fit(X, y, groups=groups)
    assert search.n_splits_ == 3 and search.bbc_.n_bootstraps == 100
    folds = search.study_.cube["fold"].values[:, 0]
    assert all(np.unique(folds[groups == g]).size == 1 for g in range(9))


@pytest.mark.parametrize("params,why", [
    (dict(n_bootstraps=0), r"'n_bootstraps' parameter of BBCSearchCV must be an int in the range \[1, inf\)"),
    (dict(confidence_level=1.0), r"'confidence_level' parameter of BBCSearchCV must be a float in the range \(0\.0, 1\.0\)"),
    (dict(scoring="nope"), r"'scoring' parameter of BBCSearchCV must be one of"),
    (dict(cv=1), r"'cv' parameter of BBCSearchCV must be an int in the range \[2, inf\)"),
    (dict(cv=TimeSeriesSplit(3)), r"'cv' parameter of BBCSearchCV must be splits whose test sets"),
    (dict(cv=KFold(3), n_repeats=2), r"'cv' parameter of BBCSearchCV must be None when 'n_repeats' is given"),
    (dict(selection="best"), r"'selection' parameter of BBCSearchCV must be a str among"),
    (dict(error_score="nope"), r"'error_score' parameter of BBCSearchCV must be a str among \{'raise'\}"),
    (dict(scoring=["accuracy", "f1"], refit="yes"),
     r"'refit' parameter of BBCSearchCV must be one of the scoring keys"),
    (dict(dropping=3), r"'dropping' parameter of BBCSearchCV must be"),
])
def test_bbcsearchcv_bad_argument_fails_before_any_fit(tmp_path, data, params, why):
    X, y, _ = data
    store = tmp_path / "never.zarr"
    search = bd.BBCSearchCV(LogisticRegression(), GRID, store=str(store), client="tcp://127.0.0.1:1",
                            **params)
    with pytest.raises(bd.exceptions.InvalidParameterError, match=why) as err:
        search.fit(X, y)
    assert "run_study" not in str(err.value) and "\n" not in str(err.value)
    assert not store.exists() and not hasattr(search, "study_")


def _study_file(tmp_path, cv):
    import pandas as pd

    X, y = make_classification(n_samples=90, n_features=4, random_state=0)
    df = pd.DataFrame(X, columns=list("abcd")).assign(label=y, fold=np.arange(90) % 3,
                                                      patient=np.arange(90) % 9)
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.yaml").write_text(
        "data: {path: d.csv, target: label, groups: patient}\n"
        "grid:\n  - estimator: sklearn.linear_model.LogisticRegression\n    grid: {C: [0.1, 1.0]}\n"
        f"cv: {cv}\nmetric: roc_auc\nbootstraps: 100\nstore: s.zarr\n"
        "cluster: {kind: local, n_workers: 1, threads_per_worker: 2, processes: false}\n")
    return str(tmp_path / "s.yaml"), df


@pytest.mark.parametrize("cv", ["{column: fold}", "{splitter: GroupKFold, params: {n_splits: 3}}"])
def test_study_file_takes_a_splitter_or_a_fold_column(tmp_path, cv):
    path, df = _study_file(tmp_path, cv)
    out = CliRunner().invoke(main, ["run", path, "--no-progress"])
    assert out.exit_code == 0, out.output
    study = bd.open_study(str(tmp_path / "s.zarr"))
    folds = study.cube["fold"].values[:, 0]
    if "column" in cv:
        np.testing.assert_array_equal(folds, df["fold"].to_numpy())
        assert list(study.load_final_model().feature_names_in_) == list("abcd")  # not a feature
    else:
        patient = df["patient"].to_numpy()
        assert all(np.unique(folds[patient == g]).size == 1 for g in range(9))


@pytest.mark.parametrize("cv,why", [
    ("{splitter: TimeSeriesSplit}", "cv.splitter: expected one of KFold"),
    ("{splitter: KFold, splits: 3}", "cv.splitter: sets the splits: leave out 'splits'"),
    ("{splitter: KFold, params: {folds: 3}}", "cv.params: "),
    ("{column: nothere}", "cv.column: no column 'nothere'"),
    ("{params: {n_splits: 3}}", "cv.params: applies to a 'splitter' only"),
])
def test_study_file_cv_errors_name_the_key(tmp_path, cv, why):
    path, _ = _study_file(tmp_path, cv)
    out = CliRunner().invoke(main, ["run", path, "--no-progress"])
    assert out.exit_code == 2 and why in out.output, out.output


def test_study_file_request_errors_name_the_study_files_keys(tmp_path):
    """An argument the study file's own checks cannot judge (50 folds need 50 groups, or
    50 members of every class: the data decide) is refused by the request in the study
    file's words."""
    path, _ = _study_file(tmp_path, "{splits: 50}")
    out = CliRunner().invoke(main, ["run", path, "--no-progress"])
    assert out.exit_code == 2, out.output
    assert "n_splits" not in out.output and "run_study" not in out.output
    assert "The 'cv.groups' parameter of the study file has 9 groups; cv.splits=50" in out.output
    path, _ = _study_file(tmp_path, "{splits: 50, groups: null}")
    out = CliRunner().invoke(main, ["run", path, "--no-progress"])
    assert out.exit_code == 2 and "n_splits" not in out.output, out.output
    assert "members, fewer than cv.splits=50: stratified folds need a member" in out.output


class _Blocked(bd.Protocol):
    """A protocol written here alone: contiguous (unshuffled) K-fold blocks, one repeat,
    one configuration per task unless told."""

    kind = "blocked"
    shown = []

    def __init__(self, n_splits):
        self.n_splits, self.n_repeats = n_splits, 1

    def folds(self, y, groups, classification, root):
        return (np.arange(len(y)) * self.n_splits // len(y))[:, None]

    def describe(self):
        return {"protocol": {"kind": self.kind, "n_splits": self.n_splits}}

    def default_block(self, n_configs):
        return 1

    def shape_text(self, state):
        _Blocked.shown.append(state.shape)
        return f"{self.n_splits} contiguous blocks = {state.size} fits"


bd.register_protocol(_Blocked)  # the one line a new protocol adds


def test_a_protocol_written_in_the_tests_runs_a_study(tmp_path, data, capsys):
    """A new protocol is one class and one registry line: the engine runs its folds,
    calls its hooks (default block, announcement) and records it; the study equals one
    run on the same partitions as (train, test) pairs, bit for bit; a rerun resumes it
    (nothing fitted) and open_study reads it."""
    X, y, _ = data
    s = _run(tmp_path, "blocked.zarr", X, y, cv=_Blocked(3), refit=False)
    folds = np.arange(90) * 3 // 90
    np.testing.assert_array_equal(s.cube["fold"].values[:, 0], folds)
    assert s.spec["protocol"] == {"kind": "blocked", "n_splits": 3}
    assert s._cube.config_chunk == 1  # its default block
    pairs = [(np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in range(3)]
    p = _run(tmp_path, "pairs.zarr", X, y, cv=pairs, refit=False)
    np.testing.assert_array_equal(s.cube["prediction"].values, p.cube["prediction"].values)
    assert s.bbc(random_state=0, n_bootstraps=100).estimate == \
        p.bbc(random_state=0, n_bootstraps=100).estimate
    again = bd.run_study(LogisticRegression(), GRID, X, y, store=str(tmp_path / "blocked.zarr"),
                         metric="roc_auc", random_state=0, progress=True, client=THREADS,
                         cv=_Blocked(3), refit=False)
    assert again.n_fits_ == 0 and _Blocked.shown == [(3, 1, 3)]
    assert "3 contiguous blocks = 9 fits" in capsys.readouterr().err
    assert bd.open_study(str(tmp_path / "blocked.zarr")).best_index_ == s.best_index_


def test_register_protocol_refuses_what_is_not_a_protocol_of_its_own():
    from bbc_dask.engine import protocol_class

    with pytest.raises(ValueError, match="'cls' parameter of register_protocol must be a subclass"):
        bd.register_protocol(int)
    with pytest.raises(ValueError, match=r"kind is a non-empty string\. Got _NoKind.kind = None"):
        bd.register_protocol(type("_NoKind", (bd.Protocol,), {}))
    with pytest.raises(ValueError, match="a kind of its own \\('nested' is NestedProtocol's\\)"):
        protocol_class("nested")  # the built-in kinds registered
        bd.register_protocol(type("_Other", (bd.Protocol,), {"kind": "nested"}))
    bd.register_protocol(_Blocked)  # the same class again: allowed
