"""Regression: diabetes with ridge and gradient boosting, scored by negative MSE.

Run: ``python examples/regression.py [--quick] [--scheduler ADDRESS]``.
"""
import tempfile

from sklearn.datasets import load_diabetes
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge

import bbc_dask as bd
from _common import client, parser, show


def main(args):
    X, y = load_diabetes(return_X_y=True)
    grid = [{"model": [Ridge()], "model__alpha": [1e-3, 1e-2, 0.1, 1, 10, 100]},
            {"model": [HistGradientBoostingRegressor(random_state=0, max_iter=50 if args.quick else 200)],
             "model__learning_rate": [0.03, 0.1], "model__max_depth": [2, 3]}]
    from sklearn.pipeline import Pipeline

    with tempfile.TemporaryDirectory() as d, client(args) as c:
        study = bd.run_study(Pipeline([("model", Ridge())]), grid, X, y, store=f"{d}/diabetes.zarr",
                             metric="neg_mean_squared_error", n_splits=5 if args.quick else 10,
                             n_repeats=1, random_state=0, client=c, progress=False)
        B = 200 if args.quick else 1000
        print(f"winner: {study.best_params_}")
        show("BBC", study.bbc(n_bootstraps=B, random_state=0))
        show("BBC-F", study.bbc_f(n_bootstraps=B, random_state=0))
        print("(negative mean squared error: closer to 0 is better)")


if __name__ == "__main__":
    main(parser(__doc__).parse_args())
