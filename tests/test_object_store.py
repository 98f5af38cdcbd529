"""Study stores on S3-compatible object storage: a real moto server (server mode) on
127.0.0.1 (conftest's s3 fixture); the run lock as a lease; kill, resume and estimate
through the CLI."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import bbc_dask as bd  # noqa: E402
from bbc_dask.cube import ObjectStoreLock, StoreLocation  # noqa: E402
from bbc_dask.exceptions import StoreLockedError  # noqa: E402

CLI = [os.path.join(os.path.dirname(sys.executable), "bbc-dask")]


# ------------------------------------------------------------------------------- the lease
def test_lease_lock_excludes_a_second_writer_and_is_released(s3):
    loc = StoreLocation(s3.url("lock"), s3.storage_options)
    a = ObjectStoreLock(loc, ttl=30).acquire()
    try:
        assert a.is_held() and loc.has(".bbc_lock")
        with pytest.raises(StoreLockedError, match="in use by a running study"):
            ObjectStoreLock(loc, ttl=30).acquire()
    finally:
        a.release()
    assert not loc.has(".bbc_lock") and not ObjectStoreLock(loc).is_held()
    ObjectStoreLock(loc, ttl=30).acquire().release()  # free again


def _plant(loc, **holder):
    body = {"token": "x", "pid": 1, "host": "elsewhere", "started": "-", "heartbeat": time.time(),
            "ttl": 60.0} | holder
    loc.write_bytes(".bbc_lock", json.dumps(body).encode())


def test_stale_leases_are_taken_over_and_live_ones_refused(s3):
    loc = StoreLocation(s3.url("stale"), s3.storage_options)
    # A live holder on another host: refused, whatever its pid.
    _plant(loc)
    with pytest.raises(StoreLockedError, match="elsewhere"):
        ObjectStoreLock(loc).acquire()
    assert ObjectStoreLock(loc).is_held()
    # Its heartbeat older than its ttl: stale, taken over.
    _plant(loc, heartbeat=time.time() - 120)
    assert not ObjectStoreLock(loc).is_held()
    lk = ObjectStoreLock(loc).acquire()
    assert json.loads(loc.read_bytes(".bbc_lock"))["pid"] == os.getpid()
    lk.release()
    # A dead process on this host (a SIGKILLed run): stale at once.
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    _plant(loc, host=socket.gethostname(), pid=p.pid)
    assert not ObjectStoreLock(loc).is_held()
    ObjectStoreLock(loc).acquire().release()


def test_heartbeat_renews_and_a_taken_over_holder_stops_writing(s3):
    loc = StoreLocation(s3.url("beat"), s3.storage_options)
    # a heartbeat every ttl / 4 = 0.75 s; stale after 3 s without one: seconds of slack
    # for a renewal that a busy machine's S3 server answers slowly (0.8 s was too few)
    lk = ObjectStoreLock(loc, ttl=3.0).acquire()
    try:
        first = json.loads(loc.read_bytes(".bbc_lock"))["heartbeat"]
        time.sleep(4.0)  # > ttl: without renewal the lease would be stale now
        assert json.loads(loc.read_bytes(".bbc_lock"))["heartbeat"] > first
        assert ObjectStoreLock(loc).is_held()
        lk.check()
        token = lk.token()
        token()  # a task's check: the lease is ours
        _plant(loc, token="intruder")  # another writer overwrote the lease
        # seen at the very next check, by the driver and by a task, before any write
        # (not at the next heartbeat, nor after a trusted window)
        with pytest.raises(StoreLockedError, match="Lost the run lock.*took the lease over"):
            lk.check()
        with pytest.raises(StoreLockedError, match="no longer holds the store's lock"):
            token()
    finally:
        lk.release()
    assert json.loads(loc.read_bytes(".bbc_lock"))["token"] == "intruder"  # not ours: kept


def test_bad_store_arguments(s3, tmp_path):
    with pytest.raises(ValueError, match="'storage_options' parameter of run_study must be None for a local path"):
        from sklearn.tree import DecisionTreeClassifier

        X = np.arange(40.0).reshape(20, 2)
        bd.run_study(DecisionTreeClassifier(), {}, X, np.arange(20) % 2, store=str(tmp_path / "x"),
                     metric="accuracy", n_splits=2, storage_options={"key": "k"})
    assert not (tmp_path / "x").exists()
    with pytest.raises(TypeError, match="'storage_options' parameter .* must be a dict"):
        StoreLocation("s3://b/x", storage_options="key=k")
    with pytest.raises(ValueError, match="Protocol not known|protocol"):
        StoreLocation("nosuchproto://b/x")
    with pytest.raises(FileNotFoundError, match="No study store"):
        bd.open_study(s3.url("missing"), storage_options=s3.storage_options)
    loc = StoreLocation(s3.url("ttl"), s3.storage_options)
    for bad in ("soon", 0, -1):
        with pytest.raises(ValueError, match="BBC_DASK_LOCK_TTL"):
            ObjectStoreLock(loc, ttl=bad)


# ------------------------------------------------------------------- a study, killed and resumed
def _study_file(tmp_path, store):
    spec = {
        "name": "s3trees",
        "data": {"sklearn": "breast_cancer"},
        "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "params": {"random_state": 0},
                  "grid": {"max_depth": [1, 2, 3, 4, 5, 6], "min_samples_leaf": [1, 5, 20]}}],
        "cv": {"splits": 5, "repeats": 1}, "metric": "roc_auc", "bootstraps": 300,
        "random_state": 5, "store": store, "configs_per_task": 1,
        "cluster": {"kind": "local", "n_workers": 1},
    }
    path = tmp_path / f"study-{os.urandom(3).hex()}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _cli(args, env, check=True, timeout=300):
    p = subprocess.run(CLI + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, **env})
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}: {p.stderr[-3000:]}")
    return p


def test_a_study_on_s3_equals_local_disk(s3, tmp_path, client, monkeypatch, dask_config):
    """In-process run to the bucket and the same on local disk: identical cubes,
    estimates (in memory, and over sample runs reading some of the bucket's chunks along
    slots — an object store's own chunk size, here cut in 7) and final model; the lease
    is gone after the run."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.datasets import load_breast_cancer

    import bbc_dask.metrics as M

    dask_config({"bbc_dask.slot-chunk-min": 8})
    dask_config({"bbc_dask.slot-chunk-bytes-remote": 27 * 2 * 8})  # 190 slots of 2 configurations

    X, y = load_breast_cancer(return_X_y=True)
    est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    grid = {"logisticregression__C": [0.01, 0.1, 1.0]}
    kw = dict(metric="roc_auc", n_splits=3, random_state=2, client=client, progress=False,
              configs_per_task=2)
    url, opts = s3.url("light"), s3.storage_options
    remote = bd.run_study(est, grid, X, y, store=url, storage_options=opts, **kw)
    local = bd.run_study(est, grid, X, y, store=tmp_path / "l.zarr", **kw)
    along = [s._cube.group["prediction"].chunks[2] for s in (remote, local)]
    assert along == [28, 190]
    for name in ("prediction", "fold", "y", "state"):
        np.testing.assert_array_equal(remote.cube[name].values, local.cube[name].values)
    again = bd.open_study(url, storage_options=opts)
    assert again.bbc(n_bootstraps=200).estimate == local.bbc(n_bootstraps=200).estimate
    monkeypatch.setattr(M, "SAMPLE_BLOCK", 128)
    np.testing.assert_array_equal(
        again.bbc(n_bootstraps=200, chunked=True).bootstrap_distribution,
        local.bbc(n_bootstraps=200, chunked=True).bootstrap_distribution)
    assert bd.verify_store(url, storage_options=opts)[0].ok
    assert again.final_model.predict(X[:5]).tolist() == local.final_model.predict(X[:5]).tolist()
    assert not StoreLocation(url, opts).has(".bbc_lock")


@pytest.mark.slow  # the default suite runs test_a_study_on_s3_equals_local_disk
def test_s3_study_killed_resumed_and_estimated_equals_local_disk(s3, tmp_path, make_local_client):
    endpoint, env = s3
    url = s3.url("study")
    f = _study_file(tmp_path, url)
    proc = subprocess.Popen(CLI + ["run", str(f), "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env={**os.environ, **env})
    opts = s3.storage_options
    try:
        deadline = time.time() + 180
        while time.time() < deadline:  # kill once a third of the cells are written
            try:
                st = bd.open_study(url, storage_options=opts).status()
                if st["done"] >= st["cells"] // 3:
                    assert st["running"]  # the live lease is seen from outside
                    break
            except (FileNotFoundError, KeyError, ValueError):
                pass  # not created yet
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.1)
        else:
            raise TimeoutError("the run did not reach a third of its cells")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    loc = StoreLocation(url, opts)
    assert loc.has(".bbc_lock")  # the killed run could not remove its lease ...
    st = json.loads(_cli(["status", url, "--json"], env).stdout)
    assert 0 < st["done"] < st["cells"] and not st["running"], st  # ... but it is stale
    before = st["done"]
    again = _cli(["run", f, "--no-progress"], env)
    assert "finished" in again.stdout
    study = bd.open_study(url, storage_options=opts)
    runs = study.meta["runs"]
    assert len(runs) == 2 and runs[-1]["done_before"] >= before
    assert runs[-1]["fits"] <= study.status()["cells"] - before  # finished cells not refitted
    assert study.status()["pending"] == 0 and not loc.has(".bbc_lock")

    # The same study on local disk, uninterrupted: identical cube and estimates.
    local = tmp_path / "local.zarr"
    _cli(["run", f, "--no-progress", "--store", local], {})
    ref = bd.open_study(local)
    for name in ("prediction", "fold", "y", "state"):
        np.testing.assert_array_equal(study.cube[name].values, ref.cube[name].values)
    got = json.loads(_cli(["estimate", url, "--json"], env).stdout)
    want = json.loads(_cli(["estimate", local, "--json"], {}).stdout)
    assert got == want
    assert got["bbc"]["estimate"] == study.bbc(n_bootstraps=300, random_state=5).estimate
    # chunked bootstraps: Dask tasks read the cube from S3 themselves
    with make_local_client(n_workers=1):
        lazy = study.bbc(n_bootstraps=300, random_state=5, chunked=True)
    assert lazy.estimate == got["bbc"]["estimate"]
    # the final model went to the bucket, and the CLI reads it with --storage-option too
    assert type(study.final_model).__name__ == "Pipeline"
    plain = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    out = subprocess.run(CLI + ["status", url, "--json", "--storage-option", "key=testing",
                                "--storage-option", "secret=testing",
                                "--storage-option", f"client_kwargs.endpoint_url={endpoint}",
                                "--storage-option", "client_kwargs.region_name=us-east-1"],
                         capture_output=True, text=True, env=plain, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["done"] == st["cells"]


def test_missing_s3_extra_names_it(monkeypatch):
    import importlib

    registry = importlib.import_module("fsspec.registry")  # the module, not its proxy
    monkeypatch.setitem(sys.modules, "s3fs", None)  # as if not installed
    monkeypatch.delitem(registry._registry, "s3", raising=False)
    with pytest.raises(ImportError, match=r"bbc-dask\[s3\]"):
        StoreLocation("s3://bucket/study.zarr")


# ----------------------------------------------------- chunked bootstraps read from S3
@pytest.mark.parametrize("metric", ["accuracy", "roc_auc"])
def test_chunked_bbc_of_an_s3_cube_in_sample_blocks_equals_in_memory(metric, s3, client, monkeypatch):
    """A cube on S3, chunked along samples and configurations, opened with xarray: the
    tasks read their own chunks from the server (sample blocks of 150 of N = 640 for
    accuracy; configuration blocks over shared counts for AUC) and the result equals the
    in-memory one bit for bit."""
    import xarray as xr
    import zarr

    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 150)
    rng = np.random.default_rng(2)
    n, c = 640, 11
    y = rng.integers(0, 2, n)
    if metric == "accuracy":
        right = rng.random((n, c, 2)) < rng.uniform(0.55, 0.8, (1, c, 1))
        p = np.where(right, y[:, None, None], 1 - y[:, None, None]).astype(np.float32)
    else:
        p = (rng.normal(size=(n, c, 2)) + y[:, None, None] * rng.uniform(0, 1, (1, c, 1))).astype(np.float32)
    url = s3.url("cube")
    g = zarr.open_group(url, mode="w", zarr_format=3, storage_options=s3.storage_options)
    z = g.create_array("p", shape=p.shape, chunks=(150, 4, 2), dtype="float32",
                       dimension_names=["sample", "config", "repeat"])
    z[...] = p
    cube = xr.open_zarr(url, consolidated=False, zarr_format=3, storage_options=s3.storage_options)["p"]
    got = bd.bbc(cube, y, metric=metric, n_bootstraps=140, random_state=6)
    want = bd.bbc(p, y, metric=metric, n_bootstraps=140, random_state=6)
    np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
    np.testing.assert_array_equal(got.winners, want.winners)
    assert (got.selected_config, got.naive_estimate) == (want.selected_config, want.naive_estimate)
