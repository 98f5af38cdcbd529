"""The coverage harness's ``simulation2018`` protocol: the 2018 paper's §5.1 and Figure 1.

Each repetition draws a CVT outcome of :func:`bbc_dask.simulate.accuracy_matrix` (true
accuracies ``P_j ~ Beta(a, b)``, a prediction of configuration ``j`` correct with
probability ``P_j``, K = 10 stratified folds) and applies every method to it, as the
paper's Matlab code does (``machineLearningJournalSimulationsCode.m`` of
github.com/mensxmachina/BBC-CV):

- ``cvt``: the configuration of the best pooled accuracy and that accuracy (no interval).
- ``tt``: Tibshirani & Tibshirani's correction of CVT (no interval).
- ``bbc``: BBC-CV (1000 bootstraps, the winner by ``selection``, pooled by default as the
  code's ``max(mean(predictions))``) and its two-sided percentile interval.
- ``bbc_f``: BBC-F (the fold-mean winner) and its percentile interval.
- ``bbcd``: BBCD-CV as the code's ``BBCD_CV``: after each fold, the dropping test
  (``alpha = 0.99``, 1000 bootstraps) on the folds seen so far drops configurations; BBC-CV
  on the survivors, whose winner is BBCD's selection (no interval is scored: its BBC
  interval is conditional on the dropping).
- ``ncv``: nested CV, as the code's ``NCV``: each outer fold draws a fresh prediction matrix
  of the same true accuracies (the configurations retrained), selects on the other nine
  folds and scores on its own; the estimate is the mean of the ten fold accuracies
  (:func:`bbc_dask.stats.ncv_of_matrix`, its interval the t interval of the fold scores).
- ``repeated_holdout``: the same with :data:`HOLDOUT` random splits instead of folds (not in
  the code; :func:`bbc_dask.stats.repeated_holdout_of_matrix`, the corrected resampled t interval).

The bias is the estimate minus the true accuracy of the configuration the method returns:
CVT's for CVT, TT, NCV and repeated holdout (they return CVT's model, as in the code), the
method's own winner for BBC, BBC-F and BBCD.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _validation as validation
from .._random import child_seed
from ..exceptions import UndefinedScoreError

__all__ = ["FIGURE1_PART", "HOLDOUT", "METHODS_2018", "bias_table", "check_setting",
           "repetition_rows"]

#: Every method of the protocol, in Figure 1's order (and repeated holdout).
METHODS_2018 = ("cvt", "tt", "ncv", "bbc", "bbcd", "bbc_f", "repeated_holdout")
#: Part of Figure 1: μ = 0.6 (Beta(9, 6)), five sample sizes, two numbers of configurations.
FIGURE1_PART = tuple({"a": 9, "b": 6, "n_samples": n, "n_configs": c}
                     for c in (100, 500) for n in (20, 40, 60, 100, 500))
#: Repeated holdout's splits and held-out share (in the design of every run of the protocol).
HOLDOUT = {"n_repeats": 10, "test_size": 0.3}
K = 10  # the paper's folds


def check_setting(s):
    validation.check_int(s["n_samples"], "settings[i]['n_samples']", low=2 * K)
    validation.check_int(s["n_configs"], "settings[i]['n_configs']", low=2)
    for key in ("a", "b"):
        validation.check_real_open(s[key], f"settings[i][{key!r}]", 0.0, math.inf)


def _fresh(gen, y, p, n_matrices):
    """``n_matrices`` prediction matrices of true accuracies ``p`` on labels ``y``."""
    correct = gen.random((n_matrices, y.size, p.size)) < p[None, None, :]
    return np.where(correct, y[None, :, None], 1 - y[None, :, None])


def repetition_rows(design, s, r, seed):
    """Every method's row of repetition ``r`` of setting ``s`` (its seed ``seed``)."""
    from ..simulate import accuracy_matrix

    st = design["settings"][s]
    sim = accuracy_matrix(st["n_samples"], st["n_configs"], a=st["a"], b=st["b"], n_splits=K,
                          random_state=seed)
    rows = []
    for m in design["methods"]:
        est, low, high, selected, reason = _method(m, sim, design, child_seed(seed, "method", m))
        rows.append({"setting": s, "rep": r, "method": m, "estimate": est, "low": low,
                     "high": high, "selected": selected,
                     "truth": float(sim.true_performance[selected]) if selected >= 0 else math.nan,
                     "reason": reason})
    return rows


def _method(m, sim, design, seed):
    """``(estimate, low, high, selected, reason)`` of method ``m``."""
    from .. import stats

    pred, y, folds = sim.predictions, sim.y, sim.folds
    conf = round(1 - design["alpha"], 12)
    boots = {} if design["n_bootstraps"] is None else {"n_bootstraps": design["n_bootstraps"]}
    cvt = stats.naive_cvt(pred, y, metric="accuracy")
    try:
        if m == "cvt":
            return cvt.estimate, math.nan, math.nan, cvt.selected_config, None
        if m == "tt":
            res = stats.tibshirani_tibshirani(pred, y, folds, metric="accuracy")
            return res.estimate, math.nan, math.nan, res.selected_config, None
        if m in ("bbc", "bbc_f"):
            kw = {"selection": design["selection"]} if m == "bbc" else {}
            res = getattr(stats, m)(pred, y, folds=folds, metric="accuracy", confidence_level=conf,
                                    random_state=seed, **boots, **kw)
            ci = res.confidence_interval
            return res.estimate, ci.low, ci.high, res.selected_config, None
        if m == "bbcd":
            return _bbcd(sim, design, seed, boots)
        gen = np.random.Generator(np.random.PCG64(child_seed(seed, "fresh")))
        if m == "ncv":
            res = stats.ncv_of_matrix(_fresh(gen, y, sim.true_performance, K), y, folds,
                                  metric="accuracy", confidence_level=conf)
        else:
            ho = design["holdout"]
            res = stats.repeated_holdout_of_matrix(_fresh(gen, y, sim.true_performance, ho["n_repeats"]), y,
                                         metric="accuracy", confidence_level=conf,
                                         random_state=child_seed(seed, "splits"), **ho)
        ci = res.confidence_interval
        return res.estimate, ci.low, ci.high, cvt.selected_config, None
    except UndefinedScoreError as e:
        return math.nan, math.nan, math.nan, -1, str(e)


def _bbcd(sim, design, seed, boots):
    """BBCD-CV as the paper's code: drop after each fold, BBC-CV on the survivors."""
    from .. import stats

    pred, y, folds = sim.predictions, sim.y, sim.folds
    active = np.arange(pred.shape[1])
    for i, k in enumerate(np.unique(folds)):
        if active.size == 1:
            break
        res = stats.dropping_test(pred[:, active], y, folds <= k, metric="accuracy", alpha=0.99,
                            random_state=child_seed(seed, "drop", i), **boots)
        active = active[~np.asarray(res.drop, dtype=bool)]
    res = stats.bbc(pred[:, active], y, folds=folds, metric="accuracy", random_state=child_seed(seed, "bbc"),
                    selection="pooled", **boots)
    return res.estimate, math.nan, math.nan, int(active[res.selected_config]), None


def bias_table(rows, alpha):
    """The table of a list of repetition rows: one line per (setting, method) with ``runs``
    (with an estimate), ``failed``, ``bias`` (mean estimate minus truth), ``bias_se`` (its
    standard error), ``inclusion`` (the share of the runs with an interval whose interval
    holds the truth; NaN for a method without one), ``binom_p`` (``P(X <= included)`` for
    ``X ~ Bin(runs, 1 - alpha)``) and ``not_rejected`` (``binom_p >= 0.05``)."""
    import pandas as pd
    from scipy.stats import binom

    df = pd.DataFrame(rows)
    out = []
    for (s, m), g in df.groupby(["setting", "method"], sort=False):
        ok = g[np.isfinite(g["estimate"].astype(float))]
        n = len(ok)
        d = (ok["estimate"] - ok["truth"]).to_numpy(dtype=float)
        iv = ok[np.isfinite(ok["low"].astype(float))]
        k = int(((iv["low"] <= iv["truth"]) & (iv["truth"] <= iv["high"])).sum())
        p = float(binom.cdf(k, len(iv), 1 - alpha)) if len(iv) else math.nan
        out.append({"setting": s, "method": m, "runs": n, "failed": len(g) - n,
                    "bias": float(d.mean()) if n else math.nan,
                    "bias_se": float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan,
                    "inclusion": k / len(iv) if len(iv) else math.nan, "binom_p": p,
                    "not_rejected": bool(p >= 0.05) if len(iv) else False})
    return pd.DataFrame(out)
