"""BBC on a Zarr cube mapped over configuration chunks on a LocalCluster, against the
in-memory kernel on the same (loaded) cube, in this same process.

1. Accuracy, N x C x 2 repeats float32 (default 50,000 x 400), B = 200; and ROC AUC on
   N x 100 x 2: the in-memory ``bbc`` on the loaded arrays vs ``bbc`` on the cube opened
   with xarray, with 1 and 2 workers (one thread each). Printed: seconds and the ratio
   cluster / in-memory (the load from Zarr is timed apart and not in the kernel time).
2. Largest cube under a fixed worker memory limit (default 400 MB, 2 workers): cubes of
   growing size (samples x configurations), each run while a watcher records worker
   restarts and pauses; printed: the cube's size and each worker's peak RSS.
   Every cluster result is checked equal (bit for bit) to the in-memory one where that
   fits in this process.

Run: ``python benchmarks/bench_bbc_cluster.py [--quick] [--limit 400MB]``.
"""
import argparse
import os
import shutil
import tempfile
import threading
import time

import numpy as np
import xarray as xr
import zarr
from distributed import Client, LocalCluster

import bbc_dask as bd


def make_cube(path, n, c, r, metric, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    g = zarr.open_group(path, mode="w", zarr_format=3)
    z = g.create_array("p", shape=(n, c, r), chunks=(n, 10, 1), dtype="float32",
                       dimension_names=["sample", "config", "repeat"])
    quality = rng.uniform(0.55, 0.75, c) if metric == "accuracy" else rng.uniform(0, 1, c)
    for c0 in range(0, c, 50):
        q = quality[None, c0:c0 + 50, None]
        w = min(50, c - c0)
        if metric == "accuracy":
            ok = rng.random((n, w, r)) < q
            z[:, c0:c0 + w, :] = np.where(ok, y[:, None, None], 1 - y[:, None, None])
        else:
            z[:, c0:c0 + w, :] = rng.normal(size=(n, w, r)) + y[:, None, None] * q
    return y


def _probe_start():
    import builtins
    import threading as th
    import time as tm

    import psutil

    p = psutil.Process()
    st = {"peak": p.memory_info().rss}

    def loop():
        while True:
            st["peak"] = max(st["peak"], p.memory_info().rss)
            tm.sleep(0.01)

    th.Thread(target=loop, daemon=True).start()
    builtins._bbc_probe = st


def _probe_read():
    import builtins

    return builtins._bbc_probe["peak"] / 2**20


def watched(client, fn):
    seen, stop = {"workers": set(), "status": set()}, threading.Event()

    def watch():
        while not stop.is_set():
            info = client.scheduler_info()["workers"]
            seen["workers"].update(info)
            seen["status"].update(w.get("status", "running") for w in info.values())
            stop.wait(0.1)

    before = set(client.scheduler_info()["workers"])
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        out = fn()
    finally:
        stop.set()
        t.join()
    ok = seen["workers"] == before and seen["status"] <= {"running"}
    return out, ok, seen


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def same(a, b):
    return (np.array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
            and np.array_equal(a.winners, b.winners))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--limit", default="400MB")
    args = ap.parse_args()
    n, c, c_auc, B = (5000, 60, 20, 64) if args.quick else (50_000, 400, 100, 200)
    tmp = tempfile.mkdtemp(prefix="bbc_bench_")
    try:
        print(f"1. speed: N={n}, C={c} (accuracy) / {c_auc} (roc_auc), R=2 float32, B={B}")
        for metric, cc in (("accuracy", c), ("roc_auc", c_auc)):
            path = os.path.join(tmp, f"{metric}.zarr")
            y = make_cube(path, n, cc, 2, metric)
            arr, t_load = timed(lambda: zarr.open_array(path + "/p")[...])
            bd.bbc(arr[:500, :2], y[:500], metric=metric, n_bootstraps=B, random_state=0)  # warm
            mem, t_mem = timed(lambda: bd.bbc(arr, y, metric=metric, n_bootstraps=B, random_state=0))
            cube = xr.open_zarr(path, consolidated=False, zarr_format=3)["p"]
            print(f"   {metric:9s} in-memory kernel {t_mem:7.2f} s (load {t_load:.2f} s)")
            for workers in (1, 2):
                with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cl, \
                        Client(cl) as cli:
                    bd.bbc(cube, y, metric=metric, n_bootstraps=B, random_state=0)  # warm (JIT, imports)
                    got, t = timed(lambda: bd.bbc(cube, y, metric=metric, n_bootstraps=B, random_state=0))
                print(f"   {metric:9s} cluster {workers} worker(s) {t:7.2f} s   ratio {t / t_mem:5.2f}"
                      f"   equal: {same(got, mem)}")
            del arr
            shutil.rmtree(path)

        print(f"2. largest cube under {args.limit} per worker (2 workers), accuracy, B={B}")
        sizes = [(n, c), (2 * n, c)] if args.quick else [(50_000, 400), (50_000, 2000), (100_000, 400),
                                                           (150_000, 400)]
        for ns, cs in sizes:
            path = os.path.join(tmp, "big.zarr")
            y = make_cube(path, ns, cs, 2, "accuracy")
            gb = ns * cs * 2 * 4 / 1e9
            with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=args.limit,
                              dashboard_address=":0") as cl, Client(cl) as cli:
                cli.run(_probe_start)
                cube = xr.open_zarr(path, consolidated=False, zarr_format=3)["p"]
                (got, t), ok, seen = watched(
                    cli, lambda: timed(lambda: bd.bbc(cube, y, metric="accuracy", n_bootstraps=B,
                                                      random_state=0)))
                peaks = sorted(cli.run(_probe_read).values())
            print(f"   N={ns:7d} C={cs:5d}  {gb:5.2f} GB float32  {t:7.1f} s  worker peak RSS "
                  f"{', '.join(f'{p:.0f}' for p in peaks)} MiB  "
                  f"{'no restart/pause' if ok else 'RESTARTED/PAUSED ' + str(seen['status'])}")
            shutil.rmtree(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
