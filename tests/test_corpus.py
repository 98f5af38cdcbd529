"""Every scikit-learn classifier and regressor that can be built with its default
arguments (and the meta-estimators with a plain base estimator), and the pipelines users
really fit, run as studies: stopped after their first wave, resumed to the predictions of
a study never stopped, the winner refit, and every model written and read back with skops
predicting the same. Those that cannot run are listed below, each with its reason.

Each kind is one study whose configurations are the estimators (``{"model": [...]}`` on a
one-step pipeline, as a study file's search is), on a few dozen rows: one cluster and a
handful of runs cover a hundred estimators.
"""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    StackingClassifier,
    StackingRegressor,
    VotingClassifier,
    VotingRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import FixedThresholdClassifier, TunedThresholdClassifierCV
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier, OutputCodeClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.semi_supervised import SelfTrainingClassifier
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils import all_estimators

import bbc_dask as bd
from bbc_dask.cube import as_location, load_model, save_model
from bbc_dask.exceptions import UntrustedModelError

#: Estimators that cannot run in a study, each with its reason (the start of the error
#: its fit records). The test checks that each fails, and for that reason.
CANNOT_RUN = {
    "CCA": ("n_components` upper bound is 1", "its default n_components=2 needs a target of "
            "two columns or more; a study's target is one column"),
    "PLSCanonical": ("n_components` upper bound is 1", "as CCA"),
    "IsotonicRegression": ("should be a 1d array or 2d array with 1 feature",
                           "takes one feature; the corpus's X has four"),
    "MultiTaskElasticNet": ("For mono-task outputs", "takes a target of several columns"),
    "MultiTaskElasticNetCV": ("For mono-task outputs", "takes a target of several columns"),
    "MultiTaskLasso": ("For mono-task outputs", "takes a target of several columns"),
    "MultiTaskLassoCV": ("For mono-task outputs", "takes a target of several columns"),
}

#: Models whose fitted state holds a function: a saved model's functions are trusted only
#: when the caller names them (``Study.load_final_model(trusted=[...])``; a chain of
#: library functions can run code), so these reopen only so. The test checks the refusal
#: names the function, and that naming it loads the model.
NEEDS_TRUST = {
    "TunedThresholdClassifierCV": "sklearn.metrics._classification.balanced_accuracy_score",
}

#: Meta-estimators built with a base estimator (they have no default one); those for
#: targets of several columns (ClassifierChain, RegressorChain, MultiOutput*) are left
#: out: a study's target is one column.
META = {
    "classifier": {
        "FixedThresholdClassifier": lambda: FixedThresholdClassifier(LogisticRegression()),
        "TunedThresholdClassifierCV": lambda: TunedThresholdClassifierCV(LogisticRegression(), cv=2),
        "OneVsOneClassifier": lambda: OneVsOneClassifier(LogisticRegression()),
        "OneVsRestClassifier": lambda: OneVsRestClassifier(LogisticRegression()),
        "OutputCodeClassifier": lambda: OutputCodeClassifier(LogisticRegression(), random_state=0),
        "SelfTrainingClassifier": lambda: SelfTrainingClassifier(LogisticRegression()),
        "StackingClassifier": lambda: StackingClassifier(
            [("lr", LogisticRegression()), ("nb", GaussianNB())], cv=2),
        "VotingClassifier": lambda: VotingClassifier([("lr", LogisticRegression()), ("nb", GaussianNB())]),
    },
    "regressor": {
        "StackingRegressor": lambda: StackingRegressor(
            [("ridge", Ridge()), ("tree", DecisionTreeRegressor(random_state=0))], cv=2),
        "VotingRegressor": lambda: VotingRegressor([("ridge", Ridge()), ("tree", DecisionTreeRegressor())]),
    },
}


def _corpus(kind):
    """``(names, estimators)``: every estimator of ``kind`` built with default arguments,
    or a base estimator (:data:`META`), with ``random_state=0`` wherever one is so
    that a study never stopped fits the same models."""
    names, out = [], []
    for name, cls in all_estimators(type_filter=kind):
        if name in META[kind]:
            est = META[kind][name]()
        else:
            try:
                est = cls()
            except TypeError:  # a required argument: the meta-estimators above, or left out
                continue
        # every random_state, nested ones too (a VotingRegressor's tree)
        est.set_params(**{k: 0 for k in est.get_params(deep=True)
                          if k == "random_state" or k.endswith("__random_state")})
        names.append(name)
        out.append(est)
    return names, out


def _data(kind):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(48, 4))  # non-negative: the naive Bayes models take counts
    if kind == "classifier":
        # string labels as pandas holds them (dtype object: SelfTrainingClassifier refuses
        # NumPy's fixed-width strings, under GridSearchCV too)
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=48) > 0.5, "yes", "no").astype(object)
    else:  # positive: Poisson and Gamma regression
        y = 1 + X @ [1.0, 2.0, 0.0, 0.0] + 0.1 * rng.normal(size=48)
    return X, y


def _run(store, estimators, X, y, metric, client, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence and the like, of toy fits
        return bd.run_study(Pipeline([("model", estimators[0])]), {"model": estimators}, X, y,
                            store=store, metric=metric, n_splits=2, random_state=0, client=client,
                            progress=False, **kw)


def _stopped_resumed_and_fresh(tmp_path, estimators, X, y, metric, client):
    """A study stopped after its first wave and resumed, and one never stopped: their
    predictions, fold scores and states equal; the stopped run's cells not refit."""
    n = len(estimators)
    stopped = _run(tmp_path / "stopped.zarr", estimators, X, y, metric, client,
                   stop=bd.Stop(max_fits=n), refit=False)
    assert stopped.stopped_ is not None and stopped.n_fits_ == n
    before = stopped.cube["prediction"].values.copy()
    resumed = _run(tmp_path / "stopped.zarr", estimators, X, y, metric, client)
    assert resumed.n_fits_ == n  # the second wave alone
    fresh = _run(tmp_path / "fresh.zarr", estimators, X, y, metric, client, refit=False)
    done = ~np.isnan(before)
    np.testing.assert_array_equal(resumed.cube["prediction"].values[done], before[done])
    np.testing.assert_array_equal(resumed.cube["prediction"].values, fresh.cube["prediction"].values)
    np.testing.assert_array_equal(resumed.state, fresh.state)
    return resumed


def _check_failures(study, names):
    """The configurations that failed are exactly those of :data:`CANNOT_RUN`, each for its
    reason."""
    failed = {names[i]: study.errors[i] for i in range(len(names)) if i in study.errors}
    expected = {n for n in names if n in CANNOT_RUN}
    assert set(failed) == expected, {n: e[:200] for n, e in failed.items() if n not in expected}
    for name, error in failed.items():
        assert CANNOT_RUN[name][0] in error, (name, error[:300])


def _round_trip(tmp_path, estimators, names, X, y, skip):
    """Every estimator refit on all rows, written with skops as the study writes its final
    model and read back as a study reads it: the same predictions."""
    loc = as_location(tmp_path / "models")  # a directory the writes make
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, est in zip(names, estimators):
            if name in skip:
                continue
            model = clone(est).fit(X, y)
            record = save_model(loc, model)
            trusted = None
            if name in NEEDS_TRUST:
                with pytest.raises(UntrustedModelError, match=re.escape(NEEDS_TRUST[name])):
                    load_model(loc, record)
                trusted = [NEEDS_TRUST[name]]
            back = load_model(loc, record, trusted=trusted)
            assert type(back) is type(model), name
            np.testing.assert_array_equal(back.predict(X), model.predict(X), err_msg=name)


@pytest.mark.parametrize("kind,metric", [("classifier", "accuracy"), ("regressor", "r2")])
def test_every_estimator_runs_resumes_refits_and_reopens(tmp_path, client, kind, metric):
    names, estimators = _corpus(kind)
    assert len(names) > (35 if kind == "classifier" else 45)  # the corpus is scikit-learn's
    X, y = _data(kind)
    study = _stopped_resumed_and_fresh(tmp_path, estimators, X, y, metric, client)
    _check_failures(study, names)
    # the winner, refit by the study, reopens from its skops file and predicts as a refit
    winner = bd.open_study(tmp_path / "stopped.zarr").final_model
    expected = clone(estimators[study.best_index_]).fit(X, y)
    np.testing.assert_array_equal(winner.predict(X), expected.predict(X))
    _round_trip(tmp_path, estimators, names, X, y, skip=CANNOT_RUN)


def test_the_pipelines_users_fit_run_resume_and_reopen(tmp_path, client):
    """Imputer + scaler + model, ColumnTransformer + OneHotEncoder + model, and
    HistGradientBoosting with categorical features (its own and from the dtype), on a
    DataFrame with missing values, a categorical column and string labels."""
    rng = np.random.default_rng(1)
    n = 60
    X = pd.DataFrame({"age": rng.normal(50, 10, n), "dose": rng.uniform(0, 1, n),
                      "site": pd.Categorical(rng.choice(["north", "south", "east"], n))})
    X.loc[::7, "age"] = np.nan
    X.loc[3::9, "dose"] = np.nan
    y = np.where(X["dose"].fillna(0.5) + (X["site"] == "north") * 0.4 > 0.7, "sick", "well")
    numeric = make_column_selector(dtype_include="number")
    estimators = [
        make_pipeline(ColumnTransformer([("num", "passthrough", ["age", "dose"])]), SimpleImputer(),
                      StandardScaler(), LogisticRegression()),
        make_pipeline(ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["site"])]), LogisticRegression(C=0.5)),
        make_pipeline(ColumnTransformer([("cat", OrdinalEncoder(), ["site"])], remainder="passthrough"),
                      HistGradientBoostingClassifier(max_iter=10, categorical_features=[0], random_state=0)),
        HistGradientBoostingClassifier(max_iter=10, categorical_features="from_dtype", random_state=0),
    ]
    names = ["impute-scale", "one-hot", "ordinal-hgb", "hgb-from-dtype"]
    study = _stopped_resumed_and_fresh(tmp_path, estimators, X, y, "roc_auc", client)
    assert not study.errors, study.errors
    winner = bd.open_study(tmp_path / "stopped.zarr").final_model
    np.testing.assert_array_equal(winner.predict_proba(X),
                                  clone(estimators[study.best_index_]).fit(X, y).predict_proba(X))
    _round_trip(tmp_path, estimators, names, X, y, skip=())


def test_a_method_that_comes_with_the_fit_is_looked_for_after_it(tmp_path, client):
    """A StackingClassifier offers predict_proba once fitted (its default final estimator
    is made by fit), as scikit-learn's scorers find it: a study of it runs; an SVC without
    probability=True never offers it, and is still refused before any cluster work."""
    from sklearn.svm import SVC

    X, y = _data("classifier")
    stack = StackingClassifier([("lr", LogisticRegression()), ("nb", GaussianNB())], cv=2)
    assert not hasattr(stack, "predict_proba")
    study = bd.run_study(stack, {"cv": [2, 3]}, X, y, store=tmp_path / "s.zarr", metric="neg_log_loss",
                         n_splits=2, random_state=0, client=client, progress=False, refit=False)
    assert not study.errors and np.isfinite(study.cube["prediction"].values).all()
    assert np.isfinite(bd.holdout(stack, X, y, metric="neg_log_loss", test_size=0.3, random_state=0).estimate)
    with pytest.raises(ValueError, match=r"configuration 0 \(\{'C': 1.0\}\), has no predict_proba, "
                                         r"which the metric 'neg_log_loss' needs"):
        bd.run_study(SVC(), {"C": [1.0]}, X, y, store=tmp_path / "svc.zarr", metric="neg_log_loss",
                     n_splits=2, random_state=0, client=client, progress=False)
    assert not (tmp_path / "svc.zarr").exists()


def test_what_no_fit_changes_is_refused_before_the_run(tmp_path, client):
    """A regressor's pipeline for a classification metric is refused up front (a fit of a
    few rows on string labels would fail, but no fit makes a regressor a classifier)."""
    from sklearn.linear_model import LinearRegression

    X, y = _data("classifier")
    for est, key in ((LinearRegression(), "fit_intercept"),
                     (make_pipeline(StandardScaler(), LinearRegression()), "linearregression__fit_intercept")):
        with pytest.raises(ValueError, match=r"must be able to serve the metric 'roc_auc'"):
            bd.run_study(est, {key: [True, False]}, X, y, store=tmp_path / "r.zarr", metric="roc_auc",
                         n_splits=2, random_state=0, client=client, progress=False)
        assert not (tmp_path / "r.zarr").exists()
