"""Scoring by any scikit-learn scorer: a name of ``get_scorer_names()`` or a
``make_scorer`` object, scored on the stored predictions by the scorer's own function
(``bbc_dask.metrics._scorer``), equal to what scikit-learn computes."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.metrics import (f1_score, fbeta_score, get_scorer, log_loss, make_scorer,
                             mean_squared_error, median_absolute_error)

import bbc_dask as bd
import bbc_dask.metrics as metrics
from bbc_dask.exceptions import InvalidParameterError, StudyError, StudyFileError
from bbc_dask.metrics import _registry


def _half_squared(y, p):
    """A user's loss, not one of sklearn.metrics: a store does not rebuild it."""
    return 0.5 * float(np.mean((np.asarray(y) - np.asarray(p)) ** 2))


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(90, 5, n_informative=3, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def multiclass():
    X, y = make_classification(90, 6, n_informative=4, n_classes=3, random_state=1)
    return X, y


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(90, 5, noise=20.0, random_state=2)
    return X, y


# ---------------------------------------------------------------- weights = repeated rows
def _inputs(name, rng, n):
    """(y_true, y_pred, kwargs) a function of sklearn.metrics scores."""
    yb, ym = rng.integers(0, 2, n), rng.integers(0, 3, n)
    yr = rng.gamma(2.0, 2.0, n)
    regression = {"y": yr, "p": yr * rng.uniform(0.5, 1.5, n)}
    table = {
        "log_loss": (ym, rng.dirichlet(np.ones(3), n)),
        "d2_log_loss_score": (ym, rng.dirichlet(np.ones(3), n)),
        "top_k_accuracy_score": (ym, rng.dirichlet(np.ones(3), n), {"k": 2}),
        "brier_score_loss": (yb, rng.random(n)), "d2_brier_score": (yb, rng.random(n)),
        "average_precision_score": (yb, rng.random(n)), "roc_auc_score": (yb, rng.random(n)),
        "balanced_accuracy_score": (ym, rng.integers(0, 3, n)),
        "matthews_corrcoef": (ym, rng.integers(0, 3, n)),
        "cohen_kappa_score": (ym, rng.integers(0, 3, n)),
        "hamming_loss": (ym, rng.integers(0, 3, n)), "zero_one_loss": (ym, rng.integers(0, 3, n)),
        "accuracy_score": (ym, rng.integers(0, 3, n)), "fbeta_score": (yb, rng.integers(0, 2, n), {"beta": 2}),
    }
    if name in table:
        t = table[name]
        return t[0], t[1], (t[2] if len(t) > 2 else {})
    if name in ("f1_score", "precision_score", "recall_score", "jaccard_score"):
        return yb, rng.integers(0, 2, n), {}
    return regression["y"], regression["p"], {}


@pytest.mark.parametrize("name", sorted(metrics.WEIGHT_IS_REPEAT))
def test_weights_equal_repeated_rows_for_every_weighted_function(name):
    """The functions scored with sample_weight give what repeated rows give (else they
    must leave WEIGHT_IS_REPEAT)."""
    import sklearn
    import sklearn.metrics as skm

    f = getattr(skm, name, None)
    if f is None:  # a function newer than the scikit-learn installed (d2_brier_score: 1.7)
        pytest.skip(f"{name} is not in scikit-learn {sklearn.__version__}")
    assert "sample_weight" in inspect.signature(f).parameters
    rng = np.random.default_rng(0)
    n = 40
    y, p, kw = _inputs(name, rng, n)
    for _ in range(5):
        w = rng.multinomial(n, np.ones(n) / n)
        r = w > 0
        got = f(y[r], p[r], sample_weight=w[r], **kw)
        want = f(np.repeat(y, w, axis=0), np.repeat(p, w, axis=0), **kw)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- resolution and errors
def test_names_and_scorers_resolve():
    assert metrics.get_metric("precision").kind == "general"
    assert metrics.get_metric("neg_root_mean_squared_error").task == "regression"
    # the very scorer of a registered name keeps its kernels
    assert metrics.get_metric(get_scorer("accuracy")) is metrics.METRICS["accuracy"]
    assert metrics.get_metric(make_scorer(mean_squared_error, greater_is_better=False)) \
        is metrics.METRICS["neg_mean_squared_error"]
    m = metrics.get_metric(make_scorer(fbeta_score, beta=2))
    assert m.kind == "general" and m.spec["kwargs"] == {"beta": 2} and m.spec["sklearn"]
    assert metrics.get_metric("neg_log_loss").kind == "pointwise"


@pytest.mark.parametrize("scoring, match", [
    ("adjusted_rand_score", r"'scoring' parameter of BBCSearchCV must be a scorer of a "
                            r"classifier or a regressor\. Got 'adjusted_rand_score' instead\. "
                            r"It is a clustering metric"),
    ("precison", r"'scoring' parameter of BBCSearchCV must be one of \[.*get_scorer_names"),
    (make_scorer(log_loss, response_method=("predict_log_proba",)),
     r"'scoring' parameter of BBCSearchCV must be a scorer whose response method is"),
])
def test_bad_scorers_are_one_line_errors(binary, scoring, match):
    X, y = binary
    est = bd.BBCSearchCV(LogisticRegression(), {"C": [1.0]}, scoring=scoring, cv=3)
    with pytest.raises(InvalidParameterError, match=match) as info:
        est.fit(X, y)
    assert "\n" not in str(info.value)


def test_pos_label_dropping_and_chunked_refused(binary, tmp_path, client):
    X, y = binary
    with pytest.raises(InvalidParameterError, match=r"'pos_label' parameter of run_study must "
                                                    r"be the scorer's own pos_label=0\. Got 1"):
        bd.run_study(LogisticRegression(), {"C": [1.0]}, X, y, store=tmp_path / "p.zarr",
                     metric=make_scorer(f1_score, pos_label=0), pos_label=1, client=client)
    with pytest.raises(InvalidParameterError, match=r"'dropping' parameter of run_study must "
                                                    r"be None with the metric precision"):
        bd.run_study(LogisticRegression(), {"C": [1.0, 2.0]}, X, y, store=tmp_path / "d.zarr",
                     metric="precision", dropping=True, client=client)
    with pytest.raises(InvalidParameterError, match=r"'metric' parameter of compare must be one of"):
        bd.compare(LogisticRegression(), {"C": [1.0]}, X, y, store=tmp_path / "c", metric="precision",
                   random_state=0, client=client)
    pred = np.stack([y, 1 - y], axis=1)
    import dask.array as da

    with pytest.raises(InvalidParameterError, match=r"'metric' parameter of bbc must be one of "
                                                    r".* on the chunked path.*Got 'recall'"):
        bd.bbc(da.from_array(pred), y, metric="recall")


def test_study_file_takes_scorer_names():
    from bbc_dask.cli._studyfile import resolve_study_file

    raw = {"data": {"sklearn": "breast_cancer"}, "grid": [{"estimator": "sklearn.linear_model.LogisticRegression"}]}
    assert resolve_study_file(raw | {"metric": "average_precision"})["metric"] == "average_precision"
    with pytest.raises(StudyFileError, match=r"metric: 'rand_score' is a clustering metric"):
        resolve_study_file(raw | {"metric": "rand_score"})
    with pytest.raises(StudyFileError, match=r"metric: unknown metric 'prec'.*get_scorer_names"):
        resolve_study_file(raw | {"metric": "prec"})


# ------------------------------------------------ a study's scores are scikit-learn's
#: (task, scoring, estimator): by default one of each task and each way of scoring
#: (weights, repeated rows, a class axis of decision values), the others slow (a study
#: costs about a second)
CASES = [
    ("binary", make_scorer(fbeta_score, beta=2), LogisticRegression()),
    ("multiclass", "top_k_accuracy", LogisticRegression()),
    ("regression", "neg_median_absolute_error", Ridge()),
    pytest.param(("binary", "precision", LogisticRegression()), marks=pytest.mark.slow),
    pytest.param(("binary", "average_precision", LogisticRegression()), marks=pytest.mark.slow),
    pytest.param(("binary", "neg_brier_score", LogisticRegression()), marks=pytest.mark.slow),
    pytest.param(("multiclass", "f1_macro", LogisticRegression()), marks=pytest.mark.slow),
    pytest.param(("regression", "explained_variance", Ridge()), marks=pytest.mark.slow),
]


def _case_id(case):
    case = getattr(case, "values", (case,))[0]
    s = case[1]
    return f"{case[0]}-{s if isinstance(s, str) else s._score_func.__name__}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_study_scores_equal_scikit_learns(case, binary, multiclass, regression, tmp_path, client,
                                          monkeypatch):
    """Each fold score is the scorer of the fold's model on its test set (what GridSearchCV
    computes); each pooled score the scorer's function on the stored predictions; BBC with
    explicit bootstraps is a loop of the function on each bootstrap's repeated rows; a
    make_scorer of a sklearn.metrics function is rebuilt from the store."""
    task, scoring, base = case
    X, y = {"binary": binary, "multiclass": multiclass, "regression": regression}[task]
    grid = {"alpha" if task == "regression" else "C": [0.1, 10.0]}
    study = bd.run_study(base, grid, X, y, store=tmp_path / "s.zarr", metric=scoring,
                         n_splits=3, client=client, random_state=0, progress=False)
    scorer = get_scorer(scoring) if isinstance(scoring, str) else scoring
    folds = study.cube["fold"].values[:, 0]
    res = study.cv_results_
    for k in range(3):
        test = folds == k
        for c, params in enumerate(study.params):
            model = clone(base).set_params(**params).fit(X[~test], y[~test])
            assert res[f"split{k}_test_score"][c] == pytest.approx(scorer(model, X[test], y[test]),
                                                                 rel=1e-12, abs=1e-12)
    pred = study.cube["prediction"].values[:, :, 0]  # (N, C[, K]) stored responses
    func, kw, sign = scorer._score_func, scorer._kwargs, scorer._sign

    def response(c):
        p = pred[:, c]
        return p[:, 1] if p.ndim == 2 and task == "binary" else p

    for c in range(2):
        want = sign * func(y, response(c), **kw)
        assert res["pooled_test_score"][c] == pytest.approx(want, rel=1e-12, abs=1e-12)
    # BBC: in-bag winner on repeated rows, its out-of-bag score
    rng = np.random.default_rng(3)
    idx = rng.integers(0, len(y), size=(20, len(y)))
    dist = []
    for b in idx:
        inbag = [sign * func(y[b], response(c)[b], **kw) for c in range(2)]
        oob = np.setdiff1d(np.arange(len(y)), b)
        w = int(np.argmax(inbag))
        dist.append(sign * func(y[oob], response(w)[oob], **kw))
    got = bd.bbc(study.cube["prediction"].values, y, metric=scoring, bootstrap_indices=idx)
    np.testing.assert_allclose(got.bootstrap_distribution, dist, rtol=1e-12, atol=1e-12)
    if not isinstance(scoring, str):
        assert study.spec["scorer"] == {
            "function": "fbeta_score", "module": "sklearn.metrics._classification",
            "sklearn": True, "kwargs": {"beta": 2}, "sign": 1, "response_method": ["predict"]}
        want = study.bbc(n_bootstraps=30).bootstrap_distribution
        monkeypatch.setattr(_registry, "_GENERAL", {})  # a new process: nothing known by name
        np.testing.assert_array_equal(
            bd.open_study(study.store).bbc(n_bootstraps=30).bootstrap_distribution, want)


# ------------------------------------------------------------ stores reopened, BBCSearchCV
def test_reopened_store_needs_a_user_function_again(regression, tmp_path, client, monkeypatch):
    Xr, yr = regression
    mine = make_scorer(_half_squared, greater_is_better=False)
    r = bd.run_study(LinearRegression(), {"fit_intercept": [True, False]}, Xr, yr,
                     store=tmp_path / "u.zarr", metric=mine, n_splits=3, client=client,
                     random_state=0, progress=False)
    want_r = r.bbc(n_bootstraps=30).bootstrap_distribution
    np.testing.assert_allclose(r.cv_results_["pooled_test_score"],
                               [-_half_squared(yr, r.cube["prediction"].values[:, c, 0]) for c in range(2)],
                               rtol=1e-12)
    with pytest.raises(InvalidParameterError, match=r"'metric' parameter of Study.bbc must be "
                                                    r"one of .* on the chunked path"):
        r.bbc(n_bootstraps=30, chunked=True)  # refused before any work
    monkeypatch.setattr(_registry, "_GENERAL", {})  # a new process: nothing known by name
    with pytest.raises(StudyError, match=r"metric make_scorer\(.*_half_squared.*is not a "
                                         r"function of sklearn.metrics.*open_study\(store, scoring"):
        bd.open_study(tmp_path / "u.zarr").bbc(n_bootstraps=30)
    with pytest.raises(InvalidParameterError, match=r"'scoring' parameter of open_study must be "
                                                    r"the study's scorer"):
        bd.open_study(tmp_path / "u.zarr", scoring=make_scorer(median_absolute_error))
    again = bd.open_study(tmp_path / "u.zarr", scoring=mine)
    np.testing.assert_array_equal(again.bbc(n_bootstraps=30).bootstrap_distribution, want_r)


def test_search_cv_scorer_and_score(multiclass, client):
    X, y = multiclass
    scoring = make_scorer(f1_score, average="macro")
    est = bd.BBCSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, scoring=scoring, cv=3,
                         n_bootstraps=30, random_state=0, client=client).fit(X, y)
    assert est.scorer_ is scoring
    assert est.score(X, y) == scoring(est.best_estimator_, X, y)
    assert np.isfinite(est.bbc_.estimate) and np.isfinite(est.bbc_f_.estimate)


@pytest.mark.slow
def test_search_cv_named_scorer(multiclass, client):
    X, y = multiclass
    named = bd.BBCSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, scoring="recall_macro",
                           cv=3, n_bootstraps=30, random_state=0, client=client).fit(X, y)
    assert named.score(X, y) == get_scorer("recall_macro")(named.best_estimator_, X, y)
