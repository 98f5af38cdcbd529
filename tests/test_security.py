"""Opening someone else's store or study file never runs their code."""
import json
import os

import numpy as np
import pytest
import skops.io as sio
import zarr
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import bbc_dask as bd
from bbc_dask.cli import main
from bbc_dask.exceptions import UntrustedModelError


def _exploit(marker):
    """The attack of the issue: numpy.full_like fills a string of code, numpy.sum joins
    it, numpy.testing's runstring executes it at predict."""
    import numpy.testing._private.utils as u

    code = f"open({str(marker)!r}, 'w').write('owned')"
    return make_pipeline(
        FunctionTransformer(np.full_like, kw_args={"fill_value": code, "dtype": object}),
        FunctionTransformer(np.sum, kw_args={"axis": None}),
        FunctionTransformer(u.runstring, kw_args={"dict": {}}),
    )


def _set_record(store, **update):
    g = zarr.open_group(str(store), mode="r+")
    meta = dict(g.attrs["bbc_dask"])
    meta["final_model"] = dict(meta["final_model"], **update)
    meta.pop("attributes_digest")  # as a crafter would (it is a check against damage, not a MAC)
    g.attrs["bbc_dask"] = meta


def _reduce_node(module, cls, args):
    """A model file whose ``C`` is ``module.cls(*args)``, built by skops' constructor-from-
    reduce loader (a class skops calls while loading)."""
    import io
    import zipfile

    blob = sio.dumps(LogisticRegression(C=tuple(args)))
    zin = zipfile.ZipFile(io.BytesIO(blob))
    schema = json.loads(zin.read("schema.json"))
    node = schema["content"]["content"]
    node["C"] = {"__class__": cls, "__module__": module, "__loader__": "ConstructorFromReduceNode",
                 "content": node["C"]}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n in zin.namelist():
            z.writestr(n, json.dumps(schema) if n == "schema.json" else zin.read(n))
    return out.getvalue()


@pytest.fixture(scope="module")
def small_study(tmp_path_factory, cancer, client):
    X, y = cancer
    store = tmp_path_factory.mktemp("model") / "s.zarr"
    bd.run_study(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                 {"logisticregression__C": [0.1, 1.0]}, X, y, store=store, metric="roc_auc",
                 n_splits=3, random_state=0, client=client, progress=False)
    return store


def _attack(store, blob, classes):
    """What someone who can write the store can do: replace the file and rewrite its record
    (digest and trusted classes; the signature cannot be made without the user's key)."""
    import hashlib

    (store / "final_model.skops").write_bytes(blob)
    _set_record(store, sha256=hashlib.sha256(blob).hexdigest(), classes=classes)


def test_a_crafted_final_model_is_refused(tmp_path, small_study, cancer):
    X, _ = cancer
    store = tmp_path / "s.zarr"
    import shutil

    shutil.copytree(small_study, store)
    assert bd.open_study(store).final_model.predict(X[:3]).shape == (3,)  # the real one loads
    marker = tmp_path / "OWNED"
    blob = sio.dumps(_exploit(marker))
    # 1. the file alone replaced: it is not the file the study saved
    (store / "final_model.skops").write_bytes(blob)
    with pytest.raises(UntrustedModelError, match="not the file the study saved"):
        bd.open_study(store).final_model
    # 2. the record rewritten too, every type listed as trusted: the list is not signed
    _attack(store, blob, sio.get_untrusted_types(data=blob))
    with pytest.raises(UntrustedModelError, match=r"runstring.*Functions are trusted only when you name them"):
        bd.open_study(store).final_model
    assert not marker.exists()
    # 3. a module prefix is no longer enough: numpy.* functions are not trusted by default
    with pytest.raises(UntrustedModelError, match="numpy.full_like"):
        bd.open_study(store).load_final_model(trusted=["numpy.testing._private.utils.runstring"])
    assert not marker.exists()


@pytest.mark.parametrize("module, cls, args", [
    ("numpy.distutils.fcompiler.gnu", "Popen", [["sh", "-c", "touch {marker}"]]),  # re-exported
    ("numpy", "memmap", ["{marker}", "uint8", "w+", 0, [16]]),  # creates or truncates a file
])
def test_classes_that_act_when_built_are_refused(tmp_path, small_study, module, cls, args):
    store = tmp_path / "s.zarr"
    import shutil

    shutil.copytree(small_study, store)
    marker = tmp_path / "MADE"
    args = json.loads(json.dumps(args).replace("{marker}", str(marker)))
    blob = _reduce_node(module, cls, args)
    _attack(store, blob, [f"{module}.{cls}"])
    with pytest.raises(UntrustedModelError, match=f"{module}.{cls}"):
        bd.open_study(store).final_model
    import time

    time.sleep(0.3)  # a started process would have made the file by now
    assert not marker.exists()


def test_functions_in_a_model_load_when_named(tmp_path, cancer, client):
    X, y = cancer
    clip = FunctionTransformer(np.clip, kw_args={"a_min": -1e6, "a_max": 1e6})
    store = tmp_path / "f.zarr"
    bd.run_study(make_pipeline(clip, StandardScaler(), LogisticRegression(max_iter=500)),
                 {"logisticregression__C": [1.0]}, X, y, store=store, metric="roc_auc",
                 n_splits=3, random_state=0, client=client, progress=False)
    rec = bd.open_study(store).meta["final_model"]
    assert rec["others"] == ["numpy.clip"] and len(rec["sha256"]) == 64
    with pytest.raises(UntrustedModelError, match=r"\['numpy.clip'\]"):
        bd.open_study(store).final_model
    model = bd.open_study(store).load_final_model(trusted=["numpy.clip"])
    assert model.predict(X[:4]).shape == (4,)
    with pytest.raises(TypeError, match="'trusted' parameter of load_final_model must be a list"):
        bd.open_study(store).load_final_model(trusted="numpy.clip")


def test_own_estimator_classes_load_by_signature_only(tmp_path, cancer, client, monkeypatch):
    """A custom estimator class: trusted by this user's signed record; a model saved with
    another key (another user or machine) needs the class named."""
    import _estimators

    X, y = cancer
    store = tmp_path / "own.zarr"
    bd.run_study(_estimators.Sleepy(nap=0.0, max_iter=500), {"C": [1.0]}, (X - X.mean(0)) / X.std(0),
                 y, store=store, metric="roc_auc", n_splits=3, random_state=0, client=client,
                 progress=False)
    rec = bd.open_study(store).meta["final_model"]
    assert rec["classes"] == ["_estimators.Sleepy"]
    assert type(bd.open_study(store).final_model).__name__ == "Sleepy"
    monkeypatch.setenv("BBC_DASK_TRUST_KEY", str(tmp_path / "someone-else.key"))
    with pytest.raises(UntrustedModelError, match=r"\['_estimators.Sleepy'\]"):
        bd.open_study(store).final_model
    assert type(bd.open_study(store).load_final_model(trusted=["_estimators.Sleepy"])).__name__ == "Sleepy"


def test_a_tree_model_loads_from_its_store(tmp_path, cancer, client):
    """A tree keeps its state in ``sklearn.tree._tree.Tree``, outside skops' defaults:
    the study's own signed record trusts it; the model predicts as the one refit."""
    from sklearn.ensemble import RandomForestClassifier

    X, y = cancer
    study = bd.run_study(RandomForestClassifier(n_estimators=5, random_state=0), {"max_depth": [2]},
                         X, y, store=tmp_path / "trees.zarr", metric="roc_auc", n_splits=3,
                         random_state=0, client=client, progress=False)
    assert "sklearn.tree._tree.Tree" in study.meta["final_model"]["classes"]
    loaded = bd.open_study(tmp_path / "trees.zarr").final_model
    np.testing.assert_array_equal(loaded.predict_proba(X), study.final_model.predict_proba(X))


def _study_file(tmp_path, grid_entry, extra=""):
    entry = json.dumps(grid_entry)
    path = tmp_path / "study.yaml"
    path.write_text(f"data: {{sklearn: breast_cancer}}\ngrid:\n  - {entry}\n"
                    f"cv: {{splits: 3}}\nstore: s.zarr\n{extra}")
    return path


def _run_cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("entry, match", [
    ({"estimator": "subprocess.Popen", "params": {"args": ["touch", "{marker}"]}},
     r"grid\[0\]\.estimator: subprocess\.Popen is not a scikit-learn estimator class"),
    ({"estimator": "numpy.save", "params": {"file": "{marker}", "arr": [1]}},
     r"grid\[0\]\.estimator: numpy\.save is not a scikit-learn estimator class \(a class with fit and get_params\)"),
    ({"estimator": "builtins.eval", "params": {}}, r"builtins\.eval is not a scikit-learn estimator class"),
    ({"estimator": "pip.__main__.Thing"}, r"pip\.__main__\.Thing is not a scikit-learn estimator class"),
    ({"pipeline": ["sklearn.preprocessing.StandardScaler",
                   {"estimator": "numpy.save", "params": {"file": "{marker}", "arr": [1]}}]},
     r"grid\[0\]\.pipeline\[1\]\.estimator: numpy\.save is not"),
    ({"estimator": "sklearn.ensemble.BaggingClassifier",
      "params": {"estimator": {"estimator": "numpy.save", "params": {"file": "{marker}", "arr": [1]}}}},
     r"grid\[0\]\.params\.estimator\.estimator: numpy\.save is not"),
    ({"estimator": "sklearn.ensemble.BaggingClassifier",
      "grid": {"estimator": [{"estimator": "subprocess.Popen", "params": {"args": ["touch", "{marker}"]}}]}},
     r"grid\[0\]\.grid\.estimator\[0\]\.estimator: subprocess\.Popen is not"),
])
def test_a_study_file_calls_only_estimator_classes(tmp_path, entry, match):
    marker = tmp_path / "CALLED"
    entry = json.loads(json.dumps(entry).replace("{marker}", str(marker)))
    res = _run_cli("run", _study_file(tmp_path, entry), "--no-progress")
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert "bbc-dask: error: study file: " in res.output
    import re

    assert re.search(match, res.output), res.output
    assert not list(tmp_path.glob("CALLED*"))  # numpy.save would have written CALLED.npy
    assert not (tmp_path / "s.zarr").exists()


LR = "sklearn.linear_model.LogisticRegression"


@pytest.mark.parametrize("entry, match", [
    ({"estimator": "sklearn.pipeline.Pipeline",
      "params": {"steps": [["scale", "sklearn.preprocessing.StandardScaler"], ["lr", LR]], "memory": "{cache}"},
      "grid": {"lr__C": [0.1, 1.0]}},
     r"grid\[0\]\.params\.memory: a study file sets no cache directory \(got '.*cache'\): joblib's cache "
     r"writes pickles there and loads them back, so a file planted there would run code; leave it null$"),
    ({"pipeline": ["sklearn.preprocessing.StandardScaler", LR], "grid": {"memory": [None, "{cache}"]}},
     r"grid\[0\]\.grid\.memory\[1\]: a study file sets no cache directory"),
    ({"pipeline": [{"estimator": "sklearn.cluster.FeatureAgglomeration", "params": {"memory": "{cache}"}}, LR]},
     r"grid\[0\]\.pipeline\[0\]\.params\.memory: a study file sets no cache directory"),
    ({"estimator": "sklearn.cluster.AgglomerativeClustering", "params": {"memory": "{cache}"}},
     r"grid\[0\]\.params\.memory: a study file sets no cache directory"),
    ({"pipeline": [{"estimator": "sklearn.pipeline.Pipeline", "params": {
        "steps": [["scale", "sklearn.preprocessing.StandardScaler"]]}}, LR],
      "grid": {"pipeline__memory": ["{cache}"]}},
     r"grid\[0\]\.grid\.pipeline__memory\[0\]: a study file sets no cache directory"),
    ({"estimator": "sklearn.ensemble.BaggingClassifier", "grid": {"estimator": [
        {"estimator": "sklearn.pipeline.Pipeline", "params": {"steps": [["lr", LR]], "memory": "{cache}"}}]}},
     r"grid\[0\]\.grid\.estimator\[0\]\.params\.memory: a study file sets no cache directory"),
])
def test_a_study_file_sets_no_joblib_cache(tmp_path, entry, match):
    """joblib's Memory pickles into its directory and unpickles from it on the driver and
    every worker: a study file naming one could make them load a planted pickle."""
    cache = tmp_path / "joblib_cache"
    entry = json.loads(json.dumps(entry).replace("{cache}", str(cache)))
    res = _run_cli("run", _study_file(tmp_path, entry), "--no-progress")
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    import re

    assert re.search(match, res.output), res.output
    assert not cache.exists() and not (tmp_path / "s.zarr").exists()


def test_a_stored_study_file_with_a_cache_is_refused_when_rebuilt(tmp_path):
    """``Study.params`` rebuilds a store's configurations from its stored study file (no
    schema on that way): the same refusal; null, the default, is accepted everywhere."""
    from bbc_dask._composed import build_search
    from bbc_dask.exceptions import StudyFileError

    cache = tmp_path / "joblib_cache"
    entry = {"estimator": "sklearn.pipeline.Pipeline", "params": {"steps": [["lr", LR]], "memory": str(cache)},
             "grid": {"lr__C": [1.0]}}
    with pytest.raises(StudyFileError, match=r"^study file: grid\[0\]\.params\.memory: a study file sets no "):
        build_search({"grid": [entry]})
    with pytest.raises(StudyFileError, match=r"^study file: grid\[0\]\.grid\.pipeline__memory\[0\]: "):
        build_search({"grid": [{"pipeline": [{"estimator": "sklearn.pipeline.Pipeline", "params": {
            "steps": [["lr", LR]]}}], "grid": {"pipeline__memory": [str(cache)]}}]})
    est, grids = build_search({"grid": [dict(entry, params=dict(entry["params"], memory=None),
                                             grid={"memory": [None], "lr__C": [1.0]})]})
    assert est.named_steps["model"].memory is None and grids[0]["model__memory"] == [None]
    assert not cache.exists()


def _plant(directory, name, marker, package=False):
    """A module whose top-level code leaves ``marker`` behind, holding a real estimator
    class (so only where it was found can refuse it)."""
    code = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('module code ran on import')\n"
            "from sklearn.linear_model import LogisticRegression\n\n\n"
            "class Estimator(LogisticRegression):\n    pass\n")
    directory.mkdir(exist_ok=True)
    if package:
        (directory / name).mkdir()
        (directory / name / "__init__.py").write_text(code)
    else:
        (directory / f"{name}.py").write_text(code)


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """``(here, files, marker)``: the current directory (on ``sys.path`` as ``''``, as
    under ``python -c`` and Jupyter) and a study file's directory, both empty; the names
    planted there are forgotten afterwards."""
    import importlib
    import sys

    here, files = tmp_path / "here", tmp_path / "files"
    here.mkdir()
    files.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.syspath_prepend("")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    yield here, files, tmp_path / "IMPORTED_AND_RAN"
    for name in [m for m in sys.modules if m.startswith("planted_")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _study_in(files, estimator):
    path = files / "study.yaml"
    path.write_text(f"data: {{sklearn: breast_cancer}}\ngrid:\n  - estimator: {estimator}\nstore: s.zarr\n")
    return path


@pytest.mark.parametrize("where, package", [("here", False), ("here", True), ("files", False)])
def test_a_study_file_does_not_import_a_module_planted_beside_it(planted, monkeypatch, where, package):
    """Importing runs a module's top-level code before its class can be checked: a module
    found only in the current directory, or in the study file's (here put on sys.path as
    ``python files/run.py`` does), is refused without being imported."""
    from bbc_dask.cli._studyfile import load_study_file
    from bbc_dask.exceptions import StudyFileError

    here, files, marker = planted
    name = f"planted_{where}_{int(package)}"
    _plant(here if where == "here" else files, name, marker, package)
    if where == "files":
        monkeypatch.syspath_prepend(str(files))
    said = {"here": f"the current directory \\({here}\\)", "files": f"the study file's directory \\({files}\\)"}
    with pytest.raises(StudyFileError, match=rf"^study file: grid\[0\]\.estimator: module '{name}' \(of "
                                             rf"{name}\.Estimator\) is found in {said[where]}, which a study "
                                             rf"file does not import from: install it, or put its directory "
                                             rf"on PYTHONPATH$"):
        load_study_file(_study_in(files, f"{name}.Estimator"))
    assert not marker.exists()
    # named in PYTHONPATH, the user's own choice: imported as before
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/nonexistent", str(here if where == "here" else files)]))
    resolved = load_study_file(_study_in(files, f"{name}.Estimator"))
    assert resolved["grid"][0]["estimator"] == f"{name}.Estimator" and marker.exists()


def test_the_command_line_and_a_stored_study_file_refuse_it_too(planted):
    """In-process (CliRunner, as a notebook would call main) and ``Study.params``, which
    rebuilds a store's configurations from its stored study file: refused, nothing run."""
    from bbc_dask._composed import build_search
    from bbc_dask.exceptions import StudyFileError

    here, files, marker = planted
    _plant(here, "planted_cli", marker)
    res = _run_cli("run", _study_in(files, "planted_cli.Estimator"), "--no-progress")
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert "module 'planted_cli' (of planted_cli.Estimator) is found in the current directory" in res.output
    with pytest.raises(StudyFileError, match=r"module 'planted_cli' .* is found in the current directory"):
        build_search({"grid": [{"estimator": "sklearn.ensemble.BaggingClassifier", "params": {}, "grid": {
            "estimator": [{"estimator": "planted_cli.Estimator"}]}}]})
    assert not marker.exists() and not (files / "s.zarr").exists()


def test_an_installed_module_in_the_current_directory_is_imported(planted, monkeypatch):
    """An editable install whose files are in the current directory (its finder maps the
    name to them) is found there through ``''`` and through its finder: imported; so are
    the suite's own estimators (``tests/`` on sys.path through pytest's pythonpath)."""
    import importlib.abc
    import importlib.util
    import sys

    from bbc_dask.cli._studyfile import resolve_study_file

    here, _, marker = planted
    _plant(here, "planted_installed", marker)

    class Editable(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname == "planted_installed":
                return importlib.util.spec_from_file_location(fullname, here / "planted_installed.py")
            return None

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Editable()])
    got = resolve_study_file({"data": {"sklearn": "iris"}, "grid": [{"estimator": "planted_installed.Estimator"}]})
    assert got["grid"][0]["estimator"] == "planted_installed.Estimator" and marker.exists()
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    resolve_study_file({"data": {"sklearn": "iris"}, "grid": [{"estimator": "_estimators.Sleepy"}]})


def test_nested_estimators_in_a_study_file(tmp_path):
    from bbc_dask.cli._studyfile import build_search, load_study_file

    path = _study_file(tmp_path, {
        "estimator": "sklearn.ensemble.BaggingClassifier",
        "params": {"n_estimators": 3,
                   "estimator": {"estimator": "sklearn.tree.DecisionTreeClassifier",
                                 "params": {"max_depth": 2}}},
        "grid": {"estimator": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "params": {"max_depth": 1}},
                               {"estimator": "sklearn.linear_model.LogisticRegression"}]}})
    est, grids = build_search(load_study_file(path))
    inner = [g["model__estimator"] for g in grids][0]
    assert [type(e).__name__ for e in inner] == ["DecisionTreeClassifier", "LogisticRegression"]
    assert inner[0].max_depth == 1
    assert est.named_steps["model"].estimator.max_depth == 2


def test_recursive_yaml_and_alias_bombs_are_refused(tmp_path):
    f = tmp_path / "rec.yaml"
    f.write_text("data: {sklearn: breast_cancer}\ngrid:\n  - estimator: sklearn.svm.SVC\n"
                 "    grid: {C: &a [1.0, *a]}\n")
    res = _run_cli("run", f)
    assert res.exit_code == 2 and "a YAML alias refers to itself" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):  # 9**9 = 387 million strings once expanded
        prev = chr(ord("a") + i - 1)
        name = chr(ord("a") + i)
        lines.append(f"{name}: &{name} [{', '.join('*' + prev for _ in range(9))}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\ndata: {sklearn: breast_cancer}\n")
    res = _run_cli("run", bomb)
    assert res.exit_code == 2 and "expands to more than 1,000,000 values" in res.output, res.output
    deep = tmp_path / "deep.yaml"
    deep.write_text("data: " + "[" * 5000 + "]" * 5000 + "\n")
    res = _run_cli("run", deep)
    assert res.exit_code == 2 and "study file: " in res.output, res.output


@pytest.mark.parametrize("cluster", [
    "{kind: local, n_workers: 1, scheduler_kwargs: {preload: ['{evil}']}}",
    "{kind: local, n_workers: 1, preload: ['{evil}']}",
    "{kind: local, worker_class: distributed.Nanny}",
    "{address: 'tcp://127.0.0.1:1', preload: ['{evil}']}",
])
def test_a_study_file_cannot_make_a_cluster_run_code(tmp_path, cluster):
    marker = tmp_path / "RAN"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    path = _study_file(tmp_path, {"estimator": "sklearn.tree.DecisionTreeClassifier"},
                       extra=f"cluster: {cluster.replace('{evil}', str(evil))}\n")
    res = _run_cli("run", path, "--no-progress")
    assert res.exit_code == 2 and "unknown option for a" in res.output, res.output
    assert not marker.exists()
