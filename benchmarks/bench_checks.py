"""Cost of the estimates' block checks: every whole block an estimate reads from a
finished study is compared with the CRC-32 its task recorded (docs/usage.md,
"Reliability"). Ratios against the same estimate without the check, in this process.

A study of N samples x C configurations x K folds (a classifier whose scores are a seeded
draw: fitting costs nothing) is run once into a temporary store; then, after a warm-up,
best of 7 each, interleaved:

1. reading the candidates' predictions (``Study.predictions``) with and without checks;
2. ``Study.bbc(n_bootstraps=1000)`` (AUC, in memory) with and without checks.

Target: the checked estimate within 5% of the unchecked one.

Run: ``python benchmarks/bench_checks.py [--quick]``.
"""
import argparse
import tempfile
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

import bbc_dask as bd
from bench_bbc import best_of  # this directory: the scripts run from it


class SeededScores(ClassifierMixin, BaseEstimator):
    """Scores drawn from a seed: a classifier whose fit and predict cost nothing."""

    def __init__(self, seed=0):
        self.seed = seed

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        rng = np.random.default_rng(self.seed)
        return np.asarray(X)[:, 0] * 0.3 + rng.normal(size=len(X))

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


def main(quick):
    n, c, k = (500, 100, 5) if quick else (2000, 500, 5)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    with tempfile.TemporaryDirectory() as tmp, bd.make_client(n_workers=2, threads_per_worker=1,
                                                              processes=False) as client:
        study = bd.run_study(SeededScores(), {"seed": list(range(c))}, X, y,
                             store=f"{tmp}/s.zarr", metric="roc_auc", n_splits=k,
                             random_state=0, client=client, progress=False, refit=False)
        idx = study.candidates()

        def with_checks(on):
            s = bd.open_study(f"{tmp}/s.zarr")
            s._cube.reader()  # decides once per open
            s._cube._finished = on
            return s

        checked, unchecked = with_checks(True), with_checks(False)
        assert checked._cube.reader().checked and not unchecked._cube.reader().checked
        for s in (checked, unchecked):  # warm: compiled kernels, each array's first read
            s.bbc(n_bootstraps=20)
        # interleaved, best of 7 each: this machine's noise falls on both alike
        reads, bbcs = {True: [], False: []}, {True: [], False: []}
        for _ in range(7):
            for on, s in ((True, checked), (False, unchecked)):
                reads[on].append(best_of(lambda: s._cube.predictions(idx), 1))
        for _ in range(7):
            for on, s in ((True, checked), (False, unchecked)):
                bbcs[on].append(best_of(lambda: s.bbc(n_bootstraps=1000), 1))
        t_read_on, t_read_off = min(reads[True]), min(reads[False])
        t_bbc_on, t_bbc_off = min(bbcs[True]), min(bbcs[False])
        print(f"[checks] N={n} C={c} K={k}: read {t_read_on:.3f} s checked vs {t_read_off:.3f} s "
              f"({t_read_on / t_read_off:.2f}x); BBC B=1000 {t_bbc_on:.3f} s vs {t_bbc_off:.3f} s "
              f"({100 * (t_bbc_on / t_bbc_off - 1):+.1f}%; target <= +5%)")
        chunked_runs(client, tmp, X, y, c, k)
        dropping_runs(client, tmp, X, y, c)


def chunked_runs(client, tmp, X, y, c, k):
    """3. The chunked BBC of a pointwise metric over runs of samples (each worker checks
    each block whole once per estimate), accuracy, sample blocks of N / 8."""
    import bbc_dask.metrics as M

    study = bd.run_study(SeededScores(), {"seed": list(range(c))}, X, y, store=f"{tmp}/a.zarr",
                         metric="accuracy", n_splits=k, random_state=0, client=client,
                         progress=False, refit=False)
    M.SAMPLE_BLOCK = max(64, len(y) // 8)  # read by the driver: the tasks get the blocks
    times = {True: [], False: []}
    for _ in range(5):
        for on in (True, False):
            s = bd.open_study(f"{tmp}/a.zarr")
            s._cube.reader()
            s._cube._finished = on
            times[on].append(best_of(lambda: s.bbc(n_bootstraps=500, chunked=True), 1))
    assert study is not None
    on, off = min(times[True]), min(times[False])
    print(f"[checks] chunked accuracy over {len(y) // M.SAMPLE_BLOCK} sample runs, C={c}, "
          f"B=500 on 2 workers: {on:.3f} s checked vs {off:.3f} s ({100 * (on / off - 1):+.1f}%)")


def dropping_runs(client, tmp, X, y, c):
    """4. A BBCD study (accuracy, 10 folds, a dropping test after every wave, each
    checking the waves done) against the same run with the checks switched off for the
    benchmark (the workers are threads of this process: the switch reaches them)."""
    import contextlib

    from bbc_dask.cube._layout import PredictionReader

    @contextlib.contextmanager
    def unchecked():
        saved = PredictionReader._verify_once, PredictionReader._check_blocks
        PredictionReader._verify_once = PredictionReader._check_blocks = \
            lambda *a, **k: None
        try:
            yield
        finally:
            PredictionReader._verify_once, PredictionReader._check_blocks = saved

    def run(i):
        t = time.perf_counter()
        bd.run_study(SeededScores(), {"seed": list(range(c))}, X, y,
                     store=f"{tmp}/d{i}.zarr", metric="accuracy", n_splits=10, random_state=0,
                     client=client, progress=False, refit=False,
                     dropping=bd.Dropping(alpha=0.99, n_bootstraps=500, min_predictions=50))
        return time.perf_counter() - t

    times = {True: [], False: []}
    for i in range(3):
        times[True].append(run(2 * i))
        with unchecked():
            times[False].append(run(2 * i + 1))
    on, off = min(times[True]), min(times[False])
    print(f"[checks] BBCD run, C={c}, 10 waves, dropping test B=500: {on:.2f} s checked vs "
          f"{off:.2f} s ({100 * (on / off - 1):+.1f}%)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
