"""BBCSearchCV as a drop-in for GridSearchCV: the same winner and cv_results_ on the same
folds (grid, randomized, multimetric, callable refit), n_jobs / pre_dispatch / cv=None as
scikit-learn reads them, and one warm local cluster per process."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (GridSearchCV, RandomizedSearchCV, StratifiedKFold,
                                     cross_val_score)
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError

PIPE = Pipeline([("sc", StandardScaler()), ("clf", LogisticRegression())])
#: a typical GridSearchCV grid: two model families, one of them with two parameters
GRID = [{"clf": [LogisticRegression(max_iter=1000)], "clf__C": [0.01, 0.1, 1, 10]},
        {"clf": [SVC()], "clf__C": [0.1, 1, 10], "clf__gamma": [0.001, 0.01, 0.1]}]
FOLDS = StratifiedKFold(5, shuffle=True, random_state=0)


def _same_search(ours, theirs, key="score"):
    """ours' winner, ranks and means are theirs (means to the last bit or two: the
    split scores are computed from the stored predictions)."""
    assert ours.best_index_ == theirs.best_index_
    assert repr(ours.best_params_) == repr(theirs.best_params_)
    assert [repr(p) for p in ours.cv_results_["params"]] == [repr(p) for p in theirs.cv_results_["params"]]
    np.testing.assert_array_equal(ours.cv_results_[f"rank_test_{key}"],
                                  theirs.cv_results_[f"rank_test_{key}"])
    np.testing.assert_allclose(ours.cv_results_[f"mean_test_{key}"],
                               theirs.cv_results_[f"mean_test_{key}"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(ours.cv_results_[f"std_test_{key}"],
                               theirs.cv_results_[f"std_test_{key}"], rtol=0, atol=1e-15)
    if hasattr(theirs, "best_score_"):
        assert ours.best_score_ == pytest.approx(theirs.best_score_, abs=1e-15)


@pytest.mark.parametrize("scoring, refit, key", [
    ("accuracy", True, "score"),
    ("roc_auc", True, "score"),
    (["accuracy", "roc_auc"], "roc_auc", "roc_auc"),
], ids=["accuracy", "roc_auc", "multimetric"])
def test_the_winner_is_gridsearchcvs(cancer, client, scoring, refit, key):
    X, y = cancer
    theirs = GridSearchCV(PIPE, GRID, cv=FOLDS, scoring=scoring, refit=refit).fit(X, y)
    ours = bd.BBCSearchCV(PIPE, GRID, cv=FOLDS, scoring=scoring, refit=refit, n_bootstraps=100,
                          random_state=0, client=client).fit(X, y)
    _same_search(ours, theirs, key)
    if key == "score" and scoring == "accuracy":  # the same split scores: the same bits
        np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                      theirs.cv_results_["mean_test_score"])
    # the estimates are of the model you get back
    assert ours.bbc_.selected_config == ours.bbc_f_.selected_config == ours.best_index_
    assert ours.bbc_.naive_estimate == pytest.approx(ours.best_score_, abs=1e-15)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    # the pooled rule stays, by name
    pooled = bd.BBCSearchCV(PIPE, GRID, cv=FOLDS, scoring=scoring, refit=refit, n_bootstraps=50,
                            random_state=0, client=client, selection="pooled").fit(X, y)
    pkey = "pooled_test_score" if key == "score" else f"pooled_test_{key}"
    assert pooled.best_index_ == int(np.argmax(pooled.cv_results_[pkey]))


def test_randomized_candidates_are_randomizedsearchcvs(cancer, client):
    X, y = cancer
    dist = {"clf__C": loguniform(1e-3, 1e2), "clf__class_weight": [None, "balanced"]}
    pipe = Pipeline([("sc", StandardScaler()), ("clf", LogisticRegression(max_iter=1000))])
    theirs = RandomizedSearchCV(pipe, dist, n_iter=6, cv=FOLDS, random_state=3).fit(X, y)
    ours = bd.BBCRandomizedSearchCV(pipe, dist, n_iter=6, cv=FOLDS, random_state=3,
                                    n_bootstraps=50, client=client).fit(X, y)
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    _same_search(ours, theirs)


def test_callable_refit_and_default_cv_are_gridsearchcvs(cancer, client):
    X, y = cancer

    def simplest_within_a_point(results):  # the smallest C within 0.01 of the best mean
        means = results["mean_test_score"]
        ok = np.flatnonzero(means >= np.nanmax(means) - 0.01)
        return int(ok[np.argmin([results["params"][i]["clf__C"] for i in ok])])

    grid = {"clf__C": [0.001, 0.01, 0.1, 1, 10]}
    pipe = Pipeline([("sc", StandardScaler()), ("clf", LogisticRegression(max_iter=1000))])
    theirs = GridSearchCV(pipe, grid, refit=simplest_within_a_point).fit(X, y)  # cv=None
    ours = bd.BBCSearchCV(pipe, grid, refit=simplest_within_a_point, n_bootstraps=50,
                          client=client).fit(X, y)
    assert ours.n_splits_ == theirs.n_splits_ == 5
    for i in range(5):  # the same unshuffled folds: the same split scores
        np.testing.assert_array_equal(ours.cv_results_[f"split{i}_test_score"],
                                      theirs.cv_results_[f"split{i}_test_score"])
    _same_search(ours, theirs)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_n_jobs_and_pre_dispatch_as_gridsearchcv(cancer, client):
    X, y = cancer
    grid = {"C": [0.1, 1]}
    est = LogisticRegression(max_iter=3000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search = bd.BBCSearchCV(est, grid, n_jobs=4, pre_dispatch="2*n_jobs", cv=3,
                                n_bootstraps=20, client=client).fit(X, y)
    said = [str(w.message) for w in caught if "n_jobs" in str(w.message)]
    assert said == ["BBCSearchCV: n_jobs=4 is ignored: the study runs on the Dask client's "
                    "workers."]
    assert search.get_params()["n_jobs"] == 4 and search.get_params()["pre_dispatch"] == "2*n_jobs"
    # the fit and score times split as GridSearchCV's, measured by the tasks
    res = search.cv_results_
    for key in ("mean_fit_time", "mean_score_time", "std_fit_time", "std_score_time"):
        assert np.isfinite(res[key]).all() and (res[key] >= 0).all(), key
    assert (res["mean_fit_time"] > 0).all() and (res["mean_score_time"] > 0).all()
    stored = search.study_._cube.fit_times().reshape(2, -1).mean(axis=1)  # fit + prediction
    assert (res["mean_fit_time"] < stored).all()
    # a study opened from its store: fit times with their prediction, no score times
    reopened = bd.open_study(search.study_.store).cv_results_
    np.testing.assert_allclose(reopened["mean_fit_time"], stored)
    assert np.isnan(reopened["mean_score_time"]).all()
    with pytest.raises(InvalidParameterError, match="'n_jobs' parameter of BBCSearchCV must be a non-zero"):
        bd.BBCSearchCV(est, grid, n_jobs=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'n_jobs' parameter of BBCSearchCV"):
        bd.BBCSearchCV(est, grid, n_jobs="two", client=client).fit(X, y)


def _with_holes(kind="array"):
    """200 x 6 binary data with X[::17, 3] missing, as an array, a DataFrame or CSR."""
    from scipy import sparse
    from sklearn.datasets import make_classification

    X, y = make_classification(200, 6, n_informative=3, random_state=0)
    X[::17, 3] = np.nan
    if kind == "frame":
        import pandas as pd

        X = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    elif kind == "sparse":
        X = sparse.csr_matrix(X)
    return X, y


@pytest.mark.parametrize("kind, store", [("array", False), ("array", True), ("frame", False),
                                         ("sparse", False)])
def test_missing_values_a_pipeline_imputes_are_taken(client, tmp_path, kind, store):
    """X with NaN goes to the estimator as GridSearchCV gives it: a pipeline that imputes
    fits, with or without a store, whatever the container; the same search."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline

    X, y = _with_holes(kind)
    pipe = make_pipeline(SimpleImputer(), StandardScaler(with_mean=kind != "sparse"),
                         LogisticRegression())
    grid = {"logisticregression__C": [0.01, 0.1, 1.0]}
    theirs = GridSearchCV(pipe, grid, cv=FOLDS).fit(X, y)
    ours = bd.BBCSearchCV(pipe, grid, cv=FOLDS, n_bootstraps=50, random_state=0, client=client,
                          store=str(tmp_path / "s.zarr") if store else None).fit(X, y)
    _same_search(ours, theirs)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    assert np.isfinite(ours.bbc_.estimate)


def test_missing_values_histgradientboosting(client):
    """An estimator that takes NaN itself: HistGradientBoostingClassifier on X with holes,
    GridSearchCV's search."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _with_holes()
    grid = {"max_iter": [10, 30], "learning_rate": [0.1, 0.3]}
    est = HistGradientBoostingClassifier(random_state=0)
    theirs = GridSearchCV(est, grid, cv=FOLDS).fit(X, y)
    ours = bd.BBCSearchCV(est, grid, cv=FOLDS, n_bootstraps=50, random_state=0,
                          client=client).fit(X, y)
    _same_search(ours, theirs)


def test_an_estimator_that_refuses_missing_values_fails_as_under_gridsearchcv(client):
    """A configuration whose estimator cannot take NaN fails as its fit does under
    GridSearchCV: recorded (NaN scores, ranked last, never selected) with error_score a
    number; its own error raised with error_score="raise", its configuration named; and
    when no configuration takes the column, a one-line error before any fit."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = _with_holes()
    pipe = Pipeline([("clf", LogisticRegression())])
    grid = {"clf": [LogisticRegression(), HistGradientBoostingClassifier(max_iter=10)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the failed fits are said (FitFailedWarning)
        theirs = GridSearchCV(pipe, grid, cv=FOLDS).fit(X, y)
        ours = bd.BBCSearchCV(pipe, grid, cv=FOLDS, n_bootstraps=50, random_state=0,
                              client=client).fit(X, y)
    assert np.isnan(ours.cv_results_["mean_test_score"][0])
    assert ours.best_index_ == theirs.best_index_ == 1
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"], [2, 1])
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"][1],
                               theirs.cv_results_["mean_test_score"][1], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="Input X contains NaN") as raised:
        bd.BBCSearchCV(pipe, grid, cv=FOLDS, error_score="raise", client=client).fit(X, y)
    assert "Configuration 0 ({'clf': LogisticRegression()})" in "".join(raised.value.__notes__)
    with pytest.raises(ValueError, match=r"missing values in column 3 .*configuration 0: "
                                         r"ValueError: Input X contains NaN"):
        bd.BBCSearchCV(LogisticRegression(), {"C": [0.1, 1]}, cv=FOLDS, client=client).fit(X, y)


def test_param_columns_typed_as_gridsearchcvs(client):
    """cv_results_["param_*"]: scikit-learn's masked arrays, typed as its search types them
    (float64, int64, object for strings and estimators), masked where a dict of the grid
    has no such parameter."""
    from sklearn.datasets import make_classification

    X, y = make_classification(90, 4, random_state=0)
    grids = [
        (SVC(), [{"kernel": ["rbf"], "C": [1.0, 10.0], "gamma": [0.1, 1]},
                 {"kernel": ["poly"], "degree": [1, 2]}]),
        (Pipeline([("sc", StandardScaler()), ("clf", LogisticRegression())]),
         [{"clf": [LogisticRegression()], "clf__C": [0.1, 1.0]},
          {"clf": [SVC()], "sc": [StandardScaler(), "passthrough"]}]),
    ]
    for est, grid in grids:
        theirs = GridSearchCV(est, grid, cv=3).fit(X, y).cv_results_
        ours = bd.BBCSearchCV(est, grid, cv=3, n_bootstraps=20, client=client).fit(X, y).cv_results_
        keys = [k for k in theirs if k.startswith("param_")]
        assert keys == [k for k in ours if k.startswith("param_")]
        for k in keys:
            assert type(ours[k]) is np.ma.MaskedArray, k
            assert ours[k].dtype == theirs[k].dtype, (k, ours[k].dtype, theirs[k].dtype)
            np.testing.assert_array_equal(np.ma.getmaskarray(ours[k]), np.ma.getmaskarray(theirs[k]))
            assert [repr(v) for v in ours[k].compressed()] == [repr(v) for v in theirs[k].compressed()]
        assert ours["param_C" if "param_C" in ours else "param_clf__C"].dtype == np.float64


SCRIPT = textwrap.dedent("""
    import numpy as np
    from distributed import default_client
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, cross_val_score
    import bbc_dask as bd
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    search = bd.BBCSearchCV(LogisticRegression(), {"C": [0.01, 1, 100]}, n_jobs=2, cv=3,
                            n_bootstraps=50)
    ours = cross_val_score(search, X, y, cv=3)
    theirs = cross_val_score(GridSearchCV(LogisticRegression(), {"C": [0.01, 1, 100]}, cv=3), X, y, cv=3)
    from bbc_dask.cluster import _SHARED
    first = _SHARED["client"]
    search.fit(X, y)
    assert _SHARED["client"] is first and first.status == "running"
    assert len(first.scheduler_info()["workers"]) == 2
    try:
        default_client()
        raise SystemExit("the warm cluster became the default client")
    except ValueError:
        pass
    assert np.array_equal(ours, theirs), (ours, theirs)
    print("ok", first.scheduler.address)
""")


def test_one_warm_cluster_per_process_and_a_quiet_exit(tmp_path):
    """Three outer fits and a fourth fit share one local cluster, which is not the default
    client, and closes at exit without a word on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok tcp://"), proc.stdout
    assert proc.stderr == ""


@pytest.mark.parametrize("which", ["inbag", "oob", "winners"])
def test_numpy_sums_are_the_kernels(which, monkeypatch):
    """While numba is not loaded, small BBC-F and indicator sums go through NumPy: the same
    operations in the same order, so the kernels' bits (NaN, ties, fractions)."""
    import numba  # noqa: F401 (the kernels' side)

    from bbc_dask.metrics import _kernels
    from bbc_dask.stats import _bbc_f

    rng = np.random.default_rng(0)
    for trial in range(40):
        B, R, C = (int(v) for v in rng.integers(1, 40, 3))
        R = max(R % 12, 1)
        counts = rng.multinomial(R, np.ones(R) / R, size=B).astype(np.int32)
        pool = [0.5, 0.75, 0.8, 1.0, 0.1, 0.3, np.nan] if trial % 3 == 0 else [0.1, 0.2, 0.3, 0.7]
        F = rng.choice(pool, size=(R, C)) if trial % 2 else rng.random((R, C))
        winners = rng.integers(-1, C, size=B)
        n = int(rng.integers(5, 60))
        u, reps = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        cnt = rng.integers(0, 4, size=(B, n)).astype(np.uint8)
        rows = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
        vt = rng.integers(0, 2, size=(u * reps, rows.size)).astype(np.uint8)
        win = rng.integers(0, u, size=B)

        def run():
            if which == "inbag":
                return [_bbc_f._inbag_means(counts, F)]
            if which == "oob":
                return [_bbc_f._oob_mean(counts, F, winners)]
            return [_kernels.feature_sums_winners(cnt, rows, vt, win, reps, oob, indicator=True)
                    for oob in (False, True)]

        kernel = run()
        with monkeypatch.context() as m:
            m.delitem(sys.modules, "numba")
            numpy_side = run()
        for a, b in zip(kernel, numpy_side):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("refit, store", [(True, False), (False, False), (True, True)])
def test_callbacks_report_gridsearchcvs_tasks(client, tmp_path, refit, store):
    """scikit-learn's callbacks (1.9 on): the hooks GridSearchCV calls — one setup and
    teardown, a begin and an end per task of its tree (root, search, candidate-split
    evaluations, refit), every one of the non-propagated callback's with the search as the
    estimator and the training rows' sample_weight — and the auto-propagated callback's
    of each fitted estimator's own iterations, reported from the workers."""
    pytest.importorskip("sklearn.callback")
    from sklearn.callback.tests._utils import (MaxIterEstimator, RecordingAutoPropagatedCallback,
                                               RecordingCallback)
    from sklearn.datasets import make_regression

    X, y = make_regression(40, 3, noise=1.0, random_state=0)
    w = np.arange(1, 41) % 4 + 1.0
    grid = {"max_iter": [1, 2, 3]}
    counts = {}
    for name, cls in (("theirs", GridSearchCV), ("ours", bd.BBCSearchCV)):
        callbacks = [RecordingCallback(), RecordingAutoPropagatedCallback()]
        extra = {} if cls is GridSearchCV else dict(
            n_bootstraps=20, client=client, store=str(tmp_path / "s.zarr") if store else None)
        search = cls(MaxIterEstimator(), grid, cv=4, scoring="r2", refit=refit, **extra)
        search.set_callbacks(*callbacks).fit(X, y, sample_weight=w)
        counts[name] = [{h: cb.count_hooks(h) for h in ("setup", "on_fit_task_begin",
                                                         "on_fit_task_end", "teardown")}
                        for cb in callbacks]
        if cls is bd.BBCSearchCV:
            plain = callbacks[0].record
            assert all(entry["estimator"] is search for entry in plain)
            evaluations = [e for e in plain if e["context"].task_name == "candidate-split-evaluation"]
            assert len(evaluations) == 2 * 3 * 4
            for entry in evaluations:
                assert len(entry["kwargs"]["metadata"]["sample_weight"]) == 30  # its training rows
    assert counts["ours"] == counts["theirs"]
    assert counts["ours"][1]["on_fit_task_begin"] > counts["ours"][0]["on_fit_task_begin"]


def test_inputs_reach_the_estimator_as_gridsearchcv_gives_them(client):
    """X and y as GridSearchCV passes them to the fits: a list stays a list, a 4-d array
    keeps its shape, scikit-learn's MockDataFrame and a pandas Series stay themselves."""
    import pandas as pd
    from sklearn.utils._mocking import CheckingClassifier, MockDataFrame

    X = np.arange(200, dtype=float).reshape(20, 10)
    y = np.array([0, 1] * 10)
    cases = [
        (X.tolist(), y, dict(check_X=lambda x: isinstance(x, list))),
        (X.reshape(20, 5, 2, 1), y, dict(check_X=lambda x: x.shape[1:] == (5, 2, 1))),
        (MockDataFrame(X), MockDataFrame(y), dict(check_X=lambda x: isinstance(x, MockDataFrame),
                                                  check_y=lambda v: isinstance(v, MockDataFrame))),
        (X, pd.Series(y), dict(check_y=lambda v: isinstance(v, pd.Series))),
    ]
    for Xc, yc, checks in cases:
        est = CheckingClassifier(**checks, methods_to_check=["fit"])
        search = bd.BBCSearchCV(est, {"foo_param": [0, 1]}, cv=2, error_score="raise",
                                n_bootstraps=20, client=client).fit(Xc, yc)
        assert search.best_index_ == GridSearchCV(est, {"foo_param": [0, 1]}, cv=2).fit(
            Xc, yc).best_index_


def test_a_precomputed_kernel_is_cut_as_gridsearchcv_cuts_it(cancer_standardised, client):
    """The pairwise tag is delegated, and each fold's kernel is its training samples'
    columns (scikit-learn's _safe_split): GridSearchCV's scores."""
    X, y = cancer_standardised
    K = X @ X.T
    grid = {"C": [0.01, 1.0]}
    ours = bd.BBCSearchCV(SVC(kernel="precomputed"), grid, cv=FOLDS, n_bootstraps=20,
                          client=client).fit(K, y)
    theirs = GridSearchCV(SVC(kernel="precomputed"), grid, cv=FOLDS).fit(K, y)
    assert ours.__sklearn_tags__().input_tags.pairwise
    _same_search(ours, theirs)


def test_score_takes_metadata_with_routing_as_gridsearchcv(cancer_standardised, client):
    """score(X, y, **params): routed to the scorer with metadata routing on, refused
    without it in GridSearchCV's words."""
    import sklearn
    from sklearn.metrics import accuracy_score, make_scorer

    X, y = cancer_standardised
    w = np.linspace(0.5, 2.0, len(y))
    search = bd.BBCSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=3, n_bootstraps=20,
                            client=client).fit(X, y)
    with pytest.raises(ValueError, match="is only supported if enable_metadata_routing=True"):
        search.score(X, y, sample_weight=w)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_scorer(accuracy_score).set_score_request(sample_weight=True)
        search = bd.BBCSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=3, scoring=scorer,
                                n_bootstraps=20, client=client).fit(X, y)
        assert search.score(X, y, sample_weight=w) == pytest.approx(
            accuracy_score(y, search.predict(X), sample_weight=w))
