"""Scale-out: how a study's speed grows with the workers of one machine, and where the time
goes, from Dask's task stream.

For each W of ``--workers`` (default 2,4,8,16) and each case of ``--cases``, a fresh
cluster is started (``bd.make_client(n_workers=W)``, one thread per worker; ``--cluster
plain`` adds distributed's own ``LocalCluster`` with the same workers), its start timed
apart, and the case run twice on it: **fresh** (the first study of the new cluster) and
**warm** (a second study on the same cluster). The cases:

- ``sleep``: fits that sleep ``--sleep-ms`` (default 20 ms: no CPU), N = 1,000,
  400 configurations x 10 folds; ideal wall = cells x sleep / W. Against
  ``GridSearchCV(n_jobs=W)``.
- ``rf``: 64 random forests (50 trees; max_depth x max_features x min_samples_leaf)
  x 10 folds on make_classification(4,000 x 30): fits of about a second. Against
  ``GridSearchCV(n_jobs=W)``.
- ``null``: a classifier whose fit and predict cost nothing (bench_engine's), N = 200,000,
  400 x 10: what the engine's own work costs (chunks encoded and written, fold and pooled
  AUCs). ``--floor`` adds the same bytes encoded and written and the same AUCs computed by
  W plain processes without Dask (a process pool), which no engine can beat;
  ``--gscv-null`` adds ``GridSearchCV(n_jobs=W)`` (slow: 38 config-folds/s at 16 workers).
- ``bbc``: the chunked BBC (``bd.bbc`` of a Zarr cube opened with xarray) of 50,000
  samples x 200 configurations, ROC AUC, B = 500; the in-memory ``bd.bbc`` of the same
  cube is timed once.
- ``pipe``: StandardScaler -> PCA -> SVC, 36 configurations x 10 folds on
  make_classification(3,000 x 200). Against ``GridSearchCV(n_jobs=W)``.
- ``uneven``: fits that sleep a time fixed per configuration, lognormal (sigma = 1) around
  ``--sleep-ms``, 100 configurations x 10 folds, N = 1,000, once under CVT
  (``uneven-cvt``) and once under BBCD-CV (``uneven-bbcd``, ``bd.Dropping()``): real
  grids are uneven, and BBCD waits for each fold wave's slowest fit before its test.
  Efficiency: fit seconds trained / (W x wall); the summary gives BBCD's wall over CVT's.

``--repeats R`` repeats every (case, cluster) R times, interleaved (the order of the cases
and of the cluster kinds reversed on every other repetition, so that a drift of the
machine's load falls on both), and ends with a summary: per case, W, cluster and run, the
median and the spread (min-max) of the wall, the efficiency and the wall no phase of the
run accounts for, the load average before and after, the fresh run's wall over the warm
one's (median of each cluster's pair) and BBCD's over CVT's. Targets are held to the
median: one run on a shared machine proves little.

Every study runs ``run_study(..., refit=False, progress=False)``, timed from call to
return, with ROC AUC. Printed per row: wall, config-folds/s, efficiency (sleep: ideal wall
/ wall; rf and pipe: the ledger's fit seconds / (W x wall)), the ratio to the baseline
(its best of two runs in the same process), and the breakdown of Dask's task stream: the
workers' compute seconds by task kind (``bbc-fit``, ``bbc-pooled``, ``bbc-warm``, the
chunked path's tasks), the workers' idle share (1 - compute / (W x wall)), the workers'
CPU seconds, the driver's CPU seconds (its main thread, which runs the engine, and its
other threads: the event loop, which in a ``LocalCluster`` also runs the scheduler) and
the main thread's milliseconds per task handled. Each row is appended to ``--out``
(JSON, rewritten after every row) as soon as it is measured, so a run cut short keeps
what it did.

``--simulate`` is the 2-core stand-in for a big machine: fits that sleep hold no core, so
16 and 32 workers show the capacity of the orchestration (driver, scheduler, task sizing,
worker start) without 16 cores. It runs the ``sleep`` case with 100 ms fits, 200
configurations x 10 folds, at W = 16 and 32 (``--workers`` for others), on ``make_client`` and on a plain
``LocalCluster`` (at 20 ms, two cores cannot also carry 16 workers' predicting, scoring
and writing), three repetitions unless ``--repeats`` says otherwise. Targets (16
workers, medians): >= 0.80 of ideal on the fresh cluster, >= 0.90 on the warm one.

Run: ``python benchmarks/bench_scale.py [--workers 2,4,8,16] [--cases sleep,rf,null,bbc,pipe]
[--sleep-ms 20] [--quick] [--floor] [--gscv-null] [--cluster make_client,plain]
[--repeats 1] [--out bench_scale.json]`` or ``python benchmarks/bench_scale.py --simulate
[--cases sleep,uneven]``.
``--quick`` shrinks every case for a smoke run.
"""
import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

import bbc_dask as bd
from bench_engine import NullClassifier  # benchmarks/ is this script's directory

TARGETS = {"sleep_fresh": 0.80, "sleep_warm": 0.90}


class SleepClassifier(ClassifierMixin, BaseEstimator):
    """A fit that sleeps ``ms`` milliseconds (holds no core), then predicts one feature
    scaled per configuration (bench_engine's NullClassifier)."""

    def __init__(self, ms=20.0, c=0):
        self.ms, self.c = ms, c

    def fit(self, X, y):
        time.sleep(self.ms / 1e3)
        self.classes_ = np.array([0, 1])
        return self

    def decision_function(self, X):
        return X[:, 0] * (1.0 + 0.01 * self.c)


class UnevenSleepClassifier(SleepClassifier):
    """A fit that sleeps a time fixed per configuration, lognormal around ``ms``:
    ``ms * exp(sigma * z_c)``, ``z_c`` a standard normal drawn from configuration ``c``'s
    own seed — the spread of a real grid (an SVC with a large C, a forest of deep trees:
    10-100x the median fit), the same on every run and every fold."""

    def __init__(self, ms=100.0, c=0, sigma=1.0):
        self.ms, self.c, self.sigma = ms, c, sigma

    def fit_ms(self):
        z = np.random.default_rng([20261207, int(self.c)]).standard_normal()
        return self.ms * float(np.exp(self.sigma * z))

    def fit(self, X, y):
        time.sleep(self.fit_ms() / 1e3)
        self.classes_ = np.array([0, 1])
        return self


# --------------------------------------------------------------------------- measuring
class DriverCPU:
    """CPU seconds of this process's main thread and of its other threads (the event
    loop: the client's comms and, in a LocalCluster, the scheduler) between start and
    stop."""

    def __init__(self):
        import psutil

        self.proc = psutil.Process()
        self.main = threading.main_thread().native_id

    def _now(self):
        total = self.proc.cpu_times()
        main = next((t.user_time + t.system_time for t in self.proc.threads()
                     if t.id == self.main), 0.0)
        return total.user + total.system, main

    def __enter__(self):
        self.t0 = self._now()
        return self

    def __exit__(self, *exc):
        total, main = self._now()
        self.main_cpu = main - self.t0[1]
        self.other_cpu = (total - self.t0[0]) - self.main_cpu


def worker_cpu(client):
    """Total CPU seconds of every worker process, by worker address."""
    def cpu():
        import psutil

        t = psutil.Process().cpu_times()
        return t.user + t.system

    return client.run(cpu)


def kind_of(key):
    """A task's kind from its key: ``bbc-fit-r0-k3-c12-n2-ab12cd34`` -> ``bbc-fit``; a
    graph's ``('bbc-boot-<token>', 3)`` -> ``bbc-boot``."""
    from dask.utils import key_split

    if isinstance(key, str) and key.startswith("bbc-"):
        parts = key.split("-")
        return "-".join(parts[:2])
    return key_split(key)


class Breakdown:
    """The task stream, the driver's and the workers' CPU seconds over a block of code."""

    def __init__(self, client):
        self.client = client

    def __enter__(self):
        from distributed import get_task_stream

        self.cpu0 = worker_cpu(self.client)
        self.driver = DriverCPU().__enter__()
        self.stream = get_task_stream(self.client)
        self.stream.__enter__()
        self.t0, self.epoch0 = time.perf_counter(), time.time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.epoch1 = time.time()
        self.driver.__exit__(*exc)
        self.stream.__exit__(*exc)
        cpu1 = worker_cpu(self.client)
        self.workers_cpu = sum(cpu1[w] - self.cpu0.get(w, 0.0) for w in cpu1)
        self.n_workers = len(cpu1)

    def summary(self, wall=None):
        wall = self.wall if wall is None else wall
        by_kind, count = {}, {}
        for rec in self.stream.data:
            kind = kind_of(rec["key"])
            for ss in rec.get("startstops", ()):
                if ss["action"] == "compute":
                    by_kind[kind] = by_kind.get(kind, 0.0) + ss["stop"] - ss["start"]
            count[kind] = count.get(kind, 0) + 1
        compute = sum(by_kind.values())
        # each worker's idle time: before its first task, between tasks, after its last
        spans = {}
        for rec in self.stream.data:
            for ss in rec.get("startstops", ()):
                if ss["action"] == "compute" and kind_of(rec["key"]) != "bbc-warm":
                    spans.setdefault(rec["worker"], []).append((ss["start"], ss["stop"]))
        head = gaps = tail = 0.0
        for iv in spans.values():
            iv.sort()
            head += max(0.0, iv[0][0] - self.epoch0)
            tail += max(0.0, self.epoch1 - max(b for _, b in iv))
            end = iv[0][1]
            for a, b in iv[1:]:
                gaps += max(0.0, a - end)
                end = max(end, b)
        total = self.n_workers * wall
        handled = sum(n for k, n in count.items() if k in ("bbc-fit", "bbc-pooled"))
        return {
            "compute_s_by_kind": {k: round(v, 3) for k, v in sorted(by_kind.items())},
            "tasks_by_kind": dict(sorted(count.items())),
            "idle_share": round(1 - compute / total, 3),
            # shares of W x wall: before each worker's first study task, between its
            # tasks, after its last
            "idle_head_gaps_tail": [round(head / total, 3), round(gaps / total, 3),
                                    round(tail / total, 3)],
            "workers_cpu_s": round(self.workers_cpu, 2),
            "driver_main_cpu_s": round(self.driver.main_cpu, 3),
            "driver_other_cpu_s": round(self.driver.other_cpu, 3),
            "driver_ms_per_task": (round(1e3 * self.driver.main_cpu / handled, 3)
                                   if handled else None),
        }


# --------------------------------------------------------------------------- the cases
def _xy(n, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y


class Case:
    """A study to time: estimator, grid, data, folds; ``ideal`` the ideal wall on W
    workers (or None); ``baseline`` whether GridSearchCV(n_jobs=W) runs the same grid."""

    name = ""
    baseline = True
    n_splits = 10
    dropping = None  # BBCD-CV's settings, or None: CVT

    def run(self, client, tmp, W, seed):
        """The row of one timed run_study on ``client`` (``seed``: the same study every
        run, whatever the seed)."""
        store = f"{tmp}/{self.name}-{W}.zarr"
        shutil.rmtree(store, ignore_errors=True)
        with Breakdown(client) as b:
            study = bd.run_study(self.estimator, self.grid, self.X, self.y, store=store,
                                 metric="roc_auc", n_splits=self.n_splits, random_state=0,
                                 client=client, progress=False, refit=False,
                                 dropping=self.dropping)
        wall = b.wall
        cells = len(study.params) * self.n_splits
        fit_s = float(np.nansum(study.cube["fit_time"].values))
        ideal = self.ideal(W)
        phases = {k: round(v, 3) for k, v in study.run_seconds_.items()}
        row = {"wall_s": round(wall, 3), "config_folds_per_s": round(cells / wall, 1),
               "efficiency": round((ideal / wall) if ideal else fit_s / (W * wall), 3),
               "efficiency_is": "ideal wall / wall" if ideal else "fit seconds / (W x wall)",
               "fit_s": round(fit_s, 3),
               "trained_cells": int(np.isfinite(study.cube["fit_time"].values).sum()),
               "phases_s": phases,
               # the wall no phase of the run accounts for (the call's own start and end)
               "unaccounted_s": round(wall - sum(phases.values()), 3),
               **b.summary()}
        self.folds = study.cube["fold"].values[:, 0]
        shutil.rmtree(store, ignore_errors=True)
        return row

    def ideal(self, W):
        return None

    def gscv(self, W):
        """Best of two GridSearchCV(n_jobs=W) runs on run_study's folds (seconds)."""
        from sklearn.model_selection import GridSearchCV, PredefinedSplit

        cv = PredefinedSplit(test_fold=self.folds)
        best = np.inf
        for _ in range(2):
            t = time.perf_counter()
            GridSearchCV(self.estimator, self.grid, scoring="roc_auc", cv=cv, n_jobs=W,
                         refit=False).fit(self.X, self.y)
            best = min(best, time.perf_counter() - t)
        return best


class Sleep(Case):
    name = "sleep"

    def __init__(self, quick, ms, n_configs=None):
        self.ms = ms
        n_cfg = n_configs or (100 if quick else 400)
        self.estimator = SleepClassifier(ms)
        self.grid = {"c": list(range(n_cfg))}
        self.X, self.y = _xy(1_000)

    def ideal(self, W):
        return len(self.grid["c"]) * self.n_splits * self.ms / 1e3 / W


class Uneven(Case):
    """Uneven sleeping fits (:class:`UnevenSleepClassifier`: lognormal, sigma = 1 around
    ``ms``, fixed per configuration), 100 configurations x 10 folds, N = 1,000, under CVT
    or BBCD-CV (``bd.Dropping()``: a test between fold waves). Efficiency: the fit
    seconds trained / (W x wall): BBCD trains fewer, and a wave waits for its slowest fit
    before the test."""

    baseline = False

    def __init__(self, quick, ms, protocol):
        self.name = f"uneven-{protocol}"
        self.estimator = UnevenSleepClassifier(ms)
        self.grid = {"c": list(range(30 if quick else 100))}
        self.X, self.y = _xy(1_000)
        self.dropping = bd.Dropping() if protocol == "bbcd" else None


class RandomForests(Case):
    name = "rf"

    def __init__(self, quick):
        from sklearn.datasets import make_classification
        from sklearn.ensemble import RandomForestClassifier

        n, self.n_splits = (1_000, 5) if quick else (4_000, 10)
        self.X, self.y = make_classification(n, 30, n_informative=10, random_state=0)
        self.estimator = RandomForestClassifier(n_estimators=50, random_state=0)
        self.grid = ({"max_depth": [4, None], "max_features": ["sqrt", 0.5]} if quick else
                     {"max_depth": [4, 8, 16, None], "max_features": ["sqrt", 0.2, 0.4, 0.6],
                      "min_samples_leaf": [1, 5, 10, 20]})


class Null(Case):
    name = "null"
    baseline = False

    def __init__(self, quick):
        n_cfg = 100 if quick else 400
        self.estimator = NullClassifier()
        self.grid = {"c": list(range(n_cfg))}
        self.X, self.y = _xy(20_000 if quick else 200_000)


class Pipe(Case):
    name = "pipe"

    def __init__(self, quick):
        from sklearn.datasets import make_classification
        from sklearn.decomposition import PCA
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        n, p, self.n_splits = (1_000, 50, 5) if quick else (3_000, 200, 10)
        self.X, self.y = make_classification(n, p, random_state=0)
        self.estimator = Pipeline([("scale", StandardScaler()), ("pca", PCA(random_state=0)),
                                   ("svc", SVC())])
        self.grid = ({"pca__n_components": [10, 20], "svc__C": [1], "svc__gamma": ["scale", 0.01]}
                     if quick else
                     {"pca__n_components": [10, 20, 50], "svc__C": [0.1, 1, 10],
                      "svc__gamma": ["scale", 0.001, 0.01, 0.1]})


class ChunkedBBC:
    """bd.bbc of a Zarr cube opened lazily with xarray: the chunked path."""

    name = "bbc"
    baseline = False

    def __init__(self, quick, tmp):
        import xarray as xr
        import zarr
        from zarr.codecs import BloscCodec

        from bbc_dask.metrics import SAMPLE_BLOCK

        n, c, self.B = (10_000, 50, 100) if quick else (50_000, 200, 500)
        rng = np.random.default_rng(0)
        self.y = rng.integers(0, 2, n)
        path = f"{tmp}/bbc-cube.zarr"
        g = zarr.open_group(path, mode="w", zarr_format=3)
        z = g.create_array("p", shape=(n, c), chunks=(min(n, SAMPLE_BLOCK), 25), dtype="float32",
                           dimension_names=["sample", "config"],
                           compressors=BloscCodec(cname="lz4", clevel=1, shuffle="noshuffle"))
        q = rng.uniform(0, 1, c)
        z[...] = (rng.normal(size=(n, c)) + self.y[:, None] * q[None, :]).astype(np.float32)
        self.cube = xr.open_zarr(path, consolidated=False, zarr_format=3, chunks=None)["p"]
        self.memory = np.asarray(z[...])
        self.n, self.c = n, c
        self.in_memory_s, self.want = None, {}

    def run(self, client, tmp, W, seed):
        with Breakdown(client) as b:
            got = bd.bbc(self.cube, self.y, metric="roc_auc", n_bootstraps=self.B,
                         random_state=seed)
        if seed not in self.want:  # each run its own seed: no result of the last one reused
            t = time.perf_counter()
            want = bd.bbc(self.memory, self.y, metric="roc_auc", n_bootstraps=self.B,
                          random_state=seed)
            self.in_memory_s = min(self.in_memory_s or np.inf, time.perf_counter() - t)
            self.want[seed] = want.bootstrap_distribution
        same = bool(np.array_equal(got.bootstrap_distribution, self.want[seed]))
        return {"wall_s": round(b.wall, 3), "in_memory_s": round(self.in_memory_s, 3),
                "vs_in_memory": round(self.in_memory_s / b.wall, 2), "equal_to_in_memory": same,
                **b.summary()}


# --------------------------------------------------------------------------- the floor
def _floor_task(args):
    """The engine's work on one (fold, configuration block) without the engine: the
    predictions computed, encoded as the store's chunks are and written to files; the
    fold AUCs of the block."""
    path, x0, y, test, k, configs, codec, slots_per_chunk = args
    from numcodecs import Blosc
    import google_crc32c

    from bbc_dask.chunked import chunk_pooled

    blosc = Blosc(cname=codec["cname"], clevel=codec["clevel"],
                  shuffle={"noshuffle": Blosc.NOSHUFFLE, "shuffle": Blosc.SHUFFLE,
                           "bitshuffle": Blosc.BITSHUFFLE}[codec["shuffle"]])
    values = x0[test][:, None] * (1.0 + 0.01 * np.asarray(configs, dtype=np.float64))[None, :]
    nbytes = 0
    for j, c in enumerate(configs):
        col = np.ascontiguousarray(values[:, j])
        for s0 in range(0, col.size, slots_per_chunk):
            enc = blosc.encode(col[s0:s0 + slots_per_chunk])
            data = bytes(enc) + google_crc32c.value(enc).to_bytes(4, "little")
            name = f"{path}/{k}.{s0}.{c}"
            with open(name + ".partial", "wb") as f:
                f.write(data)
            os.replace(name + ".partial", name)
            nbytes += len(data)
    chunk_pooled(values[:, :, None], y[test], "roc_auc", 1)
    return nbytes


def _floor_pooled(args):
    x0, y, configs = args
    from bbc_dask.chunked import chunk_pooled

    values = x0[:, None] * (1.0 + 0.01 * np.asarray(configs, dtype=np.float64))[None, :]
    chunk_pooled(values[:, :, None], y, "roc_auc", 1)
    return len(configs)


def floor(case, W, tmp):
    """The null case's work by W plain processes (forked, warm before the clock): the
    seconds, the bytes written."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    store = f"{tmp}/floor-src.zarr"
    shutil.rmtree(store, ignore_errors=True)
    bd.run_study(case.estimator, {"c": case.grid["c"][:2]}, case.X, case.y, store=store,
                 metric="roc_auc", n_splits=case.n_splits, random_state=0, client=None,
                 progress=False, refit=False)
    meta = json.load(open(f"{store}/prediction/zarr.json"))
    codec = next(c["configuration"] for c in meta["codecs"] if c["name"] == "blosc")
    slots_per_chunk = meta["chunk_grid"]["configuration"]["chunk_shape"][2]
    folds = bd.open_study(store).cube["fold"].values[:, 0]
    shutil.rmtree(store, ignore_errors=True)
    out = f"{tmp}/floor"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    x0, y = case.X[:, 0].copy(), case.y
    configs = case.grid["c"]
    block = max(1, min(10, len(configs) // 64))
    jobs = [(out, x0, y, np.flatnonzero(folds == k), k, configs[c0:c0 + block], codec,
             slots_per_chunk)
            for k in range(case.n_splits) for c0 in range(0, len(configs), block)]
    pooled = [(x0, y, configs[c0:c0 + 25]) for c0 in range(0, len(configs), 25)]
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(W, mp_context=multiprocessing.get_context(method)) as pool:
        list(pool.map(_floor_pooled, [(x0[:10], y[:10], [0])] * W))  # imports, untimed
        t = time.perf_counter()
        nbytes = sum(pool.map(_floor_task, jobs, chunksize=max(1, len(jobs) // (8 * W))))
        sum(pool.map(_floor_pooled, pooled))
        took = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    return took, nbytes


# --------------------------------------------------------------------------- the runs
def start_cluster(kind, W):
    """(client, seconds to start it)."""
    t = time.perf_counter()
    if kind == "plain":
        from distributed import Client, LocalCluster

        client = Client(LocalCluster(n_workers=W, threads_per_worker=1, dashboard_address=":0"))
    else:
        client = bd.make_client(n_workers=W, dashboard_address=":0")
    return client, time.perf_counter() - t


def stop_cluster(client):
    """Closed with distributed's logs silenced: 32 workers on 2 cores take more than the
    nanny's 4 s to stop, and each would say so."""
    import logging

    from bbc_dask.cluster import close_client

    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        close_client(client)
    finally:
        log.setLevel(level)


class Results:
    def __init__(self, path):
        self.path, self.rows, self.summary = path, [], None
        self.info = {"machine": platform.node(), "cpus": os.cpu_count(),
                     "python": sys.version.split()[0], "bbc_dask": bd.__version__,
                     "started": time.strftime("%Y-%m-%dT%H:%M:%S")}

    def add(self, row):
        row["load_1min"] = round(os.getloadavg()[0], 2)  # after the row's run
        self.rows.append(row)
        self.write()
        show(row)

    def write(self):
        if self.path:
            with open(self.path + ".partial", "w") as f:
                json.dump({"info": self.info, "rows": self.rows,
                           **({"summary": self.summary} if self.summary else {})}, f, indent=1)
            os.replace(self.path + ".partial", self.path)


def show(row):
    rep = f" #{row['rep'] + 1}" if "rep" in row else ""
    head = f"[{row['case']} W={row['workers']} {row['cluster']} {row['run']}{rep}]"
    if row["run"] == "start":
        print(f"{head} cluster started in {row['start_s']:.2f} s", flush=True)
        return
    if row["run"] == "baseline":
        print(f"{head} {row['what']} {row['wall_s']:.2f} s", flush=True)
        return
    parts = [f"wall {row['wall_s']:.2f} s"]
    if "config_folds_per_s" in row:
        parts.append(f"{row['config_folds_per_s']:,.0f} config-folds/s")
        parts.append(f"efficiency {row['efficiency']:.2f}")
    if "vs_in_memory" in row:
        parts.append(f"in memory {row['in_memory_s']:.2f} s ({row['vs_in_memory']:.2f}x); "
                     f"equal {row['equal_to_in_memory']}")
    if "vs_gscv" in row:
        parts.append(f"/ GridSearchCV(n_jobs={row['workers']}) {row['vs_gscv']:.2f}")
    if "target" in row:
        parts.append(f"target >= {row['target']:.2f}: {'met' if row['met'] else 'NOT MET'}")
    print(f"{head} " + "; ".join(parts), flush=True)
    kinds = ", ".join(f"{k} {v:.2f}" for k, v in row["compute_s_by_kind"].items())
    per = row["driver_ms_per_task"]
    h, g, t = row["idle_head_gaps_tail"]
    print(f"    compute s by kind: {kinds}; idle {row['idle_share']:.2f} (before the first "
          f"task {h:.2f}, between tasks {g:.2f}, after the last {t:.2f}); workers' CPU "
          f"{row['workers_cpu_s']:.2f} s; driver CPU main {row['driver_main_cpu_s']:.2f} s"
          + (f" ({per:.2f} ms/task)" if per is not None else "")
          + f", loop+scheduler {row['driver_other_cpu_s']:.2f} s", flush=True)
    if "phases_s" in row:
        print("    phases: " + " ".join(f"{k} {v:.2f}" for k, v in row["phases_s"].items()
                                        if v >= 0.005 or k == "waves"), flush=True)


def run_on_cluster(case, W, kind, rep, tmp, results):
    """One fresh cluster of ``kind``: its start timed, the case run twice on it (fresh:
    the cluster's first study; warm: its second), the load average before and after
    each run."""
    base = {"case": case.name, "workers": W, "cluster": kind, "rep": rep}
    client, took = start_cluster(kind, W)
    try:
        results.add({**base, "run": "start", "start_s": round(took, 3)})
        for seed, run in enumerate(("fresh", "warm")):
            load = round(os.getloadavg()[0], 2)
            row = {**base, "run": run, "load_before": load, **case.run(client, tmp, W, seed)}
            if case.name == "sleep" and W >= 16:
                row["target"] = TARGETS[f"sleep_{run}"]
                row["met"] = row["efficiency"] >= row["target"]
            results.add(row)
    finally:
        stop_cluster(client)


def baselines(case, W, tmp, results, args):
    """What the case is compared with, once per (case, W), after its first repetition
    (GridSearchCV takes run_study's folds): GridSearchCV(n_jobs=W), the floor."""
    base = {"case": case.name, "workers": W, "cluster": "-", "run": "baseline"}
    if getattr(case, "baseline", False) and not args.no_gscv:
        gscv = case.gscv(W)
        results.add({**base, "what": f"GridSearchCV(n_jobs={W}) best of 2", "wall_s": round(gscv, 3)})
        for row in results.rows:  # the ratios of the rows measured before it
            if row.get("case") == case.name and row.get("workers") == W and \
                    row["run"] in ("fresh", "warm"):
                row["vs_gscv"] = round(row["wall_s"] / gscv, 3)
        print(f"    ratios to GridSearchCV(n_jobs={W}): " + ", ".join(
            f"{r['cluster']} {r['run']} {r['vs_gscv']:.2f}" for r in results.rows
            if r.get("case") == case.name and r.get("workers") == W and "vs_gscv" in r),
            flush=True)
    if case.name == "null" and args.floor:
        took, nbytes = floor(case, W, tmp)
        results.add({**base, "what": f"floor: {W} plain processes, {nbytes / 2**20:,.0f} MiB "
                                     f"encoded and written, the same AUCs", "wall_s": round(took, 3)})
    if case.name == "null" and args.gscv_null:
        results.add({**base, "what": f"GridSearchCV(n_jobs={W}) best of 2",
                     "wall_s": round(case.gscv(W), 3)})


def interleaved(items, rep):
    """``items`` in order on even repetitions, reversed on odd ones: what a slow drift of
    the machine's load does to one ordering, the other undoes."""
    return list(items) if rep % 2 == 0 else list(reversed(items))


def _spread(values):
    v = np.asarray(values, dtype=float)
    return {"median": round(float(np.median(v)), 3), "min": round(float(v.min()), 3),
            "max": round(float(v.max()), 3), "n": int(v.size)}


def summarize(rows):
    """The medians and spreads (min-max) of the timed runs' rows, per (case, workers,
    cluster, run): wall, efficiency, unaccounted wall, the load before and after; per
    (case, workers, cluster), the fresh run's wall over the warm one's of the same
    cluster (median of the pairs); per (workers, cluster, run), BBCD-CV's median wall
    over CVT's on the uneven fits. The bar a target is held to is the median."""
    groups, pairs = {}, {}
    for r in rows:
        if r.get("run") not in ("fresh", "warm"):
            continue
        groups.setdefault((r["case"], r["workers"], r["cluster"], r["run"]), []).append(r)
        pairs.setdefault((r["case"], r["workers"], r["cluster"], r.get("rep", 0)), {})[r["run"]] = r["wall_s"]
    out = []
    for (case, W, kind, run), rs in groups.items():
        entry = {"case": case, "workers": W, "cluster": kind, "run": run,
                 "wall_s": _spread([r["wall_s"] for r in rs])}
        for key in ("efficiency", "unaccounted_s", "load_before", "load_1min"):
            values = [r[key] for r in rs if r.get(key) is not None]
            if values:
                entry["load_after" if key == "load_1min" else key] = _spread(values)
        if run == "fresh":
            ratios = [p["fresh"] / p["warm"] for (c, w, k, _), p in pairs.items()
                      if (c, w, k) == (case, W, kind) and {"fresh", "warm"} <= set(p)]
            if ratios:
                entry["fresh_over_warm"] = _spread(ratios)
        if case == "uneven-bbcd" and ("uneven-cvt", W, kind, run) in groups:
            cvt = np.median([r["wall_s"] for r in groups["uneven-cvt", W, kind, run]])
            entry["bbcd_over_cvt"] = round(float(entry["wall_s"]["median"] / cvt), 3)
        out.append(entry)
    return out


def show_summary(summary):
    print("\nmedians over the repetitions (min-max), load average before -> after:", flush=True)
    for e in summary:
        w, eff = e["wall_s"], e.get("efficiency")
        line = (f"  {e['case']:12s} W={e['workers']:<3d} {e['cluster']:10s} {e['run']:5s} "
                f"wall {w['median']:.2f} s ({w['min']:.2f}-{w['max']:.2f}, n={w['n']})")
        if eff:
            line += f"; efficiency {eff['median']:.2f} ({eff['min']:.2f}-{eff['max']:.2f})"
        if "unaccounted_s" in e:
            line += f"; unaccounted {e['unaccounted_s']['median']:.2f} s"
        if "load_before" in e and "load_after" in e:
            line += f"; load {e['load_before']['median']:.1f} -> {e['load_after']['median']:.1f}"
        if "fresh_over_warm" in e:
            f = e["fresh_over_warm"]
            line += f"; fresh/warm {f['median']:.2f} ({f['min']:.2f}-{f['max']:.2f})"
        if "bbcd_over_cvt" in e:
            line += f"; BBCD/CVT wall {e['bbcd_over_cvt']:.2f}"
        print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="2,4,8,16")
    ap.add_argument("--cases", default="sleep,rf,null,bbc,pipe")
    ap.add_argument("--sleep-ms", type=float, default=None,
                    help="the sleeping fits' (median) milliseconds: 20, --simulate 100")
    ap.add_argument("--sleep-configs", type=int, default=None)
    ap.add_argument("--cluster", default="make_client",
                    help="make_client and/or plain (--simulate: both unless told)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--gscv-null", action="store_true")
    ap.add_argument("--no-gscv", action="store_true", help="no GridSearchCV baselines")
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--repeats", type=int, default=None,
                    help="repetitions, interleaved (default 1; --simulate 3)")
    ap.add_argument("--out", default="bench_scale.json")
    args = ap.parse_args()
    if args.simulate:
        args.workers = args.workers if args.workers != "2,4,8,16" else "16,32"
        args.cases = args.cases if args.cases != "sleep,rf,null,bbc,pipe" else "sleep"
        args.sleep_ms = args.sleep_ms or 100.0
        args.sleep_configs = args.sleep_configs or 200
        args.cluster = args.cluster if args.cluster != "make_client" else "make_client,plain"
        args.no_gscv = True
    args.sleep_ms = args.sleep_ms or 20.0
    repeats = args.repeats or (3 if args.simulate else 1)
    workers = [int(w) for w in args.workers.split(",")]
    kinds = [k.strip() for k in args.cluster.split(",")]
    results = Results(args.out)
    print(f"{results.info['cpus']} CPUs, Python {results.info['python']}, bbc_dask "
          f"{results.info['bbc_dask']}; results in {args.out}", flush=True)
    tmp = tempfile.mkdtemp()
    try:
        cases = []
        for name in args.cases.split(","):
            cases += {"sleep": lambda: [Sleep(args.quick, args.sleep_ms, args.sleep_configs)],
                      "uneven": lambda: [Uneven(args.quick, args.sleep_ms, p) for p in ("cvt", "bbcd")],
                      "rf": lambda: [RandomForests(args.quick)], "null": lambda: [Null(args.quick)],
                      "bbc": lambda: [ChunkedBBC(args.quick, tmp)],
                      "pipe": lambda: [Pipe(args.quick)]}[name.strip()]()
        for W in workers:
            for rep in range(repeats):
                for case in interleaved(cases, rep):
                    for kind in interleaved(kinds, rep):
                        run_on_cluster(case, W, kind, rep, tmp, results)
                    if rep == 0:
                        baselines(case, W, tmp, results, args)
        results.summary = summarize(results.rows)
        results.write()
        show_summary(results.summary)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
