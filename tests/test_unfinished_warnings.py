"""The scikit-learn view of an unfinished study (``cv_results_``, ``best_index_``,
``best_params_``, ``best_score_``) warns as its estimates do: once per access, with
:class:`~bbc_dask.exceptions.UnfinishedStudyWarning`; a finished study never warns."""
import shutil
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
from bbc_dask.exceptions import UnfinishedStudyWarning
from _helpers import rewrite_ledger

VIEW = ("cv_results_", "best_index_", "best_params_", "best_score_")


@pytest.fixture(scope="module")
def finished(tmp_path_factory, client):
    """A finished study: 4 configurations, 3 folds x 2 repeats (24 cells)."""
    X, y = load_breast_cancer(return_X_y=True)
    store = tmp_path_factory.mktemp("finished") / "s.zarr"
    bd.run_study(LogisticRegression(max_iter=500), {"C": [0.01, 0.1, 1.0, 10.0]}, X[:240, :6],
                 y[:240], store=store, metric="roc_auc", n_splits=3, n_repeats=2,
                 random_state=1, client=client, progress=False, refit=False)
    return store


@pytest.fixture
def unfinished(finished, tmp_path):
    """A copy of ``finished`` with the last fold of configurations 1 to 3 pending again,
    as a run killed in its last wave leaves it (tests/test_engine.py does the same)."""
    from bbc_dask.cube import open_cube

    store = tmp_path / "u.zarr"
    shutil.copytree(finished, store)
    cube = open_cube(store, mode="r+")
    cube.bind_lock(lambda: None)
    st = cube.state()
    st[1:, :, -1] = 0  # 3 configurations x 2 repeats: 6 cells pending
    rewrite_ledger(cube, "state", st)  # as a stopped run leaves it
    return bd.open_study(store)


def test_a_finished_study_does_not_warn(finished):
    study = bd.open_study(finished)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in VIEW:
            getattr(study, name)
        study.bbc(n_bootstraps=20)


@pytest.mark.parametrize("name", VIEW)
def test_each_access_warns_once_as_the_estimates_do(unfinished, name):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        getattr(unfinished, name)
        getattr(unfinished, name)
    ours = [w for w in got if issubclass(w.category, UnfinishedStudyWarning)]
    assert len(ours) == 2, [str(w.message) for w in got]  # one per access, not per inner read
    text = str(ours[0].message)
    # the count of bbc()'s warning (Study.unfinished), the values' meaning of this reader
    assert (f"is unfinished (6 of 24 cells pending; 1 of 4 configurations complete): "
            f"Study.{name} holds the values of the configurations complete so far (a "
            f"pending cell counts as not run). Run the study again to finish it.") in text
    assert ours[0].filename == __file__  # shown at the user's line, not the property's
    with pytest.warns(UnfinishedStudyWarning, match=r"is unfinished \(6 of 24 cells pending; "
                                                   r"1 of 4 configurations complete\): Study\.bbc ") as est:
        unfinished.bbc(n_bootstraps=20)
    # the estimates' warnings too, through the study's delegate and its filter of warnings
    assert [w.filename for w in est if w.category is UnfinishedStudyWarning] == [__file__]
    with pytest.warns(UnfinishedStudyWarning, match=r"Study\.bbc_f ") as est:
        unfinished.bbc_f(n_bootstraps=20)
    assert [w.filename for w in est if w.category is UnfinishedStudyWarning] == [__file__]


def test_the_values_are_those_of_the_complete_configurations(unfinished, finished):
    done = bd.open_study(finished)
    with pytest.warns(UnfinishedStudyWarning):
        res = unfinished.cv_results_
    assert np.isnan(res["mean_test_score"][1:]).all()
    assert res["mean_test_score"][0] == done.cv_results_["mean_test_score"][0]
    with pytest.warns(UnfinishedStudyWarning):
        assert unfinished.best_index_ == 0
    with pytest.warns(UnfinishedStudyWarning):
        assert unfinished.best_params_ == unfinished.params[0]
    with pytest.warns(UnfinishedStudyWarning):
        assert unfinished.best_score_ == pytest.approx(res["pooled_test_score"][0])


def test_said_by_the_command_line_it_is_not_said_again(unfinished):
    unfinished.said_unfinished = True  # as bbc_dask.cli._tables.check_finished sets it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in VIEW:
            getattr(unfinished, name)


def test_a_report_of_an_unfinished_study_says_it_by_its_estimates_alone(unfinished, tmp_path):
    """write_report reads cv_results_ and best_index_ for its figures: the study's state is
    said by the warnings of its two estimates (BBC, BBC-F), not again by each figure; the
    study warns again afterwards."""
    from bbc_dask.report import write_report

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        write_report(unfinished, tmp_path / "r", n_bootstraps=20, ci_bootstraps=20)
    said = [w for w in got if issubclass(w.category, UnfinishedStudyWarning)]
    assert len(said) == 2, [str(w.message) for w in said]
    with pytest.warns(UnfinishedStudyWarning):
        unfinished.cv_results_
