"""Store locations: one class per storage backend, picked by the URL's scheme, each with
its own lock and chunk target; a real study in the in-memory backend (``memory://``),
run, read back, resumed and verified, equal to the same study on disk."""
import os

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
import bbc_dask._tuning as tuning
from bbc_dask.cube import (
    BACKENDS,
    FsspecLocation,
    LocalLocation,
    MemoryLocation,
    ObjectStoreLock,
    ProcessLock,
    S3Location,
    StoreLocation,
    StoreLock,
    as_location,
)
from bbc_dask.exceptions import InvalidParameterError, StoreLockedError

IN_PROCESS = {"kind": "local", "n_workers": 1, "threads_per_worker": 1, "processes": False}


@pytest.mark.parametrize("store,cls", [
    ("runs/a.zarr", LocalLocation),
    ("file:///tmp/a.zarr", LocalLocation),
    ("s3://bucket/a.zarr", S3Location),
    ("s3a://bucket/a.zarr", S3Location),
    ("memory://a", MemoryLocation),
    ("http://host/a.zarr", FsspecLocation),  # any other scheme: the generic fsspec class
])
def test_the_registry_picks_the_class_by_scheme(store, cls):
    loc = as_location(store)
    assert type(loc) is cls and type(StoreLocation(store)) is cls
    assert isinstance(loc, StoreLocation) and loc.is_url(store) == (store != "runs/a.zarr")
    assert BACKENDS.get(store.split("://")[0] if "://" in store else "file", FsspecLocation) is cls


def test_each_backend_has_its_own_lock_and_chunk_target(tmp_path):
    local = as_location(tmp_path / "a.zarr")
    assert local.url == str(tmp_path / "a.zarr") and local.protocol == "file"
    assert isinstance(local.lock(), StoreLock) and local.slot_chunk_bytes == tuning.SLOT_CHUNK_BYTES
    s3 = as_location("s3://bucket/a.zarr/")
    assert s3.url == "s3://bucket/a.zarr" and s3.slot_chunk_bytes == tuning.SLOT_CHUNK_BYTES_REMOTE
    memory = as_location("memory://locks")
    assert isinstance(memory.lock(), ProcessLock) and memory.slot_chunk_bytes == tuning.SLOT_CHUNK_BYTES
    if s3.protocol in BACKENDS and _importable("s3fs"):
        assert isinstance(s3.lock(ttl=30), ObjectStoreLock)  # not acquired: no request
    # the command line asks the location whether a store is a URL and how to pass it on
    assert StoreLocation.absolute("a.zarr", "/base") == "/base/a.zarr"
    assert StoreLocation.absolute("s3://b/a.zarr", "/base") == "s3://b/a.zarr"
    assert StoreLocation.absolute("a.zarr") == os.path.abspath("a.zarr")


def test_a_memory_lock_excludes_a_second_writer_and_the_tasks_of_a_lost_run():
    loc = as_location("memory://lock-" + os.urandom(4).hex())
    lock = loc.lock().acquire()
    try:
        assert loc.lock().is_held()
        with pytest.raises(StoreLockedError, match="in use by a running study"):
            loc.lock().acquire()
        lock.token()()  # the run's tasks may write
        with pytest.raises(StoreLockedError, match="no longer holds"):
            ProcessLock(loc.url).token()()  # another run's may not
    finally:
        lock.release()
    assert not loc.lock().is_held()
    with pytest.raises(StoreLockedError, match="no longer holds"):
        lock.token()()
    loc.lock().acquire().release()  # free again


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.fixture
def memory_url():
    """A fresh ``memory://`` store URL, removed from this process's memory afterwards."""
    import fsspec

    url = f"memory://study-{os.urandom(4).hex()}.zarr"
    yield url
    fs = fsspec.filesystem("memory")
    if fs.exists(as_location(url).root):
        fs.rm(as_location(url).root, recursive=True)


def _study(store, client):
    X, y = load_breast_cancer(return_X_y=True)
    return bd.run_study(LogisticRegression(max_iter=300), {"C": [0.01, 0.1, 1.0]}, X[:120, :5],
                        y[:120], store=store, metric="roc_auc", n_splits=3, random_state=3,
                        client=client, progress=False, configs_per_task=2)


def test_a_study_in_memory_runs_resumes_reads_back_and_verifies(memory_url, tmp_path):
    from distributed import Client, LocalCluster

    as_location(memory_url).check_client(IN_PROCESS)  # threads: accepted
    # The lazy cube computes on the default client: this one, whose workers see the memory.
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        first = _study(memory_url, client)
        assert first.n_fits_ == 9 and first.location.url == memory_url
        again = _study(memory_url, client)  # resumed: every cell is done
        assert again.n_fits_ == 0
        on_disk = _study(tmp_path / "disk.zarr", client)
        read = bd.open_study(memory_url)
        assert isinstance(read.location, MemoryLocation)
        for name in ("prediction", "fold", "y", "state"):
            np.testing.assert_array_equal(read.cube[name].values, on_disk.cube[name].values)
    assert read.bbc(n_bootstraps=100).estimate == on_disk.bbc(n_bootstraps=100).estimate
    report, reset = bd.verify_store(memory_url)
    assert report.ok and reset == 0
    assert not as_location(memory_url).lock().is_held()


@pytest.mark.parametrize("client", [None, {"kind": "local", "n_workers": 1}, "tcp://127.0.0.1:1"],
                         ids=["default", "processes", "address"])
def test_a_memory_store_refuses_workers_in_other_processes(memory_url, client):
    with pytest.raises(InvalidParameterError, match="'store' parameter of run_study") as info:
        _study(memory_url, client)
    assert "\n" not in str(info.value) and "processes': False" in str(info.value)
    assert not as_location(memory_url).exists()  # refused before the store was touched


def test_a_memory_study_reads_in_this_process_whatever_the_default_client(memory_url, client):
    """A memory store's cube is read here, not by tasks: with worker processes as the
    default client (the session's cluster) its values and the in-memory estimate come
    back, and the chunked estimate (tasks on those workers) is refused in one line."""
    study = _study(memory_url, IN_PROCESS)
    with client.as_current():
        values = bd.open_study(memory_url).cube["prediction"].values
        assert values.shape == (120, 3, 1) and not np.isnan(values).any()
        assert study.bbc(n_bootstraps=50, random_state=0).n_bootstraps == 50
        with pytest.raises(InvalidParameterError, match="'store' parameter of Study") as info:
            study.bbc(chunked=True, n_bootstraps=50)
        assert "\n" not in str(info.value)
