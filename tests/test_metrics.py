"""Weighted metric values equal scikit-learn's (via the reference) on explicitly repeated samples."""
import numpy as np
import pytest
from _cases import make_case
from _reference import score_rows

import bbc_dask as bd
import bbc_dask.metrics as M
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


def test_indicator_sums_are_exact_in_either_layout(monkeypatch):
    """Weights summed over masks through BLAS in slices: uint8 counts (float32 products)
    and wide int32 counts (float64) give the exact integer sums, in bag and out of bag,
    rows of bootstraps or samples first."""
    from bbc_dask.metrics import _kernels as K

    monkeypatch.setattr(K, "_SLICE", 1000)  # several slices
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 256, (5, 3500)).astype(np.uint8)
    counts[:, :40] = 0
    masks = rng.random((3, 3500)) < 0.4
    masks[2] = True
    for c in (counts, counts.astype(np.int32) * 70_000):  # the latter inexact in float32
        for oob in (False, True):
            w = (c == 0).astype(np.int64) if oob else c.astype(np.int64)
            want = np.stack([w[:, m].sum(axis=1) for m in masks], axis=1)
            np.testing.assert_array_equal(K.indicator_sums(c, masks, oob, 1), want)
            np.testing.assert_array_equal(
                K.indicator_sums(np.ascontiguousarray(c.T), masks, oob, 0), want)


@pytest.mark.parametrize("metric", ["roc_auc", "roc_auc_ovr", "concordance_index"])
def test_ranking_definedness_decided_from_block_parts_equals_the_whole(metric):
    """A ranking metric's rule streams: its parts of two sample blocks, combined by
    maximum, decide exactly what ``both`` and ``inbag`` decide on the whole counts —
    over small samples where every case occurs (a class with no weight on one side, an
    event whose only comparable sample is censored at its very time)."""
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(400):
        n = int(rng.integers(2, 9))
        counts = rng.multinomial(n, np.ones(n) / n, size=40).astype(np.int32)
        if metric == "concordance_index":
            target = M.Target(time=rng.integers(0, 3, n).astype(float), event=rng.random(n) < 0.5)
        else:
            k = 3 if metric == "roc_auc_ovr" else 2
            target = M.Target.of_codes(rng.integers(0, k, n), k)
        rule = M.get_metric(metric).definedness(target)
        assert rule.streams
        cut = n // 2
        parts = np.maximum(rule.part(counts[:, :cut], 0, cut), rule.part(counts[:, cut:], cut, n))
        both, inbag = rule.both(counts), rule.inbag(counts)
        np.testing.assert_array_equal(rule.decide(parts), both)
        np.testing.assert_array_equal(rule.decide_inbag(parts), inbag)
        seen.update(zip(both.tolist(), inbag.tolist()))
    assert seen == {(True, True), (False, True), (False, False)}
