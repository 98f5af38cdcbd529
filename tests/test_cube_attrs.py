"""A store that explains itself: ``xr.open_zarr(store)`` opens every study store silently
(consolidated metadata, current after every write of the run), every variable has its
CF-style attributes (``state``'s flag_values/flag_meanings), the parameters are
coordinates on ``config`` equal to the study's, and a store made before stores had them
gets them on its next run."""
import json
import os
import shutil
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd

# two dicts with different keys; C a number everywhere, class_weight None or text,
# fit_intercept a boolean where present
GRID = [{"C": [0.1, 1.0], "class_weight": [None, "balanced"]},
        {"C": [0.5], "fit_intercept": [False]}]


@pytest.fixture(scope="module")
def data():
    return make_classification(60, 4, n_informative=2, random_state=0)


def _run(store, client, data, **kw):
    X, y = data
    return bd.run_study(LogisticRegression(), GRID, X, y, store=store, metric="roc_auc",
                        n_splits=2, random_state=0, client=client, progress=False, **kw)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, client, data):
    """A finished study (with its final model beside the arrays)."""
    store = tmp_path_factory.mktemp("attrs") / "s.zarr"
    _run(store, client, data)
    return store


def open_silently(store, **kw):
    """``xr.open_zarr(store)`` with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return xr.open_zarr(store, **kw)


def check_explains_itself(store, params, storage_options=None):
    """Opens silently; every variable described; the consolidated metadata equal to what
    a listing of the store reads (arrays, their attributes, the root attributes); the
    parameter coordinates equal to ``params``."""
    opts = {"storage_options": storage_options} if storage_options else {}
    ds = open_silently(str(store), **opts)
    for name, var in ds.variables.items():
        assert var.attrs.get("long_name") and var.attrs.get("description"), name
    assert ds["state"].attrs["flag_values"] == [0, 1, 2, 3]
    assert ds["state"].attrs["flag_meanings"] == "pending done failed dropped"
    assert ds["fit_time"].attrs["units"] == "s"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a listing meets the lock and the model
        listed = xr.open_zarr(str(store), consolidated=False, **opts)
    assert set(listed.variables) == set(ds.variables)
    for name in ds.variables:
        assert listed[name].attrs == ds[name].attrs, name
    assert listed.attrs == ds.attrs
    # the study's attributes as the package reads them, every array's metadata from its own file
    store_obj = (zarr.storage.FsspecStore.from_url(store, storage_options=storage_options)
                 if storage_options else str(store))
    real = zarr.open_group(store_obj, mode="r", use_consolidated=False)
    assert ds.attrs["bbc_dask"] == real.attrs["bbc_dask"]
    for name, copy in zarr.open_group(store_obj, mode="r").metadata.consolidated_metadata.metadata.items():
        assert zarr.open_array(store_obj, path=name, mode="r").metadata.to_dict() == copy.to_dict(), name
    check_parameters(ds, params)
    return ds


def check_parameters(ds, params):
    """The coordinates on ``config`` other than its index are the parameters, one per
    key, NaN / "" where a configuration has no such key, JSON text as the attrs say."""
    names = {k for p in params for k in p}
    coords = {n for n, c in ds.coords.items() if c.dims == ("config",) and n != "config"}
    assert coords == names
    for name in names:
        values, attrs = ds[name].values, ds[name].attrs
        for i, p in enumerate(params):
            got = values[i]
            if attrs.get("encoding") == "json":
                assert got == (json.dumps(p[name]) if name in p else ""), (i, name)
            elif name not in p:
                assert (np.isnan(got) if values.dtype.kind == "f" else got == ""), (i, name)
            else:
                assert got == p[name], (i, name)


def test_a_finished_study_opens_silently_and_explains_itself(finished):
    study = bd.open_study(finished)
    ds = check_explains_itself(finished, study.params)
    assert ds["C"].dtype == np.float64 and not np.isnan(ds["C"].values).any()
    assert ds["class_weight"].attrs["encoding"] == "json"  # null beside text
    assert ds["fit_intercept"].values.tolist() == ["", "", "", "", "false"]  # absent from the first dict
    # the user's view (Study.cube) carries the same attributes and coordinates
    view = study.cube
    check_parameters(view, study.params)
    assert view["state"].attrs == ds["state"].attrs
    assert "slot_sample" not in view["prediction"].attrs["description"]  # the view has no slots
    assert all(view[n].attrs.get("long_name") for n in view.variables)


def test_verify_names_an_array_metadata_file_that_differs_from_the_consolidated_copy(
        finished, tmp_path):
    store = tmp_path / "s.zarr"
    shutil.copytree(finished, store)
    assert bd.verify_store(store)[0].ok
    os.remove(store / "pooled" / "zarr.json")  # the package reads the consolidated copy
    report, _ = bd.verify_store(store)
    assert [(d.kind, d.file) for d in report.damaged] == [("metadata", "pooled/zarr.json")]
    assert "is missing" in report.damaged[0].problem
    bd.verify_store(store, repair=True)  # rewritten from the consolidated copy
    assert (store / "pooled" / "zarr.json").exists() and bd.verify_store(store)[0].ok


def _as_made_before(store):
    """The store as versions before this one wrote it: no consolidated metadata, no
    attributes on the arrays, no parameter coordinates, no root description."""
    root = json.loads((store / "zarr.json").read_text())
    for name in root["attributes"]["coordinates"].split():
        shutil.rmtree(store / name)
    for entry in os.scandir(store):
        meta = os.path.join(entry.path, "zarr.json")
        if entry.is_dir() and os.path.exists(meta):
            with open(meta) as f:
                array = json.load(f)
            array["attributes"] = {}
            with open(meta, "w") as f:
                json.dump(array, f)
    root.pop("consolidated_metadata")
    root["attributes"] = {"bbc_dask": root["attributes"]["bbc_dask"]}
    (store / "zarr.json").write_text(json.dumps(root))


@pytest.mark.parametrize("made_before", [False, True], ids=["store", "store made before"])
def test_a_resumed_study_opens_silently_and_explains_itself(finished, tmp_path, client, data,
                                                            made_before):
    """A chunk lost, repaired and recomputed by a resume, which writes the ledger, the
    runs and the final model again: the metadata stays current. A store made before
    stores described themselves reads as before, and its resume describes it."""
    store = tmp_path / "s.zarr"
    shutil.copytree(finished, store)
    if made_before:
        _as_made_before(store)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            xr.open_zarr(str(store))  # what a store made before says
        assert {str(w.message).split(" is not")[0] for w in seen if "not recognized" in str(w.message)} \
            == {"Object at .bbc_lock", "Object at final_model.skops"}
        assert any("consolidated metadata" in str(w.message) for w in seen)
        before = bd.open_study(store)
        assert before.cube["state"].attrs == {} and before.bbc(n_bootstraps=200).estimate is not None
    os.remove(store / "prediction" / "c" / "0" / "1" / "0" / "0")
    assert bd.verify_store(store, repair=True)[1] > 0
    resumed = _run(store, client, data)
    assert (resumed.state == 1).all() and len(resumed.meta["runs"]) == 2
    check_explains_itself(store, resumed.params)
    assert bd.verify_store(store)[0].ok
    np.testing.assert_array_equal(resumed.cube["prediction"].values,
                                  bd.open_study(finished).cube["prediction"].values)


def test_a_study_files_parameters_are_named_as_the_file_writes_them():
    """The study file wraps each entry in the pipeline step ``model``: its coordinates
    drop that prefix (``svc__C``), and ``model`` names the entry's estimator."""
    from sklearn.model_selection import ParameterGrid

    from bbc_dask.cube._attrs import parameter_coordinates
    from bbc_dask.engine import Configurations

    grid = [{"model": ["LogisticRegression()"], "model__C": [0.1, 1.0]},
            {"model": ["Pipeline(SVC())"], "model__svc__C": [1.0], "model__svc__gamma": ["scale", 0.1]}]
    resolved = {"grid": [{"estimator": "LogisticRegression", "grid": {"C": [0.1, 1.0]}},
                         {"pipeline": ["SVC"], "grid": {"svc__C": [1.0], "svc__gamma": ["scale", 0.1]}}]}
    configs = Configurations("grid", ParameterGrid(grid))
    coords = parameter_coordinates(configs.columns(resolved))
    assert set(coords) == {"model", "C", "svc__C", "svc__gamma"}
    assert coords["svc__C"][1]["parameter"] == "model__svc__C"
    assert coords["svc__gamma"][0].tolist() == ["", "", '"scale"', "0.1"]
    np.testing.assert_array_equal(coords["C"][0], [0.1, 1.0, np.nan, np.nan])
    # the same keys without a study file are the estimator's own names
    assert "model__C" in parameter_coordinates(configs.columns(None))
    # a parameter named like an array of the store keeps clear of it
    reserved = Configurations("grid", ParameterGrid({"state": [1, 2]}))
    assert list(parameter_coordinates(reserved.columns())) == ["param_state"]


def test_a_bbcd_study_with_drops_and_a_nested_study_open_silently(tmp_path, client):
    """BBCD-CV writes a decision per wave and marks cells dropped; nested CV records each
    outer result in the attributes as it arrives: both stores open silently, their
    consolidated metadata current."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(100, 10, random_state=0)
    grid = {"max_depth": [1, 3, 8], "min_samples_leaf": [1, 20]}  # 3 of 6 dropped
    s = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=tmp_path / "d.zarr",
                     metric="roc_auc", n_splits=10, random_state=0, client=client, progress=False,
                     dropping=bd.Dropping(alpha=0.9, n_bootstraps=300, min_predictions=50))
    assert s.dropped
    ds = check_explains_itself(tmp_path / "d.zarr", s.params)
    assert (ds["state"].values == 3).any()
    assert ds["max_depth"].dtype == np.int64
    res = bd.nested_cv(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=tmp_path / "n.zarr",
                       metric="accuracy", n_outer=3, n_inner=2, random_state=0, client=client,
                       progress=False)
    assert res is not None
    ds = check_explains_itself(tmp_path / "n.zarr", [{"C": 0.1}, {"C": 1.0}])
    assert "outer" in json.dumps(ds.attrs["bbc_dask"])


@pytest.mark.slow  # a moto S3 server and a study through it: ~10 s
def test_an_object_store_study_opens_silently(s3, client, data):
    url = s3.url("attrs")
    X, y = data
    s = bd.run_study(LogisticRegression(), GRID, X, y, store=url, storage_options=s3.storage_options,
                     metric="roc_auc", n_splits=2, random_state=0, client=client, progress=False)
    check_explains_itself(url, s.params, storage_options=s3.storage_options)
