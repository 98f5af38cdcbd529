"""What each of ``bd.compare``'s protocols pays per model, against scikit-learn's
``cross_validate`` running the same fits in this process.

The study of the report that asked for it: 800 rows (``make_classification``, 20
features), ``HistGradientBoostingClassifier(random_state=0)`` with 4 configurations
(learning_rate x max_depth), roc_auc, 4 folds (so nested CV is 4 outer x 3 inner folds and
the holdout family tunes with 3 inner folds), on a 2-worker local cluster
(``bd.make_client(n_workers=2)``, one thread each, the cluster ``bbc-dask compare``
starts).

Each protocol runs alone through ``bd.compare(..., protocols=[key])`` (CVT stands for TT,
BBC-CV and BBC-F, which share its fits), a new store each time; its per-model cost is the
row's ``fit_seconds / models_trained``. Right after it, its baselines, launched from this
process: ``cross_validate`` over the same number of fits of the same sizes, drawn the same
way (the rows differ: the baseline draws its own splits), once with ``n_jobs=2`` (two
processes fitting at once, as the cluster's two workers do: the target's baseline) and
once with ``n_jobs=None`` (one fit at a time, here):

- cvt: each configuration over ``StratifiedKFold(4, shuffle=True)``;
- ncv: ``GridSearchCV(est, grid, cv=StratifiedKFold(3))`` over ``StratifiedKFold(4)``
  (inner fits and refits: nested CV's 48 + 4 models);
- holdout, repeated_holdout: the tuned ``GridSearchCV(..., cv=3)`` over
  ``StratifiedShuffleSplit(1 or --repeats, test_size=0.3)``;
- bootstrap: the tuned model over ``--rounds`` bootstrap draws (in bag, out of bag).

A baseline model's cost is its ``fit_time + score_time`` (the store's fit seconds include
the prediction; the holdout family's include the tuned ``GridSearchCV.fit``'s inner
scoring, as ``cross_validate``'s ``fit_time`` of a ``GridSearchCV`` does). Every side fits
at one BLAS/OpenMP thread, as the cluster's workers do (their nannies set
``OMP_NUM_THREADS=1``; joblib's workers get one thread each with ``n_jobs=2`` on 2 cores;
``n_jobs=None`` runs under threadpoolctl's limit); ``--default-threads`` also times
``n_jobs=None`` at the libraries' default (a thread per core). On a busy machine two
processes fitting at once each fit slower than one alone, scikit-learn's as well as
bbc_dask's: hence the ``n_jobs=2`` baseline. Printed: per protocol, models, per-model
seconds of each side and the ratios (target <= 1.5 against ``n_jobs=2``), and wall
seconds. Nothing is asserted.

``--load N`` keeps N busy processes (a pure-Python loop each, at this process's priority)
spinning for the whole run: the busy shared machine of the report, where the cost of a
fit's threads shows.

Run: ``python benchmarks/bench_compare.py [--quick] [--load 2] [--repeats 10] [--rounds 50]``
"""
import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import (GridSearchCV, ParameterGrid, StratifiedKFold,
                                     StratifiedShuffleSplit, cross_validate)
from threadpoolctl import threadpool_limits

import bbc_dask as bd

TARGET = 1.5
GRID = {"learning_rate": [0.05, 0.2], "max_depth": [3, None]}
SPLITS = 4
INNER = SPLITS - 1  # compare's default n_inner
TEST_SIZE = 0.3
SEED = 0
WORKERS = 2  # the local cluster's, and the n_jobs of cross_validate's baseline


@contextlib.contextmanager
def busy(n):
    """``n`` processes spinning a pure-Python loop until the block ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def openmp_threads():
    """This process's OpenMP threads (threadpoolctl): what a fit here would use."""
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"),
               default=0)


def tuned(est):
    return GridSearchCV(est, GRID, scoring="roc_auc",
                        cv=StratifiedKFold(INNER, shuffle=True, random_state=SEED))


def baseline(key, est, X, y, repeats, rounds, n_jobs):
    """(models, summed fit + score seconds, wall seconds) of cross_validate's same fits."""
    per_tuned = len(ParameterGrid(GRID)) * INNER + 1
    t = time.perf_counter()
    if key == "cvt":
        cv = StratifiedKFold(SPLITS, shuffle=True, random_state=SEED)
        runs = [cross_validate(clone(est).set_params(**p), X, y, cv=cv, scoring="roc_auc",
                               n_jobs=n_jobs)
                for p in ParameterGrid(GRID)]
        models = len(ParameterGrid(GRID)) * SPLITS
    elif key == "ncv":
        runs = [cross_validate(tuned(est), X, y, scoring="roc_auc", n_jobs=n_jobs,
                               cv=StratifiedKFold(SPLITS, shuffle=True, random_state=SEED))]
        models = SPLITS * per_tuned
    elif key in ("holdout", "repeated_holdout"):
        n = 1 if key == "holdout" else repeats
        runs = [cross_validate(tuned(est), X, y, scoring="roc_auc", n_jobs=n_jobs,
                               cv=StratifiedShuffleSplit(n, test_size=TEST_SIZE, random_state=SEED))]
        models = n * per_tuned
    else:
        gen = np.random.default_rng(SEED)
        splits = []
        for _ in range(rounds):
            idx = gen.integers(0, len(y), len(y))
            splits.append((idx, np.setdiff1d(np.arange(len(y)), idx)))
        runs = [cross_validate(tuned(est), X, y, scoring="roc_auc", n_jobs=n_jobs, cv=splits)]
        models = rounds * per_tuned
    wall = time.perf_counter() - t
    return models, float(sum((r["fit_time"] + r["score_time"]).sum() for r in runs)), wall


def run_protocol(key, est, X, y, client, repeats, rounds):
    d = tempfile.mkdtemp(prefix="bench_compare_")
    try:
        res = bd.compare(est, GRID, X, y, store=f"{d}/stores", metric="roc_auc",
                         n_splits=SPLITS, test_size=TEST_SIZE, holdout_repeats=repeats,
                         n_bootstraps=rounds, protocols=[key], random_state=SEED,
                         client=client, progress=False)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    row = res.rows[0]
    return row["models_trained"], row["fit_seconds"], row["wall_seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="3 repeats, 10 bootstrap rounds")
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the run")
    ap.add_argument("--repeats", type=int, default=10, help="repeated holdout's splits")
    ap.add_argument("--rounds", type=int, default=50, help="bootstrap rounds")
    ap.add_argument("--protocols", default="cvt,ncv,holdout,repeated_holdout,bootstrap")
    ap.add_argument("--default-threads", action="store_true",
                    help="also time the baseline at the libraries' default threads")
    args = ap.parse_args()
    repeats, rounds = (3, 10) if args.quick else (args.repeats, args.rounds)
    X, y = make_classification(800, 20, n_informative=6, random_state=SEED)
    est = HistGradientBoostingClassifier(random_state=SEED)
    client = bd.make_client(n_workers=WORKERS)
    print(f"800 rows x 20, HistGradientBoosting x {len(ParameterGrid(GRID))} configurations, "
          f"{SPLITS} folds, {repeats} repeated holdouts, {rounds} bootstrap rounds; "
          f"{len(client.nthreads())} workers; {args.load} busy processes beside; OpenMP "
          f"threads: {openmp_threads()} here, {sorted(client.run(openmp_threads).values())} "
          f"in the workers", flush=True)
    head = (f"{'protocol':17s} {'models':>6s} {'s/model':>8s} {'cv2 s/model':>11s} "
            f"{'ratio':>6s} {'cv1 s/model':>11s} {'ratio1':>6s} {'wall s':>7s} "
            f"{'cv2 wall s':>10s}")
    if args.default_threads:
        head += f" {'cv1(default threads) s/model':>29s}"
    print(head)
    try:
        with busy(args.load):
            # untimed: the workers and joblib's processes started and their imports done,
            # so that neither side's first protocol pays for them
            run_protocol("holdout", est, X, y, client, repeats, rounds)
            baseline("holdout", est, X, y, repeats, rounds, WORKERS)
            for key in args.protocols.split(","):
                models, fit_s, wall = run_protocol(key, est, X, y, client, repeats, rounds)
                b_models, b_fit, b_wall = baseline(key, est, X, y, repeats, rounds, WORKERS)
                with threadpool_limits(1):
                    _, one_fit, _ = baseline(key, est, X, y, repeats, rounds, None)
                assert b_models == models, (key, models, b_models)  # the same fits
                ours, two, one = fit_s / models, b_fit / models, one_fit / models
                line = (f"{key:17s} {models:6d} {ours:8.3f} {two:11.3f} {ours / two:6.2f} "
                        f"{one:11.3f} {ours / one:6.2f} {wall:7.1f} {b_wall:10.1f}")
                if args.default_threads:
                    _, d_fit, _ = baseline(key, est, X, y, repeats, rounds, None)
                    line += f" {d_fit / models:29.3f}"
                print(line, flush=True)
    finally:
        client.close()
        client.cluster.close()
    print(f"(ratio: compare's fit seconds per model / cross_validate(n_jobs=2)'s, target <= "
          f"{TARGET}; ratio1: / cross_validate(n_jobs=None)'s, one fit at a time)")


if __name__ == "__main__":
    main()
