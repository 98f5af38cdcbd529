"""BBCD-CV on a larger synthetic task: drop hopeless configurations between fold waves.

Runs the same grid with and without dropping and prints how many models each trained,
the winners and their estimates.

Run: ``python examples/bbcd_large.py [--quick] [--scheduler ADDRESS]``.
"""
import tempfile

from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd
from _common import client, parser, show


def main(args):
    n = 1500 if args.quick else 5000
    X, y = make_classification(n_samples=n, n_features=30, n_informative=8, random_state=0)
    grid = [{"model": [LogisticRegression(max_iter=1000)], "model__C": [1e-4, 1e-3, 1e-2, 0.1, 1]},
            {"model": [DecisionTreeClassifier(random_state=0)], "model__max_depth": [1, 2, 3, 5, 8, 12],
             "model__min_samples_leaf": [1, 5, 20, 50] if not args.quick else [1, 20]}]
    from sklearn.pipeline import Pipeline

    est = Pipeline([("model", LogisticRegression())])
    B = 200 if args.quick else 1000
    with tempfile.TemporaryDirectory() as d, client(args) as c:
        out = {}
        for name, drop in (("CVT", None), ("BBCD", bd.Dropping(alpha=0.99, min_predictions=100))):
            s = bd.run_study(est, grid, X, y, store=f"{d}/{name}.zarr", metric="roc_auc", n_splits=10,
                             random_state=0, client=c, progress=False, refit=False, dropping=drop)
            out[name] = s
            trained, full = s.models_trained
            print(f"{name}: trained {trained} of {full} models ({trained / full:.0%}); "
                  f"winner config {s.best_index_}; {len(s.dropped)} dropped")
            show(name, s.bbc(n_bootstraps=B, random_state=0))
        for entry in out["BBCD"].dropping_log:
            if entry["tested"]:
                print(f"  wave {entry['wave'] + 1}: {entry['active_before']} -> {entry['active_after']} active")


if __name__ == "__main__":
    main(parser(__doc__).parse_args())
