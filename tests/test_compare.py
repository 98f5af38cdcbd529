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


def test_every_fit_of_the_holdout_runs_on_the_cluster_with_a_workers_threads(tmp_path, client, data):
    """holdout's tuned fit ran in the calling process, at OpenMP's thread per core: on a
    busy machine HistGradientBoosting's fits there cost ~30x the same fits in a worker
    (benchmarks/bench_compare.py). Now each of its fits runs in a worker process, under
    the workers' limit of one OpenMP thread."""
    import os

    import _estimators

    X, y = data
    record = tmp_path / "fits"
    record.mkdir()
    res = bd.compare(_estimators.FitsRecorded(record=str(record)), {"max_depth": [2, 3]}, X, y,
                     store=tmp_path / "s", metric="roc_auc", n_splits=3, n_inner=2,
                     protocols=["holdout"], random_state=5, client=client, progress=False)
    fits = [(f.name.split("-")[0], f.read_text()) for f in record.iterdir()]
    assert len(fits) == res.rows[0]["models_trained"] == 2 * 2 + 1
    workers = {str(pid) for pid in client.run(os.getpid).values()}
    assert {pid for pid, _ in fits} <= workers, (fits, workers)  # none in this process
    assert {limit for _, limit in fits} == {"1"}


def _study_file(tmp_path, data):
    import yaml

    X, y = data
    np.savez(tmp_path / "data.npz", X=X, y=y)
    spec = {"name": "cmp", "data": {"path": "data.npz"},
            "grid": [{"estimator": "sklearn.ensemble.HistGradientBoostingClassifier",
                      "params": {"max_iter": 10, "random_state": 0},
                      "grid": {"max_depth": [2, 3]}}],
            "cv": {"splits": 3}, "metric": "roc_auc", "random_state": 3}
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    return f


def test_the_command_line_says_which_protocol_runs_and_how_far_it_is(tmp_path, client, data):
    import re

    from click.testing import CliRunner

    from bbc_dask.cli import main

    f = _study_file(tmp_path, data)
    res = CliRunner().invoke(main, ["compare", str(f), "--out", str(tmp_path / "cmp"),
                                    "--scheduler", client.scheduler.address, "--protocols",
                                    "cvt,bbc,holdout,repeated_holdout", "--holdout-repeats", "2"])
    assert res.exit_code == 0, res.output
    err = res.stderr
    said = [line for line in err.splitlines() if line.startswith("bbc_dask: compare")]
    assert said[0] == ("bbc_dask: compare 1/3, CVT: 2 configurations x 3 folds; TT, BBC-CV "
                       "and BBC-F share its fits"), err
    assert re.fullmatch(r"bbc_dask: compare 1/3, CVT done in [\d.]+ s: CVT \(naive\) 0\.\d{4}, "
                        r"BBC-CV 0\.\d{4}", said[1]), said
    assert said[2] == ("bbc_dask: compare 2/3, holdout: test_size=0.3; 1 split x 5 models "
                       "(GridSearchCV of 2 configurations, cv=2, and its refit)"), said
    assert re.fullmatch(r"bbc_dask: compare 2/3, holdout done in [\d.]+ s: holdout 0\.\d{4}",
                        said[3]), said
    assert said[4].startswith("bbc_dask: compare 3/3, repeated holdout: test_size=0.3; 2 splits "
                              "x 5 models"), said
    assert len(said) == 6 and said[5].startswith("bbc_dask: compare 3/3, repeated holdout done")
    # the protocols' own bars: the study's waves, and the holdout family's splits
    assert "wave" in err and re.search(r"repeated_holdout: 100%.*2/2", err), err
    assert re.search(r"holdout: 100%.*1/1 .*split", err), err
    assert "BBC-CV" in res.stdout and "partial" not in res.stdout


def test_an_interrupted_comparison_shows_and_writes_what_finished(tmp_path, client, data,
                                                                   monkeypatch):
    """SIGTERM (as Ctrl-C) during repeated holdout: the rows of CVT, BBC-CV and holdout
    are printed and written, marked partial, and the command exits as interrupted. The
    interrupt is raised where the protocol runs (a real signal: the next test)."""
    import json
    import signal

    from click.testing import CliRunner

    from bbc_dask.cli import main
    from bbc_dask.exceptions import ComparisonInterrupted, StudyInterrupted

    def interrupted(*args, **kwargs):
        raise StudyInterrupted("interrupted", signal.SIGTERM)

    monkeypatch.setattr("bbc_dask.protocols._holdout.repeated_holdout", interrupted)
    f = _study_file(tmp_path, data)
    out = tmp_path / "cmp"
    res = CliRunner().invoke(main, ["compare", str(f), "--out", str(out), "--scheduler",
                                    client.scheduler.address, "--protocols",
                                    "cvt,bbc,holdout,repeated_holdout,bootstrap", "--no-progress"])
    assert res.exit_code == 143, res.output
    assert res.stderr.strip().splitlines()[-1] == "interrupted", res.stderr
    assert "bbc_dask: compare" not in res.stderr  # --no-progress: nothing while it runs
    table = res.stdout.splitlines()
    assert [line.split("  ")[0] for line in table[1:4]] == ["CVT (naive)", "BBC-CV", "holdout"]
    assert table[-1] == "(partial: interrupted before repeated holdout, bootstrap finished)"
    got = json.loads((out / "comparison.json").read_text())
    assert got["partial"] is True and got["not_run"] == ["repeated holdout", "bootstrap"]
    assert [r["protocol"] for r in got["rows"]] == ["CVT (naive)", "BBC-CV", "holdout"]
    page = (out / "comparison.html").read_text()
    assert "Protocols compared (partial)" in page and ">holdout<" in page
    assert ">repeated holdout<" not in page
    # bd.compare: the exception carries the table, and names what ran
    X, y = data
    with pytest.raises(ComparisonInterrupted) as e:
        bd.compare(LogisticRegression(), GRID, X, y, store=tmp_path / "s", metric="roc_auc",
                   n_splits=3, n_inner=2, protocols=["cvt", "repeated_holdout"],
                   random_state=5, client=client, progress=False)
    assert e.value.exit_code == 143 and e.value.partial.partial
    assert [r["protocol"] for r in e.value.partial.rows] == ["CVT (naive)"]
    assert e.value.partial.not_run == ("repeated holdout",)
    assert str(e.value).startswith("interrupted during repeated holdout: 1 of 2 protocols "
                                   "finished"), str(e.value)


# slow (10 s on a busy machine, a command-line process: ~8 s of it until holdout's first
# fit): CI runs it every time; the partial table itself is in the default suite (above)
@pytest.mark.slow
def test_ctrl_c_prints_the_partial_table_and_exits_as_interrupted(tmp_path, client, data):
    """A real SIGINT to a ``bbc-dask compare`` process, sent while holdout's first fit is
    held (the CVT stage's 6 fits done): the CVT rows printed and written, marked
    partial, then the interrupted exit (130)."""
    import json
    import os
    import signal
    import subprocess
    import sys

    import yaml

    from _helpers import wait_until

    X, y = data
    np.savez(tmp_path / "data.npz", X=X, y=y)
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "hold").touch()
    spec = {"name": "cmp", "data": {"path": "data.npz"},
            "grid": [{"estimator": "_estimators.Gated",
                      "params": {"gate": str(gate), "after": 2 * 3, "nap": 0.0},
                      "grid": {"C": [0.1, 1.0]}}],
            "cv": {"splits": 3}, "metric": "roc_auc", "random_state": 3}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "cmp"
    tests = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "bbc-dask"), "compare",
         str(tmp_path / "study.yaml"), "--out", str(out), "--scheduler",
         client.scheduler.address, "--protocols", "cvt,bbc,holdout", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env=dict(os.environ, PYTHONPATH=tests),
        # SIGINT as a terminal's foreground process has it (a background job's is ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until(lambda: proc.poll() is not None or (gate / "blocked").exists(), 180,
                   "holdout's first fit")
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        (gate / "hold").unlink(missing_ok=True)  # the held fit ends
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr
    table = stdout.splitlines()
    assert [line.split("  ")[0] for line in table[1:3]] == ["CVT (naive)", "BBC-CV"], stdout
    assert table[-1] == "(partial: interrupted before holdout finished)", stdout
    got = json.loads((out / "comparison.json").read_text())
    assert got["partial"] is True and got["not_run"] == ["holdout"]
    assert [r["protocol"] for r in got["rows"]] == ["CVT (naive)", "BBC-CV"]
    assert "Protocols compared (partial)" in (out / "comparison.html").read_text()
