"""Speed of the statistical core, as ratios against baselines run in this same process.

1. BBC with AUC at N=2000, C=500, B=1000 against a plain per-bootstrap loop that calls
   scikit-learn's roc_auc_score for every configuration (timed on a few bootstraps and
   scaled to B). Target: bbc under 0.5 s and >= 2,500x the loop.
2. BBC with accuracy at N=10000, C=1000, B=1000 against the two dense matrix products
   (in-bag counts x per-sample scores, out-of-bag indicators x scores) that compute it.
   Target: ratio <= 1.5.
3. BBC-F at 10 folds x 500 configurations, B=1000. Target: under 20 ms.
4. Peak resident memory of case 2 in a fresh process. Target: under 1 GiB.

Run: ``python benchmarks/bench_bbc.py [--quick]``.
"""
import argparse
import resource
import subprocess
import sys
import time

import numpy as np
from sklearn.metrics import roc_auc_score

import bbc_dask as bd
from bbc_dask.stats._bbc import _bbc_f_matrix


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def loop_bbc_auc(scores, y, idx):
    """The pseudo-code, one bootstrap at a time, scikit-learn per configuration."""
    n, c = scores.shape
    out = []
    for b in range(idx.shape[0]):
        inb = idx[b]
        oob = np.setdiff1d(np.arange(n), inb)
        s = [roc_auc_score(y[inb], scores[inb, j]) for j in range(c)]
        j = int(np.argmax(s))
        out.append(roc_auc_score(y[oob], scores[oob, j]))
    return out


def case_auc(quick):
    n, c, B = (2000, 500, 1000) if not quick else (500, 100, 200)
    sim = bd.simulate.auc_matrix(n, c, random_state=0)
    bd.bbc(sim.predictions[:50, :5], sim.y[:50], metric="roc_auc", n_bootstraps=5, random_state=0)
    t_bbc = best_of(lambda: bd.bbc(sim.predictions, sim.y, metric="roc_auc", n_bootstraps=B, random_state=0))
    k = 3
    idx = np.random.default_rng(0).integers(0, n, size=(k, n))
    t_loop = best_of(lambda: loop_bbc_auc(sim.predictions, sim.y, idx), repeat=1) / k * B
    print(f"[auc] N={n} C={c} B={B}: bbc {t_bbc:.3f} s; plain loop (scaled from {k}) "
          f"{t_loop:.0f} s; speed-up {t_loop / t_bbc:,.0f}x; vs the authors' 161 s "
          f"(figure from the issue, not run here) {161 / t_bbc:,.0f}x")
    return t_bbc


def case_pointwise(quick):
    n, c, B = (10000, 1000, 1000) if not quick else (2000, 200, 200)
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random((n, c)) < rng.uniform(0.6, 0.8, c), y[:, None], 1 - y[:, None])
    bd.bbc(pred[:50, :5], y[:50], metric="accuracy", n_bootstraps=5, random_state=0)
    t_bbc = best_of(lambda: bd.bbc(pred, y, metric="accuracy", n_bootstraps=B, random_state=0))
    W = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(B)]).astype(np.float64)
    S = (pred == y[:, None]).astype(np.float64)
    O = (W == 0).astype(np.float64)
    t_mm = best_of(lambda: (W @ S, O @ S))
    print(f"[accuracy] N={n} C={c} B={B}: bbc {t_bbc:.3f} s; two dense products "
          f"{t_mm:.3f} s; ratio {t_bbc / t_mm:.2f} (target <= 1.5)")


def case_bbc_f(quick):
    rng = np.random.default_rng(2)
    F = rng.beta(24, 6, size=(10, 500))
    rows = [(0, k) for k in range(10)]
    _bbc_f_matrix(F, rows, "roc_auc", 10, 0.95, 0, None, None)
    t = best_of(lambda: _bbc_f_matrix(F, rows, "roc_auc", 1000, 0.95, 0, None, None), repeat=5)
    sim = bd.simulate.auc_matrix(2000, 500, random_state=0)
    P, y, folds = sim.predictions, sim.y, sim.folds
    t_all = best_of(lambda: bd.bbc_f(P, y, folds, metric="roc_auc", random_state=0))
    print(f"[bbc_f] 10 folds x 500 configs, B=1000: bootstrap {t * 1e3:.1f} ms (target < 20 ms); "
          f"with the fold-matrix conversion from N=2000 predictions {t_all * 1e3:.1f} ms")
    # the baseline: the same fold matrix by scikit-learn, one roc_auc_score per cell
    n_cfg = 100 if quick else 500

    def sklearn_fold_matrix():
        return [[roc_auc_score(y[folds == k], P[folds == k, j]) for j in range(n_cfg)]
                for k in range(10)]
    t_sk = best_of(sklearn_fold_matrix, repeat=1) * 500 / n_cfg
    print(f"[bbc_f] end to end (fold matrix + B=1000 bootstraps) {t_sk / t_all:.0f}x faster than "
          f"the fold matrix alone by roc_auc_score in a loop ({t_sk:.2f} s) (target >= 250x)")


def case_memory(quick):
    n, c = (10000, 1000) if not quick else (2000, 200)
    code = (
        "import numpy as np, resource, bbc_dask as bd\n"
        f"rng=np.random.default_rng(1); y=rng.integers(0,2,{n})\n"
        f"pred=np.where(rng.random(({n},{c}))<0.7, y[:,None], 1-y[:,None])\n"
        "base=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "bd.bbc(pred, y, metric='accuracy', n_bootstraps=1000, random_state=0)\n"
        "print(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    base, peak = (int(v) / 1024 for v in out.stdout.split())
    print(f"[memory] accuracy N={n} C={c} B=1000: peak RSS {peak:.0f} MiB "
          f"(inputs and imports {base:.0f} MiB) (target < 1024 MiB)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="bbc_dask statistical core benchmarks")
    p.add_argument("--quick", action="store_true")
    quick = p.parse_args().quick
    case_auc(quick)
    case_pointwise(quick)
    case_bbc_f(quick)
    case_memory(quick)
    print(f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
