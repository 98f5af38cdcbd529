"""Weighted metric values equal scikit-learn's (via the reference) on explicitly repeated samples."""
import numpy as np
import pytest
from _cases import make_case
from _reference import score_rows

import bbc_dask as bd
from bbc_dask.stats._bbc import prepare_inputs


@pytest.mark.parametrize("n_repeats", [1, 2])
def test_weighted_scores_equal_repeated_sample(metric_name, n_repeats):
    pred, y = make_case(metric_name, n=30, c=3, r=n_repeats, seed=1)
    m, target, enc = prepare_inputs(pred, y, metric_name, None, "test")
    prep = m.prepare(target, enc)
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 30, size=(6, 30))
    counts = np.zeros((6, 30), dtype=np.int32)
    for b in range(6):
        counts[b] = np.bincount(idx[b], minlength=30)
    got = prep.scores(counts)  # (B, C, R)
    oob = prep.winner_scores(counts, np.array([0, 1, 2, 0, 1, 2]), oob=True)
    for b in range(6):
        for c in range(3):
            for r in range(n_repeats):
                col = pred[:, c, r]
                want = score_rows(metric_name, y, col, idx[b])
                assert got[b, c, r] == pytest.approx(want, abs=1e-12, nan_ok=True)
        oob_rows = np.setdiff1d(np.arange(30), idx[b])
        for r in range(n_repeats):
            want = score_rows(metric_name, y, pred[:, b % 3, r], oob_rows)
            assert oob[b, r] == pytest.approx(want, abs=1e-12, nan_ok=True)


def test_registry_lists_names_and_directions():
    assert set(bd.metrics.metric_names()) == {
        "roc_auc", "roc_auc_ovr", "accuracy", "balanced_accuracy", "f1", "neg_log_loss",
        "neg_mean_squared_error", "neg_mean_absolute_error", "r2", "concordance_index",
    }
    assert all(m.greater_is_better for m in bd.metrics.METRICS.values())
    assert bd.metrics.get_metric("roc_auc").kind == "ranking"
    assert bd.metrics.get_metric("accuracy").kind == "pointwise"


def test_unknown_metric_lists_known_ones():
    with pytest.raises(ValueError, match=r"'metric' parameter of bbc must be one of .*roc_auc"):
        bd.bbc(np.zeros((4, 2)), [0, 1, 0, 1], metric="auc")
