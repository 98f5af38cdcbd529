"""Intervals inside the metric's range: nested CV's and repeated holdout's t intervals are
clipped (and say so), holdout's accuracy interval is Wilson's by default (Eq. 14's Wald
interval by name), with its coverage near 1 computed exactly and simulated."""
import math

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError
from bbc_dask.metrics import get_metric, score_bounds
from bbc_dask.stats import (ConfidenceInterval, clip_interval, ncv_of_matrix, normal_interval,
                            repeated_holdout_of_matrix, wilson_interval)


def _exact_coverage(interval, n, p, confidence=0.95):
    """P(p inside interval(k / n)) for k ~ Binomial(n, p)."""
    k = np.arange(n + 1)
    inside = [(lambda ci: ci.low <= p <= ci.high)(interval(j / n, n, confidence)) for j in k]
    return float(binom.pmf(k, n, p)[inside].sum())


def test_wilson_covers_near_one_where_eq14_does_not():
    # the numbers of the 2024 paper's setting: 171 test rows, a true accuracy of 0.99
    assert _exact_coverage(normal_interval, 171, 0.99) == pytest.approx(0.819, abs=1e-3)
    assert _exact_coverage(wilson_interval, 171, 0.99) == pytest.approx(0.970, abs=1e-3)
    grid = np.linspace(0.9, 0.999, 100)  # on average over the high end, nominal or above
    assert np.mean([_exact_coverage(wilson_interval, 171, p) for p in grid]) >= 0.95
    assert np.mean([_exact_coverage(normal_interval, 171, p) for p in grid]) < 0.9
    for k in range(0, 172, 17):  # inside [0, 1], and containing the proportion
        ci = wilson_interval(k / 171, 171, 0.95)
        assert 0.0 <= ci.low <= k / 171 <= ci.high <= 1.0


def test_clip_interval_and_bounds():
    assert clip_interval(ConfidenceInterval(0.98, 1.003), (0.0, 1.0)) == ((0.98, 1.0), True)
    assert clip_interval(ConfidenceInterval(0.2, 0.4), (0.0, 1.0)) == ((0.2, 0.4), False)
    nan = ConfidenceInterval(math.nan, math.nan)
    assert clip_interval(nan, (0.0, 1.0))[1] is False
    assert get_metric("roc_auc").bounds == (0.0, 1.0)
    assert get_metric("r2").bounds == (-math.inf, 1.0)
    assert get_metric("neg_log_loss").bounds == (-math.inf, 0.0)
    assert score_bounds("precision_macro") == (0.0, 1.0)
    assert score_bounds("max_error") == (-math.inf, math.inf)


def _near_perfect(n=120, c=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    # every configuration ranks the classes almost perfectly; the worst rows vary
    pred = y[:, None] * 3.0 + rng.normal(0, 0.6, (n, c))
    return pred, y


def test_matrix_intervals_of_auc_near_one_are_clipped():
    pred, y = _near_perfect()
    folds = np.arange(len(y)) % 5
    res = ncv_of_matrix(pred, y, folds, metric="roc_auc")
    assert res.confidence_interval.high <= 1.0 and res.ci_clipped
    assert res.confidence_interval.low < res.estimate <= 1.0
    rh = repeated_holdout_of_matrix(pred, y, metric="roc_auc", n_repeats=10, random_state=0)
    assert rh.confidence_interval.high <= 1.0 and rh.ci_clipped


def test_nested_cv_interval_of_auc_near_one(cancer, client, tmp_path):
    """The example of a user's report: AUC ~0.995, ci was (0.9862, 1.0032)."""
    X, y = cancer
    res = bd.nested_cv(make_pipeline(StandardScaler(), LogisticRegression()),
                       {"logisticregression__C": [0.01, 0.1, 1, 10]}, X, y,
                       store=str(tmp_path / "n.zarr"), metric="roc_auc", n_outer=5, n_inner=4,
                       n_repeats=2, random_state=0, client=client, progress=False)
    assert res.ci[1] <= 1.0 and res.ci_clipped
    assert "clipped to the metric's range" in res.summary()
    assert res.to_dict()["ci_clipped"] is True


def test_holdout_interval_methods(cancer_standardised):
    X, y = cancer_standardised
    est = LogisticRegression()
    wilson = bd.holdout(est, X, y, metric="accuracy", test_size=0.3, random_state=0)
    wald = bd.holdout(est, X, y, metric="accuracy", test_size=0.3, random_state=0,
                      ci_method="normal")
    assert (wilson.ci_method, wald.ci_method) == ("wilson", "normal")
    assert wilson.estimate == wald.estimate
    n = len(wilson.test_idx)
    assert tuple(wilson.ci) == tuple(wilson_interval(wilson.estimate, n, 0.95))
    assert wald.ci.high <= 1.0
    boot = bd.holdout(est, X, y, metric="accuracy", test_size=0.3, random_state=0,
                      ci_method="bootstrap")
    assert boot.ci_method == "bootstrap"
    with pytest.raises(InvalidParameterError, match="'ci_method' parameter of holdout must be one "
                                                    r"of \['delong', 'bootstrap'\]"):
        bd.holdout(est, X, y, metric="roc_auc", test_size=0.3, random_state=0, ci_method="wilson")


class NoisyOracle(ClassifierMixin, BaseEstimator):
    """Predicts column 0 of X: the label, flipped for the rows a Bernoulli draw marked,
    so that its accuracy on any test set is Binomial(n, 1 - flip rate) / n."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(np.int64)


@pytest.mark.slow  # ~10 s: 1,000 holdouts of a model fitted in this process
def test_holdout_wilson_calibration_near_one():
    """Simulated coverage of the default accuracy interval at a true accuracy of 0.99 and
    171 test rows (the 2024 paper's setting): at least 0.95 by the binomial rule (the
    exact coverage is 0.970); Eq. 14's Wald interval falls short (0.82)."""
    reps, n, p = 1000, 570, 0.99
    rng = np.random.default_rng(20261128)
    covered = {"wilson": 0, "normal": 0}
    for r in range(reps):
        y = rng.integers(0, 2, n)
        flip = rng.random(n) < 1 - p
        X = np.column_stack([np.where(flip, 1 - y, y), rng.normal(size=n)])
        for method in covered:
            res = bd.holdout(NoisyOracle(), X, y, metric="accuracy", test_size=0.3,
                             random_state=r, ci_method=method)
            assert len(res.test_idx) == 171
            covered[method] += res.ci.low <= p <= res.ci.high
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)  # the binomial rule
    assert covered["wilson"] / reps >= floor, covered
    assert covered["normal"] / reps < 0.9, covered
