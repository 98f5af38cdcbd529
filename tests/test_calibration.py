"""Calibration of the one-sided lower bound on the BBC-F paper's simulated setting.

Table 2 of Paraschakis et al. (2024): N = 500, C = 100, class balance 0.1 and 0.5, true AUCs
~ Beta(24, 6) and Beta(9, 6); 200 repetitions with B = 1000. The 95% lower bound of BBC and
BBC-F must include the true AUC of the selected configuration at a rate not significantly
below 0.95 (exact binomial test at 5%); the naive bootstrap (the paper's: the winner's fold
AUCs resampled), which ignores selection, falls far below.
"""
import numpy as np
import pytest
from scipy.stats import binomtest, rankdata

import bbc_dask as bd

SETTINGS = [(24, 6, 0.1), (24, 6, 0.5), (9, 6, 0.1), (9, 6, 0.5)]


def coverage(a, b, balance, n_reps=200, n=500, c=100, n_boot=1000, seed=0):
    """Inclusion rate and mean tightness (true - lower bound) per method."""
    hits = {"bbc": [], "bbc_f": [], "naive_bootstrap": []}
    tight = {k: [] for k in hits}
    for rep in range(n_reps):
        sim = bd.simulate.auc_matrix(n, c, a=a, b=b, class_balance=balance, random_state=np.random.SeedSequence([seed, rep]))
        kw = dict(metric="roc_auc", n_bootstraps=n_boot, random_state=rep)
        results = {
            "bbc": bd.bbc(sim.predictions, sim.y, **kw),
            "bbc_f": bd.bbc_f(sim.predictions, sim.y, sim.folds, **kw),
            # the paper's NB: the winner's fold AUCs resampled, 500 times as its code does
            "naive_bootstrap": bd.naive_bootstrap(sim.predictions, sim.y, folds=sim.folds, unit="fold",
                                                  **(kw | {"n_bootstraps": 500})),
        }
        for name, res in results.items():
            truth = sim.true_performance[res.selected_config]
            hits[name].append(res.lower_bound <= truth)
            tight[name].append(truth - res.lower_bound)
    return {k: (float(np.mean(hits[k])), float(np.mean(tight[k])), int(np.sum(hits[k]))) for k in hits}


@pytest.mark.slow
@pytest.mark.parametrize("a, b, balance", SETTINGS)
def test_lower_bound_is_calibrated(a, b, balance):
    n_reps = 200
    cov = coverage(a, b, balance, n_reps=n_reps)
    print(f"Beta({a},{b}) balance={balance}: " + ", ".join(
        f"{k} inclusion={v[0]:.3f} tightness={v[1]:.3f}" for k, v in cov.items()))
    for name in ("bbc", "bbc_f"):
        p = binomtest(cov[name][2], n_reps, 0.95, alternative="less").pvalue
        assert p > 0.05, (name, cov[name])
    # The naive bootstrap ignores selection: significantly below 0.95 and well below BBC.
    assert binomtest(cov["naive_bootstrap"][2], n_reps, 0.95, alternative="less").pvalue < 0.05
    assert cov["naive_bootstrap"][0] < min(cov["bbc"][0], cov["bbc_f"][0]) - 0.05


def repeat_coverage(rho, n_reps=200, n_repeats=5, balance=0.5, seed=1):
    """Hits of BBC and BBC-F with one repeat (the first of each simulated study) and with
    ``n_repeats`` whose predictions correlate ``rho`` (1: identical, only the partition
    changes — the case where repeats add no information and resampling the (repeat,
    fold) rows together was most optimistic)."""
    hits = {(m, r): 0 for m in ("bbc", "bbc_f") for r in (1, n_repeats)}
    for rep in range(n_reps):
        sim = bd.simulate.auc_matrix(500, 100, a=24, b=6, class_balance=balance, n_repeats=n_repeats,
                                     repeat_correlation=rho, random_state=np.random.SeedSequence([seed, rep]))
        for r in (1, n_repeats):
            pred, folds = sim.predictions[:, :, :r], sim.folds[:, :r]
            kw = dict(metric="roc_auc", n_bootstraps=1000, random_state=rep)
            for m, res in (("bbc", bd.bbc(pred, sim.y, **kw)), ("bbc_f", bd.bbc_f(pred, sim.y, folds, **kw))):
                hits[m, r] += bool(res.lower_bound <= sim.true_performance[res.selected_config])
    return hits


@pytest.mark.slow
@pytest.mark.parametrize("rho", [1.0, 0.5])
def test_lower_bound_with_repeats_covers_as_with_one(rho):
    """2018 paper, §3.2: an instance's predictions in every repeat are in a bootstrap
    sample or none. With 5 repeats the 95% lower bounds of BBC and BBC-F cover the
    selected configuration's AUC at a rate not significantly below 0.95, nor below their
    rate with one repeat (one-sided Fisher exact test at 5%). Resampling BBC-F's
    (repeat, fold) rows together covered 0.655 here at rho = 1."""
    from scipy.stats import fisher_exact

    n_reps, R = 200, 5
    hits = repeat_coverage(rho, n_reps, R)
    print(f"rho={rho}: " + ", ".join(f"{m} R={r} {k / n_reps:.3f}" for (m, r), k in hits.items()))
    for m in ("bbc", "bbc_f"):
        k1, k5 = hits[m, 1], hits[m, R]
        assert binomtest(k5, n_reps, 0.95, alternative="less").pvalue > 0.05, (m, hits)
        p = fisher_exact([[k5, n_reps - k5], [k1, n_reps - k1]], alternative="less").pvalue
        assert p > 0.05, (m, hits)


def column_aucs(y, scores):
    """ROC AUC of each column of ``scores`` (n, c): the Mann-Whitney statistic of the
    columns' average ranks, as roc_auc_score gives it column by column (a hundred of its
    calls cost 0.8 s a simulated study, four times the BBC under test)."""
    pos = np.asarray(y) == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    ranks = rankdata(scores, axis=0)
    return (ranks[pos].sum(axis=0) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def incomplete_coverage(n_repeats, rho, n_reps=200, seed=2):
    """Hits of BBC on an incomplete CV (include_incomplete=True): after 3 of 10 folds the
    half of the configurations with the worse pooled AUC so far stop training (as BBCD
    drops them), their later cells NaN; the final winner is among the complete half."""
    hits = 0
    for rep in range(n_reps):
        sim = bd.simulate.auc_matrix(500, 100, a=24, b=6, class_balance=0.5, n_repeats=n_repeats,
                                     repeat_correlation=rho, random_state=np.random.SeedSequence([seed, rep]))
        pred = sim.predictions.reshape(500, 100, n_repeats).copy()
        folds = sim.folds.reshape(500, n_repeats)
        early = folds[:, 0] < 3
        auc = column_aucs(sim.y[early], pred[early, :, 0])
        gone = np.argsort(auc)[:50]
        for r in range(n_repeats):
            pred[np.ix_(folds[:, r] >= 3, gone, [r])] = np.nan
        res = bd.bbc(pred, sim.y, metric="roc_auc", n_bootstraps=1000, random_state=rep,
                     include_incomplete=True)
        hits += bool(res.lower_bound <= sim.true_performance[res.selected_config])
    return hits


@pytest.mark.slow
@pytest.mark.parametrize("n_repeats, rho", [(1, 1.0), (3, 0.5)])
def test_lower_bound_of_an_incomplete_cv_is_calibrated(n_repeats, rho):
    """BBC over every trained configuration of an incomplete CV (the 2018 paper's §3):
    the 95% lower bound covers the final winner's AUC at a rate not significantly below
    0.95, with repeats and without."""
    n_reps = 200
    hits = incomplete_coverage(n_repeats, rho, n_reps)
    print(f"incomplete CV, {n_repeats} repeat(s), rho={rho}: inclusion {hits / n_reps:.3f}")
    assert binomtest(hits, n_reps, 0.95, alternative="less").pvalue > 0.05, hits
