"""bootstrap_estimate(method=".632+") on a 2-worker local cluster against mlxtend's
``bootstrap_point632_score(method=".632+")`` and a plain single-process loop, same
estimator, same number of rounds, accuracy; ratios from one run of this script (each side
``--repeat`` times, default 2, interleaved; the best time of each side counts, as timeit's
does, since this machine's noise only ever slows).

A. DecisionTreeClassifier(random_state=0) on breast cancer (569 x 30), 200 rounds.
B. StandardScaler -> LogisticRegression(max_iter=2000) on breast cancer, 200 rounds.
C. RandomForestClassifier(n_estimators=50, random_state=0) on breast cancer, 100 rounds.

The sides:

- bootstrap_estimate on ``bd.make_client(n_workers=2, dashboard_address=":0")`` (one
  thread per worker), ``progress=False``; its time includes drawing the indices, shipping
  the data and every score (out-of-bag, resubstitution, γ).
- mlxtend's ``bootstrap_point632_score`` (if ``import mlxtend`` works; its column says
  ``unavailable`` otherwise): one process. Its .632+ computes the no-information rate by
  scoring a Python list of all n² (y_i, ŷ_j) pairs each round, which is most of its time
  on cheap fits; the plain loop is the baseline without that cost.
- a plain loop in this process: per round, fit on the in-bag rows, predict all rows,
  accuracy out of bag and in bag, γ by Eq. 36, and the .632+ formula (no Dask).

Before the cases the cluster runs a 2-round estimate (untimed), so worker start-up and
first imports are charged to no case. Each case prints each side's time and the ratio
bootstrap_estimate / side (target <= 0.6). Nothing is asserted.

Run: ``python benchmarks/bench_bootstrap.py [--quick] [--repeat 2]``
"""
import argparse
import time

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd


def plain_loop(estimator, X, y, n_rounds, seed=0):
    """.632+ accuracy, one process: the formulas of bootstrap_estimate, no Dask."""
    rng = np.random.default_rng(seed)
    n, k = len(y), int(y.max()) + 1
    p = np.bincount(y, minlength=k) / n
    out = []
    for _ in range(n_rounds):
        idx = rng.integers(0, n, n)
        oob = np.setdiff1d(np.arange(n), idx)
        pred = clone(estimator).fit(X[idx], y[idx]).predict(X)
        o, r = np.mean(pred[oob] == y[oob]), np.mean(pred[idx] == y[idx])
        g = p @ (np.bincount(pred, minlength=k) / n)
        o2 = max(o, g)
        rate = (r - o2) / (r - g) if o < r and g < r else 0.0
        out.append(min(r, 0.368 * r + 0.632 * o + (o2 - r) * 0.2326 * rate / (1 - 0.368 * rate)))
    return float(np.mean(out))


def mlxtend_side():
    try:
        from mlxtend.evaluate import bootstrap_point632_score
    except Exception as exc:  # noqa: BLE001 - any import failure: the side is skipped
        return None, f"{type(exc).__name__}: {exc}"

    def run(estimator, X, y, n_rounds):
        return float(np.mean(bootstrap_point632_score(estimator, X, y, n_splits=n_rounds,
                                                      method=".632+", random_seed=0)))
    return run, None


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    X, y = load_breast_cancer(return_X_y=True)
    scale = 0.1 if args.quick else 1.0
    cases = [
        ("A tree", DecisionTreeClassifier(random_state=0), int(200 * scale)),
        ("B scaler+logistic", make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
         int(200 * scale)),
        ("C forest(50)", RandomForestClassifier(n_estimators=50, random_state=0), int(100 * scale)),
    ]
    mlx, why = mlxtend_side()
    if mlx is None:
        print(f"mlxtend: unavailable ({why})")
    client = bd.make_client(n_workers=2, dashboard_address=":0")
    try:
        bd.bootstrap_estimate(DecisionTreeClassifier(), X, y, metric="accuracy", n_bootstraps=2,
                              method=".632+", random_state=0, client=client, progress=False)
        print(f"{'case':20s} {'rounds':>6s} {'bbc_dask s':>10s} {'mlxtend s':>10s} "
              f"{'loop s':>8s} {'vs mlxtend':>10s} {'vs loop':>8s}   estimates (bbc, mlxtend, loop)")
        for name, est, rounds in cases:
            best = {"bbc": np.inf, "mlx": np.inf, "loop": np.inf}
            vals = {}
            for _ in range(args.repeat):
                t, vals["bbc"] = timed(lambda: bd.bootstrap_estimate(
                    est, X, y, metric="accuracy", n_bootstraps=rounds, method=".632+",
                    random_state=0, client=client, progress=False).estimate)
                best["bbc"] = min(best["bbc"], t)
                if mlx is not None:
                    t, vals["mlx"] = timed(lambda: mlx(est, X, y, rounds))
                    best["mlx"] = min(best["mlx"], t)
                t, vals["loop"] = timed(lambda: plain_loop(est, X, y, rounds))
                best["loop"] = min(best["loop"], t)
            mlx_s = f"{best['mlx']:10.2f}" if mlx is not None else f"{'unavailable':>10s}"
            vs_mlx = f"{best['bbc'] / best['mlx']:10.2f}" if mlx is not None else f"{'-':>10s}"
            print(f"{name:20s} {rounds:6d} {best['bbc']:10.2f} {mlx_s} {best['loop']:8.2f} "
                  f"{vs_mlx} {best['bbc'] / best['loop']:8.2f}   {vals['bbc']:.4f}, "
                  f"{vals.get('mlx', float('nan')):.4f}, {vals['loop']:.4f}", flush=True)
    finally:
        client.close()
        client.cluster.close()


if __name__ == "__main__":
    main()
