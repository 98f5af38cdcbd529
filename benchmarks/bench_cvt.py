"""run_study against scikit-learn's GridSearchCV(n_jobs=2) and dask-ml's GridSearchCV:
same grid, same folds, refit on no side, every side in one process, ratios from one run of
this script (cases A-C and E run each side ``--repeat`` times, default 2, interleaved: the best
time of each side counts, as timeit's does, since this machine's noise only ever slows).

A. 400 small trees: DecisionTreeClassifier(random_state=0), max_depth x min_samples_leaf
   (20 x 20) on breast cancer, 10 folds.
B. 40 LogisticRegression configurations (StandardScaler -> LogisticRegression(max_iter=2000),
   40 values of C) + 20 RandomForestClassifier(n_estimators=50, random_state=0)
   configurations (max_depth x max_features, after the same scaler), 10 folds, breast cancer.
C. StandardScaler -> PCA -> SVC on make_classification(3000 x 200, random_state=0): PCA
   n_components [10, 20, 50] x SVC C [0.1, 1, 10] x gamma ["scale", 0.01] = 18
   configurations, 5 folds.
E. The preprocessing-pipeline grid: StandardScaler -> PCA -> SVC on make_classification(3000
   x 200, random_state=0): PCA n_components [10, 20, 50] x SVC C [0.1, 1, 10] x gamma
   ["scale", 0.001, 0.01, 0.1] = 36 configurations, 10 folds (each fold's scaler and PCA
   are shared by the 12 SVCs after them, as dask-ml shares them).
D. 2,000 configurations x 10 folds x 5 repeats (100,000 fits of a tiny tree): the driver's
   peak RSS (target < 1 GiB) and the most tasks the driver ever had in flight (counted at
   each submission; submission never builds a graph of all fits). run_study alone; it
   takes about 2.5 minutes here (142 and 200 s in two runs with the test suite running
   alongside); leave it out with ``--cases abc``.

Metric: ROC AUC (GridSearchCV: scoring="roc_auc"). The three sides:

- run_study on a 2-worker local cluster (``bd.make_client(n_workers=2,
  dashboard_address=":0")``, one thread per worker), default ``configs_per_task``,
  ``progress=False``, ``refit=False``; its time includes every write to its Zarr store.
- sklearn.model_selection.GridSearchCV(n_jobs=2, refit=False) with
  ``cv=PredefinedSplit(test_fold=...)``: the folds run_study stored for repeat 0, read back
  with ``bd.open_study(store).cube["fold"].values[:, 0]`` (so run_study always runs first).
- dask_ml.model_selection.GridSearchCV(refit=False, iid=False), the same PredefinedSplit, on
  the same Dask client (``scheduler=client``). If dask-ml cannot be imported or fails with the
  installed dask / scikit-learn, its column says ``unavailable`` and a line
  ``dask-ml: unavailable (<reason>)`` gives the reason; the run goes on.

Before the cases every side fits a 2-configuration grid once (untimed), so worker and
process-pool start-up is charged to no case. Each case prints each side's time, the ratio
run_study / peer (target <= 1.0 against both peers on every grid), the largest difference
between run_study's fold AUCs and each peer's split scores (same folds, same fits: ~0),
and each side's best configuration: GridSearchCV picks the best mean of fold AUCs,
run_study the best pooled AUC, so the two may differ; run_study's best by mean of fold AUCs
is printed as well. Nothing is asserted.

Run: ``python benchmarks/bench_cvt.py [--quick] [--cases abced] [--repeat 2] [--configs-per-task 1,25]``
(``--quick`` shrinks every grid for a smoke run; ``--configs-per-task`` adds case A rows
for run_study with those values, against the same peer times).
"""
import argparse
import resource
import shutil
import tempfile
import threading
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, ParameterGrid, PredefinedSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd

TARGET = 1.0  # run_study / peer, on every grid, against both peers


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reason(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:160]


class DaskML:
    """dask-ml's GridSearchCV, or why it cannot run here."""

    def __init__(self):
        try:
            import dask_ml
            from dask_ml.model_selection import GridSearchCV as DaskGridSearchCV
        except Exception as exc:  # noqa: BLE001 - not installed, or fails to import here
            self.cls, self.version, self.why = None, None, _reason(exc)
        else:
            self.cls, self.version, self.why = DaskGridSearchCV, dask_ml.__version__, None

    def fit(self, est, grid, X, y, cv, client):
        """(seconds, cv_results_, None), or (None, None, why) when it cannot run."""
        if self.cls is None:
            return None, None, self.why
        try:
            t = time.perf_counter()
            # iid=False: the plain mean of fold scores, as scikit-learn's (dask-ml's
            # default weights folds by their size)
            search = self.cls(est, grid, scoring="roc_auc", cv=cv, refit=False, iid=False,
                              scheduler=client).fit(X, y)
            return time.perf_counter() - t, search.cv_results_, None
        except Exception as exc:  # noqa: BLE001 - e.g. a private sklearn API it uses changed
            return None, None, _reason(exc)


def _by_params(study_params, grid):
    """Column of each peer configuration (ParameterGrid order) in run_study's order."""
    def key(p):
        return repr(sorted(p.items()))

    where = {key(p): i for i, p in enumerate(study_params)}
    return np.array([where[key(p)] for p in ParameterGrid(grid)])


def _peer_check(res, order, ours_folds):
    """(max |run_study fold AUC - peer split score|, peer's best config in run_study's
    numbering, its mean fold AUC)."""
    n_splits = ours_folds.shape[0]
    theirs = np.array([res[f"split{k}_test_score"] for k in range(n_splits)])
    diff = float(np.nanmax(np.abs(ours_folds[:, order] - theirs)))
    best = int(np.argmin(res["rank_test_score"]))  # GridSearchCV's best_index_ rule
    return diff, int(order[best]), float(res["mean_test_score"][best])


def compare(tag, est, grid, X, y, client, tmp, dml, n_splits, cpts=(), repeat=1):
    """Time run_study, GridSearchCV(n_jobs=2) and dask-ml on the same folds, ``repeat``
    times interleaved (each side's best time counts: this machine's noise is one-sided);
    print and return the rows of the summary table."""
    store = f"{tmp}/{tag}.zarr"
    times = {"ours": [], "sk": [], "dml": []}
    for rep in range(repeat):
        shutil.rmtree(store, ignore_errors=True)
        t = time.perf_counter()
        s = bd.run_study(est, grid, X, y, store=store, metric="roc_auc", n_splits=n_splits,
                         random_state=0, client=client, progress=False, refit=False)
        times["ours"].append(time.perf_counter() - t)
        if rep == 0:
            folds = bd.open_study(store).cube["fold"].values[:, 0]
            cv = PredefinedSplit(test_fold=folds)
            n_cfg = len(s.params)
            res = s.cv_results_
            ours_folds = np.array([res[f"split{k}_test_score"] for k in range(n_splits)])
            mean = np.where(np.isnan(res["mean_test_score"]), -np.inf, res["mean_test_score"])
            best_pooled, best_mean = s.best_index_, int(np.argmax(mean))
        shutil.rmtree(store, ignore_errors=True)

        t = time.perf_counter()
        sk = GridSearchCV(est, grid, scoring="roc_auc", cv=cv, n_jobs=2, refit=False).fit(X, y)
        times["sk"].append(time.perf_counter() - t)

        took, dml_res, why = dml.fit(est, grid, X, y, cv, client)
        times["dml"].append(took)
        if rep == 0:
            order = _by_params(s.params, grid)
            sk_diff, sk_best, sk_score = _peer_check(sk.cv_results_, order, ours_folds)
            got = why is None
            if got:
                dml_diff, dml_best, dml_score = _peer_check(dml_res, order, ours_folds)
    ours, sk_time = min(times["ours"]), min(times["sk"])
    dml_time = min(times["dml"]) if got else None
    if repeat > 1:
        print(f"    [{tag.upper()}] each run (s): " + "; ".join(
            f"{side} " + ", ".join(f"{v:.2f}" for v in vals)
            for side, vals in times.items() if None not in vals))
    print(f"[{tag.upper()}] {n_cfg} configs x {n_splits} folds: run_study {ours:.2f} s, "
          f"GridSearchCV(n_jobs=2) {sk_time:.2f} s (ratio {ours / sk_time:.2f}), "
          + (f"dask-ml {dml_time:.2f} s (ratio {ours / dml_time:.2f})" if got
             else f"dask-ml: unavailable ({why})"))
    print(f"    best config: run_study {best_pooled} by pooled AUC "
          f"({res['pooled_test_score'][best_pooled]:.5f}), {best_mean} by mean fold AUC "
          f"({mean[best_mean]:.5f}); GridSearchCV {sk_best} ({sk_score:.5f}); "
          + (f"dask-ml {dml_best} ({dml_score:.5f})" if got else "dask-ml -"))
    print(f"    max |fold AUC difference| vs run_study: GridSearchCV {sk_diff:.1e}"
          + (f", dask-ml {dml_diff:.1e}" if got else ""))
    rows = [{"case": tag.upper(), "size": f"{n_cfg} x {n_splits}", "ours": ours, "sk": sk_time,
             "dml": dml_time, "why": why,
             "best": (best_pooled, best_mean, sk_best, dml_best if got else None)}]

    for cpt in cpts:  # run_study alone with other batching, against the same peer times
        t = time.perf_counter()
        bd.run_study(est, grid, X, y, store=f"{store}-{cpt}", metric="roc_auc",
                     n_splits=n_splits, random_state=0, client=client, progress=False,
                     refit=False, configs_per_task=cpt)
        took = time.perf_counter() - t
        shutil.rmtree(f"{store}-{cpt}", ignore_errors=True)
        print(f"    {cpt} configs per task: run_study {took:.2f} s (ratio "
              f"{took / sk_time:.2f} vs GridSearchCV"
              + (f", {took / dml_time:.2f} vs dask-ml)" if got else ")"))
        rows.append({**rows[0], "case": f"{tag.upper()} cpt={cpt}", "ours": took, "best": None})
    return rows


def case_a(client, tmp, quick, dml, cpts, repeat):
    X, y = load_breast_cancer(return_X_y=True)
    n, k = (20, 10) if not quick else (4, 3)
    grid = {"max_depth": list(range(1, n + 1)), "min_samples_leaf": list(range(1, n + 1))}
    return compare("a", DecisionTreeClassifier(random_state=0), grid, X, y, client, tmp, dml,
                   k, cpts, repeat)


def case_b(client, tmp, quick, dml, cpts, repeat):
    X, y = load_breast_cancer(return_X_y=True)
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(max_iter=2000))])
    n_lr, depths, k = ((40, [2, 3, 4, 5, 6, 7, 8, 10, 12, None], 10) if not quick
                       else (4, [2, None], 3))
    grid = [
        {"clf": [LogisticRegression(max_iter=2000)],
         "clf__C": [float(c) for c in np.logspace(-4, 4, n_lr)]},
        {"clf": [RandomForestClassifier(n_estimators=50, random_state=0)],
         "clf__max_depth": depths, "clf__max_features": ["sqrt", 0.5]},
    ]
    return compare("b", pipe, grid, X, y, client, tmp, dml, k, repeat=repeat)


def case_c(client, tmp, quick, dml, cpts, repeat):
    n, p, k = (3000, 200, 5) if not quick else (600, 40, 3)
    X, y = make_classification(n_samples=n, n_features=p, random_state=0)
    pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(random_state=0)), ("svc", SVC())])
    grid = ({"pca__n_components": [10, 20, 50], "svc__C": [0.1, 1, 10],
             "svc__gamma": ["scale", 0.01]} if not quick
            else {"pca__n_components": [10], "svc__C": [1], "svc__gamma": ["scale", 0.01]})
    return compare("c", pipe, grid, X, y, client, tmp, dml, k, repeat=repeat)


def case_e(client, tmp, quick, dml, cpts, repeat):
    n, p, k = (3000, 200, 10) if not quick else (600, 40, 3)
    X, y = make_classification(n_samples=n, n_features=p, random_state=0)
    pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(random_state=0)), ("svc", SVC())])
    grid = ({"pca__n_components": [10, 20, 50], "svc__C": [0.1, 1, 10],
             "svc__gamma": ["scale", 0.001, 0.01, 0.1]} if not quick
            else {"pca__n_components": [10, 20], "svc__C": [1], "svc__gamma": ["scale", 0.01]})
    return compare("e", pipe, grid, X, y, client, tmp, dml, k, repeat=repeat)


def case_d(client, tmp, quick, dml, cpts, repeat):
    X, y = make_classification(200, 5, n_informative=3, random_state=0)
    n_cfg, n_splits, n_rep = (2000, 10, 5) if not quick else (100, 3, 2)
    grid = {"max_depth": [1, 2, 3, 4], "min_samples_leaf": list(range(1, n_cfg // 4 + 1))}
    peak = {"rss": rss_mib(), "in_flight": 0, "tasks": 0}
    stop = threading.Event()
    live = []

    def sampler():
        while not stop.is_set():
            peak["rss"] = max(peak["rss"], rss_mib())
            stop.wait(0.05)

    # Count the futures the driver holds unfinished at each submission (engine internals:
    # when they change, the count is reported as not measured rather than guessed).
    try:
        from bbc_dask.engine import _waves as _run

        orig = _run._Executor._submit
    except (ImportError, AttributeError):
        _run = orig = None

    def counting_submit(self, group):
        fut = orig(self, group)
        live[:] = [f for f in live if not f.done()]
        live.append(fut)
        peak["in_flight"] = max(peak["in_flight"], len(live))
        peak["tasks"] += 1
        return fut

    if orig is not None:
        _run._Executor._submit = counting_submit
    th = threading.Thread(target=sampler, daemon=True)
    base = rss_mib()
    th.start()
    t = time.perf_counter()
    try:
        s = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y, store=f"{tmp}/d.zarr",
                         metric="roc_auc", n_splits=n_splits, n_repeats=n_rep, random_state=0,
                         client=client, progress=False, refit=False)
    finally:
        stop.set()
        th.join()
        if orig is not None:
            _run._Executor._submit = orig
    took = time.perf_counter() - t
    fits = s.n_fits_
    shutil.rmtree(f"{tmp}/d.zarr", ignore_errors=True)
    flight = (f"at most {peak['in_flight']} tasks in flight of {peak['tasks']} submitted"
              if orig is not None else "tasks in flight not measured (engine internals changed)")
    print(f"[D] {len(s.params)} configs x {n_splits} folds x {n_rep} repeats = {fits} fits in "
          f"{took:.0f} s: driver RSS {base:.0f} MiB before, peak {peak['rss']:.0f} MiB "
          f"(target < 1024 MiB); {flight}")
    return []


def warm_up(client, tmp, dml):
    """One tiny fit per side, untimed: worker imports, loky's process pool, dask-ml's
    first graph."""
    X, y = load_breast_cancer(return_X_y=True)
    est, grid = DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2]}
    bd.run_study(est, grid, X, y, store=f"{tmp}/warm.zarr", metric="roc_auc", n_splits=2,
                 random_state=0, client=client, progress=False, refit=False)
    cv = PredefinedSplit(bd.open_study(f"{tmp}/warm.zarr").cube["fold"].values[:, 0])
    shutil.rmtree(f"{tmp}/warm.zarr", ignore_errors=True)
    GridSearchCV(est, grid, scoring="roc_auc", cv=cv, n_jobs=2, refit=False).fit(X, y)
    dml.fit(est, grid, X, y, cv, client)


def table(rows):
    def cell(v):
        return f"{v:.2f}" if v is not None else "unavailable"

    def ratio(a, b):
        return f"{a / b:.2f}" if b is not None else "-"

    head = (f"{'case':<10} {'configs x folds':>15} {'run_study s':>11} {'GridSearchCV s':>14} "
            f"{'dask-ml s':>11} {'/ GridSearchCV':>14} {'/ dask-ml':>9}  target <= {TARGET:.1f}x both")
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        slower = r["ours"] > TARGET * r["sk"] or (r["dml"] is not None and r["ours"] > TARGET * r["dml"])
        verdict = "not met" if slower else "met" if r["dml"] is not None else "met vs GridSearchCV only"
        print(f"{r['case']:<10} {r['size']:>15} {r['ours']:>11.2f} {r['sk']:>14.2f} "
              f"{cell(r['dml']):>11} {ratio(r['ours'], r['sk']):>14} "
              f"{ratio(r['ours'], r['dml']):>9}  {verdict}")
    best = [r for r in rows if r["best"] is not None]
    if best:
        print()
        print(f"{'case':<10} {'best: run_study pooled':>22} {'run_study mean':>14} "
              f"{'GridSearchCV':>12} {'dask-ml':>8}")
        for r in best:
            bp, bm, bs, bdm = r["best"]
            print(f"{r['case']:<10} {bp:>22} {bm:>14} {bs:>12} {bdm if bdm is not None else '-':>8}")
    for why in dict.fromkeys(r["why"] for r in rows if r["why"] is not None):
        print(f"dask-ml: unavailable ({why})")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="run_study vs GridSearchCV vs dask-ml GridSearchCV")
    p.add_argument("--quick", action="store_true", help="shrink every grid (smoke run)")
    p.add_argument("--cases", default="abced")
    p.add_argument("--repeat", type=int, default=2,
                   help="runs of each side in cases A-C, interleaved; the best counts")
    p.add_argument("--configs-per-task", default="",
                   help="comma-separated extra configs_per_task values for case A's run_study")
    a = p.parse_args()
    cpts = [int(v) for v in a.configs_per_task.split(",") if v.strip()]
    import dask
    import distributed
    import sklearn

    dml = DaskML()
    print(f"dask {dask.__version__}, distributed {distributed.__version__}, scikit-learn "
          f"{sklearn.__version__}, numpy {np.__version__}, dask-ml "
          + (dml.version if dml.cls is not None else f"unavailable ({dml.why})"))
    tmp = tempfile.mkdtemp()
    rows = []
    try:
        with bd.make_client(n_workers=2, dashboard_address=":0") as client:
            warm_up(client, tmp, dml)
            for name in a.cases:
                fn = {"a": case_a, "b": case_b, "c": case_c, "d": case_d, "e": case_e}[name]
                rows += fn(client, tmp, a.quick, dml, cpts if name == "a" else (), a.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rows:
        table(rows)
    print(f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
