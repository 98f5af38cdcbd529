"""BBCD-CV against full CVT on one synthetic task, measured in one run.

make_classification with N training samples and a large held-out set, 10 folds, a grid
of 60 configurations with realistic spread (a logistic-regression regularisation path,
decision-tree depths, k-NN neighbours). For N = 1000 and N = 100 it prints: models
trained with dropping as a share of full CVT (target <= 50% at N = 1000); the held-out
AUC of the BBCD winner and of the full-CVT winner (target: within 0.01); the BBC / BBCD
estimates; the wall-time ratio.

First an uneven grid (the engine's hard case: 52 configurations of logistic regression,
random forests, SVMs and k-NN on 1,500 x 40 training rows, whose fits differ in cost by
two orders of magnitude): BBCD's wall time must be <= 1.25x its share of models, with the
same winner (held-out AUC).

Run: ``python benchmarks/bench_bbcd.py [--quick]``.
"""
import argparse
import shutil
import tempfile
import time

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd


def grid():
    return [
        {"clf": [LogisticRegression(max_iter=5000)], "clf__C": list(np.logspace(-4, 3, 20))},
        {"clf": [DecisionTreeClassifier(random_state=0)],
         "clf__max_depth": [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, None],
         "clf__min_samples_leaf": [1, 10]},
        {"clf": [KNeighborsClassifier()],
         "clf__n_neighbors": [1, 2, 3, 5, 7, 9, 11, 15, 21, 31, 41, 51, 71, 91, 121, 151]},
    ]


def uneven_grid():
    """52 configurations whose fits differ in cost by two orders of magnitude: 13 each of
    logistic regression, random forests (100 trees), SVMs and k-NN."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.svm import SVC

    return [
        {"clf": [LogisticRegression(max_iter=5000)], "clf__C": list(np.logspace(-4, 3, 13))},
        {"clf": [RandomForestClassifier(n_estimators=100, random_state=0)],
         "clf__max_depth": [2, 4, 6, 8, 12, None], "clf__max_features": ["sqrt", 0.5]},
        {"clf": [RandomForestClassifier(n_estimators=100, random_state=0, min_samples_leaf=10)]},
        {"clf": [SVC()], "clf__C": [0.1, 1.0, 10.0, 100.0], "clf__gamma": ["scale", 0.01, 0.1]},
        {"clf": [SVC(kernel="linear")]},
        {"clf": [KNeighborsClassifier()],
         "clf__n_neighbors": [1, 3, 5, 7, 9, 15, 21, 31, 41, 61, 81, 101, 151]},
    ]


def held_out_auc(study, X, y, X_test, y_test):
    return roc_auc_score(y_test, _score(study.final_model, X_test))


def _score(model, X):
    if hasattr(model, "decision_function"):
        try:
            return model.decision_function(X)
        except AttributeError:
            pass
    return model.predict_proba(X)[:, 1]


def case(n, client, n_test, tmp, uneven=False):
    n_features = 40 if uneven else 20
    X, y = make_classification(n + n_test, n_features, n_informative=6, n_redundant=4,
                               flip_y=0.05, class_sep=0.8, random_state=n)
    X_tr, y_tr, X_te, y_te = X[:n], y[:n], X[n:], y[n:]
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression())])
    out = {}
    for name, dropping in (("cvt", None), ("bbcd", bd.Dropping(alpha=0.99, n_bootstraps=1000, min_predictions=50))):
        store = f"{tmp}/{name}-{n}.zarr"
        shutil.rmtree(store, ignore_errors=True)
        t = time.perf_counter()
        s = bd.run_study(pipe, uneven_grid() if uneven else grid(), X_tr, y_tr, store=store,
                         metric="roc_auc", n_splits=10,
                         random_state=0, client=client, progress=False, dropping=dropping)
        out[name] = dict(time=time.perf_counter() - t, study=s, trained=s.models_trained,
                         held_out=held_out_auc(s, X_tr, y_tr, X_te, y_te),
                         est=s.bbc(random_state=0))
    c, b = out["cvt"], out["bbcd"]
    n_cfg = len(c["study"].params)
    first = [e for e in b["study"].dropping_log if e["tested"]]
    print(f"[N={n}{', uneven grid: LR, RF, SVC, kNN' if uneven else ''}] {n_cfg} configs x "
          f"{X.shape[1]} features x 10 folds; held-out n={n_test}")
    print(f"  models trained: BBCD {b['trained'][0]} / full CVT {c['trained'][0]} = "
          f"{b['trained'][0] / c['trained'][0]:.1%} (target <= 50% at N=1000)")
    print(f"  held-out AUC of the winner: BBCD {b['held_out']:.4f} (config "
          f"{b['study'].best_index_}) vs full CVT {c['held_out']:.4f} (config "
          f"{c['study'].best_index_}); difference {b['held_out'] - c['held_out']:+.4f} (target within 0.01)")
    print(f"  estimates: CVT naive {c['est'].naive_estimate:.4f}, BBC {c['est'].estimate:.4f}, "
          f"BBCD {b['est'].estimate:.4f} [{b['est'].confidence_interval.low:.4f}, "
          f"{b['est'].confidence_interval.high:.4f}]")
    share = b["trained"][0] / c["trained"][0]
    fit_s = {k: float(np.nansum(v["study"].cube["fit_time"].values)) for k, v in out.items()}
    cost = fit_s["bbcd"] / fit_s["cvt"]
    wall = b["time"] / c["time"]
    print(f"  wall time: BBCD {b['time']:.1f} s / CVT {c['time']:.1f} s = {wall:.2f}"
          f" = {wall / share:.2f}x its share of models (target <= 1.25)")
    print(f"  fit seconds: BBCD {fit_s['bbcd']:.1f} / CVT {fit_s['cvt']:.1f} = {cost:.1%}; wall "
          f"= {wall / cost:.2f}x its share of fit seconds (no schedule can go below ~1.0x: "
          f"the fits it keeps must run)")
    print(f"  first tested wave: {first[0]['wave'] if first else 'none'} "
          f"(min_predictions=50 needs {int(np.ceil(50 / (n / 10)))} waves of {n // 10} predictions); "
          f"active per wave: {[e.get('active_after', e['active_before']) for e in b['study'].dropping_log]}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="BBCD-CV vs full CVT")
    p.add_argument("--quick", action="store_true")
    quick = p.parse_args().quick
    tmp = tempfile.mkdtemp()
    try:
        with bd.make_client(n_workers=2, dashboard_address=":0") as c:
            case(1500 if not quick else 300, c, 20000 if not quick else 2000, tmp, uneven=True)
            for n in ((1000, 100) if not quick else (300,)):
                case(n, c, 20000 if not quick else 2000, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
