"""The coverage harness: the paper's protocol as Dask tasks, resumable, and its table."""
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from bbc_dask.protocols._coverage import coverage, coverage_table, repetition
from bbc_dask.exceptions import InvalidParameterError, StoreLockedError, StoreMismatchError

SMALL = [{"a": 24, "b": 6, "n_samples": 120, "n_configs": 12, "class0_share": 0.5},
         {"a": 9, "b": 6, "n_samples": 80, "n_configs": 8, "class0_share": 0.3}]
METHODS = ["bbc", "bbc_f", "delong", "tilting_10p", "mabt", "naive_bootstrap"]
ARGS = dict(settings=SMALL, methods=METHODS, n_repetitions=4, n_bootstraps=200, random_state=5)


def test_table_counts_inclusion_tightness_and_the_binomial_test():
    rows = ([{"setting": 0, "rep": r, "method": "bbc", "lower_bound": 0.8, "truth": 0.9 if r < 184 else 0.7}
             for r in range(200)]
            + [{"setting": 0, "rep": r, "method": "mabt", "lower_bound": np.nan if r < 3 else 0.85,
                "truth": 0.9} for r in range(10)])
    t = coverage_table(rows, 0.05).set_index("method")
    assert t.loc["bbc", "inclusion"] == 184 / 200 and t.loc["bbc", "runs"] == 200
    assert t.loc["bbc", "tightness"] == pytest.approx((184 * 0.9 + 16 * 0.7) / 200 - 0.8)
    assert t.loc["bbc", "binom_p"] == pytest.approx(binom.cdf(184, 200, 0.95))
    assert not t.loc["bbc", "not_rejected"]  # P(X <= 184 | 0.95) = 0.044: the paper's rule rejects
    one_more = [dict(r, truth=0.9) if r["rep"] == 184 else r for r in rows[:200]]
    assert coverage_table(one_more, 0.05)["not_rejected"].iloc[0]  # 185 of 200: p = 0.078
    assert t.loc["mabt", "failed"] == 3 and t.loc["mabt", "runs"] == 7 and t.loc["mabt", "not_rejected"]


def test_a_run_writes_its_table_and_resumes_only_what_is_missing(tmp_path, client):
    out = tmp_path / "cov"
    table = coverage(out, client=client, **ARGS)
    assert len(table) == len(SMALL) * len(METHODS)
    assert (table["runs"] + table["failed"] == 4).all()
    for name in ("coverage.csv", "coverage.html", "coverage.json"):
        assert (out / name).stat().st_size > 0
    assert (out / "coverage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<b>" in (out / "coverage.html").read_text()
    # the table is the rows': recount one cell from the stored repetitions
    rows = [row for p in sorted((out / "runs").glob("s000_*.json")) for row in json.loads(p.read_text())
            if row["method"] == "bbc"]
    inc = np.mean([r["truth"] >= r["lower_bound"] for r in rows])
    assert table.query("setting == 0 and method == 'bbc'")["inclusion"].item() == inc
    # a lost repetition is recomputed alone, to the same numbers
    lost = out / "runs" / "s001_r00002.json"
    before = json.loads(lost.read_text())
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json") if p != lost}
    lost.unlink()
    again = coverage(out, client=client, **ARGS)
    assert json.loads(lost.read_text()) == before
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json") if p != lost}
    pd.testing.assert_frame_equal(again, table)
    # more repetitions extend it; other arguments are refused, the stored runs untouched
    with pytest.raises(StoreMismatchError, match="other arguments"):
        coverage(out, client=client, **(ARGS | {"alpha": 0.1}))
    assert len(list((out / "runs").glob("*.json"))) == 8


def _spec(**kw):
    return {"protocol": "simulation", "settings": SMALL, "methods": METHODS, "n_repetitions": 4,
            "alpha": 0.05, "n_bootstraps": 200, "selection": "fold_mean", "version": 2,
            "seed": {"entropy": "5", "spawn_key": []}} | kw


def test_a_repetition_does_not_depend_on_where_it_runs():
    spec = _spec()
    a, b = repetition(spec, 1, 3), repetition(spec, 1, 3)
    assert a == b and {r["method"] for r in a} == set(METHODS)
    assert repetition(spec, 1, 2) != a


def test_a_repetition_follows_the_papers_code():
    """NB is the paper's (the fold-mean winner's fold AUCs resampled, 500 times by
    default); BBC's final winner, whose truth is scored, is the best mean fold AUC (the
    paper's code) or, with selection="pooled", the best pooled AUC."""
    import bbc_dask as bd
    from bbc_dask.protocols._coverage import _simulated
    from bbc_dask._random import child_seed

    spec = _spec(n_bootstraps=None, methods=["bbc", "bbc_f", "naive_bootstrap"])
    rows = {r["method"]: r for r in repetition(spec, 0, 1)}
    root = np.random.SeedSequence(5)
    seed = child_seed(root, "coverage", 0, 1)
    pred, y, folds, truth = _simulated(SMALL[0], seed)
    nb = bd.naive_bootstrap(pred, y, folds=folds, metric="roc_auc", unit="fold", n_bootstraps=500,
                            random_state=child_seed(seed, "method", "naive_bootstrap"))
    f = bd.bbc_f(pred, y, folds, metric="roc_auc", random_state=0)
    assert rows["naive_bootstrap"]["lower_bound"] == nb.lower_bound and nb.n_bootstraps == 500
    assert rows["naive_bootstrap"]["selected"] == rows["bbc"]["selected"] == f.selected_config
    pooled = {r["method"]: r for r in repetition(_spec(n_bootstraps=None, methods=["bbc"],
                                                      selection="pooled"), 0, 1)}
    assert pooled["bbc"]["selected"] == bd.naive_cvt(pred, y, metric="roc_auc").selected_config
    assert pooled["bbc"]["lower_bound"] == rows["bbc"]["lower_bound"]  # the same bootstraps


def test_real_protocol_holds_out_the_rest(tmp_path, client):
    table = coverage(tmp_path / "real", protocol="real", methods=["bbc", "delong"],
                     settings=[{"dataset": "breast_cancer", "n_train": 60}], n_repetitions=2,
                     n_bootstraps=200, client=client)
    assert list(table["method"]) == ["bbc", "delong"] and (table["runs"] == 2).all()
    rows = json.loads((tmp_path / "real" / "runs" / "s000_r00000.json").read_text())
    assert all(0.5 < r["truth"] <= 1 for r in rows)  # hold-out AUCs of breast cancer models


def test_a_second_run_on_the_same_directory_is_refused(tmp_path):
    from bbc_dask.cube import StoreLock

    with StoreLock(tmp_path / "busy"):
        with pytest.raises(StoreLockedError):
            coverage(tmp_path / "busy", **ARGS)


@pytest.mark.parametrize("kwargs, message", [
    (dict(protocol="bootstrap"), r"'protocol' parameter of coverage must be one of"),
    (dict(methods=["bbc", "auc"]), r"'methods' parameter of coverage must be one of"),
    (dict(settings=[{"a": 24}]), r"'settings' parameter of coverage must be dicts of the keys"),
    (dict(n_repetitions=0), r"'n_repetitions' parameter of coverage must be an int"),
    (dict(selection="best"), r"'selection' parameter of coverage must be one of \['fold_mean', 'pooled'\]"),
])
def test_bad_arguments_are_refused_before_anything_is_written(tmp_path, kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        coverage(tmp_path / "bad", **kwargs)
    assert not (tmp_path / "bad").exists()


def test_command_line(tmp_path):
    cli = os.path.join(os.path.dirname(sys.executable), "bbc-dask")
    out = subprocess.run([cli, "coverage", str(tmp_path / "c"), "--setting",
                          "a=24,b=6,n_samples=100,n_configs=10,class0_share=0.5", "--method", "bbc",
                          "--method", "delong", "--repetitions", "2", "--bootstraps", "100",
                          "--cluster-option", "n_workers=1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "inclusion" in out.stdout and "coverage.csv" in out.stdout
    csv = pd.read_csv(tmp_path / "c" / "coverage.csv")
    assert list(csv["method"]) == ["bbc", "delong"] and (csv["n_samples"] == 100).all()


# The 2018 paper's simulation (§5.1, Figure 1): bias and inclusion of CVT, TT, NCV, BBC,
# BBCD, BBC-F and repeated holdout.

TINY_2018 = [{"a": 9, "b": 6, "n_samples": 20, "n_configs": 15},
             {"a": 14, "b": 6, "n_samples": 40, "n_configs": 10}]
ARGS_2018 = dict(protocol="simulation2018", settings=TINY_2018, n_repetitions=3, n_bootstraps=100,
                 random_state=11)


def test_nested_cv_on_a_matrix_is_the_plain_loop():
    from scipy.stats import t

    from bbc_dask.stats import ncv_of_matrix, repeated_holdout_of_matrix

    gen = np.random.default_rng(3)
    y = np.arange(30) % 2
    stack = np.where(gen.random((5, 30, 7)) < gen.uniform(0.4, 0.8, 7), y[:, None], 1 - y[:, None])
    folds = np.arange(30) % 5
    for pred in (stack[0], stack):  # one matrix for every outer fold, or one each
        scores = []
        for k in range(5):
            mat = pred if pred.ndim == 2 else pred[k]
            correct = mat == y[:, None]
            best = int(np.argmax(correct[folds != k].mean(axis=0)))  # ties to the lowest index
            scores.append(correct[folds == k, best].mean())
        res = ncv_of_matrix(pred, y, folds, metric="accuracy", confidence_level=0.9)
        assert res.outer_scores.tolist() == pytest.approx(scores)
        assert res.estimate == pytest.approx(np.mean(scores))
        half = t.ppf(0.95, 4) * np.std(scores, ddof=1) / np.sqrt(5)
        low, high = np.mean(scores) - half, np.mean(scores) + half  # inside accuracy's [0, 1]
        assert res.confidence_interval == pytest.approx((max(low, 0.0), min(high, 1.0)))
        assert res.ci_clipped == (high > 1.0 or low < 0.0)
    rh = repeated_holdout_of_matrix(stack, y, metric="accuracy", n_repeats=5, test_size=0.2, random_state=0)
    s = rh.outer_scores
    half = t.ppf(0.975, 4) * np.sqrt((1 / 5 + 6 / 24) * np.var(s, ddof=1))
    assert rh.estimate == pytest.approx(s.mean())
    assert rh.confidence_interval.high == pytest.approx(min(s.mean() + half, 1.0))
    assert (np.round(s * 6) == s * 6).all()  # six held-out rows of 30
    with pytest.raises(InvalidParameterError, match="'predictions' parameter of ncv_of_matrix"):
        ncv_of_matrix(stack[:3], y, folds, metric="accuracy")


def test_2018_protocol_table_is_the_repetitions_whatever_the_workers(tmp_path, client):
    from bbc_dask.protocols._coverage import _design
    from bbc_dask.protocols._coverage2018 import METHODS_2018, bias_table

    table = coverage(tmp_path / "a", client=client, **ARGS_2018)
    assert list(table["method"][:7]) == list(METHODS_2018) and (table["runs"] == 3).all()
    assert table.query("method in ['cvt', 'tt', 'bbcd']")["inclusion"].isna().all()
    assert table.query("method in ['ncv', 'bbc', 'bbc_f', 'repeated_holdout']")["inclusion"].notna().all()
    assert (tmp_path / "a" / "coverage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "NCV" in (tmp_path / "a" / "coverage.html").read_text()
    # the same rows computed here, in this process, give the same table
    design = json.loads((tmp_path / "a" / "coverage.json").read_text())
    assert design == _design("simulation2018", TINY_2018, None, 3, 0.05, 100, None, 11)
    assert design["selection"] == "pooled" and design["holdout"] == {"n_repeats": 10, "test_size": 0.3}
    rows = [row for s in range(2) for r in range(3) for row in repetition(design, s, r)]
    here = bias_table(rows, 0.05)
    pd.testing.assert_frame_equal(table.drop(columns=["a", "b", "n_samples", "n_configs"]), here)
    one = {r["method"]: r for r in rows[:7]}
    assert one["cvt"]["selected"] == one["tt"]["selected"] == one["ncv"]["selected"]
    assert one["bbc"]["selected"] == one["cvt"]["selected"]  # BBC-CV's pooled winner, as the code


def test_2018_protocol_resumes_to_the_same_table(tmp_path, client):
    whole = coverage(tmp_path / "whole", client=client, **ARGS_2018)
    coverage(tmp_path / "part", client=client, **(ARGS_2018 | {"n_repetitions": 1}))
    (tmp_path / "part" / "runs" / "s001_r00000.json").unlink()  # as if stopped mid-run
    resumed = coverage(tmp_path / "part", client=client, **ARGS_2018)
    pd.testing.assert_frame_equal(resumed, whole)


def test_the_older_protocols_keep_their_design():
    """A directory of the 2024 protocols resumes: their manifest has the same keys and
    values as before the 2018 protocol existed."""
    from bbc_dask.protocols._coverage import _design

    design = _design("simulation", SMALL, METHODS, 4, 0.05, 200, None, 5)
    assert design == _spec()


@pytest.mark.parametrize("kwargs, message", [
    (dict(methods=["ncv", "delong"]), r"'methods' parameter of coverage must be one of \['cvt'"),
    (dict(settings=[{"a": 9, "b": 6, "n_samples": 100, "n_configs": 10, "class0_share": 0.5}]),
     r"'settings' parameter of coverage must be dicts of the keys \['a', 'b', 'n_samples', 'n_configs'\]"),
    (dict(settings=[{"a": 9, "b": 6, "n_samples": 12, "n_configs": 10}]),
     r"settings\[i\]\['n_samples'\]\" parameter of coverage must be an int in the range \[20, inf\)"),
    (dict(settings=[{"a": 0, "b": 6, "n_samples": 40, "n_configs": 10}]),
     r"settings\[i\]\['a'\]\" parameter of coverage must be a float"),
])
def test_bad_2018_arguments_are_one_line_errors(tmp_path, kwargs, message):
    with pytest.raises(InvalidParameterError, match=message) as e:
        coverage(tmp_path / "bad", protocol="simulation2018", **kwargs)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow
def test_2018_protocol_cvt_is_optimistic_and_ncv_is_not(tmp_path, client):
    """Figure 1's shape at 300 repetitions (N = 20 and 100, C = 100): CVT's bias is positive
    by far more than twice 2 standard errors; NCV's is within twice 2 standard errors (or
    0.01) of zero; BBC-CV's and BBC-F's intervals are not rejected by the binomial test."""
    settings = [{"a": 9, "b": 6, "n_samples": n, "n_configs": 100} for n in (20, 100)]
    table = coverage(tmp_path / "fig1", protocol="simulation2018", settings=settings,
                     methods=["cvt", "ncv", "bbc", "bbc_f"], n_repetitions=300, random_state=3,
                     client=client).set_index(["setting", "method"])
    for s in range(2):
        cvt, ncv = table.loc[(s, "cvt")], table.loc[(s, "ncv")]
        assert cvt["bias"] > 2 * 2 * cvt["bias_se"]
        assert abs(ncv["bias"]) < max(2 * 2 * ncv["bias_se"], 0.01)
        assert table.loc[(s, "bbc"), "not_rejected"] and table.loc[(s, "bbc_f"), "not_rejected"]
