"""Quickstart: BBCSearchCV on breast cancer — logistic regression, SVM and random forest.

Cross-validates every configuration on a local Dask cluster, refits the winner and prints
its naive CV score next to the BBC and BBC-F estimates (95% CI and one-sided lower bound).

Run: ``python examples/quickstart.py [--quick] [--scheduler ADDRESS]``.
"""
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import bbc_dask as bd
from _common import client, parser, show


def main(args):
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    pipe = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression(max_iter=2000))])
    grid = [
        {"model": [LogisticRegression(max_iter=2000)], "model__C": [1e-3, 1e-2, 0.1, 1, 10]},
        {"model": [SVC()], "model__C": [0.1, 1, 10], "model__gamma": ["scale", 1e-3, 1e-2]},
        {"model": [RandomForestClassifier(n_estimators=20 if args.quick else 100, random_state=0)],
         "model__max_depth": [2, 4, None]},
    ]
    with client(args) as c:
        search = bd.BBCSearchCV(pipe, grid, scoring="roc_auc", cv=5, n_repeats=1 if args.quick else 2,
                                n_bootstraps=200 if args.quick else 1000, client=c, random_state=0)
        search.fit(X_tr, y_tr)
    print(f"{len(search.cv_results_['params'])} configurations; winner: {search.best_params_}")
    show("BBC", search.bbc_)
    show("BBC-F", search.bbc_f_)
    print(f"held-out AUC of the refit winner: {search.score(X_te, y_te):.4f}")


if __name__ == "__main__":
    main(parser(__doc__).parse_args())
