"""Calibration of the one-sided lower bound on the BBC-F paper's simulated setting.

Table 2 of Paraschakis et al. (2024): N = 500, C = 100, class balance 0.1 and 0.5, true AUCs
~ Beta(24, 6) and Beta(9, 6); B = 1000. The 95% lower bound of BBC and BBC-F must include
the true AUC of the selected configuration at a rate not significantly below 0.95 (exact
binomial test at 5%); the naive bootstrap (the paper's: the winner's fold AUCs resampled),
which ignores selection, falls far below.

Each test is sized to its question, not to the paper's table (200 repetitions): the bound
fails if its inclusion is significantly below 0.95, and the failures it guards against
cover far less — the naive bootstrap 0.64–0.86 here, BBC-F's (repeat, fold) rows resampled
together 0.655. ``N_STUDIES`` = 100 simulated studies detect an inclusion of 0.85 with
power 0.94 (at most 90 hits of 100 fail, a rate of 0.028 for a bound that covers exactly
0.95), which :func:`test_the_studies_detect_a_bound_that_covers_0_85` checks in the default
suite; 200 detect it with power 0.999 at twice the cost.
"""
import numpy as np
import pytest
from scipy.stats import binomtest, rankdata

import bbc_dask as bd

#: simulated studies per test: enough to detect an inclusion of ``DETECT`` with ``POWER``
N_STUDIES, DETECT, POWER = 100, 0.85, 0.9
SETTINGS = [(24, 6, 0.1), (24, 6, 0.5), (9, 6, 0.1), (9, 6, 0.5)]


def coverage(a, b, balance, n_reps=N_STUDIES, n=500, c=100, n_boot=1000, seed=0):
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


def rejected_at_most(n, level=0.95, alpha=0.05):
    """The most hits of ``n`` that the one-sided exact binomial test rejects at ``alpha``
    (a bound covering ``level`` or more passes with probability at least 1 - alpha)."""
    return max(k for k in range(n + 1) if binomtest(k, n, level, alternative="less").pvalue < alpha)


def test_the_studies_detect_a_bound_that_covers_0_85():
    """The calibration tests' size answers their question: with ``N_STUDIES`` a bound
    whose inclusion is ``DETECT`` fails with probability ``POWER`` or more, and a bound
    covering 0.95 exactly passes with probability 0.95 or more (the tests' seeds are
    fixed: each passes or fails the same way every run)."""
    from scipy.stats import binom

    k = rejected_at_most(N_STUDIES)
    assert binom.cdf(k, N_STUDIES, DETECT) >= POWER
    assert binom.cdf(k, N_STUDIES, 0.95) <= 0.05
    for k_hits in (k, k + 1):  # the tests' own rule agrees on the boundary
        assert (binomtest(k_hits, N_STUDIES, 0.95, alternative="less").pvalue > 0.05) == (k_hits > k)


@pytest.mark.slow
@pytest.mark.parametrize("a, b, balance", SETTINGS)
def test_lower_bound_is_calibrated(a, b, balance):
    n_reps = N_STUDIES
    cov = coverage(a, b, balance, n_reps=n_reps)
    print(f"Beta({a},{b}) balance={balance}: " + ", ".join(
        f"{k} inclusion={v[0]:.3f} tightness={v[1]:.3f}" for k, v in cov.items()))
    for name in ("bbc", "bbc_f"):
        p = binomtest(cov[name][2], n_reps, 0.95, alternative="less").pvalue
        assert p > 0.05, (name, cov[name])
    # The naive bootstrap ignores selection: significantly below 0.95 and well below BBC.
    assert binomtest(cov["naive_bootstrap"][2], n_reps, 0.95, alternative="less").pvalue < 0.05
    assert cov["naive_bootstrap"][0] < min(cov["bbc"][0], cov["bbc_f"][0]) - 0.05


def repeat_coverage(rho, n_reps=N_STUDIES, n_repeats=5, balance=0.5, seed=1):
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

    n_reps, R = N_STUDIES, 5
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


def incomplete_coverage(n_repeats, rho, n_reps=N_STUDIES, seed=2):
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
    n_reps = N_STUDIES
    hits = incomplete_coverage(n_repeats, rho, n_reps)
    print(f"incomplete CV, {n_repeats} repeat(s), rho={rho}: inclusion {hits / n_reps:.3f}")
    assert binomtest(hits, n_reps, 0.95, alternative="less").pvalue > 0.05, hits


def stopped_coverage(n_repeats, rho, width, n_reps=N_STUDIES, seed=5, n=300, c=50, n_boot=500):
    """A study stopped by the width rule (``run_study(stop=Stop(ci_width=width))``), as
    the run checks it: after each fold wave k (every configuration's fold k of every
    repeat predicted, the later folds not yet), BBC on that incomplete CV; the study stops
    at the first whose interval is at most ``width`` wide (else it runs to the end), and
    reports that BBC. Returns the hits of its lower bound (the selected configuration's
    true AUC at or above it), the full CV's hits, and per study the waves run, the
    stopped estimate's bias and tightness, and the full CV's."""
    hits = full_hits = 0
    waves, bias, tight, full_bias, full_tight = [], [], [], [], []
    for rep in range(n_reps):
        sim = bd.simulate.auc_matrix(n, c, a=24, b=6, class_balance=0.5, n_repeats=n_repeats,
                                     repeat_correlation=rho,
                                     random_state=np.random.SeedSequence([seed, rep]))
        pred = sim.predictions.reshape(n, c, n_repeats)
        folds = sim.folds.reshape(n, n_repeats)
        n_splits = int(folds.max()) + 1
        kw = dict(metric="roc_auc", n_bootstraps=n_boot, random_state=rep)
        for k in range(n_splits - 1):
            seen = pred.copy()
            for r in range(n_repeats):
                seen[folds[:, r] > k, :, r] = np.nan
            res = bd.bbc(seen, sim.y, include_incomplete=True, **kw)
            lo, hi = res.confidence_interval
            met = 0 < hi - lo <= width  # the rule as the run checks it (Budget.wave_complete)
            if met:
                break
        full = bd.bbc(pred, sim.y, **kw)
        if not met:  # never met: the study ran to the end
            res, k = full, n_splits - 1
        waves.append(k + 1)
        true, full_true = (sim.true_performance[r.selected_config] for r in (res, full))
        hits += bool(res.lower_bound <= true)
        full_hits += bool(full.lower_bound <= full_true)
        bias.append(res.estimate - true)
        tight.append(true - res.lower_bound)
        full_bias.append(full.estimate - full_true)
        full_tight.append(full_true - full.lower_bound)
    return hits, full_hits, np.array(waves), n_splits, (np.mean(bias), np.mean(tight)), \
        (np.mean(full_bias), np.mean(full_tight))


@pytest.mark.slow
@pytest.mark.parametrize("n_repeats, rho, width", [(1, 1.0, 0.15), (3, 0.5, 0.12)])
def test_lower_bound_of_a_study_stopped_by_the_width_rule_is_calibrated(n_repeats, rho, width):
    """Stopping on an observed interval is a data-dependent rule: the 95% lower bound of
    BBC on the incomplete CV where the width rule stops the study covers the selected
    configuration's AUC at a rate not significantly below 0.95 (exact binomial test at
    5%), with repeats and without; the widths are chosen so that most studies stop
    half-way (measured over 100 studies: 0.990 after 5.6 of 10 waves on average with one
    repeat, 0.950 after 3.9 with three; the full CV's 0.970 and 0.980)."""
    n_reps = N_STUDIES
    hits, full_hits, waves, n_splits, (b, t), (fb, ft) = stopped_coverage(
        n_repeats, rho, width, n_reps)
    print(f"stopped by ci_width={width}, {n_repeats} repeat(s), rho={rho}: inclusion "
          f"{hits / n_reps:.3f} (full CV {full_hits / n_reps:.3f}); waves run "
          f"{waves.mean():.2f} of {n_splits} ({1 - waves.mean() / n_splits:.0%} of the fits "
          f"saved; {np.mean(waves < n_splits):.0%} of the studies stopped early); bias "
          f"{b:+.4f} (full {fb:+.4f}), tightness {t:.4f} (full {ft:.4f})")
    assert np.mean(waves < n_splits) > 0.5  # the rule did stop most studies
    assert binomtest(hits, n_reps, 0.95, alternative="less").pvalue > 0.05, hits
