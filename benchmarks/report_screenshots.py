"""Build one small study of each kind, write its report, and screenshot each report's HTML
in headless Chromium, so that a person can look at every picture a user would get.

Studies: the demo (``bbc-dask demo``'s study file, pipelines, dropping off), a BBCD study
whose dropping removes configurations, a study with one configuration, a multiclass and
a regression study (the latter a study file with BBCD), a study file of pipelines
(examples/studies/breast_cancer.yaml) and a nested cross-validation.

Run::

    python benchmarks/report_screenshots.py OUT_DIR [--only NAME ...]

``OUT_DIR/<name>/report/`` holds each report (PNGs and index.html) and
``OUT_DIR/<name>.png`` its full-page screenshot. Chromium is looked up as ``chromium``
(Debian's package), ``chromium-browser`` or ``google-chrome``; without one the reports
are still written and the script says that it took no screenshots. Stores are reused when
present (a study resumes), so a second run only redraws.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(browser, html_path, png_path, width=1200, height=5200):
    """A full-page PNG of ``html_path`` by headless Chromium (no network, no profile)."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
             f"--screenshot={png_path}", f"--window-size={width},{height}",
             "file://" + os.path.abspath(html_path)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


def _study_file(raw, store, address):
    from bbc_dask.cli._commands import run_study_file
    from bbc_dask.cli._studyfile import resolve_study_file

    raw = json.loads(json.dumps(raw))
    raw["store"] = store
    return run_study_file(resolve_study_file(raw), scheduler=address, progress=False)


def demo(store, address):
    from bbc_dask.cli._commands import DEMO

    return _study_file(DEMO, store, address)


def pipeline_file(store, address):
    import yaml

    with open(os.path.join(ROOT, "examples", "studies", "breast_cancer.yaml")) as f:
        raw = yaml.safe_load(f)
    raw["cv"] = {"splits": 5, "repeats": 1}
    return _study_file(raw, store, address)


def regression_bbcd(store, address):
    import yaml

    with open(os.path.join(ROOT, "examples", "studies", "diabetes_bbcd.yaml")) as f:
        raw = yaml.safe_load(f)
    return _study_file(raw, store, address)


def _run(store, client, estimator, grid, X, y, **kw):
    import bbc_dask as bd

    return bd.run_study(estimator, grid, X, y, store=store, client=client, progress=False,
                        random_state=0, refit=False, **kw)


def bbcd_drops(store, client):
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(n_samples=400, n_features=20, n_informative=4, random_state=0)
    grid = {"C": list(np.logspace(-5, 2, 16)), "penalty": ["l2"]}
    return _run(store, client, LogisticRegression(max_iter=500), grid, X, y, metric="roc_auc",
                n_splits=8, dropping={"alpha": 0.9, "min_predictions": 50})


def one_config(store, client):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    return _run(store, client, make_pipeline(StandardScaler(), LogisticRegression()),
                {"logisticregression__C": [1.0]}, X, y, metric="roc_auc", n_splits=5,
                n_repeats=2)


def multiclass(store, client):
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    grid = [{"logisticregression__C": [0.01, 0.1, 1.0, 10.0]},
            {"logisticregression": [RandomForestClassifier(n_estimators=30, random_state=0)],
             "logisticregression__max_depth": [1, 2, 4]}]
    return _run(store, client, make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
                grid, X, y, metric="accuracy", n_splits=5, n_repeats=2)


def nested(store, client):
    import bbc_dask as bd
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    return bd.nested_cv(make_pipeline(StandardScaler(), LogisticRegression()),
                        {"logisticregression__C": [0.01, 0.1, 1.0, 10.0]}, X, y, store=store,
                        metric="roc_auc", n_outer=5, n_inner=4, n_repeats=2, random_state=0,
                        client=client, progress=False)


#: name -> (builder, takes the scheduler's address (study files) rather than a client)
STUDIES = {
    "demo": (demo, True),
    "bbcd_drops": (bbcd_drops, False),
    "one_config": (one_config, False),
    "multiclass": (multiclass, False),
    "regression_bbcd": (regression_bbcd, True),
    "pipeline_file": (pipeline_file, True),
    "nested": (nested, False),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--only", nargs="*", choices=sorted(STUDIES), default=None)
    parser.add_argument("--height", type=int, default=5200,
                        help="The screenshots' height in pixels (a page longer is cut).")
    args = parser.parse_args(argv)
    import bbc_dask as bd
    from bbc_dask.report import write_nested_report, write_report
    from distributed import Client, LocalCluster

    out = os.path.abspath(args.out_dir)
    os.makedirs(out, exist_ok=True)
    names = args.only or list(STUDIES)
    pages = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        for name in names:
            build, by_address = STUDIES[name]
            store = os.path.join(out, name, "study.zarr")
            result = build(store, cluster.scheduler_address if by_address else client)
            report_dir = os.path.join(out, name, "report")
            if isinstance(result, bd.NestedCVResult):
                pages[name] = write_nested_report(result, report_dir)
            else:
                pages[name] = write_report(result, report_dir)
            print(f"{name}: {pages[name]}")
    browser = _chromium()
    if browser is None:
        print("no Chromium found (chromium, chromium-browser, google-chrome): reports written, "
              "no screenshots taken", file=sys.stderr)
        return 0
    for name, page in pages.items():
        png = os.path.join(out, f"{name}.png")
        screenshot(browser, page, png, height=args.height)
        print(f"{name}: screenshot {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
