"""What the command line and the progress output say: a broken pipe is a quiet exit,
JSON is strict, a study that drops shows bars that never go back, a nested run announces
its outer and inner folds, a refused resume names the values that changed, and
``--partial`` gives BBC on the incomplete CV."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
from bbc_dask import _json as strict_json
from bbc_dask.cli import main
from bbc_dask.exceptions import StoreMismatchError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "scripts"))
from fault_run import study as small_study  # noqa: E402

BBC_DASK = os.path.join(os.path.dirname(sys.executable), "bbc-dask")


@pytest.fixture(scope="module")
def finished(tmp_path_factory, client):
    """The fault-injection matrix's small study: 7 configurations (chunks of 3), 3 folds x
    2 repeats."""
    store = tmp_path_factory.mktemp("out") / "s.zarr"
    small_study(store, "cvt", client)
    return store


def test_a_reader_that_leaves_ends_the_command_quietly(finished):
    for args in (["estimate", str(finished)], ["estimate", str(finished), "--json"],
                 ["status", str(finished)]):
        proc = subprocess.run(f"'{BBC_DASK}' {' '.join(args)} | head -c 20; "
                              f"echo \" rc=${{PIPESTATUS[0]}}\"", shell=True, executable="/bin/bash",
                              capture_output=True, text=True, timeout=120)
        assert proc.stdout.rstrip().endswith("rc=0"), (args, proc.stdout)
        assert proc.stderr == "", (args, proc.stderr)


def test_json_is_strict():
    got = strict_json.dumps({"a": float("nan"), "b": np.float32("inf"), "c": [np.nan, 1.5],
                             "d": np.arange(2), "e": (np.int64(3), None)})
    assert got == '{"a": null, "b": null, "c": [null, 1.5], "d": [0, 1], "e": [3, null]}'
    json.loads(got, parse_constant=lambda name: pytest.fail(f"bare {name}"))


def _bars(err):
    """(n, total) of every tqdm redraw in ``err``."""
    return [(int(a), int(b)) for a, b in re.findall(r"\| *(\d+)/(\d+) \[", err)]


def test_the_progress_of_a_study_that_drops_never_goes_back(cancer_standardised, client, tmp_path,
                                                             capfd):
    X, y = cancer_standardised
    bd.run_study(LogisticRegression(), {"C": list(np.logspace(-4, 2, 12))}, X, y,
                 store=str(tmp_path / "d.zarr"), metric="accuracy", n_splits=5, random_state=0,
                 client=client, configs_per_task=2, progress=True,
                 dropping=bd.Dropping(alpha=0.6, n_bootstraps=100, min_predictions=50))
    bars = _bars(capfd.readouterr().err)
    assert len({total for _, total in bars}) > 1  # several waves, of several sizes
    for (n0, t0), (n1, t1) in zip(bars, bars[1:]):
        # within a bar the count only grows and the total stays; a new bar starts at 0
        assert (t1 == t0 and n1 >= n0) or n1 == 0, bars


def test_a_nested_run_announces_outer_and_inner_folds(client, tmp_path, capfd):
    small = tmp_path / "n.zarr"
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    bd.nested_cv(LogisticRegression(max_iter=500), {"C": [0.01, 1.0]}, X[:200, :5], y[:200],
                 store=str(small), metric="roc_auc", n_outer=3, n_inner=2, n_repeats=2,
                 random_state=0, client=client, progress=True)
    err = capfd.readouterr().err
    assert ("2 configurations x 3 outer folds x 2 inner folds x 2 repeats = 24 inner fits "
            "(then 6 outer refits)") in err


def test_a_refused_resume_names_the_values_that_changed(cancer_standardised, client, tmp_path):
    X, y = cancer_standardised
    store = str(tmp_path / "s.zarr")
    args = dict(store=store, metric="accuracy", n_splits=3, random_state=0, client=client,
                progress=False, refit=False)
    bd.run_study(LogisticRegression(), [{"C": [0.1, 1.0]}, {"C": [5.0], "fit_intercept": [False]}],
                 X, y, **args)
    with pytest.raises(StoreMismatchError,
                       match=re.escape(r"What differs: candidates: grid[1].C (stored [5.0], "
                                       r"given [5.0, 50.0]).")):
        bd.run_study(LogisticRegression(), [{"C": [0.1, 1.0]},
                                            {"C": [5.0, 50.0], "fit_intercept": [False]}], X, y, **args)


def test_partial_estimates_bbc_on_the_incomplete_cv(finished, tmp_path, client):
    """Every configuration loses repeat 0's fold 0: none is complete, yet each has
    predictions in each repeat, so BBC on the incomplete CV (2018 paper, §4) exists."""
    store = tmp_path / "s.zarr"
    shutil.copytree(finished, store)
    for chunk in range(3):
        os.remove(store / f"prediction/c/0/0/0/{chunk}")  # (repeat, fold, slots, configs)
    run = CliRunner()
    assert run.invoke(main, ["verify", str(store), "--repair"]).exit_code == 0
    study = bd.open_study(store)
    assert study.candidates().size == 0
    got = run.invoke(main, ["estimate", str(store), "--partial", "--json", "--bootstraps", "50"])
    assert got.exit_code == 0, got.output
    assert "BBC on the incomplete CV" in got.stderr and "35 of 42 cells done, 83%" in got.stderr
    out = json.loads(got.stdout)
    assert "bbc_f" not in out  # BBC-F needs a complete configuration
    want = study.bbc(include_incomplete=True, n_bootstraps=50)
    assert out["bbc"]["estimate"] == want.estimate
    assert out["bbc"]["selected_config"] == want.selected_config
    table = run.invoke(main, ["estimate", str(store), "--partial", "--bootstraps", "50"])
    assert table.exit_code == 0 and table.stdout.startswith("method")
    shutil.rmtree(store)


def test_the_csv_example_study_file_runs(tmp_path, client):
    """examples/studies/csv_patients.yaml: data.path, target and drop, as documented."""
    import yaml

    here = os.path.join(os.path.dirname(__file__), "..", "examples", "studies")
    with open(os.path.join(here, "csv_patients.yaml")) as fh:
        spec = yaml.safe_load(fh)
    assert set(spec["data"]) == {"path", "target", "drop"}
    spec["data"]["path"] = os.path.abspath(os.path.join(here, spec["data"]["path"]))
    spec["store"] = str(tmp_path / "csv.zarr")
    spec.pop("cluster")
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    got = CliRunner().invoke(main, ["run", str(f), "--scheduler", client.scheduler.address,
                                    "--no-progress"])
    assert got.exit_code == 0, got.output
    assert "BBC-F" in got.stdout
    study = bd.open_study(tmp_path / "csv.zarr")
    assert study.cube.sizes["sample"] == 300 and "patient_id" not in study.metadata["data"]["columns"]
    # best_params_ of a store the command line wrote: estimators, rebuilt from its study
    # file by the study file's rules, usable with set_params (not their repr)
    from sklearn.base import is_classifier
    from sklearn.pipeline import Pipeline

    best = study.best_params_
    assert is_classifier(best["model"]) and not isinstance(best["model"], str)
    model = Pipeline([("model", best["model"])]).set_params(**best)
    import pandas as pd

    frame = pd.read_csv(spec["data"]["path"])
    X, y = frame.drop(columns=["patient_id", "diagnosis"]), frame["diagnosis"]
    np.testing.assert_array_equal(model.fit(X, y).predict(X), study.final_model.predict(X))
