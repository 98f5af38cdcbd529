"""Stopping a study early by the width of BBC's interval (``run_study(stop=bd.Stop(
ci_width=w))``): the fits and wall time it saves, and how far its estimate is from the
full CV's.

Two studies, each run once to the end (the baseline, in this same process) and once per
target width w = 0.1, 0.05, 0.02 (each run in a fresh store, from nothing):

1. A simulated grid: 200 configurations x 10 folds of a classifier whose fit sleeps
   (``--fit-ms``, default 200 ms: a fit that holds no core, so the cluster's size, not this
   machine's cores, sets the pace) and whose scores are a latent signal plus noise of a
   configuration's own level, N = 5,000.
2. A real data set: scikit-learn's breast cancer data (N = 569), 10 folds, a grid of 20
   logistic regressions and 20 decision trees.

Printed per study and width: the fits run (and their share of the full CV's), the wall
seconds of the run (and their share), the waves complete when it stopped, BBC on the
incomplete CV at the stop (estimate, interval) and the full CV's BBC estimate, with the
distance between the two estimates. Every estimate uses the study's own seed and 1,000
bootstraps; the width rule's too.

Run: ``python benchmarks/bench_anytime.py [--workers 4] [--fit-ms 200] [--quick]``
(``--quick``: 64 configurations and one width, 0.1).
"""
import argparse
import shutil
import tempfile
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class NoisyScores(ClassifierMixin, BaseEstimator):
    """Scores ``X[:, 0] + noise * X[:, 1 + column]``: column 0 is a latent signal, the
    others noise; the fit sleeps ``fit_ms`` milliseconds (holding no core)."""

    def __init__(self, noise=1.0, column=0, fit_ms=20):
        self.noise = noise
        self.column = column
        self.fit_ms = fit_ms

    def fit(self, X, y):
        time.sleep(self.fit_ms / 1000)
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        X = np.asarray(X)
        return X[:, 0] + self.noise * X[:, 1 + self.column]

    def predict(self, X):
        return (self.decision_function(X) > 0.5).astype(int)


def simulated(n_configs, fit_ms, n=5000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.column_stack([y + rng.normal(size=n), rng.normal(size=(n, 8))])
    grid = {"noise": list(np.geomspace(0.2, 3.0, n_configs // 8)), "column": list(range(8)),
            "fit_ms": [fit_ms]}
    return NoisyScores(), grid, X, y


def breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_breast_cancer(return_X_y=True)
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    grid = [{"logisticregression": [LogisticRegression(max_iter=2000)],
             "logisticregression__C": list(np.geomspace(1e-4, 1e2, 20))},
            {"logisticregression": [DecisionTreeClassifier(random_state=0)],
             "logisticregression__max_depth": [1, 2, 3, 4, 6],
             "logisticregression__min_samples_leaf": [1, 5, 20, 50]}]
    return est, grid, X, y


def one(name, est, grid, X, y, widths, client, tmp):
    import bbc_dask as bd

    kw = dict(metric="roc_auc", n_splits=10, random_state=0, client=client, progress=False,
              refit=False)
    t = time.perf_counter()
    full = bd.run_study(est, grid, X, y, store=f"{tmp}/{name}-full.zarr", **kw)
    full_s = time.perf_counter() - t
    ref = full.bbc()
    n_cells = full.state.size
    print(f"\n{name}: {full.state.shape[0]} configurations x 10 folds = {n_cells:,} fits; "
          f"full CV {full_s:.1f} s, BBC {ref.estimate:.4f} "
          f"[{ref.confidence_interval[0]:.4f}, {ref.confidence_interval[1]:.4f}] "
          f"(width {ref.confidence_interval[1] - ref.confidence_interval[0]:.4f})")
    print(f"{'ci_width':>8s} {'fits':>12s} {'wall s':>12s} {'waves':>5s} {'BBC at stop':>11s} "
          f"{'interval at stop':>18s} {'|stop - full|':>13s}")
    for w in widths:
        t = time.perf_counter()
        s = bd.run_study(est, grid, X, y, store=f"{tmp}/{name}-{w}.zarr",
                         stop=bd.Stop(ci_width=w), **kw)
        wall = time.perf_counter() - t
        st = s.state
        fits = int((st != 0).sum())
        waves = int((st != 0).all(axis=(0, 1)).sum())
        res = s.bbc(include_incomplete=True) if s.stopped_ is not None else s.bbc()
        lo, hi = res.confidence_interval
        print(f"{w:8.2f} {fits:6,d} {fits / n_cells:5.0%} {wall:6.1f} {wall / full_s:5.0%} "
              f"{waves:5d} {res.estimate:11.4f} {f'[{lo:.4f}, {hi:.4f}]':>18s} "
              f"{abs(res.estimate - ref.estimate):13.4f}"
              f"{'' if s.stopped_ is not None else '  (not met: ran to the end)'}")


def main():
    from distributed import Client, LocalCluster

    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--fit-ms", type=float, default=200)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    widths = [0.1] if args.quick else [0.1, 0.05, 0.02]
    tmp = tempfile.mkdtemp(prefix="bench_anytime_")
    try:
        with LocalCluster(n_workers=args.workers, threads_per_worker=1) as cluster, \
                Client(cluster) as client:
            est, grid, X, y = simulated(64 if args.quick else 200, args.fit_ms)
            one("simulated", est, grid, X, y, widths, client, tmp)
            est, grid, X, y = breast_cancer()
            one("breast_cancer", est, grid, X, y, widths, client, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
