"""The fold-aligned cube (schema 3): tasks write their own chunks, the ledger is what the
estimates read, and the user's view is unchanged."""
import json
import os

import numpy as np
import pytest
import zarr
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd
from bbc_dask.cube import StoreLock, open_cube
from bbc_dask.exceptions import StoreLockedError
from bbc_dask.cube._layout import slot_layout
from bbc_dask.exceptions import StoreDamagedError
from _helpers import rewrite_ledger


def _run(store, X, y, client, metric="roc_auc", grid=None, **kw):
    grid = grid if grid is not None else {"C": list(np.logspace(-3, 2, 13))}
    kw = dict(dict(n_splits=5, n_repeats=2, random_state=0, configs_per_task=4), **kw)
    return bd.run_study(LogisticRegression(max_iter=500), grid, X, y, store=store, metric=metric,
                        client=client, progress=False, **kw)


def test_slot_layout_orders_each_fold_and_pads():
    folds = np.array([[1, 0], [0, 0], [1, 1], [2, 1], [0, 2], [1, 2], [2, 0]])
    s = slot_layout(folds, 3)
    assert s.shape == (2, 3, 3)
    assert s[0].tolist() == [[1, 4, -1], [0, 2, 5], [3, 6, -1]]
    assert s[1].tolist() == [[0, 1, 6], [2, 3, -1], [4, 5, -1]]


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy", "neg_log_loss"])
def test_one_chunk_per_task_and_the_same_user_view(tmp_path, cancer_standardised, client, metric):
    """Every (repeat, fold, configuration block) is one stored chunk, written once;
    the lazy user view is [sample, config, repeat(, class)] in sample order, each stored
    fold's predictions land on its own samples; the ledger's fold scores and pooled
    scores equal the in-memory computations on that view bit for bit."""
    X, y = cancer_standardised
    study = _run(tmp_path / "s.zarr", X, y, client, metric=metric)
    g = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")
    pred = g["prediction"]
    assert pred.shape[:4] == (2, 5, -(-len(y) // 5), 13) and pred.chunks[:4] == (1, 1, pred.shape[2], 4)
    chunk_files = [f for d, _, fs in os.walk(tmp_path / "s.zarr" / "prediction" / "c") for f in fs]
    assert len(chunk_files) == 2 * 5 * 4  # repeats x folds x configuration blocks
    cube = study.cube
    assert cube["prediction"].dims[:3] == ("sample", "config", "repeat")
    assert cube["prediction"].chunks is not None  # dask-backed: never loaded whole
    values = cube["prediction"].values
    assert not np.isnan(values).any()
    folds, yy = cube["fold"].values, cube["y"].values
    # sample i's prediction in repeat r is the one its fold's task wrote at i's slot
    slots = g["slot_sample"][...]
    r, k = 1, 3
    s = slots[r, k][slots[r, k] >= 0]
    assert (folds[s, r] == k).all()
    np.testing.assert_array_equal(values[s, :, r], pred[r, k, : s.size, :])
    F, _ = bd.fold_score_matrix(values, yy, folds, metric=metric)
    np.testing.assert_array_equal(study.fold_scores(), F)
    ref = bd.naive_cvt(values, yy, metric=metric)
    assert study.best_index_ == ref.selected_config
    assert study.best_score_ == ref.naive_estimate
    a = study.bbc_f(n_bootstraps=100)
    b = bd.bbc_f(values, yy, folds, metric=metric, n_bootstraps=100, random_state=study.seed)
    assert (a.estimate, a.selected_config) == (b.estimate, b.selected_config)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    a = study.bbc(n_bootstraps=100)
    assert a.estimate == study.bbc(n_bootstraps=100, chunked=True).estimate == bd.bbc(
        values, yy, metric=metric, n_bootstraps=100, random_state=study.seed).estimate


@pytest.mark.parametrize("metric", ["accuracy", "neg_log_loss"])
def test_a_fold_cut_along_slots_stores_the_same_study(tmp_path, cancer_standardised, client,
                                                      monkeypatch, metric, dask_config):
    """Beyond SLOT_CHUNK_BYTES a block's fold is stored in chunks along slots (all the
    task's own, written whole, none read first): the same study as one chunk per fold —
    the user's view, the ledger, each block's checksum, BBC in memory and over sample
    runs, BBC-F — bit for bit."""
    import bbc_dask.metrics as M

    X, y = cancer_standardised
    whole = _run(tmp_path / "whole.zarr", X, y, client, metric=metric)
    dask_config({"bbc_dask.slot-chunk-min": 8,
                 "bbc_dask.slot-chunk-bytes": 28 * 4 * 8 * (2 if metric == "neg_log_loss" else 1)})
    cut = _run(tmp_path / "cut.zarr", X, y, client, metric=metric)
    a, b = (zarr.open_group(str(tmp_path / n), mode="r")["prediction"] for n in ("whole.zarr", "cut.zarr"))
    assert a.chunks[2] == a.shape[2] == 114 and b.chunks[2] == 29 and b.shape == a.shape
    files = [f for d, _, fs in os.walk(tmp_path / "cut.zarr" / "prediction" / "c") for f in fs]
    assert len(files) == 2 * 5 * 4 * 4  # repeats x folds x chunks along slots x blocks
    assert cut._cube.chunk_nbytes == whole._cube.chunk_nbytes  # what a task holds: its block
    np.testing.assert_array_equal(cut.cube["prediction"].values, whole.cube["prediction"].values)
    for name in ("fold_score", "pooled", "chunk_crc", "state"):
        np.testing.assert_array_equal(cut._cube._read(name), whole._cube._read(name), err_msg=name)
    assert bd.verify_store(tmp_path / "cut.zarr")[0].ok
    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)  # 5 sample blocks: BBC over sample runs
    for kw in ({}, {"chunked": True}):
        x, w = cut.bbc(n_bootstraps=100, **kw), whole.bbc(n_bootstraps=100, **kw)
        np.testing.assert_array_equal(x.bootstrap_distribution, w.bootstrap_distribution)
    np.testing.assert_array_equal(cut.bbc_f(n_bootstraps=100).bootstrap_distribution,
                                  whole.bbc_f(n_bootstraps=100).bootstrap_distribution)


@pytest.mark.parametrize("metric", ["r2", "neg_mean_squared_error"])
def test_fold_scores_of_real_features_summed_in_the_clients_blocks(metric, tmp_path, client,
                                                                    monkeypatch):
    """A real-valued metric's fold scores, summed per block of the whole sample: each
    engine task holds only the fold it predicted (442 samples, folds of ~88 crossing
    blocks of 64, the client's block size carried to the tasks), yet the ledger equals
    the fold matrix of the loaded cube bit for bit, and Study.bbc_f equals bbc_f on it."""
    import bbc_dask.metrics as M
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    X, y = load_diabetes(return_X_y=True)
    study = bd.run_study(Ridge(), {"alpha": list(np.logspace(-3, 2, 6))}, X, y,
                         store=tmp_path / "s.zarr", metric=metric, client=client,
                         progress=False, n_splits=5, n_repeats=2, random_state=0,
                         configs_per_task=4)
    cube = study.cube
    values, yy, folds = cube["prediction"].values, cube["y"].values, cube["fold"].values
    F, _ = bd.fold_score_matrix(values, yy, folds, metric=metric)
    np.testing.assert_array_equal(study.fold_scores(), F)
    a = study.bbc_f(n_bootstraps=100)
    b = bd.bbc_f(values, yy, folds, metric=metric, n_bootstraps=100, random_state=study.seed)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    monkeypatch.setattr(M, "SAMPLE_BLOCK", 2**15)  # other blocks, other terms
    assert not np.array_equal(bd.fold_score_matrix(values, yy, folds, metric=metric)[0], F)


def test_multiclass_probabilities_keep_their_class_axis(tmp_path, client):
    X, y = load_iris(return_X_y=True)
    study = bd.run_study(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3]}, X, y,
                         store=tmp_path / "iris.zarr", metric="roc_auc_ovr", n_splits=3,
                         random_state=0, client=client, progress=False)
    cube = study.cube
    assert cube["prediction"].dims == ("sample", "config", "repeat", "class")
    np.testing.assert_allclose(cube["prediction"].values.sum(axis=3), 1.0)
    F, _ = bd.fold_score_matrix(cube["prediction"].values, cube["y"].values, cube["fold"].values,
                                metric="roc_auc_ovr")
    np.testing.assert_array_equal(study.fold_scores(), F)


def test_a_store_of_the_previous_layout_is_refused_by_its_version(tmp_path, cancer_standardised, client):
    X, y = cancer_standardised
    old = tmp_path / "old.zarr"
    g = zarr.open_group(str(old), mode="w", zarr_format=3)
    g.create_array("prediction", shape=(len(y), 13, 2), chunks=(len(y), 4, 1), dtype="float64")
    g.attrs["bbc_dask"] = {"schema": "bbc_dask.cube/1", "spec": {}}
    with pytest.raises(ValueError, match=r"schema 'bbc_dask.cube/1'; this version reads 'bbc_dask.cube/3'"):
        bd.open_study(old)
    with pytest.raises(ValueError, match=r"schema 'bbc_dask.cube/1'.*overwrite=True"):
        _run(old, X, y, client)
    assert zarr.open_group(str(old), mode="r").attrs["bbc_dask"]["schema"] == "bbc_dask.cube/1"
    study = _run(old, X, y, client, overwrite=True)
    assert (study.state == 1).all()


def test_tasks_of_a_run_that_lost_the_lock_do_not_write(tmp_path):
    lock = StoreLock(tmp_path).acquire()
    try:
        token = lock.token()
        token()  # the holder's own token passes
    finally:
        lock.release()
    other = StoreLock(tmp_path).acquire()  # another run holds the store now
    try:
        with pytest.raises(StoreLockedError, match="no longer holds the store's lock"):
            token()
        other.token()()
    finally:
        other.release()


def test_damage_is_named_not_read(tmp_path, cancer_standardised, client):
    """An edited y, a deleted ledger chunk: refused with what is damaged, never served."""
    X, y = cancer_standardised
    store = tmp_path / "s.zarr"
    _run(store, X, y, client)
    g = zarr.open_group(str(store), mode="r+")
    g["y"][:5] = 1 - g["y"][:5]
    with pytest.raises(StoreDamagedError, match=r"array 'y' differs from the one the study was created"):
        bd.open_study(store)
    g["y"][:5] = 1 - g["y"][:5]
    bd.open_study(store)  # restored: readable again
    chunk = next(p for p in (store / "state" / "c").rglob("*") if p.is_file())
    chunk.unlink()
    with pytest.raises(StoreDamagedError, match=r"ledger chunk .* \(array 'state'\) is missing"):
        bd.open_study(store).bbc()


def test_a_dropping_decision_lands_whole_and_is_finished_on_resume(tmp_path, cancer_standardised, client):
    """A kill after a decision was written but before its cells were marked: the next
    run marks them and trains nothing the decision dropped."""
    X, y = cancer_standardised
    grid = {"C": list(np.logspace(-4, 2, 20))}
    full = _run(tmp_path / "a.zarr", X, y, client, grid=grid, n_repeats=1, dropping=True)
    dropped = full.dropped
    assert dropped and all(np.isfinite(d["p_hat"]) for d in dropped)
    # replay the kill: the same decisions in the attributes, the cells still pending
    store = tmp_path / "b.zarr"
    first = _run(store, X, y, client, grid=grid, n_repeats=1, dropping=True)
    cube = open_cube(store, mode="r+")
    st = cube.state()
    for d in dropped:
        st[d["config"], 0, d["wave"] + 1:] = 0
    rewrite_ledger(cube, "state", st)  # as the kill left it
    again = _run(store, X, y, client, grid=grid, n_repeats=1, dropping=True)
    assert again.n_fits_ == 0
    np.testing.assert_array_equal(again.state, first.state)
    assert json.dumps(again.dropped) == json.dumps(dropped)


def test_an_estimator_that_writes_into_its_input_does_not_change_the_next_task(tmp_path, cancer_standardised,
                                                                               client):
    """Workers reuse a split's training rows across tasks (read-only): an estimator with
    copy=False gets its own copy, and every configuration sees the data unchanged."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = cancer_standardised
    X = X * 3.0 + 1.0  # far from standardised: an in-place scaling would show
    grid = {"logisticregression__C": [0.01, 0.1, 1.0, 10.0]}
    out = []
    for copy in (True, False):
        est = make_pipeline(StandardScaler(copy=copy), LogisticRegression(max_iter=500))
        out.append(bd.run_study(est, grid, X, y, store=tmp_path / f"c{copy}.zarr", metric="roc_auc",
                                n_splits=3, random_state=0, configs_per_task=1, client=client,
                                progress=False, refit=False).cube["prediction"].values)
    np.testing.assert_array_equal(out[0], out[1])


def test_mean_fit_times_read_in_slices_equal_the_whole_ledger(tmp_path, cancer_standardised, client):
    """The engine's cost estimates (longest blocks first) come from the ledger a slice of
    configurations at a time; the result is the plain mean over repeats and folds."""
    import warnings

    X, y = cancer_standardised
    _run(tmp_path / "s.zarr", X, y, client, refit=False)
    cube = open_cube(tmp_path / "s.zarr", mode="r+")
    ft = cube.fit_times()
    ft[3] = np.nan  # a configuration never timed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmean(ft, axis=(1, 2))
    cube._array("fit_time")[3] = np.nan
    np.testing.assert_array_equal(cube.mean_fit_times(step=2), want)
    assert np.isnan(want[3]) and np.isfinite(np.delete(want, 3)).all()


def test_the_winner_of_an_undefined_fold_score_is_refused_not_guessed():
    """A fold score that is undefined (a fold of one class for AUC) under selection
    "fold_mean" makes no winner: an error naming the fold, never the last configuration
    (select's -1 taken as an index)."""
    from bbc_dask.cube._selection import select_winner
    from bbc_dask.stats import Selection
    from bbc_dask.exceptions import UndefinedScoreError

    class Fake:
        meta = {"spec": {"metric": "roc_auc", "selection": "fold_mean"}}
        spec, selection = meta["spec"], Selection.of("fold_mean")

        def state(self):
            return np.ones((3, 1, 2), dtype=np.int8)

        def dropped_waves(self):
            return np.full(3, -1), np.full(3, np.nan)

        def fold_scores(self):
            return np.array([[[0.9, np.nan]], [[0.6, 0.6]], [[0.5, 0.5]]])

    with pytest.raises(UndefinedScoreError, match=r"'roc_auc' is undefined on fold 1 of repeat 0 in the study's winner"):
        select_winner(Fake())


@pytest.mark.parametrize("cls", [0, 3])
def test_direct_chunk_writes_are_the_bytes_zarr_writes(tmp_path, cls):
    """The tasks encode and store their chunks themselves (cube/_direct.py): every file
    must be byte for byte what Zarr writes for the same values, edge chunks (along slots
    and configurations) included, and read back through Zarr as written; an array with
    other codecs is written by Zarr."""
    from bbc_dask.cube._direct import ChunkWriter, DirectChunks
    from bbc_dask.cube._create import _PREDICTION_CODECS

    shape = (2, 3, 23, 7) + ((cls,) if cls else ())
    chunks = (1, 1, 10, 3) + ((cls,) if cls else ())
    rng = np.random.default_rng(0)
    arrays = {}
    for name in ("zarr", "direct"):
        arrays[name] = zarr.create_array(str(tmp_path / f"{name}.zarr"), shape=shape,
                                         chunks=chunks, dtype="float64", fill_value=np.nan,
                                         compressors=_PREDICTION_CODECS(),
                                         config={"write_empty_chunks": True})
    assert DirectChunks.of(arrays["direct"]) is not None
    writer = ChunkWriter(arrays["direct"], lambda: None, str(tmp_path))
    blocks = [(0, [0, 2], None), (3, [0, 1, 2], None), (6, [0], None)]
    for r in range(2):
        for k in range(3):
            got = []
            for c0, cols, _ in blocks:
                v = rng.normal(size=(21 + k, len(cols)) + ((cls,) if cls else ()))
                v[0, 0] = np.nan if k == 1 else v[0, 0]  # a failed prediction is stored too
                got.append((c0, cols, v))
            crcs = writer.write_many(r, k, got)
            buf = np.full(shape[2:], np.nan)
            for c0, cols, v in got:
                buf[: v.shape[0], c0 + np.asarray(cols)] = v
            arrays["zarr"][r, k] = buf
            assert crcs == [chunk_crc_of(buf[:, c0:c0 + 3]) for c0, _, _ in blocks]
    files = {name: sorted(str(p.relative_to(tmp_path / f"{name}.zarr"))
                          for p in (tmp_path / f"{name}.zarr").rglob("c/**/*") if p.is_file())
             for name in arrays}
    assert files["zarr"] == files["direct"] and len(files["zarr"]) == 2 * 3 * 3 * 3
    for f in files["zarr"]:
        assert (tmp_path / "zarr.zarr" / f).read_bytes() == (tmp_path / "direct.zarr" / f).read_bytes(), f
    np.testing.assert_array_equal(arrays["direct"][...], arrays["zarr"][...])
    other = zarr.create_array(str(tmp_path / "other.zarr"), shape=shape, chunks=chunks,
                              dtype="float64", fill_value=np.nan)
    assert DirectChunks.of(other) is None  # Zarr's default codecs: Zarr writes


def test_a_chunk_writer_places_columns_given_in_any_order(tmp_path):
    """Columns that cover a range but not in order (0, 2, 1, 3) land each where it says,
    not as one slice copy."""
    from bbc_dask.cube._direct import ChunkWriter
    from bbc_dask.cube._create import _PREDICTION_CODECS

    array = zarr.create_array(str(tmp_path / "p.zarr"), shape=(1, 1, 5, 4), chunks=(1, 1, 5, 4),
                              dtype="float64", fill_value=np.nan, compressors=_PREDICTION_CODECS(),
                              config={"write_empty_chunks": True})
    values = np.arange(20.0).reshape(5, 4)
    ChunkWriter(array, lambda: None, str(tmp_path)).write(0, 0, 0, [0, 2, 1, 3], values)
    np.testing.assert_array_equal(array[0, 0][:, [0, 2, 1, 3]], values)


def chunk_crc_of(values):
    from bbc_dask.cube._layout import chunk_crc

    return chunk_crc(values)
