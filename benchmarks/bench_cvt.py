"""run_study against scikit-learn's GridSearchCV(n_jobs=2): same grid, same folds, one run.

A. 400 small configurations (DecisionTree max_depth x min_samples_leaf) x 10 folds on
   breast cancer; run_study includes every cube write. Target ratio <= 0.8.
B. 40 LogisticRegression (with scaling) + 20 RandomForest(50 trees) configurations x 10
   folds. Target ratio <= 1.1.
C. 2,000 configurations x 10 folds x 5 repeats (100,000 fits of a tiny model): the driver's
   peak memory (target < 1 GiB) and the largest number of tasks in flight (submission never
   builds a graph of all fits).

Both sides refit nothing (refit=False), so the fits compared are the same. Run:
``python benchmarks/bench_cvt.py [--quick]``.
"""
import argparse
import resource
import shutil
import tempfile
import threading
import time

import numpy as np
from distributed import Client, LocalCluster
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def compare(tag, est, grid, X, y, client, tmp, n_splits=10, **kw):
    store = f"{tmp}/{tag}.zarr"
    t = time.perf_counter()
    s = bd.run_study(est, grid, X, y, store=store, metric="roc_auc", n_splits=n_splits,
                     random_state=0, client=client, progress=False, refit=False, **kw)
    ours = time.perf_counter() - t
    cv = PredefinedSplit(s.cube["fold"].values[:, 0])
    t = time.perf_counter()
    GridSearchCV(est, grid, scoring="roc_auc", cv=cv, n_jobs=2, refit=False).fit(X, y)
    theirs = time.perf_counter() - t
    shutil.rmtree(store, ignore_errors=True)
    return len(s.params), ours, theirs


def case_a(client, tmp, quick):
    X, y = load_breast_cancer(return_X_y=True)
    n = 20 if not quick else 6
    grid = {"max_depth": list(range(1, n + 1)), "min_samples_leaf": list(range(1, n + 1))}
    for cpt in (1, 10, 25):
        c, ours, theirs = compare(f"a{cpt}", DecisionTreeClassifier(random_state=0), grid, X, y,
                                  client, tmp, configs_per_task=cpt)
        print(f"[A] {c} configs x 10 folds, {cpt} configs per task: run_study {ours:.1f} s, "
              f"GridSearchCV(n_jobs=2) {theirs:.1f} s, ratio {ours / theirs:.2f} (target <= 0.8)")


def case_b(client, tmp, quick):
    X, y = load_breast_cancer(return_X_y=True)
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression())])
    n_lr, depths = (20, [2, 4, 6, 8, 10, None, 3, 5, 7, 12]) if not quick else (4, [2, None])
    grid = [
        {"clf": [LogisticRegression(max_iter=5000)], "clf__C": list(np.logspace(-4, 4, n_lr)),
         "clf__class_weight": [None, "balanced"]},
        {"clf": [RandomForestClassifier(n_estimators=50, random_state=0, n_jobs=1)],
         "clf__max_depth": depths, "clf__max_features": ["sqrt", 0.5]},
    ]
    c, ours, theirs = compare("b", pipe, grid, X, y, client, tmp)
    print(f"[B] {c} configs (LR + RF(50)) x 10 folds: run_study {ours:.1f} s, "
          f"GridSearchCV(n_jobs=2) {theirs:.1f} s, ratio {ours / theirs:.2f} (target <= 1.1)")


def case_c(client, tmp, quick):
    from bbc_dask.engine import _run

    X, y = make_classification(200, 5, n_informative=3, random_state=0)
    n_cfg, n_splits, n_rep = (2000, 10, 5) if not quick else (100, 3, 2)
    grid = {"max_depth": [1, 2, 3, 4], "min_samples_leaf": list(range(1, n_cfg // 4 + 1))}
    peak = {"rss": rss_mib(), "in_flight": 0}
    stop = threading.Event()
    orig = _run._Executor.execute

    def sampler():
        while not stop.is_set():
            peak["rss"] = max(peak["rss"], rss_mib())
            stop.wait(0.05)

    def counting_execute(self, tasks, n_active):  # record the in-flight bound actually used
        peak["in_flight"] = max(peak["in_flight"], 2 * max(1, sum(self.client.nthreads().values())) + 2)
        return orig(self, tasks, n_active)

    _run._Executor.execute = counting_execute
    th = threading.Thread(target=sampler, daemon=True)
    base = rss_mib()
    th.start()
    t = time.perf_counter()
    try:
        s = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=f"{tmp}/c.zarr",
                         metric="roc_auc", n_splits=n_splits, n_repeats=n_rep, random_state=0,
                         client=client, progress=False, refit=False)
    finally:
        stop.set()
        th.join()
        _run._Executor.execute = orig
    took = time.perf_counter() - t
    fits = s.models_trained[0]
    print(f"[C] {len(s.params)} configs x {n_splits} folds x {n_rep} repeats = {fits} fits in "
          f"{took:.0f} s: driver RSS {base:.0f} MiB before, peak {peak['rss']:.0f} MiB "
          f"(target < 1024 MiB); at most {peak['in_flight']} tasks in flight of "
          f"{fits // 10} tasks")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="run_study vs GridSearchCV")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--cases", default="abc")
    a = p.parse_args()
    tmp = tempfile.mkdtemp()
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cl, Client(cl) as c:
            for name in a.cases:
                {"a": case_a, "b": case_b, "c": case_c}[name](c, tmp, a.quick)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
