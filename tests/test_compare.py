"""bd.compare: the papers' protocols side by side on one data set and grid — each row the
number its own function gives, the costs counted, the stores resumed, one report."""
import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError

GRID = {"C": [0.01, 0.3, 10.0]}


@pytest.fixture(scope="module")
def data():
    return make_classification(120, 6, n_informative=3, flip_y=0.2, random_state=1)


@pytest.fixture(scope="module")
def compared(tmp_path_factory, client, data):
    X, y = data
    d = tmp_path_factory.mktemp("compare")
    res = bd.compare(LogisticRegression(), GRID, X, y, store=d / "stores", metric="roc_auc",
                     n_splits=3, n_inner=2, holdout_repeats=3, n_bootstraps=4, random_state=5,
                     client=client, progress=False, out_dir=d / "report")
    return res, d


def test_every_row_is_its_own_functions_number(compared, client, data):
    from bbc_dask.cube import target_of

    res, d = compared
    X, y = data
    rows = {r["protocol"]: r for r in res.rows}
    assert list(rows) == ["CVT (naive)", "TT", "BBC-CV", "BBC-F", "NCV", "holdout",
                          "repeated holdout", "bootstrap"]
    study = bd.open_study(d / "stores" / "cvt.zarr")
    bbc, bbc_f = study.bbc(), study.bbc_f()
    assert rows["BBC-CV"]["estimate"] == bbc.estimate
    assert (rows["BBC-CV"]["ci_low"], rows["BBC-CV"]["ci_high"]) == tuple(bbc.confidence_interval)
    assert rows["BBC-F"]["estimate"] == bbc_f.estimate
    assert rows["CVT (naive)"]["estimate"] == bbc.naive_estimate
    yc, pos = target_of(study._cube)
    tt = bd.tibshirani_tibshirani(study._cube.predictions(study.candidates()), yc,
                                  study._cube.folds(), metric="roc_auc", pos_label=pos)
    assert rows["TT"]["estimate"] == tt.estimate
    assert {rows[k]["models_trained"] for k in ("CVT (naive)", "TT", "BBC-CV", "BBC-F")} == {3 * 3}
    ncv = bd.open_nested(d / "stores" / "nested.zarr")
    assert rows["NCV"]["estimate"] == ncv.estimate
    assert rows["NCV"]["models_trained"] == 3 * 2 * 3 + 3 == ncv.models_trained
    from sklearn.model_selection import StratifiedKFold

    inner = StratifiedKFold(2, shuffle=True, random_state=5)  # shuffled, from the seed
    tuned = GridSearchCV(LogisticRegression(), GRID, cv=inner, scoring="roc_auc")
    hold = bd.holdout(tuned, X, y, metric="roc_auc", test_size=0.3, random_state=5)
    assert rows["holdout"]["estimate"] == hold.estimate
    per_fit = 3 * 2 + 1  # GridSearchCV's fits per fit of the tuned model
    assert rows["holdout"]["models_trained"] == per_fit
    assert rows["repeated holdout"]["models_trained"] == 3 * per_fit
    assert rows["bootstrap"]["models_trained"] == 4 * per_fit
    rep = bd.repeated_holdout(tuned, X, y, metric="roc_auc", n_repeats=3, test_size=0.3,
                              random_state=5, client=client, progress=False)
    assert rows["repeated holdout"]["estimate"] == rep.estimate
    for r in res.rows:
        assert r["wall_seconds"] > 0 and r["fit_seconds"] > 0
        assert np.isnan(r["ci_low"]) or r["ci_low"] <= r["ci_high"]
    # each row says which configuration it estimates and the naive score it corrects:
    # BBC-F's is its own winner's mean fold score, not CVT's
    for key, res_ in (("CVT (naive)", bbc), ("TT", bbc), ("BBC-CV", bbc), ("BBC-F", bbc_f)):
        assert rows[key]["config"] == res_.selected_config
        assert rows[key]["naive"] == res_.naive_estimate
    for key in ("NCV", "holdout", "repeated holdout", "bootstrap"):
        assert rows[key]["config"] is None and np.isnan(rows[key]["naive"])


def test_the_report_holds_the_table_and_the_plot(compared):
    res, d = compared
    page = (d / "report" / "comparison.html").read_text()
    for r in res.rows:
        assert f">{r['protocol']}<" in page
    assert (d / "report" / "comparison.png").stat().st_size > 10_000
    frame = res.to_frame()
    assert list(frame.columns[:3]) == ["estimate", "ci_low", "ci_high"]
    assert "NCV" in res.summary()
    head, *lines = res.summary().splitlines()
    assert "naive CV" in head and "config" in head and "naive CV' its own CV score" in lines[-1]
    assert "<th>naive CV</th><th>config</th>" in page
    fig = res.plot()  # a legend, and every axis says what it shows
    assert fig.axes[0].get_legend() is not None
    assert "naive CV score it corrects" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert all(ax.get_xlabel() for ax in fig.axes) and fig.axes[0].get_ylabel() == "protocol"


def test_a_rerun_resumes_the_stores_and_gives_the_same_table(compared, client, data):
    from bbc_dask.cube import open_cube

    res, d = compared
    X, y = data
    again = bd.compare(LogisticRegression(), GRID, X, y, store=d / "stores", metric="roc_auc",
                       n_splits=3, n_inner=2, protocols=["cvt", "bbc", "ncv"], random_state=5,
                       client=client, progress=False)
    before = {r["protocol"]: r["estimate"] for r in res.rows}
    assert all(before[r["protocol"]] == r["estimate"] for r in again.rows)
    for name in ("cvt.zarr", "nested.zarr"):
        last = open_cube(d / "stores" / name).meta["runs"][-1]
        assert last["fits"] == 0 and last.get("outer_fits", 0) == 0  # nothing fitted again


@pytest.mark.parametrize("kw,name", [
    ({"protocols": ["ncv", "nope"]}, "protocols"),
    ({"n_inner": 1}, "n_inner"),
    ({"random_state": None}, "random_state"),
    ({"confidence_level": 0}, "confidence_level"),
    ({"test_size": 1.5}, "test_size"),
    ({"holdout_repeats": 1}, "holdout_repeats"),
    ({"n_bootstraps": 0}, "n_bootstraps"),
    ({"bootstrap_method": "632+"}, "bootstrap_method"),
    ({"n_inner": 50}, "n_inner"),  # more inner folds than an outer training set allows
    ({"n_splits": 80}, "n_splits"),  # more folds than the smallest class has members
])
def test_bad_input_is_refused_before_anything_runs(tmp_path, data, kw, name):
    X, y = data
    args = dict(store=tmp_path / "s", metric="roc_auc", random_state=0,
                client="tcp://127.0.0.1:1", progress=False) | kw
    with pytest.raises(InvalidParameterError) as e:
        bd.compare(LogisticRegression(), GRID, X, y, **args)
    msg = str(e.value)
    assert name in msg and "compare" in msg and "\n" not in msg, msg
    assert not (tmp_path / "s").exists()


def test_a_metric_without_a_scikit_learn_scorer_cannot_tune_the_holdout_family(tmp_path):
    X, y = make_regression(40, 3, random_state=0)
    with pytest.raises(InvalidParameterError, match="'metric' parameter of compare.*r2_corr"):
        bd.compare(Ridge(), {"alpha": [1.0]}, X, y, store=tmp_path / "s", metric="r2_corr",
                   random_state=0, client="tcp://127.0.0.1:1", progress=False)
    assert not (tmp_path / "s").exists()


# slow: a command-line process with a study's worth of protocols (~10 s); bd.compare itself
# is in the default suite above
@pytest.mark.slow
def test_the_command_line_compares_a_study_file(tmp_path, client):
    import json

    import yaml

    from test_cli import cli

    spec = {"name": "cmp", "data": {"sklearn": "breast_cancer"},
            "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier",
                      "params": {"random_state": 0}, "grid": {"max_depth": [1, 3]}}],
            "cv": {"splits": 3}, "protocol": {"kind": "nested", "n_outer": 3, "n_inner": 2},
            "metric": "roc_auc", "random_state": 3}
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    out = cli("compare", f, "--out", tmp_path / "cmp", "--scheduler", client.scheduler.address,
              "--protocols", "cvt,bbc,ncv,holdout", "--no-progress").stdout
    assert "BBC-CV" in out and "NCV" in out and "comparison.html" in out
    def refuse(name):
        raise AssertionError(f"comparison.json holds a bare {name}: not JSON")

    got = json.loads((tmp_path / "cmp" / "comparison.json").read_text(), parse_constant=refuse)
    assert got["rows"][0]["ci_low"] is None  # CVT has no interval: null, never NaN
    assert [r["protocol"] for r in got["rows"]] == ["CVT (naive)", "BBC-CV", "NCV", "holdout"]
    ncv = bd.open_nested(tmp_path / "cmp" / "stores" / "nested.zarr")
    assert got["rows"][2]["estimate"] == ncv.estimate and ncv.n_outer == 3
    assert (tmp_path / "cmp" / "comparison.png").exists()
    bad = cli("compare", f, "--out", tmp_path / "c2", "--protocols", "cvt,nope", check=False)
    assert bad.returncode == 2 and "'protocols' parameter of compare" in bad.stderr
