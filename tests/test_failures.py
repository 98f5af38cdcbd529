"""Failed configurations are loud: run_study and BBCSearchCV warn with scikit-learn's
FitFailedWarning (BBCSearchCV in GridSearchCV's words), once per call, resumes included."""
import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError

MATCH = (r"1 of 3 configurations failed on some fold and is left out of the selection "
         r"\(their scores are NaN\)\. The errors, grouped:\n  1 x .*C.*\(e\.g\. configuration 0: "
         r"\{'C': -1\.0\}\)")


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return X, (X[:, 0] + rng.normal(size=60) > 0).astype(int)


def _study(X, y, client, store, grid):
    return bd.run_study(LogisticRegression(), grid, X, y, store=store, metric="roc_auc", n_splits=3,
                        random_state=0, refit=False, client=client, progress=False)


def _fit_failed(record):
    return [w for w in record if issubclass(w.category, FitFailedWarning)]


def test_run_study_warns_once_at_the_call_and_again_on_resume(tiny, client, tmp_path):
    X, y = tiny
    grid = {"C": [-1.0, 0.1, 1.0]}
    with pytest.warns(FitFailedWarning, match=MATCH) as record:
        s = _study(X, y, client, tmp_path / "s.zarr", grid)
    assert len(_fit_failed(record)) == 1 and _fit_failed(record)[0].filename == __file__
    assert s.candidates().tolist() == [1, 2]
    with pytest.warns(FitFailedWarning, match=MATCH):  # nothing new fitted: the failures stand
        s = _study(X, y, client, tmp_path / "s.zarr", grid)
    assert s.n_fits_ == 0


#: GridSearchCV's words (its _warn_or_raise_about_fit_failures), and the search's note
SEARCH_MATCH = (r"\n3 fits failed out of a total of 9\.\nThe score on these train-test partitions "
                r"for these parameters will be set to nan\.\n.*BBCSearchCV: a configuration "
                r"with a failed fit is never selected.*\n-{80}\n3 fits failed with the "
                r"following error:\nInvalidParameterError: .*'C' parameter")


def test_search_cv_warns_and_a_clean_grid_does_not(tiny, client):
    X, y = tiny
    search = bd.BBCSearchCV(LogisticRegression(), {"C": [-1.0, 0.1, 1.0]}, cv=3, n_bootstraps=20,
                            random_state=0, refit=False)
    with pytest.warns(FitFailedWarning, match=re.compile(SEARCH_MATCH, re.DOTALL)) as record:
        search.fit(X, y)
    assert len(_fit_failed(record)) == 1 and _fit_failed(record)[0].filename == __file__
    assert search.best_index_ in (1, 2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        search.set_params(param_grid={"C": [0.1, 1.0]}).fit(X, y)
    assert not _fit_failed(record)


def test_a_grid_failing_everywhere_stops_after_its_first_failures(tiny, client, tmp_path):
    from bbc_dask.exceptions import AllConfigurationsFailedError

    X, y = tiny
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(AllConfigurationsFailedError, match=r"Every configuration failed \(2 of 2\)"):
            _study(X, y, client, tmp_path / "f.zarr", {"C": [-1.0, -2.0]})
    assert not _fit_failed(record)  # the error says it all
    state = bd.open_study(tmp_path / "f.zarr").state
    # stopped once each configuration had failed somewhere (the waves are one queue, so
    # not necessarily on fold 0): the other cells were never run
    assert (state == 2).any(axis=(1, 2)).all() and (state == 0).any()


def test_columns_no_configuration_takes_are_refused_before_the_first_wave(tiny, client, tmp_path):
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from bbc_dask.engine._plan import candidates
    from bbc_dask.engine._xcheck import check_columns

    X, y = tiny
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(city=np.where(y > 0, "x", "y"))
    # a string column: refused by run_study before the store is created or a task runs
    with pytest.raises(InvalidParameterError,
                       match=r"^The 'X' parameter of run_study must be columns that some "
                             r"configuration's estimator takes\. Got strings in column 'city' \(all 2 "
                             r"configurations tried on 24 rows failed; configuration 0: ValueError: "
                             r"could not convert string.* Encode them"):
        _study(df, y, client, tmp_path / "s.zarr", {"C": [0.1, 1.0]})
    assert not (tmp_path / "s.zarr").exists()

    def check(est, grid, XX):
        configs, _ = candidates(grid, None, 10, np.random.SeedSequence(0))
        check_columns(est, configs, XX, y, True)

    # missing values: refused for an estimator that rejects them, by position in an array
    Xn = X.copy()
    Xn[::9, 1] = np.nan
    with pytest.raises(InvalidParameterError,
                       match=r"Got missing values in column 1 \(.* Impute them"):
        check(LogisticRegression(), {"C": [0.1, 1.0]}, Xn)
    # ... not when a configuration takes them, or encodes the strings
    check(HistGradientBoostingClassifier(max_iter=5), {"max_depth": [2]}, Xn)
    check(LogisticRegression(), [{"C": [0.1]}, {"C": [1.0], "penalty": [None]}], X)
    enc = make_pipeline(make_column_transformer((OneHotEncoder(), ["city"]), remainder="passthrough"),
                        LogisticRegression())
    check(enc, {"logisticregression__C": [0.1]}, df)
    # a failure for another reason leaves the decision to the fits
    check(LogisticRegression(), {"C": [-1.0]}, df)
