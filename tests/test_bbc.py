"""BBC, BBC-F and comparators against an independent plain-loop implementation."""
import numpy as np
import pytest
import xarray as xr
from _cases import make_case
from _reference import (
    reference_bbc,
    reference_bbc_incomplete,
    reference_bbc_f,
    reference_fold_matrix,
    reference_naive_bootstrap,
    reference_naive_bootstrap_folds,
    reference_tt,
)

import bbc_dask as bd


def _folds(n, r, k=4, seed=0):
    rng = np.random.default_rng(seed)
    # arbitrary integer labels, not 0..K-1
    labels = np.array([7, -3, 12, 40])[:k]
    return np.stack([labels[rng.permutation(np.arange(n) % k)] for _ in range(r)], axis=1)


def _indices(n, b, seed):
    idx = np.random.default_rng(seed).integers(0, n, size=(b, n))
    idx[0] = np.arange(n)  # every sample in bag: no out-of-bag set -> NaN, excluded
    return idx


@pytest.mark.parametrize("n_repeats", [1, 2])
def test_bbc_equals_reference(metric_name, n_repeats):
    pred, y = make_case(metric_name, n=36, c=5, r=n_repeats, seed=3)
    idx = _indices(36, 25, seed=4)
    res = bd.bbc(pred, y, metric=metric_name, bootstrap_indices=idx)
    dist, winners = reference_bbc(pred, y, metric_name, idx)
    np.testing.assert_allclose(res.bootstrap_distribution, dist, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(res.winners[np.isfinite(dist)], winners[np.isfinite(dist)])
    assert res.n_excluded == int(np.isnan(dist).sum()) >= 1
    assert res.estimate == pytest.approx(np.nanmean(dist), abs=1e-12)
    assert res.n_bootstraps == 25 and res.method == "bbc" and res.metric == metric_name


@pytest.mark.parametrize("n_repeats", [1, 2])
def test_bbc_f_equals_reference(metric_name, n_repeats):
    n = 48
    pred, y = make_case(metric_name, n=n, c=5, r=n_repeats, seed=5)
    folds = _folds(n, n_repeats, k=3 if metric_name in ("roc_auc_ovr", "roc_auc_ovo") else 4, seed=6)
    if metric_name in ("roc_auc", "roc_auc_ovr", "roc_auc_ovo"):  # every fold must hold every class
        folds = _stratified(y, n_repeats, 3 if metric_name in ("roc_auc_ovr", "roc_auc_ovo") else 4)
    k = len(np.unique(folds[:, 0]))
    idx = np.random.default_rng(7).integers(0, k, size=(30, k))
    idx[0] = np.arange(k)
    res = bd.bbc_f(pred, y, folds, metric=metric_name, bootstrap_indices=idx)
    dist, winners = reference_bbc_f(pred, y, folds, metric_name, idx)
    np.testing.assert_allclose(res.bootstrap_distribution, dist, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(res.winners[1:], winners[1:])
    assert res.n_excluded == int(np.isnan(dist).sum()) >= 1
    F, rows = bd.fold_score_matrix(pred, y, folds, metric=metric_name)
    np.testing.assert_allclose(F, reference_fold_matrix(pred, y, folds, metric_name), atol=1e-12)
    assert [r for r, _ in rows] == sorted(r for r, _ in rows)


def test_bbc_f_resamples_the_folds_of_one_repeat_per_bootstrap():
    """2018 paper §3.2: an instance is in a bootstrap with all its repeats or not at all.
    Bootstrap b resamples repeat b mod R's folds alone (repeats of 3 and 4 folds here):
    its value is the winner's mean over a proper subset of that repeat's fold rows."""
    import itertools

    n = 60
    pred, y = make_case("accuracy", n=n, c=5, r=2, seed=12)
    rng = np.random.default_rng(3)
    folds = np.stack([rng.permutation(np.arange(n) % 3), rng.permutation(np.arange(n) % 4)], 1)
    F, rows = bd.fold_score_matrix(pred, y, folds, metric="accuracy")
    res = bd.bbc_f(pred, y, folds, metric="accuracy", n_bootstraps=40, random_state=0)
    for b, (v, w) in enumerate(zip(res.bootstrap_distribution, res.winners)):
        mine = [i for i, (r, _) in enumerate(rows) if r == b % 2]
        means = {F[list(sub), w].mean() for k in range(1, len(mine))
                 for sub in itertools.combinations(mine, k)}
        assert any(abs(v - m) < 1e-12 for m in means), b
    with pytest.raises(ValueError, match=r"'bootstrap_indices' parameter of bbc_f needs every "
                                         r"repeat to have the same number of folds.*\[3, 4\]"):
        bd.bbc_f(pred, y, folds, metric="accuracy", bootstrap_indices=np.zeros((2, 3), int))


@pytest.mark.parametrize("n_repeats", [1, 2])
def test_fold_naive_bootstrap_equals_reference(metric_name, n_repeats):
    """The 2024 paper's NB (unit="fold"): the fold-mean winner's fold scores resampled, a
    NumPy loop over explicit bootstrap indices; the paper's code uses 500 bootstraps."""
    n = 48
    pred, y = make_case(metric_name, n=n, c=5, r=n_repeats, seed=13)
    folds = (_stratified(y, n_repeats, 3 if metric_name in ("roc_auc_ovr", "roc_auc_ovo") else 4)
             if metric_name in ("roc_auc", "roc_auc_ovr", "roc_auc_ovo") else _folds(n, n_repeats, seed=14))
    k = len(np.unique(folds[:, 0]))
    idx = np.random.default_rng(15).integers(0, k, size=(30, k))
    res = bd.naive_bootstrap(pred, y, metric=metric_name, folds=folds, unit="fold", bootstrap_indices=idx)
    dist, winner = reference_naive_bootstrap_folds(pred, y, folds, metric_name, idx)
    np.testing.assert_allclose(res.bootstrap_distribution, dist, rtol=0, atol=1e-12)
    assert res.selected_config == winner == bd.bbc_f(pred, y, folds, metric=metric_name,
                                                     n_bootstraps=10).selected_config
    assert res.selection == "fold_mean" and set(res.winners) == {winner}
    drawn = bd.naive_bootstrap(pred, y, metric=metric_name, folds=folds, unit="fold",
                               n_bootstraps=500, random_state=0)
    assert drawn.n_bootstraps == 500 and np.isfinite(drawn.bootstrap_distribution).all()
    assert drawn.naive_estimate == pytest.approx(
        bd.fold_score_matrix(pred, y, folds, metric=metric_name)[0][:, winner].mean(), abs=1e-12)


def test_fold_mean_selection_is_bbc_f_s():
    """selection="fold_mean": the final winner of BBC is BBC-F's (the 2024 paper's code);
    the bootstraps do not change. The pooled and fold-mean winners differ here."""
    sim = bd.simulate.auc_matrix(120, 40, a=24, b=6, n_repeats=2, repeat_correlation=0.5, random_state=6)
    kw = dict(metric="roc_auc", n_bootstraps=200, random_state=0)
    pooled = bd.bbc(sim.predictions, sim.y, **kw)
    fm = bd.bbc(sim.predictions, sim.y, folds=sim.folds, selection="fold_mean", **kw)
    f = bd.bbc_f(sim.predictions, sim.y, sim.folds, **kw)
    assert fm.selected_config == f.selected_config != pooled.selected_config
    assert fm.naive_estimate == f.naive_estimate and fm.selection == f.selection == "fold_mean"
    np.testing.assert_array_equal(fm.bootstrap_distribution, pooled.bootstrap_distribution)
    nb = bd.naive_bootstrap(sim.predictions, sim.y, folds=sim.folds, selection="fold_mean", **kw)
    assert nb.selected_config == f.selected_config
    with pytest.raises(ValueError, match=r"The 'folds' parameter of bbc is required with selection='fold_mean'"):
        bd.bbc(sim.predictions, sim.y, selection="fold_mean", **kw)
    with pytest.raises(ValueError, match=r"The 'selection' parameter of bbc must be one of \['pooled', 'fold_mean'\]"):
        bd.bbc(sim.predictions, sim.y, selection="best", **kw)
    with pytest.raises(ValueError, match=r"The 'unit' parameter of naive_bootstrap must be one of"):
        bd.naive_bootstrap(sim.predictions, sim.y, unit="row", **kw)
    with pytest.raises(ValueError, match=r"The 'folds' parameter of naive_bootstrap is required with unit='fold'"):
        bd.naive_bootstrap(sim.predictions, sim.y, unit="fold", **kw)


@pytest.mark.parametrize("metric_name", ["roc_auc", "accuracy", "neg_log_loss", "neg_mean_squared_error"])
def test_bbc_of_an_incomplete_cube_equals_reference(metric_name):
    """include_incomplete=True (2018 paper §3: BBC applies to whatever predictions exist):
    configurations missing folds — as BBCD drops them, or failures — compete in every
    bootstrap on the samples they predicted; the final winner is a complete one; one
    missing a whole repeat is left out. A plain loop over explicit indices agrees."""
    n, c, r = 60, 7, 2
    pred, y = make_case(metric_name, n=n, c=c, r=r, seed=21)
    if pred.dtype.kind in "UO":  # labels as strings: their codes, as a study stores them
        classes = np.unique(y)
        pred, y = np.searchsorted(classes, pred), np.searchsorted(classes, y)
    pred = pred.astype(np.float64)
    folds = _stratified(y, r, 4) if metric_name == "roc_auc" else _folds(n, r, seed=22)
    for rep in range(r):
        ids = np.unique(folds[:, rep])
        pred[np.isin(folds[:, rep], ids[2:]), 4, rep] = np.nan  # two folds of four
        pred[np.isin(folds[:, rep], ids[1:]), 5, rep] = np.nan  # one fold
    pred[:, 6, 1] = np.nan  # nothing in repeat 1: not a candidate
    idx = np.random.default_rng(23).integers(0, n, size=(25, n))
    res = bd.bbc(pred, y, metric=metric_name, bootstrap_indices=idx, include_incomplete=True)
    dist, winners = reference_bbc_incomplete(pred, y, metric_name, idx)
    np.testing.assert_allclose(res.bootstrap_distribution, dist, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(res.winners, winners)
    assert res.configs.tolist() == [0, 1, 2, 3, 4, 5]
    complete = bd.bbc(pred[:, :4], y, metric=metric_name, bootstrap_indices=idx)
    assert (res.selected_config, res.naive_estimate) == (complete.selected_config, complete.naive_estimate)
    # nothing missing: bbc itself, bit for bit
    same = bd.bbc(pred[:, :4], y, metric=metric_name, random_state=1, n_bootstraps=100, include_incomplete=True)
    np.testing.assert_array_equal(same.bootstrap_distribution, bd.bbc(
        pred[:, :4], y, metric=metric_name, random_state=1, n_bootstraps=100).bootstrap_distribution)
    with pytest.raises(ValueError, match=r"'predictions'.* of bbc .*NaN marks a cell not predicted.*include_incomplete=True"):
        bd.bbc(pred, y, metric=metric_name, bootstrap_indices=idx)
    # the final winner by the mean fold score: among the complete ones, as bbc_f selects
    fm = bd.bbc(pred, y, metric=metric_name, folds=folds, selection="fold_mean", bootstrap_indices=idx,
                include_incomplete=True)
    assert fm.selected_config == bd.bbc_f(pred[:, :4], y, folds, metric=metric_name, n_bootstraps=5).selected_config
    # nothing complete: the final winner is the best on the samples it predicted
    part = bd.bbc(pred[:, 4:6], y, metric=metric_name, bootstrap_indices=idx, include_incomplete=True)
    assert part.selected_config in (0, 1) and np.isfinite(part.naive_estimate)


def _stratified(y, n_repeats, k):
    from sklearn.model_selection import StratifiedKFold

    out = np.empty((len(y), n_repeats), dtype=np.int64)
    for r in range(n_repeats):
        for f, (_, test) in enumerate(
            StratifiedKFold(k, shuffle=True, random_state=r).split(np.zeros(len(y)), y)
        ):
            out[test, r] = 100 - 7 * f
    return out


@pytest.mark.parametrize("metric_name", ["roc_auc", "accuracy", "neg_mean_squared_error", "concordance_index"])
@pytest.mark.parametrize("n_repeats", [1, 2])
def test_comparators_equal_reference(metric_name, n_repeats):
    n = 48
    pred, y = make_case(metric_name, n=n, c=6, r=n_repeats, seed=8)
    folds = _stratified(y, n_repeats, 4) if metric_name == "roc_auc" else _folds(n, n_repeats, seed=9)
    tt = bd.tibshirani_tibshirani(pred, y, folds, metric=metric_name)
    assert tt.estimate == pytest.approx(reference_tt(pred, y, folds, metric_name), abs=1e-12)
    assert tt.estimate <= tt.naive_estimate
    idx = np.random.default_rng(10).integers(0, n, size=(20, n))
    nb = bd.naive_bootstrap(pred, y, metric=metric_name, bootstrap_indices=idx)
    np.testing.assert_allclose(
        nb.bootstrap_distribution, reference_naive_bootstrap(pred, y, metric_name, idx), atol=1e-12
    )
    naive = bd.naive_cvt(pred, y, metric=metric_name)
    assert naive.estimate == naive.naive_estimate == nb.naive_estimate == tt.naive_estimate
    assert naive.selected_config == nb.selected_config
    assert np.isnan(naive.lower_bound) and naive.n_bootstraps == 0


@pytest.mark.parametrize("fn", ["bbc", "bbc_f", "naive_bootstrap"])
@pytest.mark.parametrize("metric_name", ["roc_auc", "neg_log_loss", "accuracy"])
def test_same_seed_same_result_whatever_block_size(fn, metric_name):
    pred, y = make_case(metric_name, n=60, c=7, r=2, seed=11)
    folds = _stratified(y, 2, 3)
    f = getattr(bd, fn)
    args = (pred, y, folds) if fn == "bbc_f" else (pred, y)
    ref = f(*args, metric=metric_name, n_bootstraps=300, random_state=123)
    for bs in (1, 7, 64, 100, 1000):
        other = f(*args, metric=metric_name, n_bootstraps=300, random_state=123, block_size=bs)
        np.testing.assert_array_equal(other.bootstrap_distribution, ref.bootstrap_distribution)
        np.testing.assert_array_equal(other.winners, ref.winners)
        assert other.n_redrawn == ref.n_redrawn
    again = f(*args, metric=metric_name, n_bootstraps=300, random_state=np.random.SeedSequence(123))
    np.testing.assert_array_equal(again.bootstrap_distribution, ref.bootstrap_distribution)
    different = f(*args, metric=metric_name, n_bootstraps=300, random_state=124)
    assert not np.array_equal(different.bootstrap_distribution, ref.bootstrap_distribution)
    # a prefix of the bootstraps is the same draws
    short = f(*args, metric=metric_name, n_bootstraps=100, random_state=123)
    np.testing.assert_array_equal(short.bootstrap_distribution, ref.bootstrap_distribution[:100])


def test_undefined_draws_are_redrawn_and_counted():
    # 12 samples, 2 positives: many bootstraps have no positive out of bag.
    rng = np.random.default_rng(0)
    y = np.array([1, 1] + [0] * 10)
    pred = rng.normal(size=(12, 4)) + y[:, None]
    res = bd.bbc(pred, y, metric="roc_auc", n_bootstraps=200, random_state=0)
    assert res.n_redrawn > 50
    assert np.all(np.isfinite(res.bootstrap_distribution)) and res.n_excluded == 0


def test_explicit_undefined_bootstraps_are_excluded_and_counted():
    y = np.array([1, 1, 1] + [0] * 9)
    pred = np.random.default_rng(0).normal(size=(12, 4)) + y[:, None]
    idx = np.tile(np.arange(12), (3, 1))  # 0: nothing out of bag
    idx[1] = [0] * 12  # single class in bag: selection undefined
    idx[2] = [0, 3, 4, 5, 6, 7, 8, 0, 3, 4, 5, 6]  # out of bag: 1, 2 (pos), 9-11 (neg)
    res = bd.bbc(pred, y, metric="roc_auc", bootstrap_indices=idx)
    assert np.isnan(res.bootstrap_distribution[:2]).all()
    assert res.winners[1] == -1
    assert res.n_excluded == 2 and res.n_redrawn == 0
    assert res.estimate == res.bootstrap_distribution[2]


def test_order_statistics_are_the_papers():
    from bbc_dask.stats._result import order_statistic

    v = np.arange(1.0, 1001.0)[::-1].copy()
    assert order_statistic(v, 0.025) == 25 and order_statistic(v, 0.975) == 975
    assert order_statistic(v, 1 - 0.95) == 50  # not 51 despite 0.05*1000 rounding
    pred, y = make_case("roc_auc", n=60, c=5, seed=2)
    res = bd.bbc(pred, y, metric="roc_auc", n_bootstraps=1000, random_state=0)
    s = np.sort(res.bootstrap_distribution)
    assert res.confidence_interval == (s[24], s[974]) and res.lower_bound == s[49]
    res90 = bd.bbc(pred, y, metric="roc_auc", n_bootstraps=1000, random_state=0, confidence_level=0.9)
    assert res90.lower_bound == s[99] and res90.confidence_interval == (s[49], s[949])


def test_dataarray_input_equals_numpy():
    pred, y = make_case("neg_log_loss", n=40, c=4, r=2, seed=3)
    idx = np.random.default_rng(1).integers(0, 40, size=(15, 40))
    want = bd.bbc(pred, y, metric="neg_log_loss", bootstrap_indices=idx)
    classes = np.unique(y)
    da = xr.DataArray(pred[..., ::-1], dims=("sample", "config", "repeat", "class"),
                      coords={"class": classes[::-1]}).transpose("config", "class", "sample", "repeat")
    got = bd.bbc(da, y, metric="neg_log_loss", bootstrap_indices=idx)
    np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
    da2 = xr.DataArray(pred[:, :, 0, 1], dims=("sample", "config"))
    r2 = bd.bbc(da2, y == 15, metric="roc_auc", bootstrap_indices=idx)
    r1 = bd.bbc(pred[:, :, 0, 1], y == 15, metric="roc_auc", bootstrap_indices=idx)
    np.testing.assert_array_equal(r1.bootstrap_distribution, r2.bootstrap_distribution)


def test_label_encodings_and_pos_label():
    pred, y = make_case("roc_auc", n=50, c=4, seed=4)  # y in {"no", "yes"}: "yes" positive
    idx = np.random.default_rng(2).integers(0, 50, size=(20, 50))
    a = bd.bbc(pred, y, metric="roc_auc", bootstrap_indices=idx)
    b = bd.bbc(pred, (y == "yes").astype(int), metric="roc_auc", bootstrap_indices=idx)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    c = bd.bbc(-pred, y, metric="roc_auc", bootstrap_indices=idx, pos_label="no")
    np.testing.assert_allclose(c.bootstrap_distribution, a.bootstrap_distribution, atol=1e-12)


def test_repeats_resample_samples_with_all_their_repeats():
    # Identical repeats: BBC with R copies equals BBC with one.
    pred, y = make_case("roc_auc", n=50, c=4, seed=5)
    idx = np.random.default_rng(3).integers(0, 50, size=(20, 50))
    one = bd.bbc(pred, y, metric="roc_auc", bootstrap_indices=idx)
    three = bd.bbc(np.repeat(pred, 3, axis=2), y, metric="roc_auc", bootstrap_indices=idx)
    np.testing.assert_allclose(three.bootstrap_distribution, one.bootstrap_distribution, atol=1e-15)


def test_ties_go_to_lowest_config():
    y = np.array([0, 1] * 10)
    pred = np.stack([y, y, 1 - y], axis=1)  # configs 0 and 1 identical and perfect
    res = bd.bbc(pred, y, metric="accuracy", n_bootstraps=50, random_state=0)
    assert set(res.winners) == {0} and res.selected_config == 0


def test_bbc_corrects_the_winners_curse():
    sim = bd.simulate.auc_matrix(100, 300, a=9, b=6, random_state=1)
    res = bd.bbc(sim.predictions, sim.y, metric="roc_auc", random_state=0)
    assert res.estimate < res.naive_estimate - 0.02
    assert res.lower_bound < res.confidence_interval.high


def test_real_feature_sums_do_not_depend_on_blas_threads():
    """Log loss over three sample blocks: BLAS at 1 or 2 threads gives the same bits
    (before the products were held at one thread, bootstrap 3 differed by an ulp on
    this data with OpenBLAS), and BLAS is left as it was, also after calls from two
    threads at once."""
    import threading

    from threadpoolctl import threadpool_info, threadpool_limits

    n = 70_000
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    p1 = 1 / (1 + np.exp(-(X[:, :1] + 0.1 * np.arange(12)[None, :] * X[:, 1:2])))
    p = np.stack([1 - p1, p1], axis=-1)[:, :, None, :].repeat(2, axis=2)
    got = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            got[threads] = bd.bbc(p, y, metric="neg_log_loss", n_bootstraps=150, random_state=3)
            assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {threads}
    np.testing.assert_array_equal(got[1].bootstrap_distribution, got[2].bootstrap_distribution)
    with threadpool_limits(limits=2, user_api="blas"):
        runs = [threading.Thread(target=bd.bbc, args=(p[:40_000], y[:40_000]),
                                 kwargs=dict(metric="neg_log_loss", n_bootstraps=64)) for _ in range(2)]
        [t.start() for t in runs]
        [t.join() for t in runs]
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {2}
        # another limit that ends while the sums hold one thread: set back to one before
        # the next product; what the sums changed is restored when they end
        from threadpoolctl import ThreadpoolController

        from bbc_dask._jit import one_blas_thread, pin_blas_thread

        blas = lambda: {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}  # noqa: E731
        other = ThreadpoolController().limit(limits=1, user_api="blas")
        with one_blas_thread():
            other.restore_original_limits()
            pin_blas_thread()
            assert blas() == {1}
        assert blas() == {2}


def test_an_incomplete_loser_leaves_bbc_as_it_is():
    """Drawn bootstraps of an incomplete cube are BBC's own (the same seed blocks and
    redraw rule): a configuration predicted on two folds of ten that never wins leaves the
    distribution of BBC on the complete ones, bit for bit."""
    sim = bd.simulate.auc_matrix(300, 12, a=24, b=6, random_state=3)
    bad = sim.y[:, None] * 0.0 + np.random.default_rng(0).normal(size=(300, 1))  # AUC ~ 0.5
    bad[sim.folds >= 2] = np.nan
    pred = np.concatenate([sim.predictions, bad], axis=1)
    got = bd.bbc(pred, sim.y, metric="roc_auc", random_state=5, n_bootstraps=300, include_incomplete=True)
    want = bd.bbc(sim.predictions, sim.y, metric="roc_auc", random_state=5, n_bootstraps=300)
    assert 12 not in got.winners
    np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
    assert (got.selected_config, got.naive_estimate, got.n_redrawn) == (
        want.selected_config, want.naive_estimate, want.n_redrawn)


def test_results_compare_by_value():
    """Two runs of one estimate are equal, arrays and NaN included (the dataclass default
    raised "truth value of an array is ambiguous"); another seed is not; unhashable."""
    import pickle

    sim = bd.simulate.auc_matrix(40, 12, a=9, b=6, random_state=7)
    one = bd.bbc(sim.predictions, sim.y, metric="roc_auc", random_state=0, n_bootstraps=40)
    assert one == bd.bbc(sim.predictions, sim.y, metric="roc_auc", random_state=0, n_bootstraps=40)
    assert one != bd.bbc(sim.predictions, sim.y, metric="roc_auc", random_state=1, n_bootstraps=40)
    assert pickle.loads(pickle.dumps(one)) == one  # as a worker's result arrives
    naive = bd.naive_cvt(sim.predictions, sim.y, metric="roc_auc")  # NaN interval
    assert naive == bd.naive_cvt(sim.predictions, sim.y, metric="roc_auc")
    assert sim == bd.simulate.auc_matrix(40, 12, a=9, b=6, random_state=7)
    f = bd.bbc_f(sim.predictions, sim.y, sim.folds, metric="roc_auc", random_state=0, n_bootstraps=40)
    assert f != one and f == pickle.loads(pickle.dumps(f))
    with pytest.raises(TypeError, match="unhashable"):
        hash(one)
