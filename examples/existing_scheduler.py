"""Connecting to an existing Dask scheduler.

With ``--scheduler ADDRESS`` it connects to yours (e.g. ``tcp://10.0.0.5:8786``);
without, it starts a ``dask scheduler`` and two ``dask worker`` processes itself, as
you would on a cluster's nodes, runs a study through them and stops them.

Run: ``python examples/existing_scheduler.py [--quick] [--scheduler ADDRESS]``.
"""
import os
import subprocess
import sys
import tempfile
import time

from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import bbc_dask as bd
from _common import parser, show


def start_cluster(d):
    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    sched_file = os.path.join(d, "scheduler.json")
    procs = [subprocess.Popen([dask, "scheduler", "--scheduler-file", sched_file, "--port", "0",
                               "--dashboard-address", ":0"], stderr=subprocess.DEVNULL)]
    for _ in range(100):
        if os.path.exists(sched_file):
            break
        time.sleep(0.1)
    for _ in range(2):
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", sched_file, "--nthreads", "1",
                                       "--dashboard-address", ":0"], stderr=subprocess.DEVNULL))
    import json

    return json.load(open(sched_file))["address"], procs


def main(args):
    X, y = load_breast_cancer(return_X_y=True)
    with tempfile.TemporaryDirectory() as d:
        procs = []
        address = args.scheduler
        if address is None:
            address, procs = start_cluster(d)
        try:
            with bd.make_client("address", address=address) as c:
                c.wait_for_workers(1 if args.scheduler else 2, timeout=60)
                print(f"connected to {address} ({len(c.scheduler_info()['workers'])} workers)")
                # scaled features: lbfgs converges in a few iterations (unscaled, it did not
                # in 5,000 and warned)
                s = bd.run_study(make_pipeline(StandardScaler(), LogisticRegression()),
                                 {"logisticregression__C": [0.01, 0.1, 1, 10]}, X, y,
                                 store=os.path.join(d, "s.zarr"), metric="roc_auc", n_splits=5,
                                 random_state=0, client=c, progress=False)
                show("BBC", s.bbc(n_bootstraps=200 if args.quick else 1000, random_state=0))
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(30)


if __name__ == "__main__":
    main(parser(__doc__).parse_args())
