"""Every kind of estimate the package makes, on fixed seeds, printed bit-exactly (float.hex)
as JSON. Run it before and after a change that must not alter results and compare:

    python tests/scripts/estimates_snapshot.py > before.json   # on the old commit
    python tests/scripts/estimates_snapshot.py > after.json
    cmp before.json after.json

Covers the in-memory and chunked (Dask) paths of BBC, BBC-F, the naive bootstrap and the
dropping test for every metric, the comparators, and small studies through run_study (CVT,
repeats, BBCD, fold-mean selection) read back through Study.
"""
import json
import sys
import tempfile
import warnings

import numpy as np

import bbc_dask as bd
from bbc_dask import simulate

warnings.simplefilter("ignore")
OUT = {}


def put(key, value):
    def enc(v):
        if isinstance(v, (float, np.floating)):
            return float(v).hex()
        if isinstance(v, (int, np.integer, bool, np.bool_, str)) or v is None:
            return v if not isinstance(v, np.generic) else v.item()
        if isinstance(v, np.ndarray):
            return [enc(x) for x in v.ravel().tolist()] + [list(v.shape)]
        if isinstance(v, (list, tuple)):
            return [enc(x) for x in v]
        if isinstance(v, dict):
            return {str(k): enc(x) for k, x in v.items()}
        return repr(v)
    OUT[key] = enc(value)


def result(key, r):
    put(key, {"estimate": r.estimate, "ci": list(r.confidence_interval), "lb": r.lower_bound,
              "dist": r.bootstrap_distribution, "winners": r.winners,
              "selected": r.selected_config, "naive": r.naive_estimate})


def matrices():
    rng = np.random.default_rng(7)
    sims = {}
    a = simulate.auc_matrix(160, 12, n_splits=5, n_repeats=2, random_state=1)
    sims["binary"] = (a.predictions, a.y, a.folds)
    acc = simulate.accuracy_matrix(150, 9, n_splits=5, random_state=2)
    sims["labels"] = (acc.predictions, acc.y, acc.folds)
    n, c, k = 120, 7, 3
    y3 = np.tile(np.arange(k), n // k)
    p3 = rng.dirichlet(np.ones(k), size=(n, c))
    f3 = np.tile(np.arange(4), n // 4)
    sims["multi"] = (p3[:, :, None, :], y3, f3)
    yr = rng.normal(size=n)
    pr = yr[:, None] + rng.normal(scale=np.linspace(0.5, 1.5, 6), size=(n, 6))
    sims["regression"] = (pr, yr, np.tile(np.arange(5), n // 5))
    time = rng.exponential(size=n)
    event = rng.random(n) < 0.7
    risk = -np.log(time)[:, None] + rng.normal(scale=np.linspace(0.3, 2, 5), size=(n, 5))
    sims["survival"] = (risk, np.c_[time, event], np.tile(np.arange(4), n // 4))
    return sims


METRIC_OF = {"binary": ["roc_auc", "accuracy", "balanced_accuracy", "f1", "neg_log_loss"],
             "labels": ["accuracy", "balanced_accuracy", "f1"],
             "multi": ["roc_auc_ovr", "roc_auc_ovo", "accuracy", "neg_log_loss"],
             "regression": ["neg_mean_squared_error", "neg_mean_absolute_error", "r2",
                            "r2_corr"],
             "survival": ["concordance_index"]}


def prepared(kind, metric, p, y):
    if metric in ("accuracy", "balanced_accuracy", "f1") and kind == "binary":
        return (p > 0.5).astype(float)
    if metric == "neg_log_loss" and kind == "binary":
        q = 1 / (1 + np.exp(-(p - 0.5) * 4))
        return np.stack([1 - q, q], axis=-1)
    if metric in ("accuracy",) and kind == "multi":
        return p.argmax(-1).astype(float)
    if metric == "roc_auc_ovo" or metric == "neg_log_loss" or metric == "roc_auc_ovr":
        return p
    return p


def in_memory(sims):
    for kind, (p, y, folds) in sims.items():
        for metric in METRIC_OF[kind]:
            q = prepared(kind, metric, p, y)
            key = f"{kind}/{metric}"
            for sel in ("pooled", "fold_mean"):
                try:
                    result(f"bbc/{key}/{sel}", bd.bbc(q, y, metric=metric, folds=folds, n_bootstraps=200,
                                                      random_state=3, selection=sel))
                except Exception as exc:
                    put(f"bbc/{key}/{sel}", f"error {type(exc).__name__}: {exc}")
            for fn in ("bbc_f",):
                try:
                    result(f"{fn}/{key}", bd.bbc_f(q, y, folds, metric=metric, n_bootstraps=200,
                                                    random_state=4))
                except Exception as exc:
                    put(f"{fn}/{key}", f"error {type(exc).__name__}: {exc}")
            for unit in ("sample", "fold"):
                try:
                    result(f"nb/{key}/{unit}", bd.naive_bootstrap(
                        q, y, metric=metric, folds=folds, unit=unit, n_bootstraps=150, random_state=5))
                except Exception as exc:
                    put(f"nb/{key}/{unit}", f"error {type(exc).__name__}: {exc}")
            try:
                avail = np.ones(q.shape[:1] + (q.shape[2:3] if kind == "binary" else ()), bool)
                d = bd.dropping_test(q, y, avail,
                                     metric=metric, n_bootstraps=150, random_state=6)
                put(f"drop/{key}", repr(d))
            except Exception as exc:
                put(f"drop/{key}", f"error {type(exc).__name__}: {exc}")
            for fn in ("naive_cvt", "tibshirani_tibshirani"):
                try:
                    if fn == "naive_cvt":
                        r = bd.naive_cvt(q, y, metric=metric, folds=folds)
                    else:
                        r = bd.tibshirani_tibshirani(q, y, folds, metric=metric)
                    put(f"{fn}/{key}", {"estimate": r.estimate, "ci": list(r.confidence_interval)})
                except Exception as exc:
                    put(f"{fn}/{key}", f"error {type(exc).__name__}: {exc}")
            try:
                put(f"fsm/{key}", bd.fold_score_matrix(q, y, folds, metric=metric))
            except Exception as exc:
                put(f"fsm/{key}", f"error {type(exc).__name__}: {exc}")
    p, y, folds = sims["binary"]
    for method in ("delong", "hanley_mcneil", "tilting", "delong_10p", "hanley_mcneil_10p",
                   "tilting_10p", "mabt"):
        try:
            r = bd.selection_ci(p[:, :, 0], y, folds[:, 0], method, random_state=8, n_bootstraps=300)
            put(f"selection_ci/{method}", repr(r))
        except Exception as exc:
            put(f"selection_ci/{method}", f"error {type(exc).__name__}: {exc}")


def lazy(sims):
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cl, Client(cl):
        for kind, (p, y, folds) in sims.items():
            for metric in METRIC_OF[kind]:
                q = prepared(kind, metric, p, y)
                chunks = (q.shape[0] // 2, 3) + q.shape[2:]
                lq = da.from_array(q, chunks=chunks)
                key = f"{kind}/{metric}"
                for name, call in (
                        ("bbc", lambda: bd.bbc(lq, y, metric=metric, n_bootstraps=200, random_state=3, block_size=40)),
                        ("bbc_f", lambda: bd.bbc_f(lq, y, folds, metric=metric, n_bootstraps=200, random_state=4))):
                    try:
                        result(f"lazy-{name}/{key}", call())
                    except Exception as exc:
                        put(f"lazy-{name}/{key}", f"error {type(exc).__name__}: {exc}")


def studies():
    from sklearn.datasets import make_classification, make_regression
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.tree import DecisionTreeClassifier

    X, y = make_classification(n_samples=150, n_features=8, random_state=0)
    Xr, yr = make_regression(n_samples=120, n_features=5, noise=5.0, random_state=0)
    cases = {
        "lr-auc": dict(estimator=LogisticRegression(max_iter=200), param_grid={"C": [0.01, 0.1, 1, 10]},
                       X=X, y=y, metric="roc_auc", n_splits=5, n_repeats=2),
        "dt-acc-bbcd": dict(estimator=DecisionTreeClassifier(random_state=0),
                            param_grid={"max_depth": [1, 2, 3, 4, 6, 8, None], "min_samples_leaf": [1, 5, 20]},
                            X=X, y=y, metric="accuracy", n_splits=5, dropping=bd.Dropping(n_bootstraps=100)),
        "ridge-fm": dict(estimator=Ridge(), param_grid={"alpha": [0.01, 1, 100]}, X=Xr, y=yr,
                         metric="neg_mean_squared_error", n_splits=4, selection="fold_mean"),
        "lr-random": dict(estimator=LogisticRegression(max_iter=200),
                          param_distributions={"C": [0.001, 0.01, 0.1, 1, 10, 100]}, n_iter=4,
                          X=X, y=y, metric="neg_log_loss", n_splits=3),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in cases.items():
            s = bd.run_study(store=f"{tmp}/{name}.zarr", random_state=11, progress=False,
                             client={"kind": "local", "n_workers": 1, "threads_per_worker": 2,
                                     "processes": False}, **kw)
            result(f"study/{name}/bbc", s.bbc(n_bootstraps=200, random_state=1))
            result(f"study/{name}/bbc_f", s.bbc_f(n_bootstraps=200, random_state=2))
            put(f"study/{name}/best", [s.best_index_, s.best_score_])
            cv = s.cv_results_
            put(f"study/{name}/cv", {k: v for k, v in cv.items() if k.startswith(("mean_test", "split", "rank"))})
            put(f"study/{name}/candidates", np.asarray(s.candidates()))


if __name__ == "__main__":
    sims = matrices()
    in_memory(sims)
    lazy(sims)
    studies()
    json.dump(OUT, sys.stdout, indent=0, sort_keys=True)
    print()
