"""A study bound to its estimator and to its recorded ledger (issue: nothing silently
wrong, nothing retrained): a resume by another estimator class is refused; an edited
ledger value is refused by the next run, never re-recorded as if it were the study's."""
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import bbc_dask as bd
from bbc_dask.exceptions import StoreMismatchError


class ReversedLR(LogisticRegression):
    """The parameters of LogisticRegression, the scores reversed: the same fingerprint of
    parameters, another model."""

    def predict_proba(self, X):
        return super().predict_proba(X)[:, ::-1]


@pytest.fixture(scope="module")
def data():
    return make_classification(120, n_features=6, random_state=0)


def _run(est, grid, data, store, **kw):
    X, y = data
    return bd.run_study(est, grid, X, y, metric="roc_auc", store=store, n_splits=3,
                        random_state=0, client=None, progress=False, **kw)


def test_a_resume_by_another_estimator_class_is_refused_naming_both(tmp_path, data):
    store = tmp_path / "s.zarr"
    _run(LogisticRegression(), {"C": [0.1, 1.0]}, data, store)
    with pytest.raises(StoreMismatchError) as e:
        _run(ReversedLR(), {"C": [0.1, 1.0]}, data, store)
    msg = str(e.value)
    assert "\n" not in msg
    assert "sklearn.linear_model._logistic.LogisticRegression" in msg and "ReversedLR" in msg


def test_a_pipeline_step_or_a_grid_estimator_of_another_class_is_refused(tmp_path, data):
    store = tmp_path / "p.zarr"
    def pipe(clf):
        return Pipeline([("scale", StandardScaler()), ("clf", clf)])

    _run(pipe(LogisticRegression()), {"clf__C": [0.1, 1.0]}, data, store)
    with pytest.raises(StoreMismatchError, match=r"classes\.clf \(stored .*LogisticRegression.*ReversedLR"):
        _run(pipe(ReversedLR()), {"clf__C": [0.1, 1.0]}, data, store)
    store = tmp_path / "g.zarr"
    _run(pipe(LogisticRegression()), {"clf": [LogisticRegression(C=0.1), LogisticRegression(C=1.0)]},
         data, store)
    with pytest.raises(StoreMismatchError, match="grid:clf"):
        _run(pipe(LogisticRegression()), {"clf": [LogisticRegression(C=0.1), ReversedLR(C=1.0)]},
             data, store)


def test_a_store_without_the_classes_resumes_and_records_them(tmp_path, data):
    from bbc_dask.cube import open_cube

    store = tmp_path / "old.zarr"
    first = _run(LogisticRegression(), {"C": [0.1, 1.0]}, data, store)
    cube = open_cube(store, mode="r+")
    cube.set_meta(spec={k: v for k, v in cube.meta["spec"].items() if k != "classes"})
    again = _run(LogisticRegression(), {"C": [0.1, 1.0]}, data, store)  # read as before
    assert again.n_fits_ == 0 and again.best_index_ == first.best_index_
    assert open_cube(store).meta["spec"]["classes"]["estimator"].endswith(".LogisticRegression")
    with pytest.raises(StoreMismatchError, match="ReversedLR"):
        _run(ReversedLR(), {"C": [0.1, 1.0]}, data, store)
