"""Multiclass with repeats: wine, one-vs-rest AUC (class probabilities in the cube).

Run: ``python examples/multiclass.py [--quick] [--scheduler ADDRESS]``.
"""
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import bbc_dask as bd
from _common import client, parser, show


def main(args):
    X, y = load_wine(return_X_y=True)
    pipe = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression(max_iter=2000))])
    grid = [{"model": [LogisticRegression(max_iter=2000)], "model__C": [1e-3, 1e-2, 0.1, 1]},
            {"model": [KNeighborsClassifier()], "model__n_neighbors": [1, 5, 15, 30]}]
    with client(args) as c:
        s = bd.BBCSearchCV(pipe, grid, scoring="roc_auc_ovr", cv=5, n_repeats=2 if args.quick else 5,
                           n_bootstraps=200 if args.quick else 1000, client=c, random_state=0).fit(X, y)
    cube = s.study_.cube
    print(f"cube: {dict(cube['prediction'].sizes)} (class probabilities per repeat)")
    print(f"winner: {s.best_params_}")
    show("BBC", s.bbc_)
    show("BBC-F", s.bbc_f_)


if __name__ == "__main__":
    main(parser(__doc__).parse_args())
