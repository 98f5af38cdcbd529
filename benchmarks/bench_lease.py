"""Cost of the object-store lease check that every task makes before it writes its chunk.

On an object store the run lock is a lease object (``<store>/.bbc_lock``,
:class:`bbc_dask.cube.ObjectStoreLock`); each fit task, before it writes its predictions,
reads it (:class:`bbc_dask.cube._lock.LeaseToken`, called by ``ChunkWriter.write_many``:
``fs.cat_file``, one GET on S3) and refuses to write if another run holds it. Measured
against a real S3 server: moto in server mode on 127.0.0.1, started here as
tests/conftest.py starts its ``s3`` fixture (every request an HTTP round trip to another
process on the same cores).

1. **Micro-benchmark**, in this process, interleaved, best of ``--repeat`` rounds of
   ``--calls`` calls each: the lease check itself (``lock.token()()``, the object the
   tasks call), a typical prediction chunk written by the tasks' ``ChunkWriter`` without
   the check, and the same write with the check (as a task makes it); for reference, the
   lease object read by a single GET (s3fs's ``cat_file`` sends a HEAD for the object's
   size first unless told ``max_concurrency=1``, as the check now does). The chunk is the
   study's below: one (repeat, fold) of a 20-configuration block, 100 test samples
   (16 kB of float64).
2. **A whole study** on an ``s3://`` store: a classifier whose fit costs nothing
   (``bench_engine.NullClassifier``), N = 1,000, 20 configurations in one block
   (``configs_per_task=20``), 10 folds x ``--tasks / 10`` repeats: one fit task per
   (repeat, fold), so ``--tasks`` tasks and as many lease checks (counted). Workers are 2
   threads of this process (``make_client(processes=False)``), so that switching the
   check off — ``LeaseToken.__call__`` replaced by a no-op, for this measurement only —
   reaches them. ``run_study(refit=False)`` timed from call to return, as shipped and with
   the check skipped, interleaved, best of ``--repeat`` each; printed: the difference per
   task and per 1,000 tasks (best against best, and the median of each round's pair),
   the ratio, and the time the tasks spent in the check
   (thread-seconds, timed inside the tasks). The driver's own lease check before each
   ledger batch and the heartbeat run in both.

A moto request costs milliseconds of CPU on this machine's cores, shared with the
workers; on real S3 a GET costs a network round trip (tens of ms) and no local CPU.

Run: ``python benchmarks/bench_lease.py [--quick] [--repeat 2] [--calls 200]
[--tasks 300]`` (6 minutes on 2 cores at a load average of 10: every task costs about 20
moto requests, the ledger's included); ``--tasks 1000`` for a study of
1,000 tasks; ``--quick``: 50 calls, 100 tasks.
"""
import argparse
import contextlib
import os
import signal
import threading
import time

import fsspec
import numpy as np

import bbc_dask as bd
from bbc_dask.cube import StoreLocation
from bbc_dask.cube._lock import LeaseToken
from bbc_dask.cube._schema import open_cube
from bench_bbc_cluster import moto_server  # this directory: the scripts run from it
from bench_engine import NullClassifier

N, K, C = 1_000, 10, 20  # samples, folds, configurations (one block)

#: The shipped check, kept before any patch.
SHIPPED = LeaseToken.__call__


class Seen:
    """The lease checks the tasks made during a run: how many, and their seconds."""

    def __init__(self):
        self.lock = threading.Lock()
        self.n, self.seconds = 0, 0.0

    def add(self, seconds):
        with self.lock:
            self.n += 1
            self.seconds += seconds


@contextlib.contextmanager
def lease_check(skipped, seen):
    """``LeaseToken.__call__`` as shipped (timed) or skipped (counted only), for this
    process and its worker threads."""
    if skipped:
        def call(self):
            seen.add(0.0)
    else:
        def call(self):
            t = time.perf_counter()
            try:
                return SHIPPED(self)
            finally:
                seen.add(time.perf_counter() - t)
    LeaseToken.__call__ = call
    try:
        yield seen
    finally:
        LeaseToken.__call__ = SHIPPED


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 4))
    y = (X[:, 0] + rng.normal(size=N) > 0).astype(int)
    return X, y


def study(url, opts, client, n_tasks, X, y):
    """One study of ``n_tasks`` fit tasks (one per (repeat, fold)): its wall seconds."""
    t0 = time.perf_counter()
    bd.run_study(NullClassifier(), {"c": list(range(C))}, X, y, store=url, storage_options=opts,
                 metric="roc_auc", n_splits=K, n_repeats=max(1, n_tasks // K), random_state=0,
                 client=client, progress=False, refit=False, configs_per_task=C)
    return time.perf_counter() - t0


def remove(url, opts):
    loc = StoreLocation(url, opts)
    loc.fs.rm(loc.root, recursive=True)
    loc.fs.invalidate_cache()


def micro(url, opts, calls, repeat):
    """ms per call of: the lease check, the chunk write, the chunk write with the check.
    Best of ``repeat`` rounds (each ``calls`` calls of each, interleaved)."""
    lock = StoreLocation(url, opts).lock().acquire()
    try:
        check = lock.token()
        check()  # this run holds it: the check passes
        cube = open_cube(url, mode="r+", storage_options=opts)
        plain, checked = cube.writer(lambda: None), cube.writer(check)
        pred = cube.group["prediction"]
        values = np.random.default_rng(1).normal(size=(pred.shape[2], C))
        blocks = [(0, list(range(C)), values)]
        fs = fsspec.filesystem(check.protocol, **check.storage_options)  # the check's own
        cases = {"check": check,
                 "write": lambda: plain.write_many(0, 0, blocks),
                 "write+check": lambda: checked.write_many(0, 0, blocks),
                 "get": lambda: fs.cat_file(check.path, max_concurrency=1)}
        for f in cases.values():  # warm: connections, Zarr's codecs
            f()
        best = {name: float("inf") for name in cases}
        for _ in range(repeat):
            for name, f in cases.items():
                t = time.perf_counter()
                for _ in range(calls):
                    f()
                best[name] = min(best[name], (time.perf_counter() - t) / calls * 1e3)
        return best, pred.chunks, values.nbytes
    finally:
        lock.release()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=2, help="rounds and studies, best of")
    ap.add_argument("--calls", type=int, default=None, help="calls per round (default 200)")
    ap.add_argument("--tasks", type=int, default=None, help="fit tasks of a study (default 300)")
    args = ap.parse_args()
    repeat = args.repeat
    calls = args.calls or (50 if args.quick else 200)
    n_tasks = max(K, (args.tasks or (100 if args.quick else 300)) // K * K)
    cores = len(os.sched_getaffinity(0))
    print(f"[lease] {cores} cores on this machine (load average {os.getloadavg()[0]:.1f}); "
          f"moto S3 server on 127.0.0.1; 2 worker threads in this process")
    X, y = data()
    proc, opts = moto_server()
    try:
        with bd.make_client(n_workers=2, threads_per_worker=1, processes=False,
                            dashboard_address=":0") as client:
            # warm: the workers' imports, the S3 sessions; its cube serves the micro-benchmark
            warm = "s3://bench/warm.zarr"
            study(warm, opts, client, 2 * K, X, y)
            best, chunks, nbytes = micro(warm, opts, calls, repeat)
            print(f"1. micro-benchmark, best of {repeat} x {calls} calls "
                  f"(chunk {chunks}, {nbytes / 1e3:.0f} kB float64):")
            print(f"   lease check (as shipped) {best['check']:7.2f} ms per call")
            print(f"   chunk write, no check     {best['write']:7.2f} ms per call")
            print(f"   chunk write + check       {best['write+check']:7.2f} ms per call "
                  f"({best['write+check'] / best['write']:.2f}x the write)")
            print(f"   check / write             {best['check'] / best['write']:7.2f}")
            print(f"   (the lease object by one GET, cat_file(max_concurrency=1): "
                  f"{best['get']:.2f} ms; s3fs's cat_file asks for the size first, a HEAD)")

            walls = {False: [], True: []}
            seen = {False: [], True: []}
            for i in range(repeat):
                for skipped in ((False, True) if i % 2 == 0 else (True, False)):
                    url = f"s3://bench/study-{i}-{int(skipped)}.zarr"
                    with lease_check(skipped, Seen()) as s:
                        walls[skipped].append(study(url, opts, client, n_tasks, X, y))
                    seen[skipped].append(s)
                    remove(url, opts)
        on, off = min(walls[False]), min(walls[True])
        n = seen[False][0].n
        assert all(s.n == n for s in seen[False] + seen[True]), "tasks differ between runs"
        in_task = min(s.seconds for s in seen[False]) / n
        per_task = (on - off) / n
        print(f"2. a study on s3://: N = {N}, {C} configurations x {K} folds x {n_tasks // K} "
              f"repeats, {n} fit tasks (lease checks counted), best of {repeat}:")
        print(f"   as shipped   {on:7.2f} s   ({', '.join(f'{w:.2f}' for w in walls[False])})")
        print(f"   check skipped {off:6.2f} s   ({', '.join(f'{w:.2f}' for w in walls[True])})")
        paired = float(np.median([a - b for a, b in zip(walls[False], walls[True])])) / n
        print(f"   ratio {on / off:.3f}; difference {on - off:+.2f} s: {per_task * 1e3:+.1f} ms "
              f"per task, {per_task * 1e3:+.1f} s per study of 1,000 tasks (median of the "
              f"rounds' paired differences: {paired * 1e3:+.1f} ms per task)")
        print(f"   inside the tasks: {in_task * 1e3:.1f} ms per check (thread time; "
              f"{in_task * 1e3 / 2:.1f} ms of wall per task with 2 threads, "
              f"{in_task * 1e3 / 2:.1f} s per 1,000 tasks); micro-benchmark predicts "
              f"{best['check'] / 2:.1f} s per 1,000 tasks")
        print(f"[lease] load average at the end {os.getloadavg()[0]:.1f} on {cores} cores")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


if __name__ == "__main__":
    main()
