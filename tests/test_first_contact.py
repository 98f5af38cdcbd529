"""What a new user meets first: the README's code as pasted, failing configurations,
BBCSearchCV's defaults, and the same estimate however it is asked for."""
import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine, make_classification
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import bbc_dask as bd
from bbc_dask.cli import main
from _cli import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_scripts():
    """The README's complete Python examples (those that import bbc_dask and elide nothing)."""
    text = open(os.path.join(ROOT, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return [b for b in blocks if b.startswith("import bbc_dask as bd") and "..." not in b
            and "s3://" not in b]


def test_the_readme_has_runnable_examples():
    assert len(readme_scripts()) >= 3


@pytest.mark.parametrize("i", range(3))
def test_readme_examples_run_as_pasted_into_a_script(tmp_path, i):
    """No ``if __name__ == "__main__"`` guard, as a scikit-learn user writes: the local
    cluster's worker processes must not re-run the script."""
    script = tmp_path / "example.py"
    script.write_text(readme_scripts()[i])
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "bootstrapping phase" not in p.stderr


def test_an_unguarded_script_still_shows_its_own_errors(tmp_path):
    script = tmp_path / "mine.py"
    script.write_text(
        "import numpy as np\nfrom sklearn.base import BaseEstimator, ClassifierMixin\n"
        "from sklearn.datasets import load_breast_cancer\nimport bbc_dask as bd\n\n"
        "class Mine(ClassifierMixin, BaseEstimator):\n"
        "    def __init__(self, k=1):\n        self.k = k\n"
        "    def fit(self, X, y):\n        raise ValueError('boom from user code')\n"
        "    def predict(self, X):\n        return np.zeros(len(X))\n\n"
        "X, y = load_breast_cancer(return_X_y=True)\n"
        "bd.run_study(Mine(), {'k': [1, 2]}, X, y, store='s.zarr', metric='accuracy', n_splits=3,\n"
        "             error_score='raise', progress=False)\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode != 0
    assert "boom from user code" in p.stderr and "bootstrapping phase" not in p.stderr


def _csv_study(tmp_path, bad_column, **over):
    X, y = load_breast_cancer(return_X_y=True)
    import pandas as pd

    df = pd.DataFrame(X[:, :5], columns=[f"f{i}" for i in range(5)])
    if bad_column:
        df["colour"] = np.where(y == 1, "red", "blue")
    df["label"] = y
    df.to_csv(tmp_path / "data.csv", index=False)
    spec = {"data": {"path": "data.csv", "target": "label"},
            "grid": [{"estimator": "sklearn.linear_model.LogisticRegression",
                      "params": {"max_iter": 300}, "grid": {"C": [0.01, 0.1, 1.0, 10.0]}}],
            "cv": {"splits": 3}, "metric": "roc_auc", "bootstraps": 100, "random_state": 0,
            "store": "s.zarr", "cluster": {"kind": "local", "n_workers": 1}} | over
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    return f


def _cli(*args):
    return run_cli(*args)  # in this process; the entry point's own test is test_cli's


#: Every configuration fails in its fits (C must be positive; set_params does not check it).
BAD_GRID = [{"estimator": "sklearn.linear_model.LogisticRegression",
             "params": {"max_iter": 300, "C": -1.0}, "grid": {"tol": [1e-4, 1e-3, 1e-2, 1e-1]}}]


def test_when_every_configuration_fails_the_run_says_why_and_exits_non_zero(tmp_path):
    # a string column is refused at load, before anything runs
    p = _cli("run", _csv_study(tmp_path, bad_column=True), "--no-progress")
    assert p.returncode == 2 and "column 'colour' holds strings" in p.stderr, p.stderr
    f = _csv_study(tmp_path, bad_column=False, grid=BAD_GRID)
    p = _cli("run", f, "--no-progress")
    assert p.returncode == 2, p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bbc-dask: error: Every configuration failed (4 of 4)")
    assert "InvalidParameterError: The 'C' param" in err[0]
    st = _cli("status", tmp_path / "s.zarr")
    assert st.returncode == 0 and "4 configurations failed" in st.stdout
    assert re.search(r"4 x InvalidParameterError: The 'C' parameter", st.stdout)
    js = json.loads(_cli("status", tmp_path / "s.zarr", "--json").stdout)
    assert js["failures"][0]["count"] == 4 and js["failures"][0]["configs"] == [0, 1, 2, 3]
    est = _cli("estimate", tmp_path / "s.zarr")
    assert est.returncode == 2 and "4 configurations failed, most with: InvalidParameterError" in est.stderr


@pytest.mark.slow  # 12 s of command-line processes: the default suite stays under its limit
def test_partial_failures_are_shown_by_run_status_estimate_and_report(tmp_path):
    f = _csv_study(tmp_path, bad_column=False,
                   grid=[{"estimator": "sklearn.linear_model.LogisticRegression",
                          "params": {"max_iter": 300}, "grid": {"C": [0.01, 1.0, -1.0]}}])
    p = _cli("run", f, "--no-progress")
    assert p.returncode == 0, p.stderr
    want = "1 x InvalidParameterError: The 'C' parameter of LogisticRegression must be a float in the range (0.0, inf]"
    assert "1 configuration failed" in p.stdout and want in p.stdout and "(configurations 2)" in p.stdout
    assert p.stdout.count("1 configuration failed") == 1  # said once, not after each section
    assert "BBC" in p.stdout  # the estimate is still given, over the configurations that ran
    assert want in _cli("status", tmp_path / "s.zarr").stdout
    assert want in _cli("estimate", tmp_path / "s.zarr").stdout
    out = tmp_path / "rep"
    assert _cli("report", tmp_path / "s.zarr", "--out", out).returncode == 0
    page = (out / "index.html").read_text()
    assert "Failed configurations (1)" in page and "must be a float in the range" in page


def test_error_score_raise_in_a_study_file(tmp_path):
    f = _csv_study(tmp_path, bad_column=False, error_score="raise", grid=BAD_GRID)
    p = _cli("run", f, "--no-progress")
    assert p.returncode == 2, p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "raised on repeat 0, fold" in err[0] and "The 'C' parameter" in err[0]
    bad = _csv_study(tmp_path, bad_column=False, error_score=0)
    res = CliRunner().invoke(main, ["run", str(bad)])
    assert res.exit_code == 2 and "error_score: expected nan" in res.output


@pytest.fixture(scope="module")
def regression_and_multiclass():
    return load_diabetes(return_X_y=True), load_wine(return_X_y=True)


def test_bbcsearchcv_default_scoring_is_the_estimators_own(regression_and_multiclass, client, tmp_path):
    (Xr, yr), (Xm, ym) = regression_and_multiclass
    reg = bd.BBCSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, cv=3, n_bootstraps=100,
                         random_state=0, client=client).fit(Xr, yr)
    assert reg.study_.metric == "r2" and reg.bbc_.metric == "r2"
    assert reg.score(Xr, yr) == pytest.approx(reg.best_estimator_.score(Xr, yr))
    clf = bd.BBCSearchCV(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                         {"logisticregression__C": [0.1, 1.0]}, cv=3, n_bootstraps=100,
                         random_state=0, client=client).fit(Xm, ym)
    assert clf.study_.metric == "accuracy" and len(clf.classes_) == 3
    assert clf.score(Xm, ym) == pytest.approx(clf.best_estimator_.score(Xm, ym))
    from sklearn.cluster import KMeans
    from sklearn.model_selection import GridSearchCV

    # neither a classifier nor a regressor: its own score selects, as in GridSearchCV
    grid = {"n_clusters": [2, 3, 4]}
    km = bd.BBCSearchCV(KMeans(n_init=2, random_state=0), grid, cv=3, n_bootstraps=50,
                        client=client).fit(Xm, ym)
    gs = GridSearchCV(KMeans(n_init=2, random_state=0), grid, cv=3).fit(Xm, ym)
    assert km.best_index_ == gs.best_index_ and not hasattr(km, "bbc_")
    np.testing.assert_allclose(km.cv_results_["mean_test_score"], gs.cv_results_["mean_test_score"])


def test_every_way_of_asking_gives_the_same_estimate(tmp_path, client):
    X, y = load_breast_cancer(return_X_y=True)
    store = tmp_path / "s.zarr"
    study = bd.run_study(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                         {"logisticregression__C": [0.01, 0.1, 1.0]}, X, y, store=store,
                         metric="roc_auc", n_splits=5, random_state=None, client=client,
                         progress=False)
    first = study.bbc(n_bootstraps=300)
    assert study.bbc(n_bootstraps=300).estimate == first.estimate
    opened = bd.open_study(store)
    np.testing.assert_array_equal(opened.bbc(n_bootstraps=300).bootstrap_distribution,
                                  first.bootstrap_distribution)
    assert opened.bbc_f(n_bootstraps=300).estimate == study.bbc_f(n_bootstraps=300).estimate
    got = json.loads(_cli("estimate", store, "--json", "--bootstraps", 300).stdout)
    assert got["bbc"]["estimate"] == first.estimate and got["bbc"]["lower_bound"] == first.lower_bound
    assert got["bbc"]["random_state"] == study.spec["seed"]
    # a fixed random_state is the same seed as passing it to bbc_dask.bbc
    fixed = bd.run_study(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                         {"logisticregression__C": [0.01, 0.1, 1.0]}, X, y,
                         store=tmp_path / "f.zarr", metric="roc_auc", n_splits=5, random_state=7,
                         client=client, progress=False)
    direct = bd.bbc(fixed.cube["prediction"].values, y, metric="roc_auc", n_bootstraps=300,
                    random_state=7)
    assert fixed.bbc(n_bootstraps=300).estimate == direct.estimate
    est = bd.BBCSearchCV(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                         {"logisticregression__C": [0.1, 1.0]}, scoring="roc_auc", cv=3,
                         n_bootstraps=200, store=str(tmp_path / "search.zarr"),
                         client=client).fit(X, y)
    np.testing.assert_array_equal(est.bbc_.bootstrap_distribution,
                                  bd.open_study(tmp_path / "search.zarr").bbc(n_bootstraps=200).bootstrap_distribution)


def test_each_estimate_names_its_own_configuration_and_resamples(tmp_path, client):
    # data on which BBC's winner (best pooled AUC) and BBC-F's (best mean fold AUC) differ
    X, y = make_classification(n_samples=80, n_features=10, n_informative=3, random_state=0)
    store = tmp_path / "s.zarr"
    study = bd.run_study(LogisticRegression(max_iter=300), {"C": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0]},
                         X, y, store=store, metric="roc_auc", n_splits=5, random_state=0,
                         client=client, progress=False)
    a, f = study.bbc(n_bootstraps=50), study.bbc_f(n_bootstraps=50)
    assert a.selected_config != f.selected_config
    out = CliRunner().invoke(main, ["estimate", str(store), "--bootstraps", "50", "--ci", "tilting"])
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line.split() for line in out.output.splitlines() if line.strip()}
    assert rows["BBC"][-2:] == [str(a.selected_config), "50"]
    assert rows["BBC-F"][-2:] == [str(f.selected_config), "50"]
    assert f"configuration {a.selected_config} (BBC): C=" in out.output
    assert f"configuration {f.selected_config} (BBC-F): C=" in out.output
    assert rows["BT"][4] == "50"  # the comparator's resamples
    # by default the report and `estimate --ci all` use the same resamples: the same bounds
    out = CliRunner().invoke(main, ["estimate", str(store), "--ci", "tilting", "--ci", "mabt"])
    rows = {line.split()[0]: line.split() for line in out.output.splitlines() if line.strip()}
    CliRunner().invoke(main, ["report", str(store), "--out", str(tmp_path / "r")])
    page = (tmp_path / "r" / "index.html").read_text()
    for name in ("BT", "MABT"):
        assert rows[name][4] == "2000"
        assert re.search(rf"<tr><td>{name}</td><td>{rows[name][1]}</td>.*?<td>2000</td>", page)
    assert f"<td>{f.selected_config}</td><td>1000</td>" in page  # BBC-F's row, its own winner


def test_the_fits_warnings_are_shown_once_with_their_count(tmp_path, client):
    # max_iter=1: every fit warns; the tasks collect the warnings, the driver shows each once
    from sklearn.exceptions import ConvergenceWarning

    X, y = make_classification(n_samples=120, random_state=0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        study = bd.run_study(LogisticRegression(max_iter=1), {"C": [0.1, 1.0]}, X, y,
                             store=tmp_path / "s.zarr", metric="roc_auc", n_splits=3,
                             client=client, progress=False, refit=False, random_state=0)
    conv = [w for w in seen if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1 and "the study's fits raised it at least 6 times" in str(conv[0].message)
    assert conv[0].filename == __file__  # pointing at the caller's line
    assert sum(study.fit_warnings_.values()) == 6


@pytest.mark.slow  # ~20 s: a local cluster of processes and fits that outlive the stop
def test_a_stopped_run_closes_its_cluster_without_noise(tmp_path):
    # error_score="raise" stops the run while two 6-second fits still run: their workers
    # are killed when the cluster closes, which distributed and multiprocessing report
    script = tmp_path / "stop.py"
    script.write_text(
        "import bbc_dask as bd\n"
        "from bbc_dask.exceptions import StudyError\n"
        "from sklearn.datasets import make_classification\n"
        "from _estimators import Sleepy\n"
        "if __name__ == '__main__':\n"
        "    X, y = make_classification(n_samples=60, random_state=0)\n"
        "    try:\n"
        "        bd.run_study(Sleepy(), [{'nap': [6.0], 'C': [1.0, 2.0]}, {'nap': [0.5], 'C': [-1.0]}],\n"
        f"                     X, y, store={str(tmp_path / 's.zarr')!r}, metric='roc_auc', n_splits=3,\n"
        "                     error_score='raise', client={'kind': 'local', 'n_workers': 2},\n"
        "                     progress=False, configs_per_task=1)\n"
        "    except StudyError as e:\n"
        "        print('stopped:', str(e).splitlines()[0][:60])\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tests"))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert p.stdout.startswith("stopped: Configuration 2"), p.stdout + p.stderr
    assert p.stderr == "", p.stderr
