"""Closest-name hints: an error that lists the valid options names the closest one to a
typo ("Did you mean 'roc_auc'?"), one helper (``_validation.did_you_mean``) for the
study file's keys and metric, a grid's parameter names, the metric of every door, the
choices of a parameter, Stop's and Dropping's keys."""
import pytest
import yaml
from click.testing import CliRunner
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import bbc_dask as bd
from bbc_dask._validation import did_you_mean, parameter_hint
from bbc_dask.cli import main
from bbc_dask.exceptions import InvalidParameterError

STUDY = {"name": "typo", "data": {"sklearn": "breast_cancer"}, "metric": "roc_auc",
         "grid": [{"estimator": "sklearn.ensemble.HistGradientBoostingClassifier",
                   "grid": {"learning_rate": [0.1]}}],
         "cv": {"splits": 2}, "store": "s.zarr"}


def test_the_closest_option_or_nothing():
    assert did_you_mean("rocauc", ["accuracy", "roc_auc", "roc_auc_ovr"]) == "Did you mean 'roc_auc'?"
    assert did_you_mean("ROC_AUC", ["accuracy", "roc_auc"]) == "Did you mean 'roc_auc'?"
    assert did_you_mean("zebra", ["accuracy", "roc_auc"]) == ""
    assert did_you_mean(3, ["accuracy"]) == "" and did_you_mean("x", []) == ""
    est = make_pipeline(StandardScaler(), LogisticRegression())
    assert parameter_hint(est, {"logisticregression__C": [1], "logisticregresion__tol": [1]}) \
        == "Did you mean 'logisticregression__tol'?"
    assert parameter_hint(est, {"logisticregression__C": [1]}) == ""


@pytest.mark.parametrize("change, key, hint", [
    (lambda s: s.update(metirc=s.pop("metric")), "metirc", "Did you mean 'metric'?"),
    (lambda s: s.update(metric="rocauc"), "metric", "Did you mean 'roc_auc'?"),
    (lambda s: s["grid"][0].update(grid={"learnig_rate": [0.1]}), "grid[0].grid.learnig_rate",
     "Did you mean 'learning_rate'?"),
    (lambda s: s["cv"].update(splts=2), "cv.splts", "Did you mean 'splits'?"),
])
def test_a_study_file_typo_names_the_closest_key(tmp_path, change, key, hint):
    """One line, from the command line, before anything runs: the key, the options and
    the closest of them."""
    study = yaml.safe_load(yaml.safe_dump(STUDY))
    change(study)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(study))
    res = CliRunner().invoke(main, ["run", str(path), "--no-progress"])
    assert res.exit_code == 2, res.output
    (line,) = res.output.splitlines()
    assert line.startswith(f"bbc-dask: error: study file: {key}: ") and line.endswith(hint), line


def test_the_python_doors_name_the_closest_option():
    X, y = make_classification(40, 4, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"^The 'metric' parameter of run_study must "
                       r"be one of .* Got 'rocauc' instead\. Did you mean 'roc_auc'\?$"):
        bd.run_study(HistGradientBoostingClassifier(), {"learning_rate": [0.1]}, X, y,
                     store="memory://typo", metric="rocauc", n_splits=2, random_state=0)
    with pytest.raises(InvalidParameterError, match=r"^The 'selection' parameter of bbc must be "
                       r"one of \['pooled', 'fold_mean'\]\. Got 'pooeld' instead\. Did you mean "
                       r"'pooled'\?$"):
        bd.bbc([[0.1, 0.2], [0.3, 0.4]], [0, 1], metric="roc_auc", selection="pooeld")
    with pytest.raises(InvalidParameterError, match=r"Got the unknown key\(s\) \['ci_widht'\] "
                       r"instead\. Did you mean 'ci_width'\?$"):
        bd.Stop.coerce({"ci_widht": 0.1})
    with pytest.raises(InvalidParameterError, match=r"Got the unknown key\(s\) \['alhpa'\] "
                       r"instead\. Did you mean 'alpha'\?$"):
        bd.Dropping.coerce({"alhpa": 0.9})
    with pytest.raises(InvalidParameterError, match=r"Got 'zebra' instead\.$"):  # none close
        bd.bbc([[0.1, 0.2], [0.3, 0.4]], [0, 1], metric="zebra")


def test_a_grid_name_in_python_names_the_closest(tmp_path):
    """run_study's grid (checked before any cluster): the closest of the estimator's own
    parameter names ends the message."""
    X, y = make_classification(n_samples=60, random_state=0)
    with pytest.raises(ValueError, match=r"Did you mean 'learning_rate'\?$"):
        bd.run_study(HistGradientBoostingClassifier(), {"learnig_rate": [0.1]}, X, y,
                     store=tmp_path / "s.zarr", metric="roc_auc", n_splits=2, random_state=0)
    assert not (tmp_path / "s.zarr").exists()
