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


@pytest.fixture(autouse=True)
def _cluster(client):
    """The session's cluster for every run here (a cluster per run would cost seconds)."""
    _CLIENT[0] = client
    yield


_CLIENT = [None]


def _run(est, grid, data, store, **kw):
    X, y = data
    return bd.run_study(est, grid, X, y, metric="roc_auc", store=store, n_splits=3,
                        random_state=0, client=_CLIENT[0], progress=False, **kw)


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


@pytest.mark.parametrize("array", ["fold_score", pytest.param("pooled", marks=pytest.mark.slow),
                                   pytest.param("error", marks=pytest.mark.slow)])
def test_a_rerun_refuses_an_edited_ledger_and_never_records_it(tmp_path, data, array):
    """A finished study's ledger edited through Zarr: the rerun (0 fits) stops with the
    damage error naming the chunk instead of recording the edit as the study's; verify
    still names it, and a repair and a rerun give the study back bit for bit."""
    import zarr

    store = tmp_path / "s.zarr"
    first = _run(LogisticRegression(), {"C": [0.01, 0.1, 1.0, 10.0]}, data, store)
    arr = zarr.open_array(str(store / array), mode="r+")
    if array == "fold_score":
        arr[first.best_index_ ^ 1, 0, 1] = 0.99
    elif array == "pooled":
        arr[first.best_index_ ^ 1, 0] = 0.99
    else:
        arr[2] = "RuntimeError: edited"
    chunk = f"{array}/c/0" + ("/0/0" if array == "fold_score" else "/0" if array == "pooled" else "")
    for _ in range(2):  # the refusal leaves the store as it was: refused again
        with pytest.raises(bd.exceptions.StoreDamagedError,
                           match=rf"{chunk} differs from what the study recorded"):
            _run(LogisticRegression(), {"C": [0.01, 0.1, 1.0, 10.0]}, data, store)
    report, _ = bd.verify_store(store)
    assert [d.file for d in report.damaged] == [chunk]
    bd.verify_store(store, repair=True)
    again = _run(LogisticRegression(), {"C": [0.01, 0.1, 1.0, 10.0]}, data, store)
    assert again.best_index_ == first.best_index_
    np.testing.assert_array_equal(again.fold_scores(), first.fold_scores())
    assert bd.verify_store(store)[0].ok


def test_an_edit_to_an_unfinished_study_is_refused_by_its_resume(tmp_path, data):
    """Checksums are recorded with each ledger batch: the ledger of a study whose run
    stopped half-way is covered too."""
    import zarr

    from _helpers import rewrite_ledger
    from bbc_dask.cube import open_cube

    store = tmp_path / "u.zarr"
    _run(LogisticRegression(), {"C": [0.1, 1.0]}, data, store)
    cube = open_cube(store, mode="r+")
    st = cube.state()
    st[:, :, 2] = 0  # the last fold pending again, as a stopped run leaves it
    rewrite_ledger(cube, "state", st)
    zarr.open_array(str(store / "fold_score"), mode="r+")[0, 0, 0] = 0.5
    with pytest.raises(bd.exceptions.StoreDamagedError, match=r"fold_score/c/0/0/0 differs"):
        _run(LogisticRegression(), {"C": [0.1, 1.0]}, data, store)


@pytest.mark.parametrize("array,how", [("fold_score", "deleted"), ("pooled", "edited")] + [
    pytest.param(*case, marks=pytest.mark.slow)  # the default suite keeps two
    for case in (("fit_time", "deleted"), ("pooled", "deleted"), ("fold_score", "edited"))])
def test_a_repair_rebuilds_derived_chunks_without_training(tmp_path, data, array, how):
    """Fold scores and pooled scores are functions of the stored predictions, and a fit
    time a record: a lost or edited chunk of them is rebuilt by the repair (fit times
    marked unknown), and the rerun trains nothing — the study bit for bit as before."""
    import os

    import zarr

    store = tmp_path / "d.zarr"
    grid = {"C": [0.01, 0.1, 1.0, 10.0]}
    first = _run(LogisticRegression(), grid, data, store, n_repeats=2)
    stored_times = bd.open_study(store).cv_results_["mean_fit_time"]
    chunk = f"{array}/c/0/1" + ("/0" if array != "pooled" else "")
    if how == "deleted":
        os.remove(store / chunk)
    else:
        arr = zarr.open_array(str(store / array), mode="r+")
        arr[(first.best_index_ ^ 1, 1) + ((0,) if array == "fold_score" else ())] = 0.99
    report, _ = bd.verify_store(store)
    assert [d.file for d in report.damaged] == [chunk]
    if (array, how) == ("fold_score", "deleted"):  # the command line says what it did
        from click.testing import CliRunner

        from bbc_dask.cli import main

        res = CliRunner().invoke(main, ["verify", "--repair", str(store)])
        assert "repaired: 0 cells marked pending, 1 ledger chunks rebuilt from the stored " \
               "predictions; run the study again" in res.output, res.output
    else:
        rep, reset = bd.verify_store(store, repair=True)
        assert reset == 0 and rep.rebuilt == 1
    assert bd.verify_store(store)[0].ok
    again = _run(LogisticRegression(), grid, data, store, n_repeats=2)
    assert again.n_fits_ == 0  # the final model kept: nothing trained, not even a refit
    np.testing.assert_array_equal(again.fold_scores(), first.fold_scores())
    np.testing.assert_array_equal(again._cube.pooled(), first._cube.pooled())
    assert again.best_index_ == first.best_index_
    assert again.bbc_f(n_bootstraps=200).estimate == first.bbc_f(n_bootstraps=200).estimate
    times = again.cv_results_["mean_fit_time"]
    if array == "fit_time":  # unknown where the chunk was lost: repeat 1's
        assert np.isfinite(times).all()  # the mean over the known folds
        assert np.isnan(again._cube.fit_times()[:, 1]).all()
    else:
        np.testing.assert_array_equal(times, stored_times)


def _as_older_store(store):
    """The store as a version before ``ledger_crc`` wrote it: no array, the checksums of
    a finished run in the attributes (``{array: [[crc per repeat] per ledger chunk]}``)."""
    import shutil

    from bbc_dask.cube import open_cube
    from bbc_dask.cube._attrs import consolidate
    from bbc_dask.cube._ledger_check import CHECKED, current

    cube = open_cube(store, mode="r+")
    now = current(cube)
    old = {name: [[int(now[i, r, a]) for r in range(now.shape[1])] for i in range(now.shape[0])]
           for a, name in enumerate(CHECKED[:4])}  # those an older version recorded
    cube.set_meta(ledger_crc=old)
    shutil.rmtree(store / "ledger_crc")
    consolidate(cube.location.zarr_store())


def test_an_older_store_is_checked_against_its_attribute_checksums_and_gets_the_array(tmp_path, data):
    import zarr

    from bbc_dask.cube import open_cube

    grid = {"C": [0.1, 1.0]}
    store = tmp_path / "o.zarr"
    first = _run(LogisticRegression(), grid, data, store)
    _as_older_store(store)
    assert "ledger_crc" not in zarr.open_group(str(store), mode="r")
    edited = tmp_path / "e.zarr"
    import shutil

    shutil.copytree(store, edited)
    zarr.open_array(str(edited / "fold_score"), mode="r+")[0, 0, 0] = 0.5
    with pytest.raises(bd.exceptions.StoreDamagedError, match=r"fold_score/c/0/0/0 differs"):
        _run(LogisticRegression(), grid, data, edited)
    again = _run(LogisticRegression(), grid, data, store)  # as before: resumed, nothing fitted
    assert again.n_fits_ == 0 and again.best_index_ == first.best_index_
    cube = open_cube(store)
    assert cube.meta["ledger_crc"] == "array" and "ledger_crc" in cube.group
    assert bd.verify_store(store)[0].ok
