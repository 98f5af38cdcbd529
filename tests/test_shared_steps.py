"""Pipelines whose configurations differ only in later steps fit their transformer steps
once per fold and worker, with predictions bit-identical to fitting each pipeline whole."""
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC

import bbc_dask as bd
from bbc_dask.engine import TaskScoring, _tasks
from bbc_dask.metrics import SAMPLE_BLOCK

from _estimators import CountingScaler


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(240, 12, n_informative=5, random_state=0)
    return X * 4.0 + 2.0, y  # far from standardised: a scaler that did not run would show


def _pipe(final=None):
    return Pipeline([("scale", CountingScaler()), ("pca", PCA(random_state=0)),
                     ("clf", final if final is not None else LogisticRegression(max_iter=500))])


def _block(est, params, X, y, folds, k=0):
    X_train, y_train, X_test, _, _ = _tasks._split(X, y, folds, 0, k)
    scoring = TaskScoring("roc_auc", np.array([0, 1]), 1, 0, np.nan, SAMPLE_BLOCK)
    return _tasks.fit_predict_block(est, params, X_train, y_train, X_test, scoring)


def _whole(est, params, X, y, folds, k=0):
    """Each configuration's pipeline fitted whole (no reuse), its decision function."""
    train, test = folds[:, 0] != k, folds[:, 0] == k
    return np.column_stack([_tasks.configured(est, p).fit(X[train], y[train])
                            .decision_function(X[test]) for p in params])


def test_transformer_steps_fit_once_per_prefix_and_predictions_are_exact(data):
    X, y = data
    folds = (np.arange(len(y)) % 3)[:, None]
    params = list(ParameterGrid({"pca__n_components": [2, 4], "clf__C": [0.01, 1.0, 100.0]}))
    _tasks._SPLITS.__dict__.clear()
    CountingScaler.fits = 0
    got = _block(_pipe(), params, X, y, folds)
    assert CountingScaler.fits == 2  # one per distinct (scaler, pca) prefix, not 6
    CountingScaler.fits = 0
    want = _whole(_pipe(), params, X, y, folds)
    assert CountingScaler.fits == 6
    assert not np.isnan(got.values).any()
    np.testing.assert_array_equal(got.values, want)

    # the next task of this thread on the same split, same prefix first: reused again
    CountingScaler.fits = 0
    again = _block(_pipe(), params[3:], X, y, folds)
    assert CountingScaler.fits == 0
    np.testing.assert_array_equal(again.values, want[:, 3:])
    # another fold: each prefix fitted again, once
    _block(_pipe(), params, X, y, folds, k=1)
    assert CountingScaler.fits == 2


def test_no_reuse_where_pipeline_fit_could_differ(data, tmp_path):
    """A pipeline subclass or a cached pipeline is fitted whole, configuration by
    configuration."""
    X, y = data
    folds = (np.arange(len(y)) % 3)[:, None]
    params = list(ParameterGrid({"clf__C": [0.1, 1.0, 10.0]}))

    class Sub(Pipeline):
        pass

    for est in (Sub(_pipe().steps), Pipeline(_pipe().steps, memory=str(tmp_path / "m"))):
        _tasks._SPLITS.__dict__.clear()
        CountingScaler.fits = 0
        got = _block(est, params, X, y, folds)
        assert _tasks._prefix_steps(_tasks.configured(est, params[0])) is None
        if est.memory is None:
            assert CountingScaler.fits == 3
        np.testing.assert_array_equal(got.values, _whole(_pipe(), params, X, y, folds))
    # an invalid step is left to Pipeline.fit to refuse, as a whole fit would
    bad = Pipeline([("scale", CountingScaler()), ("odd", "drop"), ("clf", LogisticRegression())])
    assert _tasks._prefix_steps(bad) is None
    assert _block(bad, params, X, y, folds).failed.all()


def test_a_final_step_cannot_change_what_the_next_configuration_reuses(data):
    """The reused transformed rows are read-only: a final step that would write into its
    input gets scikit-learn's copy (or fails loudly), never changes the next fit."""
    X, y = data
    folds = (np.arange(len(y)) % 3)[:, None]
    params = list(ParameterGrid({"clf__C": [0.5, 2.0]}))
    _tasks._SPLITS.__dict__.clear()
    got = _block(_pipe(SVC()), params, X, y, folds)
    (Xt, Xt_test), = _tasks._SPLITS.prefix[1].values()
    assert not Xt.flags.writeable and not Xt_test.flags.writeable
    np.testing.assert_array_equal(got.values, _whole(_pipe(SVC()), params, X, y, folds))


def test_study_on_a_cluster_equals_whole_pipeline_fits(data, tmp_path, client):
    X, y = data
    grid = {"pca__n_components": [2, 5], "clf__C": [0.01, 1.0, 100.0]}
    s = bd.run_study(_pipe(), grid, X, y, store=tmp_path / "s.zarr", metric="roc_auc",
                     n_splits=3, random_state=0, configs_per_task=3, client=client,
                     progress=False, refit=False)
    cube = s.cube
    folds = cube["fold"].values
    pred = cube["prediction"].values[:, :, 0]
    params = list(ParameterGrid(grid))
    assert [dict(p) for p in s.params] == params
    for k in range(3):
        test = folds[:, 0] == k
        np.testing.assert_array_equal(pred[test], _whole(_pipe(), params, X, y, folds, k))
