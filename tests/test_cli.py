"""The bbc-dask command line, driven as a user would: its commands in this process
(``_cli.run_cli``: the same ``main``, output and exit code captured), the installed entry
point and a killed run as subprocesses."""
import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest
import yaml

import bbc_dask as bd

from _cli import CLI, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args, check=True):
    """The command in this process (``_cli.run_cli``), AssertionError on a non-zero exit
    unless ``check=False``."""
    return run_cli(*args, check=check)


def _study_file(tmp_path, **over):
    spec = {
        "name": "trees",
        "data": {"sklearn": "breast_cancer"},
        "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "params": {"random_state": 0},
                  "grid": {"max_depth": [1, 2, 3, 4, 5, 6], "min_samples_leaf": [1, 2, 5, 10, 20]}},
                 {"pipeline": ["sklearn.preprocessing.StandardScaler",
                               {"estimator": "sklearn.linear_model.LogisticRegression", "params": {"max_iter": 500}}],
                  "grid": {"logisticregression__C": [0.01, 1.0]}}],
        "cv": {"splits": 5, "repeats": 2}, "metric": "roc_auc", "bootstraps": 300,
        "random_state": 3, "store": "trees.zarr", "configs_per_task": 1,
        "cluster": {"kind": "local", "n_workers": 1},
    } | over
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


# Slow (36 s, the longest of the default suite): the command line's run, status, estimate
# and report are in the default suite through test_first_contact, and kill/resume through
# test_engine_cluster and test_reliability; CI runs this one every time with the slow tests.
@pytest.mark.slow
def test_run_kill_resume_status_estimate_report(tmp_path):
    f = _study_file(tmp_path)
    store = tmp_path / "trees.zarr"
    proc = subprocess.Popen([CLI, "run", str(f), "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 120
        done = 0
        while time.time() < deadline:  # kill once a third of the cells are written
            if (store / "zarr.json").exists() and not (store / ".bbc_creating").exists():
                try:
                    st = bd.open_study(store).status()
                    done = st["done"]
                    if done >= st["cells"] // 3:
                        break
                except Exception:
                    pass
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    st = json.loads(cli("status", store, "--json").stdout)
    assert 0 < st["done"] < st["cells"] and not st["running"], st
    out = cli("status", store).stdout
    assert "not running" in out and "waves done" in out and "pending" in out
    before = st["done"]
    again = cli("run", f, "--no-progress")
    assert "finished" in again.stdout
    study = bd.open_study(store)
    runs = study.meta["runs"]
    assert runs[-1]["done_before"] >= before  # the rerun started from the stored cells
    assert study.status()["pending"] == 0 and study.metadata["name"] == "trees"
    # estimate --json equals the library on the same store and seed
    got = json.loads(cli("estimate", store, "--json").stdout)
    want = bd.bbc(study.cube["prediction"].values, study.cube["y"].values, metric="roc_auc",
                  n_bootstraps=300, random_state=3)
    assert got["bbc"]["estimate"] == pytest.approx(want.estimate, abs=0, rel=1e-15)
    assert got["bbc"]["lower_bound"] == want.lower_bound
    assert got["bbc"]["confidence_interval"] == list(want.confidence_interval)
    assert got["bbc"]["naive_estimate"] == want.naive_estimate
    wf = study.bbc_f(n_bootstraps=300, random_state=3)
    assert got["bbc_f"]["estimate"] == wf.estimate
    only = json.loads(cli("estimate", store, "--json", "--method", "bbc", "--bootstraps", "100", "--seed", "1").stdout)
    assert set(only) == {"bbc"} and only["bbc"]["n_bootstraps"] == 100
    table = cli("estimate", store).stdout
    assert "BBC" in table and "BBC-F" in table and "naive" in table
    # the 2024 paper's comparators: the library's numbers, in the table and the JSON
    both = json.loads(cli("estimate", store, "--json", "--ci", "mabt", "--ci", "delong").stdout)
    for m in ("mabt", "delong"):
        assert both["selection_ci"][m] == study.selection_ci(m, alpha=0.05).to_dict()
    assert both["selection_ci"]["delong"]["lower_bound"] < both["selection_ci"]["delong"]["auc"]
    table = cli("estimate", store, "--ci", "all", "--bootstraps", "100").stdout
    assert all(name in table for name in ("DL ", "HM ", "BT ", "DL10p", "HM10p", "BT10p", "MABT"))
    # report: valid PNGs and an HTML page that links them
    out_dir = tmp_path / "rep"
    cli("report", store, "--out", out_dir)
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    # dropping off: no plot of configurations dropped per wave (the page says why)
    assert pngs == ["bootstrap_bbc.png", "bootstrap_bbc_f.png", "configurations.png", "fold_scores.png"]
    for p in out_dir.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
    from html.parser import HTMLParser

    class P(HTMLParser):
        imgs, tags = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            if tag == "img":
                self.imgs.append(dict(attrs)["src"])

    page = (out_dir / "index.html").read_text()
    parser = P()
    parser.feed(page)
    assert sorted(parser.imgs) == pngs and "html" in parser.tags and "table" in parser.tags
    assert f"{got['bbc']['estimate']:.4f}" in page and "The 2024 paper's comparators" in page
    assert "Dropping was off" in page and "model__" not in page and "\\n" not in page


@pytest.mark.parametrize("case, message", [
    ("malformed", r"not valid YAML \(line"),
    ("unknown_key", r"study file: colour: unknown key"),
    ("bad_estimator", r"grid\[0\]\.estimator: cannot import 'sklearn\.nope\.Model'"),
    ("bad_param", r"grid\[0\]\.params: .*unexpected keyword argument 'depth'"),
    ("missing_data", r"data\.path: .*missing\.csv: no such file"),
    ("bad_target", r"data\.target: no column 'label' in"),
    ("bad_metric", r"metric: unknown metric 'auc'"),
    ("bad_splits", r"cv\.splits: expected an integer >= 2, got 1"),
    ("bad_selection", r"selection: expected pooled .* or fold_mean .*, got 'best'"),
])
def test_bad_study_files_one_line_errors(tmp_path, case, message):
    import re

    if case == "malformed":
        f = tmp_path / "s.yaml"
        f.write_text("data: {sklearn: iris\ngrid: [")
    elif case == "unknown_key":
        f = _study_file(tmp_path, colour="blue")
    elif case == "bad_estimator":
        f = _study_file(tmp_path, grid=[{"estimator": "sklearn.nope.Model"}])
    elif case == "bad_param":
        f = _study_file(tmp_path, grid=[{"estimator": "sklearn.tree.DecisionTreeClassifier", "params": {"depth": 2}}])
    elif case == "missing_data":
        f = _study_file(tmp_path, data={"path": "missing.csv", "target": "y"})
    elif case == "bad_target":
        (tmp_path / "d.csv").write_text("a,b,y\n1,2,0\n3,4,1\n")
        f = _study_file(tmp_path, data={"path": "d.csv", "target": "label"})
    elif case == "bad_metric":
        f = _study_file(tmp_path, metric="auc")
    elif case == "bad_selection":
        f = _study_file(tmp_path, selection="best")
    else:
        f = _study_file(tmp_path, cv={"splits": 1})
    p = cli("run", f, check=False)
    assert p.returncode == 2, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("bbc-dask: error:"), p.stderr
    assert re.search(message, lines[0]), lines[0]
    assert "Traceback" not in p.stderr
    if case == "bad_target":
        p = cli("--debug", "run", f, check=False)
        assert "Traceback" in p.stderr and p.returncode != 0


def test_the_installed_command_runs_as_a_shell_runs_it(tmp_path):
    """A subprocess, as the point: the entry point pip installed runs ``main``, and a
    shell sees its one-line error and its exit code (the other tests call ``main`` in
    this process)."""
    p = subprocess.run([CLI, "status", str(tmp_path / "nowhere")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("bbc-dask: error:") and "no such store" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr == run_cli("status", tmp_path / "nowhere").stderr  # the same command


def test_store_that_is_not_a_study(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file.txt").write_text("hello")
    for cmd in (["status"], ["estimate"], ["report", "--out", tmp_path / "r"]):
        args = [cmd[0], tmp_path / "x", *cmd[1:]]
        p = cli(*args, check=False)
        assert p.returncode == 2 and "is not a bbc_dask study store" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    p = cli("status", tmp_path / "nowhere", check=False)
    assert p.returncode == 2 and "no such store" in p.stderr
    assert (tmp_path / "x" / "file.txt").read_text() == "hello"


# slow (12 s, three command-line runs): CI runs it every time
@pytest.mark.slow
def test_csv_data_with_groups_and_npz(tmp_path):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    cols = [f"f{i}" for i in range(5)]
    rows = ["label,patient," + ",".join(cols)]
    for i in range(len(y)):
        rows.append(f"{'yes' if y[i] else 'no'},{i // 4}," + ",".join(f"{v:.6g}" for v in X[i, :5]))
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    f = _study_file(tmp_path, data={"path": "d.csv", "target": "label", "groups": "patient"},
                    grid=[{"estimator": "sklearn.linear_model.LogisticRegression", "params": {"max_iter": 1000},
                           "grid": {"C": [0.1, 1.0]}}], cv={"splits": 4, "repeats": 1}, bootstraps=100)
    cli("run", f, "--no-progress", "--store", tmp_path / "g.zarr")
    s = bd.open_study(tmp_path / "g.zarr")
    folds = s.cube["fold"].values[:, 0]
    groups = np.arange(len(y)) // 4
    assert all(np.unique(folds[groups == g]).size == 1 for g in np.unique(groups))
    assert s.metadata["data"]["path"].endswith("d.csv") and s.meta["classes"] == ["no", "yes"]
    np.savez(tmp_path / "d.npz", X=X[:, :5], y=y)
    f2 = _study_file(tmp_path, data={"path": "d.npz"}, grid=[{"estimator": "sklearn.linear_model.LogisticRegression",
                                                              "params": {"max_iter": 1000}, "grid": {"C": [0.1, 1.0]}}],
                     cv={"splits": 3}, bootstraps=100, selection="fold_mean")
    out = cli("run", f2, "--no-progress", "--store", tmp_path / "n.zarr").stdout
    assert "BBC" in out
    assert bd.open_study(tmp_path / "n.zarr").selection == "fold_mean"


def test_example_study_files_validate():
    from bbc_dask.cli._studyfile import build_search, load_study_file

    for name in ("breast_cancer.yaml", "diabetes_bbcd.yaml", "csv_categorical.yaml"):
        spec = load_study_file(os.path.join(ROOT, "examples", "studies", name))
        est, grid = build_search(spec)
        assert len(grid) == len(spec["grid"])


# Slow (13 s): the command line's run on a scheduler address is in the default suite
# through test_tls (--scheduler with TLS flags); CI runs this one every time.
@pytest.mark.slow
def test_run_on_an_existing_scheduler(tmp_path, make_local_client):
    f = _study_file(tmp_path, grid=[{"estimator": "sklearn.linear_model.LogisticRegression",
                                     "params": {"max_iter": 3000}, "grid": {"C": [0.1, 1.0]}}],
                    bootstraps=100, cluster={"kind": "local", "n_workers": 7})
    with make_local_client(n_workers=1) as c:
        cl = c.cluster
        out = cli("run", f, "--no-progress", "--scheduler", cl.scheduler_address).stdout
        assert "finished" in out
        # the fits ran on this scheduler (not on a cluster of the file's 7 workers)
        prefixes = set(cl.scheduler.task_prefixes)
        assert any(p.startswith("bbc-fit") for p in prefixes), prefixes


def test_cli_local_workers_log_nothing_below_critical():
    """The command's local workers print nothing below CRITICAL unless --debug: at ERROR a
    worker whose heartbeat met the scheduler closing, after a run stopped on a full
    disk, printed a 30-line traceback under the command's one-line error (seen once in
    CI). With --debug (the driver's Dask logging left as it is) they keep ERROR."""
    import logging

    from bbc_dask.cli._commands import _client

    spec = {"cluster": {"kind": "local", "n_workers": 1}}
    log = logging.getLogger("distributed")
    level = log.level
    try:
        log.setLevel(logging.ERROR)  # as the command sets it without --debug
        assert _client(spec, None)["silence_logs"] == logging.CRITICAL
        log.setLevel(logging.NOTSET)
        assert _client(spec, None)["silence_logs"] == logging.ERROR
        spec["cluster"]["silence_logs"] = logging.INFO  # a study file's own choice wins
        assert _client(spec, None)["silence_logs"] == logging.INFO
    finally:
        log.setLevel(level)


def test_debug_after_the_command_and_a_store_said_once(tmp_path):
    """--debug works after the command too; a folder that is not a store is said once."""
    from click.testing import CliRunner

    from bbc_dask.cli import main
    from bbc_dask.exceptions import StoreNotFoundError

    res = CliRunner().invoke(main, ["status", str(tmp_path / "missing.zarr"), "--debug"])
    assert isinstance(res.exception, StoreNotFoundError), res.output  # raised, not one line
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(main, ["status", str(tmp_path / "empty")])
    assert res.exit_code == 2 and res.output.count("is not a bbc_dask study store") == 1, res.output


def test_run_overwrite_replaces_another_study_and_errors_say_the_flag(tmp_path, client):
    from click.testing import CliRunner

    from bbc_dask.cli import main

    small = {"name": "s", "data": {"sklearn": "breast_cancer"}, "cv": {"splits": 2},
             "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier",
                       "params": {"random_state": 0}, "grid": {"max_depth": [1]}}],
             "metric": "roc_auc", "random_state": 0, "store": "s.zarr", "bootstraps": 20}
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(small))
    run = ["run", str(f), "--scheduler", client.scheduler.address, "--no-progress"]
    assert CliRunner().invoke(main, run).exit_code == 0
    small["grid"][0]["grid"]["max_depth"] = [1, 2]
    f.write_text(yaml.safe_dump(small))
    res = CliRunner().invoke(main, run)
    assert res.exit_code == 2 and "--overwrite" in res.output and "overwrite=True" not in res.output
    res = CliRunner().invoke(main, run + ["--overwrite"])
    assert res.exit_code == 0, res.output
    assert bd.open_study(tmp_path / "s.zarr").state.shape[0] == 2
