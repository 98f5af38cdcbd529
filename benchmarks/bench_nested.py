"""Nested CV on the engine (bd.nested_cv) against scikit-learn's nested loop
(``GridSearchCV(n_jobs=2)`` per outer fold, as ``cross_val_score(GridSearchCV(...),
cv=outer)`` runs it), same grid, same outer and inner folds, 2 workers on each side; and
the cost of BBC-CV (one study, ``run_study`` + ``Study.bbc``) on the same grid beside it.

A. 100 small trees: DecisionTreeClassifier(random_state=0), max_depth x min_samples_leaf
   (10 x 10) on breast cancer; 5 outer x 4 inner folds.
B. StandardScaler -> LogisticRegression(max_iter=2000), 20 values of C, breast cancer;
   5 outer x 4 inner folds (a pipeline: bbc_dask fits the scaler once per fold and worker).

The sides:

- ``bd.nested_cv(..., selection="fold_mean")`` on a 2-worker local cluster (one thread
  each), ``progress=False``, a new store each run; its time includes every store write.
  ``fold_mean`` selects as GridSearchCV does (best mean inner fold score), so the two
  sides select the same configurations and their outer scores agree (printed: max |diff|).
- scikit-learn: for each outer fold, ``GridSearchCV(est, grid, scoring="roc_auc",
  cv=PredefinedSplit(inner folds), n_jobs=2, refit=True)`` fit on the outer training set
  and scored on the outer test set — what ``cross_val_score(GridSearchCV(...), cv=outer)``
  does, with the folds nested_cv stored.
- BBC-CV: ``run_study`` with ``n_splits`` = the outer folds, ``refit=True``, then
  ``Study.bbc()``, on the same 2-worker cluster.

Each side runs ``--repeat`` times (default 2), interleaved; the best time counts (this
machine's noise only ever slows). Printed: times, the ratio nested_cv / scikit-learn
(target <= 1.0), models trained by NCV and by BBC-CV. Nothing is asserted.

Run: ``python benchmarks/bench_nested.py [--quick] [--cases ab] [--repeat 2]``
"""
import argparse
import shutil
import tempfile
import time

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, ParameterGrid, PredefinedSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd

TARGET = 1.0


def cases(quick):
    X, y = load_breast_cancer(return_X_y=True)
    n = 4 if quick else 10
    yield ("A", f"{n * n} trees", DecisionTreeClassifier(random_state=0),
           {"max_depth": list(range(1, n + 1)), "min_samples_leaf": [1, 2, 3, 5, 8, 12, 16, 20, 25, 30][:n]},
           X, y)
    yield ("B", f"{5 if quick else 20} scaled logistic regressions",
           Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression(max_iter=2000))]),
           {"lr__C": list(np.logspace(-3, 3, 5 if quick else 20))}, X, y)


def run_nested(client, est, grid, X, y, n_outer, n_inner):
    d = tempfile.mkdtemp(prefix="bench_nested_")
    try:
        t = time.perf_counter()
        res = bd.nested_cv(est, grid, X, y, store=f"{d}/n.zarr", metric="roc_auc",
                           n_outer=n_outer, n_inner=n_inner, random_state=0, client=client,
                           progress=False, selection="fold_mean")
        return time.perf_counter() - t, res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_sklearn(est, grid, X, y, res):
    scorer = get_scorer("roc_auc")
    t = time.perf_counter()
    scores = np.empty(res.n_outer)
    for o in range(res.n_outer):
        train = np.flatnonzero(res.outer_fold[:, 0] != o)
        test = np.flatnonzero(res.outer_fold[:, 0] == o)
        gs = GridSearchCV(clone(est), grid, scoring="roc_auc", n_jobs=2, refit=True,
                          cv=PredefinedSplit(res.inner_fold[train, 0, o]))
        gs.fit(X[train], y[train])
        scores[o] = scorer(gs, X[test], y[test])
    return time.perf_counter() - t, scores


def run_bbc(client, est, grid, X, y, n_splits):
    d = tempfile.mkdtemp(prefix="bench_bbc_")
    try:
        t = time.perf_counter()
        study = bd.run_study(est, grid, X, y, store=f"{d}/s.zarr", metric="roc_auc",
                             n_splits=n_splits, random_state=0, client=client, progress=False)
        study.bbc()
        n = int(np.isin(study._cube.state(), (1, 2)).sum()) + 1  # the cells and the refit
        return time.perf_counter() - t, n
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", default="ab")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    n_outer, n_inner = 5, 4
    client = bd.make_client(n_workers=2, dashboard_address=":0")
    try:
        X, y = load_breast_cancer(return_X_y=True)
        run_nested(client, DecisionTreeClassifier(), {"max_depth": [1, 2]}, X, y, 2, 2)  # warm-up
        GridSearchCV(DecisionTreeClassifier(), {"max_depth": [1, 2]}, n_jobs=2).fit(X, y)
        print(f"{'case':5s} {'grid':32s} {'nested_cv':>10s} {'sklearn':>9s} {'ratio':>6s} "
              f"{'max|diff|':>10s} {'NCV fits':>9s} {'BBC-CV':>8s} {'BBC fits':>9s}")
        for key, name, est, grid, X, y in cases(args.quick):
            if key.lower() not in args.cases:
                continue
            t_n, t_s, t_b = [], [], []
            for _ in range(args.repeat):
                tn, res = run_nested(client, est, grid, X, y, n_outer, n_inner)
                ts, scores = run_sklearn(est, grid, X, y, res)
                tb, bbc_fits = run_bbc(client, est, grid, X, y, n_outer)
                t_n.append(tn), t_s.append(ts), t_b.append(tb)
            diff = float(np.max(np.abs(res.outer_scores[0] - scores)))
            ratio = min(t_n) / min(t_s)
            print(f"{key:5s} {name:32s} {min(t_n):9.2f}s {min(t_s):8.2f}s {ratio:6.2f} "
                  f"{diff:10.1e} {res.models_trained:9,d} {min(t_b):7.2f}s {bbc_fits:9,d}"
                  f"{'' if ratio <= TARGET else '  (above target)'}")
            assert len(ParameterGrid(grid)) * n_inner * n_outer + n_outer == res.models_trained
    finally:
        client.close()
        client.cluster.close()


if __name__ == "__main__":
    main()
