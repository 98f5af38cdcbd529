"""Interrupt and resume: a study is killed part-way (SIGKILL) and run again; the second
run fits only the unfinished cells and ends with the same cube as an uninterrupted run.

Run: ``python examples/interrupt_resume.py [--quick]``.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

import bbc_dask as bd
from _common import parser


def study(store, n_workers=1):
    from sklearn.datasets import load_breast_cancer
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_breast_cancer(return_X_y=True)
    grid = {"max_depth": [1, 2, 3, 4, 5, 6], "min_samples_leaf": [1, 2, 5, 10, 20]}
    with bd.make_client("local", n_workers=n_workers, dashboard_address=":0") as c:
        return bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=store,
                            metric="roc_auc", n_splits=5, n_repeats=2, random_state=0, client=c,
                            progress=False, configs_per_task=1, refit=False)


def main(args):
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "study.zarr")
        child = subprocess.Popen([sys.executable, __file__, "--child", store], start_new_session=True)
        while True:  # kill once a third of the cells are in the store
            try:
                st = bd.open_study(store).status()
                if st["done"] >= st["cells"] // 3:
                    break
            except Exception:
                pass
            if child.poll() is not None:
                break
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        st = bd.open_study(store).status()
        print(f"killed with {st['done']} of {st['cells']} cells done")
        s = study(store)
        print(f"resumed: fitted {s.n_fits_} models for the {st['cells'] - st['done']} unfinished cells")
        calm = study(os.path.join(d, "calm.zarr"))
        same = np.array_equal(s.cube["prediction"].values, calm.cube["prediction"].values, equal_nan=True)
        print(f"cube equal to an uninterrupted run: {same}")
        print(f"BBC estimate: {s.bbc(random_state=0, n_bootstraps=200).estimate:.4f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        study(sys.argv[2])
    else:
        main(parser(__doc__).parse_args())
