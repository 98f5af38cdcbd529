"""The positive class named wherever a binary metric is reported: a study's repr and
estimates, ``bbc-dask estimate`` (text and JSON), ``status``, the report and a nested CV's
summary; nowhere for a metric without one."""
import html
import json

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, make_scorer, precision_score

import bbc_dask as bd
from bbc_dask.cli import main
from bbc_dask.metrics import get_metric, uses_positive_class

X, Y = make_classification(90, 4, random_state=0)
LABELS = np.where(Y == 1, "malignant", "benign")
GRID = {"C": [0.1, 1.0]}


def _run(store, client, metric, **kw):
    return bd.run_study(LogisticRegression(max_iter=300), GRID, X, LABELS, store=store,
                        metric=metric, n_splits=3, random_state=0, client=client,
                        progress=False, refit=False, **kw)


def test_a_binary_metric_names_its_positive_class_everywhere(tmp_path, client):
    """pos_label='benign' (not the larger label, the default): the study, its estimates,
    the command line's table and JSON, status and the report say so."""
    store = tmp_path / "s.zarr"
    _run(store, client, "roc_auc", pos_label="benign")
    study = bd.open_study(store)
    assert study.pos_label == "benign" and "pos_label='benign'" in repr(study)
    bbc, bbc_f = study.bbc(n_bootstraps=50), study.bbc_f(n_bootstraps=50)
    assert bbc.pos_label == bbc_f.pos_label == "benign"
    assert "pos_label='benign'" in repr(bbc) and bbc.to_dict()["pos_label"] == "benign"
    res = CliRunner().invoke(main, ["estimate", str(store), "--bootstraps", "50"])
    assert res.exit_code == 0, res.output
    assert "(roc_auc (positive class: 'benign'); 95% confidence;" in res.output, res.output
    res = CliRunner().invoke(main, ["estimate", str(store), "--bootstraps", "50", "--json"])
    out = json.loads(res.output)
    assert out["bbc"]["pos_label"] == out["bbc_f"]["pos_label"] == "benign", out
    res = CliRunner().invoke(main, ["status", str(store), "--bootstraps", "50"])
    assert res.output.rstrip().endswith("positive class 'benign'"), res.output
    res = CliRunner().invoke(main, ["report", str(store), "--out", str(tmp_path / "r"),
                                    "--bootstraps", "50"])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r" / "index.html").read_text()
    named = html.escape("roc_auc (positive class: 'benign')")
    assert f"metric <b>{named}</b>" in page


def test_a_metric_without_a_positive_class_names_none(tmp_path, client):
    """accuracy on the same string labels: no positive class anywhere."""
    store = tmp_path / "a.zarr"
    _run(store, client, "accuracy")
    study = bd.open_study(store)
    assert study.pos_label is None and "pos_label" not in repr(study)
    assert study.bbc(n_bootstraps=50).pos_label is None
    res = CliRunner().invoke(main, ["estimate", str(store), "--bootstraps", "50"])
    assert res.exit_code == 0 and "positive class" not in res.output, res.output
    assert "(accuracy; 95% confidence;" in res.output


def test_a_nested_cv_names_its_positive_class(tmp_path, client):
    res = bd.nested_cv(LogisticRegression(max_iter=300), GRID, X, LABELS,
                       store=tmp_path / "n.zarr", metric="roc_auc", n_outer=2, n_inner=2,
                       random_state=0, client=client, progress=False)
    assert res.pos_label == "malignant" and res.to_dict()["pos_label"] == "malignant"
    assert "metric roc_auc (positive class: 'malignant'):" in res.summary()
    assert bd.open_nested(tmp_path / "n.zarr").pos_label == "malignant"


@pytest.mark.parametrize("metric, n_classes, uses", [
    ("roc_auc", 2, True), ("f1", 2, True), ("accuracy", 2, False), ("neg_log_loss", 2, False),
    ("average_precision", 2, True), ("precision", 2, True), ("precision", 3, False),
    ("f1_macro", 2, False), ("roc_auc_ovr", 3, False),
    (make_scorer(f1_score, average="macro"), 2, False),
    (make_scorer(precision_score, pos_label="benign"), 2, True),
    (make_scorer(precision_score, pos_label=None, average="micro"), 2, False),
])
def test_which_metrics_score_a_positive_class(metric, n_classes, uses):
    assert uses_positive_class(get_metric(metric), n_classes) is uses

