"""Subprocess entry point for kill/resume tests: run one study and exit.

Usage: python run_study_cli.py STORE KIND [dropping]
KIND "trees": breast cancer, 30 decision-tree configurations, 5 folds x 2 repeats;
"forest": the same grid of 16-tree random forests (slower fits).
"""
import sys

from sklearn.datasets import load_breast_cancer
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd


def spec(kind):
    X, y = load_breast_cancer(return_X_y=True)
    grid = {"max_depth": [1, 2, 3, 4, 5, 6], "min_samples_leaf": [1, 2, 5, 10, 20]}
    if kind == "trees":
        return DecisionTreeClassifier(random_state=0), grid, X, y
    if kind == "forest":  # ~30 ms fits: the last 15% of the run lasts well over a ledger
        # flush interval (0.5 s), so a kill there finds the run unfinished
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=16, random_state=0, n_jobs=1), grid, X, y
    raise ValueError(kind)


def run(store, kind, dropping=False, client=None):
    est, grid, X, y = spec(kind)
    drop = bd.Dropping(alpha=0.9, n_bootstraps=200, min_predictions=50) if dropping else None
    return bd.run_study(est, grid, X, y, store=store, metric="roc_auc", n_splits=5, n_repeats=2,
                        random_state=0, client=client, progress=False, configs_per_task=1,
                        dropping=drop, refit=False)


if __name__ == "__main__":
    from distributed import Client, LocalCluster

    store, kind = sys.argv[1], sys.argv[2]
    dropping = len(sys.argv) > 3 and sys.argv[3] == "dropping"
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cl, Client(cl) as c:
        run(store, kind, dropping, client=c)
