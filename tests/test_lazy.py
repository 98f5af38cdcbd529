"""BBC and BBC-F on Zarr/Dask-backed cubes: equal to the in-memory path, bit for bit."""
import threading

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr

import bbc_dask as bd
from bbc_dask._doors import entered
import bbc_dask._tuning as tuning
import bbc_dask._zarr as zarr_rules
import bbc_dask.chunked as chunked
from bbc_dask.chunked import _blocks as config_blocks
from bbc_dask.chunked import _budgets as budgets
from bbc_dask.chunked import _lazy_bbc_f as lazy_bbc_f
from bbc_dask.chunked import _lazy_dropping as lazy_dropping
from bbc_dask.chunked import _sample_sums as sample_sums
from bbc_dask.chunked import _source as source
from bbc_dask.chunked import _task_base as task_base
from bbc_dask.chunked import _tile_sums as tile_sums
from bbc_dask.metrics import get_metric


def _small(metric, seed=0, n=600, c=23, r=2):
    rng = np.random.default_rng(seed)
    if metric == "roc_auc":
        y = rng.integers(0, 2, n)
        p = rng.normal(size=(n, c, r)) + y[:, None, None] * rng.uniform(0, 1, (1, c, 1))
    elif metric == "neg_log_loss":
        y = rng.integers(0, 3, n)
        p = rng.dirichlet([1, 1, 1], size=(n, c, r))
    elif metric == "accuracy":
        y = rng.integers(0, 2, n)
        p = np.where(rng.random((n, c, r)) < 0.7, y[:, None, None], 1 - y[:, None, None]).astype(np.float32)
    else:
        y = rng.normal(size=n)
        p = y[:, None, None] + rng.normal(size=(n, c, r))
    return p, y




@pytest.mark.parametrize("metric", ["roc_auc", "neg_log_loss", "accuracy", "neg_mean_squared_error"])
@pytest.mark.parametrize("chunk", [1, 4, 23])
def test_lazy_equals_in_memory_whatever_the_chunking(metric, chunk, client, dask_config):
    p, y = _small(metric)
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    dask_config({"bbc_dask.chunk-bytes": chunk * p.shape[0] * int(np.prod(p.shape[2:])) * 8})
    lazy = xr.DataArray(da.from_array(p, chunks=(100,) + p.shape[1:]), dims=dims)
    mem = bd.bbc(p, y, metric=metric, random_state=5, n_bootstraps=200)
    got = bd.bbc(lazy, y, metric=metric, random_state=5, n_bootstraps=200)
    np.testing.assert_array_equal(got.bootstrap_distribution, mem.bootstrap_distribution)
    np.testing.assert_array_equal(got.winners, mem.winners)
    assert (got.selected_config, got.naive_estimate, got.n_redrawn) == (mem.selected_config, mem.naive_estimate, mem.n_redrawn)
    folds = np.stack([np.random.default_rng(r).permutation(np.arange(600) % 5) for r in range(2)], 1)
    f_mem = bd.bbc_f(p, y, folds, metric=metric, random_state=1, n_bootstraps=200)
    f_lazy = bd.bbc_f(lazy, y, folds, metric=metric, random_state=1, n_bootstraps=200)
    np.testing.assert_array_equal(f_lazy.bootstrap_distribution, f_mem.bootstrap_distribution)
    # the final winner by the mean fold score: the fold matrix built on the cluster too
    fm = bd.bbc(lazy, y, folds=folds, selection="fold_mean", metric=metric, random_state=5, n_bootstraps=200)
    assert (fm.selected_config, fm.naive_estimate, fm.selection) == (
        f_mem.selected_config, f_mem.naive_estimate, "fold_mean")
    np.testing.assert_array_equal(fm.bootstrap_distribution, mem.bootstrap_distribution)


def test_lazy_rejects_explicit_indices(client):
    p, y = _small("roc_auc")
    lazy = da.from_array(p)
    with pytest.raises(ValueError, match=r"'include_incomplete' parameter of bbc must be False with a Dask- or Zarr-backed cube"):
        bd.bbc(lazy, y, metric="roc_auc", include_incomplete=True)
    with pytest.raises(ValueError, match=r"'bootstrap_indices' parameter of bbc must be None with a Dask- or Zarr-backed cube"):
        bd.bbc(lazy, y, metric="roc_auc", bootstrap_indices=np.zeros((2, 600), int))


def test_an_error_a_task_finds_names_the_door_the_user_called(client):
    """A label only a task reads (in a chunk of a Dask cube) is refused in the words of
    the public function called, on the workers (other processes) and on Dask's threads:
    the door travels with the task (issue 49, point 2)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    p = rng.integers(0, 2, (200, 6)).astype(float)
    p[5, 2] = 7
    want = r"but 'predictions' of bbc holds 7.0"
    with pytest.raises(ValueError, match=want):
        bd.bbc(da.from_array(p, chunks=(50, 3)), y, metric="accuracy", random_state=0)
    with dask.config.set(scheduler="threads"), pytest.raises(ValueError, match=want):
        bd.bbc(da.from_array(p, chunks=(50, 3)), y, metric="accuracy", random_state=0)


def test_use_chunked_is_the_one_rule_of_memory_or_chunks(dask_config):
    """Told, as told (checked as a study checks it); else a lazy cube goes by chunks and
    arrays stay in memory; else (a study's cube) beyond IN_MEMORY_BYTES, its bytes
    computed only when needed."""
    p, _ = _small("roc_auc")

    def never():
        raise AssertionError("the bytes were computed though the path was told")

    assert chunked.use_chunked(nbytes=never, chunked=True) is True
    assert chunked.use_chunked(p, chunked=np.bool_(False)) is False
    with entered("Study"), pytest.raises(
            TypeError, match=r"The 'chunked' parameter of Study must be None, True or False"):
        chunked.use_chunked(nbytes=never, chunked="yes")
    assert chunked.use_chunked(p) is False
    assert chunked.use_chunked(da.from_array(p)) is True
    assert chunked.use_chunked(xr.DataArray(da.from_array(p), dims=("sample", "config", "repeat"))) is True
    limit = tuning.IN_MEMORY_BYTES
    assert chunked.use_chunked(nbytes=limit) is False
    assert chunked.use_chunked(nbytes=lambda: limit + 1) is True
    dask_config({"bbc_dask.in-memory-bytes": 10})
    assert chunked.use_chunked(nbytes=11) is True


def _watch(client, stop, seen):
    while not stop.is_set():
        info = client.scheduler_info()["workers"]
        seen["addresses"].update(info)
        seen["statuses"].update(w.get("status", "running") for w in info.values())
        stop.wait(0.1)


@pytest.mark.slow
def test_larger_than_worker_memory_cube(tmp_path, make_local_client):
    """50,000 samples x 2,000 configs x 2 repeats float32 in Zarr (0.8 GB; 1.6 GB as the
    float64 the kernels read) on 2 workers of 800 MB: twice either worker's memory, as
    much as both together. Dask pauses a worker at 80% (640 MB): a 2x margin over the
    ~300 MB peak measured on a quiet machine (benchmarks/bench_bbc_cluster.py reports it)."""
    n, c, r = 50_000, 2_000, 2
    assert n * c * r * 8 >= 2 * 800e6
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    stores = str(tmp_path / "labels.zarr"), str(tmp_path / "scores.zarr")
    g = zarr.open_group(stores[0], mode="w", zarr_format=3)
    labels = g.create_array("labels", shape=(n, c, r), chunks=(n, 10, 1), dtype="float32",
                            dimension_names=["sample", "config", "repeat"])
    g2 = zarr.open_group(stores[1], mode="w", zarr_format=3)
    scores = g2.create_array("scores", shape=(n, 200, r), chunks=(n, 10, 1), dtype="float32",
                            dimension_names=["sample", "config", "repeat"])
    acc = rng.uniform(0.55, 0.75, c)
    for c0 in range(0, c, 50):
        u = rng.random((n, 50, r)) < acc[None, c0:c0 + 50, None]
        labels[:, c0:c0 + 50, :] = np.where(u, y[:, None, None], 1 - y[:, None, None])
    strength = rng.uniform(0, 1, 200)
    for c0 in range(0, 200, 50):
        scores[:, c0:c0 + 50] = (rng.normal(size=(n, 50, r)).astype(np.float32)
                                 + y[:, None, None] * strength[None, c0:c0 + 50, None])
    # as a user opens them: xarray over Zarr (read by the tasks with zarr alone); the AUC
    # cube is a 100-configuration slice of a lazily opened store
    lab = xr.open_zarr(stores[0], consolidated=False, zarr_format=3)["labels"]
    sco = xr.open_zarr(stores[1], consolidated=False, zarr_format=3, chunks=None)["scores"]
    sco = sco.isel(config=slice(0, 100))
    with make_local_client(memory_limit="800MB") as cli:
        before = set(cli.scheduler_info()["workers"])
        seen = {"addresses": set(), "statuses": set()}
        stop = threading.Event()
        t = threading.Thread(target=_watch, args=(cli, stop, seen), daemon=True)
        t.start()
        try:
            got_acc = bd.bbc(lab, y, metric="accuracy", n_bootstraps=200, random_state=0)
            got_auc = bd.bbc(sco, y, metric="roc_auc", n_bootstraps=200, random_state=0)
        finally:
            stop.set()
            t.join()
        assert seen["addresses"] == before, "a worker was restarted"
        assert seen["statuses"] <= {"running"}, f"a worker was paused: {seen['statuses']}"
    want_acc = bd.bbc(labels[...], y, metric="accuracy", n_bootstraps=200, random_state=0)
    want_auc = bd.bbc(scores[:, :100], y, metric="roc_auc", n_bootstraps=200, random_state=0)
    for got, want in ((got_acc, want_acc), (got_auc, want_auc)):
        np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
        np.testing.assert_array_equal(got.winners, want.winners)
        assert got.selected_config == want.selected_config


def _to_zarr(path, arr, dims, chunk_cfg=5, attrs=None):
    g = zarr.open_group(str(path), mode="w", zarr_format=3)
    chunks = tuple(chunk_cfg if d == "config" else s for d, s in zip(dims, arr.shape))
    z = g.create_array("p", shape=arr.shape, chunks=chunks, dtype=arr.dtype, dimension_names=list(dims))
    z[...] = arr
    if attrs:
        z.attrs.update(attrs)
    return z


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy", "neg_log_loss"])
def test_zarr_array_read_by_tasks_equals_in_memory(metric, client, tmp_path, dask_config):
    """A zarr.Array in any axis order, and the same store opened with xarray, are read by
    the tasks directly; chunk widths that are not a multiple of the stored chunk round up."""
    p, y = _small(metric, c=23)
    dask_config({"bbc_dask.chunk-bytes": 7 * p.shape[0] * int(np.prod(p.shape[2:])) * 8})
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    stored = ("config", "repeat", "sample", "class")[: p.ndim]
    z = _to_zarr(tmp_path / "c.zarr", np.transpose(p, [dims.index(d) for d in stored]), stored)
    assert zarr_rules.zarr_of(z) is z
    mem = bd.bbc(p, y, metric=metric, random_state=3, n_bootstraps=130)
    opened = xr.open_zarr(str(tmp_path / "c.zarr"), consolidated=False, zarr_format=3)["p"]
    assert zarr_rules.zarr_of(opened) is not None
    for cube in (z, opened):
        got = bd.bbc(cube, y, metric=metric, random_state=3, n_bootstraps=130)
        np.testing.assert_array_equal(got.bootstrap_distribution, mem.bootstrap_distribution)
        np.testing.assert_array_equal(got.winners, mem.winners)
        assert got.naive_estimate == mem.naive_estimate


def test_zarr_class_coordinate_and_no_repeat_axis(client, tmp_path):
    p, y = _small("neg_log_loss", r=1)
    p = p[:, :, 0, :]
    perm = [2, 0, 1]
    da_mem = xr.DataArray(p[:, :, perm], dims=("sample", "config", "class"), coords={"class": perm})
    _to_zarr(tmp_path / "k.zarr", p[:, :, perm], ("sample", "config", "class"))
    ds = xr.open_zarr(str(tmp_path / "k.zarr"), consolidated=False, zarr_format=3)
    lazy = ds["p"].assign_coords({"class": perm})
    assert zarr_rules.zarr_of(lazy) is not None
    mem = bd.bbc(da_mem, y, metric="neg_log_loss", random_state=0, n_bootstraps=100)
    got = bd.bbc(lazy, y, metric="neg_log_loss", random_state=0, n_bootstraps=100)
    np.testing.assert_array_equal(got.bootstrap_distribution, mem.bootstrap_distribution)
    # the coordinate was applied: the stored columns taken as class order give another result
    raw = bd.bbc(p[:, :, None, perm], y, metric="neg_log_loss", random_state=0, n_bootstraps=100)
    assert not np.array_equal(raw.bootstrap_distribution, got.bootstrap_distribution)


def test_lazily_indexed_slices_are_read_by_the_tasks(client, tmp_path):
    p, y = _small("roc_auc", c=23)
    _to_zarr(tmp_path / "l.zarr", p, ("sample", "config", "repeat"), chunk_cfg=4)
    v = xr.open_zarr(str(tmp_path / "l.zarr"), consolidated=False, zarr_format=3, chunks=None)["p"]
    for sel in (dict(config=slice(3, 20)), dict(config=slice(1, 23, 3)), dict(repeat=slice(1, 2)),
                dict(sample=slice(0, 500), config=slice(5, 9))):
        view = v.isel(**sel)
        assert zarr_rules.zarr_of(view) is not None and chunked.is_lazy(view)
        want_p = p[sel.get("sample", slice(None)), sel.get("config", slice(None)), sel.get("repeat", slice(None))]
        want_y = y[sel.get("sample", slice(None))]
        got = bd.bbc(view, want_y, metric="roc_auc", random_state=0, n_bootstraps=100)
        want = bd.bbc(want_p, want_y, metric="roc_auc", random_state=0, n_bootstraps=100)
        np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
        np.testing.assert_array_equal(got.winners, want.winners)


def test_decoded_or_sliced_zarr_goes_through_dask(client, tmp_path):
    p, y = _small("neg_mean_squared_error")
    _to_zarr(tmp_path / "s.zarr", (p * 4).astype(np.float64), ("sample", "config", "repeat"),
             attrs={"scale_factor": 0.25})
    v = xr.open_zarr(str(tmp_path / "s.zarr"), consolidated=False, zarr_format=3)["p"]
    assert zarr_rules.zarr_of(v) is None and chunked.is_lazy(v)  # a decoding wrapper: not read raw
    mem = bd.bbc(p, y, metric="neg_mean_squared_error", random_state=0, n_bootstraps=100)
    got = bd.bbc(v, y, metric="neg_mean_squared_error", random_state=0, n_bootstraps=100)
    np.testing.assert_array_equal(got.bootstrap_distribution, mem.bootstrap_distribution)
    sl = v.isel(config=slice(3, 20))
    assert zarr_rules.zarr_of(sl) is None
    got = bd.bbc(sl, y, metric="neg_mean_squared_error", random_state=0, n_bootstraps=100)
    want = bd.bbc(p[:, 3:20], y, metric="neg_mean_squared_error", random_state=0, n_bootstraps=100)
    np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy"])
def test_chunked_dropping_test_equals_in_memory(metric, client, tmp_path):
    p, y = _small(metric, n=400, c=30)
    rng = np.random.default_rng(1)
    avail = np.stack([rng.random(400) < 0.6, rng.random(400) < 0.5], axis=1)
    z = _to_zarr(tmp_path / "d.zarr", p, ("sample", "config", "repeat"), chunk_cfg=4)
    configs = np.array([0, 1, 2, 5, 6, 11, 17, 18, 19, 20, 29])
    want = bd.dropping_test(p[:, configs], y, avail, metric=metric, alpha=0.9, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    blocks, _ = chunked.zarr_blocks(z, ("sample", "config", "repeat"), configs=configs,
                              chunk_bytes=8 * 400 * 2 * 8)
    assert len(blocks) > 3
    got = chunked.lazy_dropping_test(client, blocks, y, avail, metric=metric, alpha=0.9,
                               n_bootstraps=150, seed=np.random.SeedSequence(8))
    assert got.best == want.best and got.n_redrawn == want.n_redrawn
    np.testing.assert_array_equal(got.p_hat, want.p_hat)
    np.testing.assert_array_equal(got.drop, want.drop)
    assert 0 < got.drop.sum() < configs.size - 1  # the test has something to decide


def test_chunked_dropping_test_survives_losing_every_worker(make_local_client, tmp_path,
                                                           monkeypatch):
    """The test's inputs (its rule, y, the available samples) are tasks that hold their
    values, not scattered data: every worker restarted once all is submitted (all their
    data lost, as a worker restarted at its memory limit loses its own) computes them
    again, and the decision is the same."""
    p, y = _small("roc_auc", n=400, c=12)
    rng = np.random.default_rng(1)
    avail = np.stack([rng.random(400) < 0.6, rng.random(400) < 0.5], axis=1)
    z = _to_zarr(tmp_path / "d.zarr", p, ("sample", "config", "repeat"), chunk_cfg=4)
    want = bd.dropping_test(p, y, avail, metric="roc_auc", alpha=0.9, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    blocks, _ = chunked.zarr_blocks(z, ("sample", "config", "repeat"), chunk_bytes=4 * 400 * 2 * 8)
    with make_local_client() as c:
        real, restarted = lazy_dropping.wait_done, []

        def restart_then_wait(futures):
            if not restarted:
                c.restart_workers(list(c.scheduler_info()["workers"]))
                restarted.append(1)
            real(futures)

        monkeypatch.setattr(lazy_dropping, "wait_done", restart_then_wait)
        got = chunked.lazy_dropping_test(c, blocks, y, avail, metric="roc_auc", alpha=0.9,
                                   n_bootstraps=150, seed=np.random.SeedSequence(8))
    assert restarted
    _same_decision(got, want)


def test_chunked_dropping_test_draws_counts_again_when_too_large_to_share(client, tmp_path,
                                                                         dask_config):
    """Beyond COUNTS_BYTES the plans keep no counts: one scoring task per block draws
    them again (redraws included), and the test decides the same."""
    from distributed import get_task_stream

    rng = np.random.default_rng(4)
    y = np.zeros(400, int)
    y[[5, 200, 350]] = 1  # many undefined draws: redrawn
    p = rng.normal(size=(400, 12, 2)) + y[:, None, None]
    avail = np.stack([rng.random(400) < 0.9, rng.random(400) < 0.8], axis=1)
    avail[[5, 200, 350]] = True
    want = bd.dropping_test(p, y, avail, metric="roc_auc", alpha=0.9, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    assert want.n_redrawn >= 5
    z = _to_zarr(tmp_path / "d.zarr", p, ("sample", "config", "repeat"), chunk_cfg=4)
    blocks, _ = chunked.zarr_blocks(z, ("sample", "config", "repeat"), chunk_bytes=4 * 400 * 2 * 8)
    dask_config({"bbc_dask.counts-bytes": 1})
    with get_task_stream(client) as ts:
        got = chunked.lazy_dropping_test(client, blocks, y, avail, metric="roc_auc", alpha=0.9,
                                   n_bootstraps=150, seed=np.random.SeedSequence(8), key="redraw")
    assert got.best == want.best and got.n_redrawn == want.n_redrawn
    np.testing.assert_array_equal(got.p_hat, want.p_hat)
    np.testing.assert_array_equal(got.drop, want.drop)
    scored = sorted(t["key"] for t in ts.data if str(t["key"]).startswith("redraw-score"))
    assert len(blocks) == 3 and scored == [f"redraw-score-{i}" for i in range(3)]


# ----------------------------------------------------- cubes of several sample blocks
def _cube(metric, n, c, r, seed=0):
    """Predictions (n, c, r[, k]) and y for any metric, with ties and a weak signal."""
    rng = np.random.default_rng(seed)
    if metric in ("roc_auc", "accuracy", "balanced_accuracy", "f1"):
        y = (rng.random(n) < 0.3).astype(int)
        if metric == "roc_auc":
            return np.round(rng.normal(size=(n, c, r)) + y[:, None, None], 1), y
        right = rng.random((n, c, r)) < rng.uniform(0.55, 0.8, (1, c, 1))
        return np.where(right, y[:, None, None], 1 - y[:, None, None]).astype(np.float32), y
    if metric in ("roc_auc_ovr", "roc_auc_ovo", "neg_log_loss"):
        y = rng.integers(0, 3, n)
        return rng.dirichlet([1, 1, 1], size=(n, c, r)), y
    if metric == "concordance_index":
        t = rng.exponential(size=n).round(1)
        e = rng.random(n) < 0.7
        return rng.normal(size=(n, c, r)) - t[:, None, None] * rng.uniform(0, 1, (1, c, 1)), (t, e)
    y = rng.normal(size=n) * 3 + 100  # regression, far from 0 (R²'s centring)
    return y[:, None, None] + rng.normal(size=(n, c, r)) * rng.uniform(0.5, 2, (1, c, 1)), y


POINTWISE = ["accuracy", "balanced_accuracy", "f1", "neg_log_loss", "neg_mean_squared_error",
             "neg_mean_absolute_error", "r2", "r2_corr"]
RANKING = ["roc_auc", "roc_auc_ovr", "concordance_index"]
#: The same and the one-vs-one AUC, whose pair sub-problems make its tile tests the
#: longest (in the slow suite).
RANKING_ALL = RANKING + [pytest.param("roc_auc_ovo", marks=pytest.mark.slow)]


def _same(got, want):
    np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
    np.testing.assert_array_equal(got.winners, want.winners)
    assert (got.selected_config, got.naive_estimate, got.n_redrawn) == \
        (want.selected_config, want.naive_estimate, want.n_redrawn)


@pytest.mark.parametrize("metric", POINTWISE + RANKING + ["roc_auc_ovo"])
def test_several_sample_blocks_equal_in_memory(metric, client, tmp_path, monkeypatch, dask_config):
    """N = 700 in sample blocks of 128 (6 blocks, the last of 60): the Zarr cube chunked
    along samples and configurations (pointwise metrics: one task per sample block and
    configuration group; ranking metrics: configuration blocks over shared counts), and
    the same cube as a Dask array, equal the in-memory result bit for bit."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.chunk-bytes":
                 128 * 4 * 2 * 8 * (3 if "ovr" in metric or "log" in metric else 1)})
    dask_config({"bbc_dask.sums-bytes": 1})  # a group per stored chunk: several groups
    p, y = _cube(metric, 700, 13, 2)
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    z = _to_zarr(tmp_path / "c.zarr", p, dims, chunk_cfg=4)
    want = bd.bbc(p, y, metric=metric, random_state=3, n_bootstraps=150)
    assert len(set(want.winners.tolist())) > 1
    _same(bd.bbc(z, y, metric=metric, random_state=3, n_bootstraps=150), want)
    lazy = xr.DataArray(da.from_array(p, chunks=(100,) + p.shape[1:]), dims=dims)
    _same(bd.bbc(lazy, y, metric=metric, random_state=3, n_bootstraps=150), want)


@pytest.mark.parametrize("metric", ["accuracy", "f1", "neg_log_loss", "r2"])
def test_sample_block_groups_of_several_parts_equal_in_memory(metric, client, tmp_path,
                                                              monkeypatch, dask_config):
    """Parts narrower than a stored chunk (two configurations of four), several per
    group: a task stacks their features into one product, and the out-of-bag pass reads
    the winners' columns from several windows; equal to in memory bit for bit."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    per_config = 128 * 2 * 8 * (3 if metric == "neg_log_loss" else 1)
    dask_config({"bbc_dask.chunk-bytes": 2 * per_config})
    stacked = []
    real = M.Metric.stacked
    monkeypatch.setattr(M.Metric, "stacked", lambda self, parts, n: stacked.append(n) or real(self, parts, n))
    p, y = _cube(metric, 700, 13, 2)
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    z = _to_zarr(tmp_path / "c.zarr", p, dims, chunk_cfg=4)
    want = bd.bbc(p, y, metric=metric, random_state=3, n_bootstraps=150)
    assert len(set(want.winners.tolist())) > 1
    with dask.config.set(scheduler="sync"):  # in this process: the calls are seen
        _same(bd.bbc(z, y, metric=metric, random_state=3, n_bootstraps=150), want)
    assert stacked and max(stacked) >= 6, stacked  # groups of 6 configurations, 3 parts
    _same(bd.bbc(z, y, metric=metric, random_state=3, n_bootstraps=150), want)


def test_a_dask_array_goes_in_the_groups_of_a_store(client, tmp_path, monkeypatch, dask_config):
    """A Dask-backed cube (persisted on the workers, say) is summed in the same
    configuration groups as a Zarr store of it — several parts per task — not a task
    per part: each task draws its sample block's counts, so a task per part drew them
    once per part (measured: 13 times per block at 50,000 x 400, 2.2x the time)."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.chunk-bytes": 128 * 2 * 8 * 2})  # two configurations a part
    monkeypatch.setattr(budgets, "slots", lambda: 1)
    p, y = _small("accuracy", n=700, c=13)
    m = M.get_metric("accuracy")
    edges = M.sample_blocks(700, 128)
    z = _to_zarr(tmp_path / "c.zarr", p, ("sample", "config", "repeat"), chunk_cfg=2)
    lazy = xr.DataArray(da.from_array(p, chunks=(100, 3, 2)), dims=("sample", "config", "repeat"))
    groups = {}
    for name, x in (("zarr", z), ("dask", lazy)):
        runs, offsets = source._sources(x, m).sample_runs(edges, 4 * 64 * 2 * 8 * 2, 128 * 2 * 4)
        groups[name] = (offsets, [[len(parts) for _, parts in g] for g in runs])
    assert groups["dask"] == groups["zarr"]
    # 13 configurations: a group of 6 parts (whole parts: 12), then the last part
    assert groups["dask"] == ([0, 12], [[6] * 6, [1] * 6])
    # a Dask task gets its parts loaded at once: their raw bytes (float64 labels here,
    # twice the features' float32) keep to HOLD_BYTES too — 2 parts where a store's
    # task has 4
    dask_config({"bbc_dask.hold-bytes": 2 * (2 * 128 * 2 * 8)})
    lazy64 = xr.DataArray(da.from_array(p.astype(np.float64), chunks=(100, 3, 2)),
                          dims=("sample", "config", "repeat"))
    for name, x in (("zarr", z), ("dask", lazy64)):
        runs, offsets = source._sources(x, m).sample_runs(edges, 4 * 64 * 2 * 8 * 2, 128 * 2 * 4)
        groups[name] = (offsets, [max(len(parts) for _, parts in g) for g in runs])
    assert groups["zarr"] == ([0, 8], [4, 3]) and groups["dask"] == ([0, 4, 8, 12], [2, 2, 2, 1])
    want = bd.bbc(p, y, metric="accuracy", random_state=3, n_bootstraps=150)
    _same(bd.bbc(lazy.persist(), y, metric="accuracy", random_state=3, n_bootstraps=150), want)


def test_sample_blocks_redraw_undefined_bootstraps(client, tmp_path, monkeypatch):
    """Three positives in 700 samples: many draws leave none out of bag, are redrawn
    whole (new totals, new blocks), and the chunked path keeps the same attempts."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    rng = np.random.default_rng(4)
    y = np.zeros(700, int)
    y[[5, 300, 650]] = 1
    p = rng.normal(size=(700, 6, 2)) + y[:, None, None]
    want = bd.bbc(p, y, metric="roc_auc", random_state=1, n_bootstraps=130)
    assert want.n_redrawn > 20
    z = _to_zarr(tmp_path / "r.zarr", p, ("sample", "config", "repeat"), chunk_cfg=2)
    _same(bd.bbc(z, y, metric="roc_auc", random_state=1, n_bootstraps=130), want)
    lab = (p > 0.5).astype(np.float32)
    want = bd.bbc(lab, y, metric="f1", random_state=1, n_bootstraps=130)
    _same(bd.bbc(_to_zarr(tmp_path / "f.zarr", lab, ("sample", "config", "repeat")), y,
                 metric="f1", random_state=1, n_bootstraps=130), want)


def test_sample_blocks_plan_redraws_only_when_a_draw_is_undefined(client, tmp_path, monkeypatch):
    """Sample-block tasks start from the plans of no redraw and report definedness: the
    redraws are planned (a pass over every count) only if a draw is undefined — R² of a
    y with two non-zero values, where many are — and the result is the same."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    planned, real = [], task_base.plan_group
    monkeypatch.setattr(task_base, "plan_group", lambda *a: planned.append(1) or real(*a))
    rng = np.random.default_rng(6)
    p = rng.normal(size=(300, 5, 2))
    z = _to_zarr(tmp_path / "r2.zarr", p, ("sample", "config", "repeat"))
    rare = np.zeros(300)
    rare[[7, 250]] = 1.0
    for y, redrawn in ((rare, True), (rng.normal(size=300), False)):
        want = bd.bbc(p, y, metric="r2", random_state=1, n_bootstraps=100)
        assert (want.n_redrawn > 0) == redrawn
        planned.clear()
        with dask.config.set(scheduler="sync"):  # in this process: the calls are seen
            _same(bd.bbc(z, y, metric="r2", random_state=1, n_bootstraps=100), want)
        assert bool(planned) == redrawn


@pytest.mark.parametrize("y_kind", ["rare", "normal"])
@pytest.mark.parametrize("share", [True, False])
def test_sample_block_counts_drawn_once_while_they_fit(share, y_kind, client, tmp_path,
                                                        monkeypatch, dask_config):
    """While every block's counts fit in COUNTS_BYTES, a sample block's counts are drawn
    once — shared by its task in every configuration group and by the out-of-bag pass
    — (once more after a redraw plan); beyond, every task draws its block's again. The
    result is the same bits either way, redraws (R² of a y with two non-zero values) or
    none."""
    import bbc_dask.metrics as M
    from bbc_dask.stats import _bootstrap as BS

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.chunk-bytes": 128 * 2 * 8 * 2})  # parts of 2 configurations
    dask_config({"bbc_dask.sums-bytes": 1})  # a group per part: 3 groups
    if not share:
        dask_config({"bbc_dask.counts-bytes": 0})
    draws, real = [], BS.block_counts
    monkeypatch.setattr(task_base, "block_counts", lambda *a: draws.append(1) or real(*a))
    rng = np.random.default_rng(6)
    p = rng.normal(size=(300, 5, 2))
    z = _to_zarr(tmp_path / "r2.zarr", p, ("sample", "config", "repeat"), chunk_cfg=2)
    y = rng.normal(size=300)
    if y_kind == "rare":
        y = np.zeros(300)
        y[[7, 250]] = 1.0
    want = bd.bbc(p, y, metric="r2", random_state=1, n_bootstraps=100)
    assert (want.n_redrawn > 0) == (y_kind == "rare")
    with dask.config.set(scheduler="sync"):  # in this process: the draws are seen
        _same(bd.bbc(z, y, metric="r2", random_state=1, n_bootstraps=100), want)
    passes = 2 if y_kind == "rare" else 1  # in-bag passes (a second with the redraws)
    per_pass = 3 * 2  # 3 sample blocks x 2 seed blocks
    assert len(draws) == (passes * per_pass if share else (passes * 3 + 1) * per_pass)
    # on the two workers: the same bits (a task whose worker lacks its block's shared
    # counts fetches them)
    _same(bd.bbc(z, y, metric="r2", random_state=1, n_bootstraps=100), want)


def test_plans_decided_block_by_block_keep_the_same_attempts(client, tmp_path, monkeypatch):
    """A plan that does not keep its counts decides definedness block by block (R²'s
    spread, the base rule): the same attempts as on the whole counts, and BBC of R² with
    many redraws equals the in-memory result."""
    import bbc_dask.metrics as M
    from bbc_dask.stats._bootstrap import plan_seed_block

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    y = np.zeros(300)
    y[[7, 250]] = 1.0  # R² needs both values in bag and out of bag: many redraws
    root = np.random.SeedSequence(5)
    redrawn = 0
    rare = np.zeros(300, dtype=np.int64)
    rare[[7, 250]] = 1
    three = rare.copy()
    three[[3, 4, 200]] = 2
    for rule in (M.get_metric("r2").definedness(M.Target(values=y)),
                 M.get_metric("accuracy").definedness(M.Target(codes=np.zeros(3, np.int64))),
                 # the ranking rules stream too: AUC's classes, one-vs-rest masks, and the
                 # concordance's comparable pairs (two events, ties of time)
                 M.get_metric("roc_auc").definedness(M.Target.of_codes(rare, 2)),
                 M.get_metric("roc_auc_ovr").definedness(M.Target.of_codes(three, 3)),
                 M.get_metric("concordance_index").definedness(
                     M.Target(time=np.arange(300) % 7 * 1.0, event=rare.astype(bool)))):
        n = 3 if rule.__class__.__name__ == "Definedness" else y.size
        for sb in (1, 2, 128) if n == 3 else (128, 100):
            for k in range(3):
                whole, counts = plan_seed_block(root, "bbc", k, n, rule, sb)
                alone, none = plan_seed_block(root, "bbc", k, n, rule, sb, keep=False)
                assert none is None and counts.shape == (64, n)
                if sb < n:  # else one sample block: a plan of attempts alone
                    assert len(whole.redraws) == len(alone.redraws)
                    for (b1, a1, t1), (b2, a2, t2) in zip(whole.redraws, alone.redraws):
                        assert (b1, a1) == (b2, a2) and np.array_equal(t1, t2)
                np.testing.assert_array_equal(whole.attempts, alone.attempts)
                assert rule.both(counts).all()
                redrawn += int(whole.attempts.sum())
    assert redrawn > 250
    rng = np.random.default_rng(2)
    p = y[:, None, None] + rng.normal(scale=0.3, size=(300, 5, 2))
    want = bd.bbc(p, y, metric="r2", random_state=1, n_bootstraps=100)
    assert want.n_redrawn > 20
    z = _to_zarr(tmp_path / "r2.zarr", p, ("sample", "config", "repeat"))
    _same(bd.bbc(z, y, metric="r2", random_state=1, n_bootstraps=100), want)


def test_counts_drawn_again_in_either_layout_widen_beyond_255(monkeypatch):
    """Counts drawn again from a plan — rows of bootstraps, or samples first (the layout
    the ranking kernels read) — are the plan's counts; a count above 255 widens the
    uint8 counts to int32 in both layouts (every draw forced onto a block's first
    sample)."""
    from bbc_dask.stats import _bootstrap as Bs

    root = np.random.SeedSequence(3)
    for forced in (False, True):
        if forced:
            monkeypatch.setattr(Bs, "_draw", lambda gen, n, shape: np.zeros(shape, np.int32))
        plan, want = Bs.plan_seed_block(root, "bbc", 1, 600, None, 300)
        rows = Bs.plan_counts(root, "bbc", plan)
        first = Bs.plan_counts(root, "bbc", plan, samples_first=True)
        assert first.shape == (600, 64) and first.flags.c_contiguous
        assert rows.dtype == first.dtype == (np.int32 if forced else np.uint8)
        np.testing.assert_array_equal(rows, want)
        np.testing.assert_array_equal(first, want.T)
    assert want.max() > 255


@pytest.mark.parametrize("metric", ["roc_auc", "roc_auc_ovr"])
def test_ranking_winner_scores_samples_first_equal_per_bootstrap(metric):
    """The winners' out-of-bag AUC from weights held samples first (the distinct winners'
    columns scored for every bootstrap) equals the per-bootstrap kernel's, bit for bit;
    so do the in-bag scores of either layout."""
    import bbc_dask.metrics as M
    from bbc_dask.stats._bbc import prepare_inputs

    p, y = _cube(metric, 500, 7, 2, seed=3)
    m, target, enc = prepare_inputs(p, y, metric, None)
    prep = m.prepare(target, enc)
    counts = np.random.default_rng(1).poisson(1.0, (40, 500)).astype(np.uint8)
    winners = np.random.default_rng(2).choice([0, 3, 6], 40)
    c_t = np.ascontiguousarray(counts.T)
    np.testing.assert_array_equal(prep.scores_t(c_t), prep.scores(counts))
    oob_t = (c_t == 0).view(np.uint8)
    got = prep.winner_scores_t(oob_t, winners)
    want = prep.winner_scores(counts, winners, oob=True)
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(want).all() and isinstance(prep.rule, M.Definedness)


def test_shared_counts_stay_unchanged_when_a_seed_block_scores_one_bootstrap(tmp_path):
    """65 bootstraps: the last seed block scores one row of the counts every block's task
    shares. Its out-of-bag indicators are written over a copy — a (N, 1) transpose of
    one row would be a view of the shared counts — so every block scores the same draws
    (in one process, where the tasks share the very array)."""
    p, y = _cube("roc_auc", 300, 9, 2, seed=5)
    dims = ("sample", "config", "repeat")
    z = _to_zarr(tmp_path / "c.zarr", p, dims, chunk_cfg=2)
    want = bd.bbc(p, y, metric="roc_auc", random_state=4, n_bootstraps=65)
    blocks, offsets = chunked.zarr_blocks(z, dims, chunk_bytes=2 * 300 * 2 * 8)
    assert len(blocks) == 5
    with dask.config.set(scheduler="sync"):
        _same(chunked.bbc_over_blocks(blocks, offsets, y, metric="roc_auc", n_bootstraps=65,
                                confidence_level=0.95, random_state=4, pos_label=None), want)


@pytest.mark.parametrize("sample_block", [128, 2**15])
def test_counts_drawn_again_in_each_block_when_too_large_to_share(sample_block, client, tmp_path,
                                                                   monkeypatch, dask_config):
    """Beyond COUNTS_BYTES the configuration-block tasks get the plans alone and draw the
    counts again, redraws included (several sample blocks, or one): the same result."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", sample_block)
    rng = np.random.default_rng(4)
    y = np.zeros(700, int)
    y[[5, 300, 650]] = 1  # many undefined draws: redrawn
    p = rng.normal(size=(700, 9, 2)) + y[:, None, None]
    want = bd.bbc(p, y, metric="roc_auc", random_state=2, n_bootstraps=140)
    assert want.n_redrawn > 20
    z = _to_zarr(tmp_path / "c.zarr", p, ("sample", "config", "repeat"), chunk_cfg=2)
    dask_config({"bbc_dask.counts-bytes": 1})
    blocks, offsets = chunked.zarr_blocks(z, ("sample", "config", "repeat"), chunk_bytes=2 * 700 * 2 * 8)

    def run():
        return chunked.bbc_over_blocks(blocks, offsets, y, metric="roc_auc", n_bootstraps=140,
                                 confidence_level=0.95, random_state=2, pos_label=None)

    _same(run(), want)  # on the cluster
    drawn, real = [], config_blocks.plan_counts
    monkeypatch.setattr(config_blocks, "plan_counts", lambda *a: drawn.append(1) or real(*a))
    with dask.config.set(scheduler="sync"):  # here, to count the draws
        _same(run(), want)
    assert len(blocks) == 5 and len(drawn) == 5 * 3  # each block drew each seed block


@pytest.mark.parametrize("metric", ["neg_mean_squared_error", "roc_auc"])
def test_chunked_dropping_and_bbc_f_over_sample_blocks(metric, client, tmp_path, monkeypatch):
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 100)
    p, y = _cube(metric, 450, 12, 2, seed=2)
    rng = np.random.default_rng(1)
    avail = np.stack([rng.random(450) < 0.6, rng.random(450) < 0.5], axis=1)
    z = _to_zarr(tmp_path / "d.zarr", p, ("sample", "config", "repeat"), chunk_cfg=3)
    want = bd.dropping_test(p, y, avail, metric=metric, alpha=0.9, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    blocks, _ = chunked.zarr_blocks(z, ("sample", "config", "repeat"), chunk_bytes=3 * 450 * 2 * 8)
    got = chunked.lazy_dropping_test(client, blocks, y, avail, metric=metric, alpha=0.9,
                               n_bootstraps=150, seed=np.random.SeedSequence(8))
    assert got.best == want.best and got.n_redrawn == want.n_redrawn
    np.testing.assert_array_equal(got.p_hat, want.p_hat)
    folds = np.stack([rng.permutation(np.arange(450) % 5) for _ in range(2)], 1)
    f_mem = bd.bbc_f(p, y, folds, metric=metric, random_state=1, n_bootstraps=200)
    f_lazy = bd.bbc_f(z, y, folds, metric=metric, random_state=1, n_bootstraps=200)
    np.testing.assert_array_equal(f_lazy.bootstrap_distribution, f_mem.bootstrap_distribution)


@pytest.mark.parametrize("metric", POINTWISE)
def test_bbc_f_over_sample_blocks_equals_in_memory(metric, client, tmp_path, monkeypatch,
                                                   dask_config):
    """BBC-F of a pointwise metric on a cube cut along samples: each (sample block,
    configuration group) task sums its block per fold row, the sums chained in block
    order; the fold matrix, and so the result, equal the in-memory ones bit for bit
    (Zarr, and Dask chunked along samples), every task holding one sample block."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.chunk-bytes": 128 * 4 * 2 * 8 * (3 if "log" in metric else 1)})
    dask_config({"bbc_dask.sums-bytes": 1})  # a group per stored chunk: several groups
    p, y = _cube(metric, 700, 13, 2, seed=5)
    rng = np.random.default_rng(2)
    folds = np.stack([rng.permutation(np.arange(700) % 5), rng.permutation(np.arange(700) % 4)], 1)
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    z = _to_zarr(tmp_path / "c.zarr", p, dims, chunk_cfg=4)
    want = bd.bbc_f(p, y, folds, metric=metric, random_state=3, n_bootstraps=150)
    F, _ = bd.fold_score_matrix(p, y, folds, metric=metric)
    sizes, real = [], sample_sums.fold_block_sums
    monkeypatch.setattr(sample_sums, "fold_block_sums", lambda parts, block, *a: sizes.append(
        block[1].shape[0]) or real(parts, block, *a))
    with dask.config.set(scheduler="sync"):  # in this process: the calls are seen
        got, _ = lazy_bbc_f._fold_matrix_by_samples(source._sources(z, get_metric(metric)),
                                        _target_of(y, metric),
                                        folds, get_metric(metric))
    np.testing.assert_array_equal(got, F)
    assert len(sizes) == 6 * 4 and max(sizes) == 128  # 6 blocks x 4 groups
    monkeypatch.setattr(sample_sums, "fold_block_sums", real)
    _same(bd.bbc_f(z, y, folds, metric=metric, random_state=3, n_bootstraps=150), want)
    lazy = xr.DataArray(da.from_array(p, chunks=(100,) + p.shape[1:]), dims=dims)
    _same(bd.bbc_f(lazy, y, folds, metric=metric, random_state=3, n_bootstraps=150), want)


def _target_of(y, metric):
    from bbc_dask import _validation as V

    return V.as_target(y if isinstance(y, tuple) else np.asarray(y), get_metric(metric))


def _dropping_cube(metric, tmp_path, n=700, c=13, r=2):
    """A cube with unavailable predictions NaN (as a study's between waves), one sample
    block (128..255) with no sample available in repeat 1, and its Zarr source."""
    p, y = _cube(metric, n, c, r, seed=3)
    rng = np.random.default_rng(1)
    avail = rng.random((n, r)) < np.linspace(0.6, 0.5, r)
    avail[128:256, 1] = False
    p = p.copy()
    p[np.broadcast_to(~avail[:, None, :], p.shape[:3])] = np.nan
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    z = _to_zarr(tmp_path / f"{metric}.zarr", p, dims, chunk_cfg=4)
    return p, y, avail, source._sources(z, get_metric(metric))


def _same_decision(got, want):
    assert (got.best, got.n_redrawn) == (want.best, want.n_redrawn)
    np.testing.assert_array_equal(got.p_hat, want.p_hat)
    np.testing.assert_array_equal(got.drop, want.drop)


def _dropping_task_names(client, monkeypatch, p, y, avail, metric, src):
    """Run the chunked dropping test of ``src`` and check it decides as the in-memory
    test, from the very same scores (not only the decision); the names of its tasks."""
    from distributed import get_task_stream

    from bbc_dask.stats import _dropping as D

    want = bd.dropping_test(p, y, avail, metric=metric, alpha=0.9, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    full, S, _ = D.dropping_scores(p, y, avail, metric=metric, n_boot=150,
                                   root=np.random.SeedSequence(8))
    seen, real = [], D.decide
    monkeypatch.setattr(lazy_dropping, "decide", lambda *a: seen.append(a) or real(*a))
    with get_task_stream(client) as ts:
        got = chunked.lazy_dropping_test(client, [], y, avail, metric=metric, alpha=0.9,
                                   n_bootstraps=150, seed=np.random.SeedSequence(8), source=src)
    _same_decision(got, want)
    (got_full, got_S, *_), = seen
    np.testing.assert_array_equal(got_full, full)
    np.testing.assert_array_equal(got_S, S)
    return [str(t["key"]) for t in ts.data]


@pytest.mark.parametrize("metric,r", [(m, 2) for m in POINTWISE] + [("neg_mean_squared_error", 9)])
def test_dropping_test_over_sample_blocks_equals_in_memory(metric, r, client, tmp_path,
                                                           monkeypatch, dask_config):
    """Given a sample source, a pointwise metric's dropping test runs as (sample block,
    configuration group) tasks — each block's in-bag sums per repeat, masked by the
    samples available there — and decides exactly as the in-memory test: unavailable
    predictions NaN, a block with no sample available in a repeat, several groups (the
    last of one configuration, whose mean over 9 repeats adds them in the same order)."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    p, y, avail, src = _dropping_cube(metric, tmp_path, r=r)
    per = 128 * int(np.prod(p.shape[2:])) * 8  # a configuration of a sample block
    dask_config({"bbc_dask.chunk-bytes": 4 * per})  # parts of a stored chunk (4)
    dask_config({"bbc_dask.sums-bytes": 1})  # a group per part: 4 groups
    names = _dropping_task_names(client, monkeypatch, p, y, avail, metric, src)
    assert sum("dropping_sums" in k for k in names) == 6 * 4  # 6 sample blocks x 4 groups
    assert sum("finish_dropping" in k for k in names) == 4


@pytest.mark.parametrize("share", [True, False])
def test_dropping_test_over_sample_blocks_redraws_as_in_memory(share, client, tmp_path,
                                                              monkeypatch, dask_config):
    """R² of a y with two non-zero values: many draws are undefined in bag. The tasks
    report the MaskedRule's parts, the redraws are planned block by block, and the
    decision (attempts included) equals the in-memory one — counts shared while they
    fit in COUNTS_BYTES, or drawn again by every task."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    if not share:
        dask_config({"bbc_dask.counts-bytes": 0})
    rng = np.random.default_rng(6)
    p = rng.normal(size=(300, 5, 2))
    y = np.zeros(300)
    y[[7, 250]] = 1.0
    avail = np.stack([rng.random(300) < 0.8, rng.random(300) < 0.7], axis=1)
    avail[[7, 250]] = True
    z = _to_zarr(tmp_path / "r2.zarr", p, ("sample", "config", "repeat"), chunk_cfg=2)
    want = bd.dropping_test(p, y, avail, metric="r2", alpha=0.6, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    assert want.n_redrawn > 5 and 0 < want.drop.sum() < 4
    got = chunked.lazy_dropping_test(client, [], y, avail, metric="r2", alpha=0.6, n_bootstraps=150,
                               seed=np.random.SeedSequence(8),
                               source=source._sources(z, get_metric("r2")))
    _same_decision(got, want)


def test_study_groups_shrink_with_more_bootstraps():
    """A study's cube goes in about sqrt(f x cube / HOLD_BYTES) configuration groups
    (each draws every count, each run decodes the chunks holding its slots, f of a fold
    each): with more than 256 bootstraps a draw costs more, and the groups shrink as
    sqrt(256 / B) — 1,000,000 x 100 x 2 stored by whole folds: 5 groups for B = 200, 2
    for the dropping test's 1,000; by 16 chunks a fold, 1."""
    import bbc_dask.metrics as M

    class Table:
        shape, dims = (1_000_000, 100, 2), ("sample", "config", "repeat")
        configs, chunk_width, fold_fraction = np.arange(100), 10, 1.0

    src = source._Source.of_table(Table())
    edges = M.sample_blocks(1_000_000, M.SAMPLE_BLOCK)
    sizes = {b: [g.size for g in src._table_groups(edges, 0, b)] for b in (0, 200, 256, 1000)}
    assert sizes[0] == sizes[200] == sizes[256] == [20] * 5
    assert sizes[1000] == [50, 50]
    # folds stored in 16 chunks along slots: a run decodes its own slots (and at most a
    # chunk more per fold), so the cube is decoded about once whatever the groups
    Table.fold_fraction = 1 / 16
    assert [g.size for g in src._table_groups(edges, 0, 200)] == [100]


def test_masked_rule_decided_block_by_block_equals_the_whole():
    """The dropping test's definedness, streamed (parts of sample blocks combined by
    maximum), equals the rule on the whole counts — R²'s spread and the base rule."""
    from bbc_dask.stats._dropping import dropping_rule

    rng = np.random.default_rng(2)
    y = np.zeros(300)
    y[[7, 250]] = 1.0
    avail = np.stack([rng.random(300) < 0.8, rng.random(300) < 0.3], axis=1)
    counts = rng.poisson(0.5, size=(400, 300)).astype(np.int32)
    for metric in ("r2", "accuracy"):
        yy = y if metric == "r2" else (y > 0).astype(int)
        m = get_metric(metric)
        from bbc_dask import _validation as V

        rule = dropping_rule(m, V.as_target(yy, m), avail, 2)
        assert rule.streams
        parts = None
        for lo in range(0, 300, 128):
            hi = min(lo + 128, 300)
            p = rule.part(counts[:, lo:hi], lo, hi)
            parts = p if parts is None else np.maximum(parts, p)
        whole = rule(counts)
        np.testing.assert_array_equal(rule.decide(parts), whole)
        assert 0 < whole.sum() < 400 or metric == "accuracy"


def test_pointwise_sample_block_tasks_never_load_numba(tmp_path):
    """Numba and its compiler cost a process ~140 MiB: the tasks of a pointwise metric
    over sample blocks (draws, BLAS sums, integer config-free sums) run without it, and
    a ranking metric's first kernel call loads it (bbc_dask._jit). In a fresh process,
    with the synchronous scheduler (the tasks run there)."""
    import subprocess
    import sys

    code = f"""
import sys, dask, numpy as np, zarr
import bbc_dask as bd, bbc_dask.metrics as M
M.SAMPLE_BLOCK = 128
rng = np.random.default_rng(0)
y = rng.integers(0, 2, 700)
p = np.where(rng.random((700, 6, 2)) < 0.7, y[:, None, None], 1 - y[:, None, None]).astype('f4')
z = zarr.create_array(store={str(tmp_path / 'c.zarr')!r}, shape=p.shape, chunks=(128, 3, 2),
                      dtype='f4', dimension_names=["sample", "config", "repeat"])
z[...] = p
with dask.config.set(scheduler="sync"):
    r = bd.bbc(z, y, metric="accuracy", n_bootstraps=100, random_state=0)
    assert np.isfinite(r.estimate)
    print("numba" in sys.modules)
    bd.bbc(p + rng.normal(size=p.shape), y, metric="roc_auc", n_bootstraps=20, random_state=0)
    print("numba" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "True"]


def _kernel_threads():
    """numba's threads for this thread after a parallel kernel ran here, and its pool."""
    import numba

    from bbc_dask.metrics import _kernels as K

    K.auc_inbag(np.ones((4, 2), np.uint8), np.tile(np.arange(4, dtype=np.int32), (1, 1)),
                np.ones((1, 4), bool), np.array([[True, False, True, False]]),
                np.zeros(1, np.int64))
    return numba.get_num_threads(), numba.config.NUMBA_NUM_THREADS


def _bound_off_task():
    """The kernels bound by a call from a thread of the worker that runs no task."""
    import threading

    t = threading.Thread(target=_kernel_threads)
    t.start()
    t.join()


def test_parallel_kernels_run_on_their_task_thread_in_dask_workers(client):
    """In a Dask worker's task a parallel kernel uses that thread alone, as Dask has BLAS
    and OpenMP do (the worker's threads are its parallelism); elsewhere numba's pool —
    also once another thread of the worker bound the kernels (first called them)."""
    import os

    for w in client.scheduler_info(n_workers=-1)["workers"]:
        client.submit(_bound_off_task, pure=False, workers=[w]).result()
        assert client.submit(_kernel_threads, pure=False, workers=[w]).result()[0] == 1
    if "NUMBA_NUM_THREADS" not in os.environ:
        used, pool = _kernel_threads()
        assert used == pool


def _study_of(metric, store, client):
    """A small study of a pointwise metric, stored by fold in chunks of two of six
    configurations (three folds, two repeats)."""
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if metric == "r2":
        X, y = load_diabetes(return_X_y=True)
        est, grid = Ridge(), {"alpha": [1e-3, 0.01, 0.1, 1.0, 10.0, 100.0]}
    else:
        X, y = load_breast_cancer(return_X_y=True)
        est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        grid = {"logisticregression__C": [0.05, 0.1, 0.2, 0.3, 0.5, 0.7]}
    return bd.run_study(est, grid, X, y, store=store, metric=metric, n_splits=3, n_repeats=2,
                        random_state=0, client=client, progress=False, refit=False,
                        configs_per_task=2)


@pytest.mark.parametrize("metric", ["accuracy", "neg_log_loss", "r2"])
def test_study_cube_over_sample_runs_equals_in_memory(metric, client, tmp_path, monkeypatch,
                                                      dask_config):
    """A study's cube is stored by fold: a pointwise metric of several sample blocks
    (N = 569 or 442 in blocks of 128) is summed by tasks that each read some samples
    of some configurations — a run of blocks (one group of six configurations) or one
    block (a group per stored chunk) — never every sample; equal to in memory bit for
    bit, in bag and out of bag."""
    import bbc_dask.cube._layout as C
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    s = _study_of(metric, tmp_path / "s.zarr", client)
    want = s.bbc(chunked=False, n_bootstraps=150, random_state=3)
    assert len(set(want.winners.tolist())) > 1
    rows, runs = [], []
    read = C.PredictionReader.read
    monkeypatch.setattr(C.PredictionReader, "read",
                        lambda self, configs, repeats=None, rows_=None, **kw:
                        rows.append(kw.get("rows")) or read(self, configs, repeats, **kw))
    for name in ("run_sums", "run_oob_sums"):
        real = getattr(sample_sums, name)
        monkeypatch.setattr(sample_sums, name, lambda *a, _f=real, **k: runs.append(len(a[4])) or _f(*a, **k))
    cube = int(np.prod(s.cube["prediction"].shape)) * 8
    n_blocks = -(-s.cube.sizes["sample"] // 128)
    monkeypatch.setattr(budgets, "slots", lambda: 1)  # at least two tasks per group
    # one group of six, runs of half the blocks; a group per stored chunk, a block per task
    for hold, longest in ((tuning.HOLD_BYTES, -(-n_blocks // 2)), (cube // 9, 1)):
        dask_config({"bbc_dask.hold-bytes": hold})
        rows.clear(), runs.clear()
        with dask.config.set(scheduler="sync"):  # in this process: the reads are seen
            _same(s.bbc(chunked=True, n_bootstraps=150, random_state=3), want)
        assert rows and None not in rows  # no read of every sample
        assert max(hi - lo for lo, hi in rows) == longest * 128, rows
        assert (max(runs) if runs else 1) == longest
    _same(s.bbc(chunked=True, n_bootstraps=150, random_state=3), want)  # on the workers


def test_study_reader_reads_some_samples_of_any_configurations(client, tmp_path, dask_config):
    """Samples lo:hi of consecutive or scattered configurations, read a stored chunk or
    several at a time, equal those rows of the whole read."""

    s = _study_of("neg_log_loss", tmp_path / "s.zarr", client)
    reader = s._cube.reader()
    whole = reader.read(slice(0, 6))
    for budget in (1, tuning.READ_BYTES):
        dask_config({"bbc_dask.read-bytes": budget})
        for configs in (slice(1, 5), np.array([0, 3, 4]), np.array([5])):
            for lo, hi in ((0, 569), (100, 229), (568, 569)):
                got = reader.read(configs, rows=(lo, hi))
                np.testing.assert_array_equal(got, whole[lo:hi][:, configs])
    assert reader.read(np.array([], dtype=np.int64), rows=(0, 5)).shape == (5, 0, 2, 2)


def test_slot_chunks_are_the_whole_fold_or_equal_cuts_of_at_least_the_target():
    """A fold's chunks along slots: the whole fold while it fits in SLOT_CHUNK_BYTES (or
    SLOT_CHUNK_MIN slots), else equal chunks holding the target to under twice it —
    never fewer than SLOT_CHUNK_MIN slots, whatever N; an object store's target is its
    own."""
    from bbc_dask._tuning import SLOT_CHUNK_BYTES, SLOT_CHUNK_BYTES_REMOTE, SLOT_CHUNK_MIN
    from bbc_dask.cube._layout import slot_chunk

    assert slot_chunk(100, 8) == 100 and slot_chunk(257, 2**20) == 257
    per = SLOT_CHUNK_BYTES // 8
    for n in (per, per + 1, 2 * per - 1, 2 * per, 33_000, 200_000, 10**7 + 3):
        s = slot_chunk(n, 8)
        m = -(-n // s)
        assert per <= s < 2 * per or s == n, (n, s)
        assert m * s - n < m  # equal chunks: the last one short by less than one slot each
    assert slot_chunk(10**6, 80 * 2**10) == SLOT_CHUNK_MIN + 1  # 3,906 chunks of 257 slots
    assert 200_000 * 8 < SLOT_CHUNK_BYTES_REMOTE
    assert slot_chunk(200_000, 8, SLOT_CHUNK_BYTES_REMOTE) == 200_000 != slot_chunk(200_000, 8)


def test_a_read_of_some_samples_fetches_only_the_chunks_of_their_slots(client, tmp_path,
                                                                        monkeypatch, dask_config):
    """A study's store cuts a fold (190 slots) into chunks along slots once it exceeds
    SLOT_CHUNK_BYTES: a read of samples lo:hi fetches exactly the chunks holding their
    slots (what a task of a sample run decodes does not grow with N) and equals those
    rows of the whole read; a task's write of its block reads none of its chunks first
    and gives the checksum the ledger holds."""
    import bbc_dask.cube._layout as C

    class Seen(zarr.storage.WrapperStore):
        keys = set()

        async def get(self, key, prototype, byte_range=None):
            Seen.keys.add(key)
            return await self._store.get(key, prototype, byte_range)

    dask_config({"bbc_dask.slot-chunk-min": 8})
    dask_config({"bbc_dask.slot-chunk-bytes": 38 * 2 * 2 * 8})  # 2 configurations x 2 classes
    s = _study_of("neg_log_loss", tmp_path / "s.zarr", client)
    slots = s._cube.slot_sample()
    arr = zarr.open_group(zarr.storage.LocalStore(str(tmp_path / "s.zarr")), mode="r")["prediction"]
    assert arr.chunks[2] == 38 and arr.shape[2] == 190
    whole = s._cube.reader().read(slice(0, 6))
    reader = C.PredictionReader(zarr.open_array(Seen(arr.store), path="prediction", mode="r"), slots)
    for configs, j in ((slice(2, 4), {1}), (np.array([0, 5]), {0, 2})):
        for lo, hi in ((0, 569), (100, 229), (568, 569)):
            Seen.keys.clear()
            np.testing.assert_array_equal(reader.read(configs, rows=(lo, hi)), whole[lo:hi][:, configs])
            want = {f"prediction/c/{r}/{k}/{t}/{b}/0" for r in range(2) for k in range(3) for b in j
                    for t in {int(i) // 38 for i in np.flatnonzero((slots[r, k] >= lo) & (slots[r, k] < hi))}}
            assert {key for key in Seen.keys if key.startswith("prediction/c/")} == want
    # the same reads of a local directory, from the task's thread (cube/_direct.py)
    from bbc_dask.cube import ChunkWriter
    from bbc_dask.cube._direct import DirectChunks

    got = []
    real_get = DirectChunks.get
    monkeypatch.setattr(DirectChunks, "get", lambda self, cc: got.append(tuple(cc)) or real_get(self, cc))
    reader = C.PredictionReader(arr, slots)
    assert reader._direct() is not None
    for configs, j in ((slice(2, 4), {1}),):
        for lo, hi in ((0, 569), (100, 229), (568, 569)):
            got.clear()
            np.testing.assert_array_equal(reader.read(configs, rows=(lo, hi)), whole[lo:hi][:, configs])
            want = {(r, k, t, b, 0) for r in range(2) for k in range(3) for b in j
                    for t in {int(i) // 38 for i in np.flatnonzero((slots[r, k] >= lo) & (slots[r, k] < hi))}}
            assert set(got) == want
    ledger = s._cube._read("chunk_crc")
    store = Seen(zarr.storage.LocalStore(str(tmp_path / "s.zarr")))
    writer = ChunkWriter(zarr.open_array(store, path="prediction", mode="r+"), lambda: None, "")
    n_k = int((slots[1, 2] >= 0).sum())
    block = whole[slots[1, 2, :n_k], 2:4, 1]  # fold 2 of repeat 1, configurations 2 and 3
    Seen.keys.clear()
    assert writer.write(1, 2, 2, [0, 1], block) == ledger[1, 2, 1]
    assert not [key for key in Seen.keys if key.startswith("prediction/c/")]


@pytest.mark.parametrize("n, c, r, b", [(40_000, 600, 2, 200), (40_000, 2000, 1, 200),
                                        (100_000, 5000, 1, 200), (1_000_000, 100, 2, 200),
                                        (1_000_000, 100, 2, 10_000), (70_000, 7, 3, 200)])
def test_study_sample_runs_hold_at_most_their_budget(n, c, r, b, monkeypatch):
    """Whatever the shape, a task of a study's sample runs reads at most HOLD_BYTES (a
    group narrows, splitting a stored chunk, until one block fits) and returns at most
    SUMS_BYTES of sums; every configuration is in exactly one group, in order."""
    import bbc_dask.metrics as M
    from bbc_dask.cube._layout import SampleTable

    class Reader:  # the shape is all the plan reads
        shape = (n, c, r)

    monkeypatch.setattr(budgets, "slots", lambda: 2)
    table = SampleTable(Reader(), np.arange(c), chunk_width=10)
    src = source._Source.of_table(table)
    edges = M.sample_blocks(n, M.SAMPLE_BLOCK)
    out = -(-b // 64) * 64 * r * 8 * 2  # as _bbc_by_samples sizes a configuration's sums
    runs, offsets = src.sample_runs(edges, out, 0)
    seen = []
    for g, off in zip(runs, offsets):
        widths = {p.configs.size for _, parts in g for p in parts}
        (width,) = widths
        assert [j for blocks, _ in g for j, _, _ in blocks] == list(range(len(edges)))
        for blocks, parts in g:
            rows = blocks[-1][2] - blocks[0][1]
            assert rows * width * r * 8 <= tuning.HOLD_BYTES
            assert len(blocks) * width * out <= tuning.SUMS_BYTES
        seen.extend(g[0][1][0].configs.tolist())
        assert g[0][1][0].configs[0] == off
    assert seen == list(range(c))


@pytest.mark.parametrize("metric", RANKING_ALL)
@pytest.mark.parametrize("n", [700, pytest.param(1100, marks=pytest.mark.slow)])  # 1100: CI's
def test_ranking_metric_by_pairs_of_tiles_equals_in_memory(metric, n, client, tmp_path,
                                                           monkeypatch, dask_config):
    """Beyond two tiles of samples a ranking metric's BBC goes by pairs of tiles: N = 700
    or 1,100 in blocks of 128 and tiles of 256 (3 or 5 tiles; the last shorter), groups
    of 3 configurations — equal to the in-memory result bit for bit (in bag, out of
    bag, full scores), from a Zarr store and a Dask array. Every task holds two tiles'
    samples at most: its counts and sorted columns do not grow with N."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.rank-tile": 256, "bbc_dask.rank-samples": 512})
    per = {"roc_auc_ovr": 3, "roc_auc_ovo": 4}.get(metric, 1)  # sorted columns held a sample
    dask_config({"bbc_dask.hold-bytes": 3 * 2 * 256 * 2 * per * tuning.RANK_CELL_BYTES})
    p, y = _cube(metric, n, 13, 2)
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    z = _to_zarr(tmp_path / "c.zarr", p, dims, chunk_cfg=4)
    want = bd.bbc(p, y, metric=metric, random_state=3, n_bootstraps=150)
    assert len(set(want.winners.tolist())) > 3
    held = []
    real = tile_sums.tile_sums
    monkeypatch.setattr(tile_sums, "tile_sums", lambda tiles, *a, **k: held.append(
        (sum(hi - lo for bl, _ in tiles for _, lo, hi in bl), len(tiles), k["weight"], k["oob"]))
        or real(tiles, *a, **k))
    with dask.config.set(scheduler="sync"):  # in this process: the tasks are seen
        _same(bd.bbc(z, y, metric=metric, random_state=3, n_bootstraps=150), want)
    t = -(-n // 256)
    distinct = len(set(want.winners.tolist()))
    jobs = t * (t - 1) // 2 + t
    assert len(held) == jobs * (-(-13 // 3) + -(-distinct // 3)), len(held)
    assert max(h[0] for h in held) <= 2 * 256
    assert sorted({(h[1], h[2]) for h in held}) == [(1, 2 - t), (2, 1)]  # weights
    lazy = xr.DataArray(da.from_array(p, chunks=(100,) + p.shape[1:]), dims=dims)
    _same(bd.bbc(lazy, y, metric=metric, random_state=3, n_bootstraps=150), want)


@pytest.mark.parametrize("metric", RANKING_ALL)
def test_bbc_f_of_a_ranking_metric_by_pairs_of_tiles_equals_in_memory(metric, client, tmp_path,
                                                                       monkeypatch, dask_config):
    """Beyond RANK_SAMPLES, BBC-F's fold matrix of a ranking metric goes by pairs of
    tiles of RANK_FOLD_TILE: each fold row's statistics are the pair sums of its 0/1
    weights. N = 1,100 in tiles of 256 (5 tiles), folds of 5 and 4 over 2 repeats: the fold matrix and the
    result equal the in-memory ones bit for bit (Zarr and Dask), every task holding two
    tiles at most."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.rank-fold-tile": 256})
    dask_config({"bbc_dask.rank-tile": 128})  # BBC's: not BBC-F's
    dask_config({"bbc_dask.rank-samples": 512})
    per = {"roc_auc_ovr": 3, "roc_auc_ovo": 4}.get(metric, 1)  # sorted columns held a sample
    dask_config({"bbc_dask.hold-bytes": 3 * 2 * 256 * 2 * per * tuning.RANK_CELL_BYTES})
    n = 1100
    p, y = _cube(metric, n, 13, 2, seed=6)
    rng = np.random.default_rng(2)
    folds = np.stack([rng.permutation(np.arange(n) % 5), rng.permutation(np.arange(n) % 4)], 1)
    dims = ("sample", "config", "repeat", "class")[: p.ndim]
    z = _to_zarr(tmp_path / "c.zarr", p, dims, chunk_cfg=4)
    want = bd.bbc_f(p, y, folds, metric=metric, random_state=3, n_bootstraps=150)
    F, _ = bd.fold_score_matrix(p, y, folds, metric=metric)
    held, real = [], tile_sums.tile_fold_sums
    monkeypatch.setattr(tile_sums, "tile_fold_sums", lambda tiles, *a, **k: held.append(
        (sum(hi - lo for bl, _ in tiles for _, lo, hi in bl), len(tiles), k["weight"]))
        or real(tiles, *a, **k))
    with dask.config.set(scheduler="sync"):  # in this process: the tasks are seen
        got, _ = lazy_bbc_f._fold_matrix_by_tiles(source._sources(z, get_metric(metric)),
                                      _target_of(y, metric), folds, get_metric(metric))
    np.testing.assert_array_equal(got, F)
    assert len(held) == (5 * 4 // 2 + 5) * -(-13 // 3)  # jobs x groups of 3
    assert max(h[0] for h in held) <= 2 * 256
    assert sorted({(h[1], h[2]) for h in held}) == [(1, 2 - 5), (2, 1)]  # weights
    monkeypatch.setattr(tile_sums, "tile_fold_sums", real)
    _same(bd.bbc_f(z, y, folds, metric=metric, random_state=3, n_bootstraps=150), want)
    lazy = xr.DataArray(da.from_array(p, chunks=(100,) + p.shape[1:]), dims=dims)
    _same(bd.bbc_f(lazy, y, folds, metric=metric, random_state=3, n_bootstraps=150), want)


@pytest.mark.parametrize("metric", ["roc_auc", "concordance_index"])
def test_ranking_metric_by_tiles_redraws_as_in_memory(metric, client, tmp_path, monkeypatch,
                                                      dask_config):
    """Few positives (or events): many draws are undefined out of bag. The plans are
    decided block by block before the tiles are summed: the same redraws, the same
    result as in memory, on the workers."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    dask_config({"bbc_dask.rank-tile": 256, "bbc_dask.rank-samples": 512})
    p, y = _cube(metric, 900, 6, 2)
    rare = np.zeros(900, dtype=bool)
    rare[np.random.default_rng(1).choice(900, 3, replace=False)] = True
    y = (y[0], rare) if metric == "concordance_index" else rare.astype(int)
    want = bd.bbc(p, y, metric=metric, random_state=3, n_bootstraps=100)
    assert want.n_redrawn > 20
    z = _to_zarr(tmp_path / "c.zarr", p, ("sample", "config", "repeat"), chunk_cfg=4)
    _same(bd.bbc(z, y, metric=metric, random_state=3, n_bootstraps=100), want)


def test_study_cube_ranking_metric_by_pairs_of_tiles(client, tmp_path, monkeypatch, dask_config):
    """A study's cube with AUC over 5 tiles (569 samples in tiles of 128): its reads are
    of one tile's samples at most, and the result equals the in-memory one bit for bit."""
    import bbc_dask.cube._layout as C
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    dask_config({"bbc_dask.rank-tile": 128, "bbc_dask.rank-samples": 256})
    s = _study_of("roc_auc", tmp_path / "s.zarr", client)
    want = s.bbc(chunked=False, n_bootstraps=150, random_state=3)
    rows = []
    read = C.PredictionReader.read
    monkeypatch.setattr(C.PredictionReader, "read",
                        lambda self, configs, repeats=None, **kw:
                        rows.append(kw.get("rows")) or read(self, configs, repeats, **kw))
    with dask.config.set(scheduler="sync"):
        _same(s.bbc(chunked=True, n_bootstraps=150, random_state=3), want)
    assert rows and None not in rows
    assert max(hi - lo for lo, hi in rows) == 128
    _same(s.bbc(chunked=True, n_bootstraps=150, random_state=3), want)  # on the workers


@pytest.mark.parametrize("metric", RANKING_ALL)
def test_dropping_test_of_a_ranking_metric_by_pairs_of_tiles(metric, client, tmp_path,
                                                             monkeypatch, dask_config):
    """Given a sample source, a ranking metric's dropping test beyond RANK_SAMPLES goes by
    pairs of tiles (700 samples in tiles of 128: 6 tiles, one with no sample available in
    repeat 1; unavailable predictions NaN; groups of 3 configurations): the very scores
    of the in-memory test, and its decision."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    dask_config({"bbc_dask.rank-tile": 128, "bbc_dask.rank-samples": 256})
    per = {"roc_auc_ovr": 3, "roc_auc_ovo": 4}.get(metric, 1)  # sorted columns held a sample
    dask_config({"bbc_dask.hold-bytes": 3 * 2 * 128 * 2 * per * tuning.RANK_CELL_BYTES})
    p, y, avail, src = _dropping_cube(metric, tmp_path)
    names = _dropping_task_names(client, monkeypatch, p, y, avail, metric, src)
    assert sum("tile_dropping_sums" in k for k in names) == (15 + 6) * 5  # jobs x groups


def test_dropping_test_of_auc_by_tiles_redraws_as_in_memory(client, tmp_path, monkeypatch,
                                                            dask_config):
    """Three positives, some unavailable: many draws have no positive in bag in a repeat.
    The plans are decided by the MaskedRule block by block, as in memory."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    dask_config({"bbc_dask.rank-tile": 128, "bbc_dask.rank-samples": 256})
    rng = np.random.default_rng(6)
    p = rng.normal(size=(500, 5, 2))
    y = np.zeros(500, dtype=int)
    y[[7, 250, 400]] = 1
    p[y == 1] += 1.0
    avail = np.stack([rng.random(500) < 0.8, rng.random(500) < 0.7], axis=1)
    avail[[7, 250, 400]] = True
    z = _to_zarr(tmp_path / "auc.zarr", p, ("sample", "config", "repeat"), chunk_cfg=2)
    want = bd.dropping_test(p, y, avail, metric="roc_auc", alpha=0.6, n_bootstraps=150,
                            random_state=np.random.SeedSequence(8))
    assert want.n_redrawn > 5
    got = chunked.lazy_dropping_test(client, [], y, avail, metric="roc_auc", alpha=0.6,
                               n_bootstraps=150, seed=np.random.SeedSequence(8),
                               source=source._sources(z, get_metric("roc_auc")))
    _same_decision(got, want)


def test_tiles_narrow_where_one_configuration_would_not_fit(monkeypatch):
    """Tiles of RANK_TILE samples, narrower (down to one sample block) where two tiles of
    one configuration's columns (repeats x classes) would exceed HOLD_BYTES: a task's
    memory stays bounded with 10 classes x 5 repeats."""
    import bbc_dask.metrics as M

    n = 10 * M.SAMPLE_BLOCK * 4 + 5
    assert [len(t) for t in source._tiles(n)] == [4] * 10 + [1]  # 2**17 samples each
    narrow = source._tiles(n, 50)
    assert all(len(t) == 1 for t in narrow) and len(narrow) == 41
    for cols in (1, 10, 20, 50):
        size = max(hi - lo for t in source._tiles(n, cols) for _, lo, hi in t)
        assert size == M.SAMPLE_BLOCK or 2 * size * cols * tuning.RANK_CELL_BYTES <= tuning.HOLD_BYTES


@pytest.mark.parametrize("n_tiles", [1, 2, 3])
def test_tile_jobs_weigh_to_the_whole_sample(n_tiles, monkeypatch):
    """Every tile's samples, and every pair of samples, counted once over the jobs:
    with t tiles each pair of tiles weighs 1 and each tile alone 2 - t — one tile alone
    weighs 1, two tiles have no single jobs (their pair is the whole sample)."""
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    p, y = _cube("roc_auc", 128 * n_tiles, 3, 1)
    src = source._sources(xr.DataArray(da.from_array(p), dims=("sample", "config", "repeat")),
                     get_metric("roc_auc"))
    lay = source._TileLayout(src, _target_of(y, "roc_auc"), get_metric("roc_auc"), tile=128)
    assert len(lay.tiles) == n_tiles
    pairs = np.zeros((n_tiles, n_tiles))
    for which, weight in lay.jobs:
        for a in which:
            for b in which:
                pairs[a, b] += weight
    np.testing.assert_array_equal(pairs, np.ones((n_tiles, n_tiles)))


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy"])
def test_a_cluster_of_more_threads_draws_in_more_groups_with_the_same_numbers(
        metric, tmp_path, make_local_client, monkeypatch):
    """The bootstraps' seed blocks are drawn and scored in enough groups to make about two
    tasks per thread with the configuration blocks (up to one seed block each): 3
    blocks on 6 threads, 8 seed blocks, 4 groups where 2 threads make 2 — and the
    estimate equals the in-memory one bit for bit."""
    from bbc_dask.chunked import _graph

    p, y = _small(metric, c=12, r=1)
    z = _to_zarr(tmp_path / "g.zarr", p, ("sample", "config", "repeat"), chunk_cfg=4)
    mem = bd.bbc(p, y, metric=metric, random_state=5, n_bootstraps=500)
    with make_local_client(n_workers=2, threads_per_worker=3) as c:
        assert len(_graph._seed_groups(500, len(y), True, n_blocks=3)) == 4
        got = bd.bbc(z, y, metric=metric, random_state=5, n_bootstraps=500)
    assert len(_graph._seed_groups(500, len(y), True, n_blocks=3)) == 2  # 2 threads, or none
    np.testing.assert_array_equal(got.bootstrap_distribution, mem.bootstrap_distribution)
    np.testing.assert_array_equal(got.winners, mem.winners)
