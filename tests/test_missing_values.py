"""Missing values are the estimator's business, as in GridSearchCV: a study takes X with
NaN or inf (an array, a DataFrame, a sparse matrix) when its estimator takes them, and an
estimator that cannot fails as a fit does, named with its configuration."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import FitFailedWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, StandardScaler

import bbc_dask as bd
from bbc_dask.exceptions import StudyError


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=90) > 0).astype(int)
    X[::17, 3] = np.nan
    X[5::13, 1] = np.nan
    return X, y


def _run(store, est, grid, X, y, client, **kw):
    return bd.run_study(est, grid, X, y, store=store, metric="roc_auc", n_splits=3, random_state=0,
                        client=client, progress=False, refit=False, **kw)


@pytest.mark.parametrize("container", ["array", "dataframe", "sparse"])
def test_an_imputing_pipeline_takes_missing_values(tmp_path, client, container):
    X, y = _data()
    if container == "dataframe":
        X = pd.DataFrame(X, columns=list("abcd"))
    elif container == "sparse":
        X = sp.csr_matrix(X)
    scale = MaxAbsScaler() if container == "sparse" else StandardScaler()
    est = make_pipeline(SimpleImputer(), scale, LogisticRegression())
    study = _run(tmp_path / "s.zarr", est, {"logisticregression__C": [0.1, 1.0]}, X, y, client)
    assert not study.errors and np.isfinite(study.cube["prediction"].values).all()


def test_an_estimator_that_cannot_take_them_fails_as_a_fit(tmp_path, client):
    """A grid of a model that takes NaN and one that does not: the second's fits are
    recorded as failed with scikit-learn's words (GridSearchCV's error_score=nan); with
    error_score="raise" the study stops naming the configuration. inf is no exception."""
    X, y = _data()
    est = Pipeline([("model", LogisticRegression())])
    grid = {"model": [HistGradientBoostingClassifier(max_iter=5), LogisticRegression()]}
    with pytest.warns(FitFailedWarning, match="1 of 2 configurations failed"):
        study = _run(tmp_path / "mixed.zarr", est, grid, X, y, client)
    assert list(study.errors) == [1] and "Input X contains NaN" in study.errors[1]
    assert np.isfinite(study.cube["prediction"].values[:, 0]).all()
    with pytest.raises(StudyError, match=r"Configuration 1 \(\{'model': LogisticRegression\(\)\}\) "
                                         r"raised .*Input X contains NaN"):
        _run(tmp_path / "raise.zarr", est, grid, X, y, client, error_score="raise")
    X_inf = np.nan_to_num(X, nan=np.inf)
    clipped = make_pipeline(FunctionTransformer(np.nan_to_num, kw_args={"posinf": 0.0}), StandardScaler(), LogisticRegression())
    assert not _run(tmp_path / "inf.zarr", clipped, {"logisticregression__C": [1.0]}, X_inf, y, client).errors
