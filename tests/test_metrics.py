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
    m, target, enc = prepare_inputs(pred, y, metric_name, None)
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
        "roc_auc", "roc_auc_ovr", "roc_auc_ovo", "accuracy", "balanced_accuracy", "f1",
        "neg_log_loss", "neg_mean_squared_error", "neg_mean_absolute_error", "r2", "r2_corr",
        "concordance_index",
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


@pytest.mark.parametrize("metric", ["roc_auc", "roc_auc_ovr", "roc_auc_ovo", "concordance_index"])
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
            k = 3 if metric in ("roc_auc_ovr", "roc_auc_ovo") else 2
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


@pytest.mark.parametrize("shape", [(700, 1, 1, False), (700, 2, 1, False), (700, 9, 3, False),
                                   (700, 1, 2, False), (700, 4, 2, True), (3, 5, 1, False)])
def test_fold_row_sums_add_each_row_one_sample_at_a_time(shape):
    """The per-fold sums BBC-F's fold scores are made of: each cell is the sequential
    sum of its row's samples in sample order (so a fold's samples alone, or among any
    others, give the same bits), whatever the number of columns (one column would be
    NumPy's fast axis, which it sums pairwise) and repeats; -1 rows are not summed."""
    from bbc_dask.metrics._kernels import fold_row_sums

    m, c, r, shared = shape
    rng = np.random.default_rng(0)
    w = c if shared else c * r
    # magnitudes over 12 orders: any other order of the additions changes the bits
    values = rng.normal(size=(m, w)) * 10.0 ** rng.integers(-6, 6, size=(m, w))
    at = rng.integers(-1, 4, size=(m, r))
    at = np.where(at >= 0, at + 4 * np.arange(r), -1)  # a repeat's folds are its own rows
    got = fold_row_sums(values, at, 4 * r, r, shared)
    want = np.zeros((4 * r, c))
    for i in range(m):
        for k in range(r):
            if at[i, k] >= 0:
                cols = np.arange(c) if shared else np.arange(c) * r + k
                for j, col in enumerate(cols):
                    want[at[i, k], j] = want[at[i, k], j] + values[i, col]
    assert np.array_equal(got, want)
    if m > 100:  # the pairwise sum differs: the check above can fail
        assert not np.array_equal(want[:, 0], [values[at[:, 0] == f, 0].sum() for f in range(4)])


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "f1", "neg_log_loss",
                                    "neg_mean_squared_error", "neg_mean_absolute_error", "r2"])
def test_fold_scores_of_a_fold_alone_equal_the_fold_matrix(metric, monkeypatch):
    """An engine task scores the fold it predicted, holding that fold's samples alone
    (one configuration at a time where a block's scoring fails); the fold matrix of the
    whole cube, and of a cube cut along samples, form the same terms: the same bits, for
    several sample blocks and repeats. R² keeps the whole sample's centre."""
    from bbc_dask.stats._bbc import fold_score_matrix, fold_scores, subset_target

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    rng = np.random.default_rng(4)
    n, c, r = 500, 6, 2
    if metric == "neg_log_loss":
        y = rng.integers(0, 3, n)
        p = rng.dirichlet([1, 1, 1], size=(n, c, r))
    elif metric in ("accuracy", "balanced_accuracy", "f1"):
        y = rng.integers(0, 2, n)
        p = np.where(rng.random((n, c, r)) < 0.7, y[:, None, None], 1 - y[:, None, None])
    folds = np.stack([rng.permutation(np.arange(n) % 5) for _ in range(r)], 1)
    if metric not in ("neg_log_loss", "accuracy", "balanced_accuracy", "f1"):
        # fold 0 of repeat 0 far from the rest, in units of its own spread: R² centred on
        # the whole sample's mean lost its digits there
        y = rng.normal(size=n) * 3 + 100 + 1e4 * (folds[:, 0] == 0)
        p = y[:, None, None] + rng.normal(size=(n, c, r))
    F, rows = fold_score_matrix(p, y, folds, metric=metric)
    m, target, enc = prepare_inputs(p, y, metric, None)
    for i, (k, f) in enumerate(rows):
        idx = np.flatnonzero(folds[:, k] == f)
        sub = subset_target(target, idx)
        got = fold_scores(m, sub, enc[idx][:, :, k : k + 1], idx, n)
        assert np.array_equal(got, F[i])
        one = fold_scores(m, sub, enc[idx][:, 2:3, k : k + 1], idx, n)
        assert np.array_equal(one, F[i, 2:3])
    from sklearn.metrics import mean_squared_error, r2_score

    ref = {"neg_mean_squared_error": lambda t, q: -mean_squared_error(t, q),
           "r2": r2_score}.get(metric)
    if ref is not None:
        want = [[ref(y[folds[:, k] == f], p[folds[:, k] == f, j, k]) for j in range(c)]
                for k, f in rows]
        np.testing.assert_allclose(F, want, rtol=1e-9)


def test_r2_of_a_constant_fold_is_undefined():
    """A fold whose y is constant has no R² (scikit-learn's 0/0): the fold matrix says
    which fold, whatever the rest of the sample."""
    from bbc_dask.exceptions import UndefinedScoreError

    rng = np.random.default_rng(0)
    folds = np.arange(300) % 3
    y = np.where(folds == 1, 3.3, rng.normal(size=300) * 50)
    p = y[:, None] + rng.normal(size=(300, 4))
    with pytest.raises(UndefinedScoreError, match="fold 1 of repeat 0"):
        bd.fold_score_matrix(p, y, folds, metric="r2")


@pytest.mark.parametrize("n_classes", [3, 9])
def test_fold_rows_by_pair_sums_equal_the_fold_matrix(n_classes, monkeypatch):
    """BBC-F's fold rows by pair sums (0/1 weights of every fold row at once, as a tile
    task) give the in-memory fold scores' bits — for one-vs-rest AUC of 8 classes or
    more too, whose class mean once summed in another order for several rows."""
    from bbc_dask.chunked._tile_sums import finish_tile_folds
    from bbc_dask.stats._bbc import fold_rows

    rng = np.random.default_rng(1)
    n, c, r = 900, 4, 2
    y = rng.integers(0, n_classes, n)
    p = rng.dirichlet(np.ones(n_classes), size=(n, c, r))
    folds = np.stack([rng.permutation(np.arange(n) % 3) for _ in range(r)], 1)
    F, rows = bd.fold_score_matrix(p, y, folds, metric="roc_auc_ovr")
    m, target, enc = prepare_inputs(p, y, "roc_auc_ovr", None)
    at, _ = fold_rows(folds)
    w = np.zeros((n, len(rows)), dtype=np.uint8)
    for k in range(r):
        w[np.arange(n), at[:, k]] = 1
    num, den = m.prepare(target, enc).pair_sums_t(w)
    got = finish_tile_folds({"num": num, "den": den}, "roc_auc_ovr", c, r, n_classes,
                            [k for k, _ in rows])
    np.testing.assert_array_equal(got, F)


def test_the_2024_papers_multiclass_auc_and_squared_correlation():
    """roc_auc_ovo is the 2024 paper's code's auc_multiclass (the mean AUC of ordered
    class pairs, each on its two classes' samples) and scikit-learn's one-vs-one macro
    AUC; r2_corr its corrcoef2, np.corrcoef(y, x)[0, 1] ** 2 — 0 for a constant
    prediction, where that is NaN."""
    from sklearn.metrics import roc_auc_score

    from _cases import make_case

    p, y = make_case("roc_auc_ovo", n=90, c=4, r=2, seed=3)
    got = bd.naive_cvt(p, y, metric="roc_auc_ovo")
    want = [np.mean([roc_auc_score(y, p[:, c, r], multi_class="ovo") for r in range(2)]) for c in range(4)]
    assert got.naive_estimate == pytest.approx(max(want), abs=1e-12)
    assert got.selected_config == int(np.argmax(want))
    p, y = make_case("r2_corr", n=90, c=4, r=1, seed=4)
    p[:, 3, 0] = 7.0
    F, _ = bd.fold_score_matrix(p, y, np.arange(90) % 3, metric="r2_corr")
    for k in range(3):
        rows = np.arange(90) % 3 == k
        for c in range(3):
            assert F[k, c] == pytest.approx(np.corrcoef(y[rows], p[rows, c, 0])[0, 1] ** 2, abs=1e-12)
        assert F[k, 3] == pytest.approx(0.0, abs=1e-12)


def test_short_auc_columns_are_merged_without_numba_and_give_the_kernels_integers():
    """Twice the Mann-Whitney numerator of short columns comes from NumPy's searchsorted
    while numba is not loaded (a fresh worker scoring small folds never imports it), and
    equals the compiled merge's integers, ties included; in a fresh process, fold scores
    of 100 rows leave numba unloaded."""
    import subprocess
    import sys

    from bbc_dask.metrics import _kernels, _ranking

    rng = np.random.default_rng(3)
    for n in (1, 7, 100, 1500):
        for _ in range(20):
            neg = np.sort(np.round(rng.normal(size=(3, n)), 1), axis=1)
            pos = np.sort(np.round(rng.normal(size=(3, int(rng.integers(1, n + 1)))), 1), axis=1)
            np.testing.assert_array_equal(_ranking._auc_sorted(neg, pos),
                                          _kernels.auc_sorted(neg, pos))
    code = ("import sys, numpy as np\n"
            "from bbc_dask.engine._tasks import _fold_scores, _fold_target\n"
            "rng = np.random.default_rng(0)\n"
            "v = rng.normal(size=(100, 10)); y = np.arange(100) % 2\n"
            "s = _fold_scores(v, np.zeros(10, bool), _fold_target(y, np.array([0, 1]), 1), 'roc_auc')\n"
            "assert np.isfinite(s).all()\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
