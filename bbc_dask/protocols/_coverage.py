"""Coverage studies: how often does each method's lower bound hold?

The protocol of the BBC-F paper (Paraschakis et al., 2024, section 4): repeat a CVT outcome
many times, bound the AUC of the configuration each method selects, and count how often the
bound is at or below the truth. The truth is the selected configuration's population AUC in
the simulation protocol, and its AUC on a hold-out set in the real-data protocol (small
stratified training sets of a bundled data set, the rest held out). One repetition is one
Dask task; each finished repetition is written to the output directory at once, so a run
that stops resumes where it stopped and gives the same table.

The table (``coverage.csv``) has, per setting and method: the runs with a bound and the
failures (NaN bounds), the inclusion rate, the tightness (mean truth minus mean bound) and
the exact binomial test of the paper's bold cells: ``P(X <= included)`` for ``X ~ Bin(runs,
1 - alpha)``, not rejected when at least 0.05. ``coverage.html`` and ``coverage.png`` show it
as the paper's Table 2.

The ``simulation2018`` protocol (:mod:`._coverage2018`) is the 2018 paper's §5.1: accuracy
matrices, the estimates of CVT, TT, NCV, BBC-CV, BBCD-CV, BBC-F and repeated holdout, and a
table of each one's bias (with its standard error) and of the inclusion of the truth in its
two-sided interval, plotted as the paper's Figure 1 (bias against N).
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import warnings

from .. import _validation as validation
from .._random import as_seed_sequence, child_seed, entropy_of
from ..exceptions import (
    BoundAboveObservedWarning, InvalidParameterError, StoreMismatchError, UndefinedScoreError,
)
from ..stats import CI_METHODS
from .._doors import door

__all__ = ["BOOTSTRAP_METHODS", "METHODS", "coverage", "coverage_table"]

#: Methods of the bootstrap family, on the whole CVT outcome.
BOOTSTRAP_METHODS = ("bbc", "bbc_f", "naive_bootstrap")
#: Every method, in the paper's column order.
METHODS = ("bbc", "bbc_f", *CI_METHODS, "naive_bootstrap")
#: Part of the paper's Table 2: Beta(24, 6), N = 500, C = 100, the two class balances.
TABLE2_PART = ({"a": 24, "b": 6, "n_samples": 500, "n_configs": 100, "class0_share": 0.1},
               {"a": 24, "b": 6, "n_samples": 500, "n_configs": 100, "class0_share": 0.5})
_SETTING_KEYS = {"simulation": ("a", "b", "n_samples", "n_configs", "class0_share"),
                 "real": ("dataset", "n_train"),
                 "simulation2018": ("a", "b", "n_samples", "n_configs")}
_DATASETS = ("breast_cancer",)


@door("coverage")
def coverage(out_dir, *, protocol="simulation", settings=None, methods=None, n_repetitions=200,
             alpha=0.05, n_bootstraps=None, selection=None, random_state=0, client=None):
    """Run (or resume) a coverage study and write its table.

    Parameters
    ----------
    out_dir : str or path-like
        Where the repetitions (``runs/``), the table (``coverage.csv``), ``coverage.html``
        and ``coverage.png`` go. A directory that holds a study of other arguments is
        refused; one of the same arguments is resumed.
    protocol : {"simulation", "real", "simulation2018"}
        The 2024 paper's simulation or real-data protocol (lower bounds of AUC), or the
        2018 paper's simulation (§5.1: bias of accuracy estimates and inclusion in
        intervals; see :mod:`bbc_dask.protocols._coverage2018`).
    settings : list of dict, optional
        Simulation: ``a``, ``b`` (the Beta of the true AUCs), ``n_samples``, ``n_configs``,
        ``class0_share`` (the paper's b: the share of class 0). Default :data:`TABLE2_PART`.
        Real: ``dataset`` ("breast_cancer") and ``n_train`` (the training rows, stratified;
        the rest are the hold-out). Default ``n_train`` 50 and 200.
        Simulation2018: ``a``, ``b`` (the Beta of the true accuracies), ``n_samples`` (at
        least 20: K = 10 stratified folds) and ``n_configs``. Default
        :data:`FIGURE1_PART` (μ = 0.6; N 20, 40, 60, 100, 500; C 100, 500).
    methods : list of str, optional
        Any of :data:`METHODS` (default: all, the paper's ten); for simulation2018 any of
        :data:`METHODS_2018` (default: all).
    n_repetitions : int, default=200
    alpha : float, default=0.05
        One-sided bounds at ``1 - alpha`` (simulation2018: two-sided intervals).
    n_bootstraps : int, optional
        Each method's bootstraps (default: BBC's and BBC-F's 1000, NB's 500 and the
        tilting methods' 2000, as the paper's code).
    selection : {"fold_mean", "pooled"}, optional
        The final winner of BBC and NB, whose truth is scored: the best mean fold AUC, as
        the paper's code selects (BBC-F's winner), or the best pooled AUC (bbc_dask's
        default for a study). NB is the paper's: the winner's fold AUCs resampled
        (``naive_bootstrap(unit="fold")``). Default "fold_mean"; for simulation2018
        "pooled" (the 2018 code's BBC-CV).
    random_state : int, SeedSequence or None, default=0
        Repetition ``r`` of setting ``s`` draws from its own child seed: the table does not
        depend on the workers or on where a run was resumed.
    client : distributed.Client, str, dict or None
        As :func:`bbc_dask.run_study`'s.

    Returns
    -------
    pandas.DataFrame
        The table (see :func:`coverage_table`).

    References
    ----------
    Paraschakis et al. (2024), AutoML, arXiv:2406.08099, section 4 and Tables 2-3.
    Tsamardinos, Greasidou, Borboudakis (2018), Machine Learning 107, §5.1 and Figure 1.
    """
    design = _design(protocol, settings, methods, n_repetitions, alpha, n_bootstraps, selection,
                 random_state)
    from ..cube import StoreLock

    os.makedirs(os.path.join(out_dir, "runs"), exist_ok=True)
    with StoreLock(out_dir):
        design = _manifest(out_dir, design)
        _run(out_dir, design, client)
        return write_outputs(out_dir, design)


#: The harness's version, in its manifest: 2 made NB the paper's (fold AUCs resampled),
#: BBC-F with repeats one repeat per bootstrap and added ``selection``; a directory of
#: version 1 is another study.
VERSION = 2


def _design(protocol, settings, methods, n_repetitions, alpha, n_bootstraps, selection,
          random_state):
    from . import _coverage2018 as c18

    validation.check_one_of(protocol, "protocol", tuple(_SETTING_KEYS))
    if settings is None:
        settings = {"simulation": TABLE2_PART, "simulation2018": c18.FIGURE1_PART}.get(
            protocol, [{"dataset": "breast_cancer", "n_train": n} for n in (50, 200)])
    settings = list(validation.check_instance(settings, "settings", (list, tuple), "a list of dicts"))
    for s in settings:
        validation.check_instance(s, "settings", dict, "a list of dicts")
    for s in settings:
        if set(s) != set(_SETTING_KEYS[protocol]):
            raise InvalidParameterError.of(
                "settings", f"dicts of the keys {list(_SETTING_KEYS[protocol])} for "
                f"the {protocol} protocol", s)
        if protocol == "real":
            validation.check_one_of(s["dataset"], "settings[i]['dataset']", _DATASETS)
            validation.check_int(s["n_train"], "settings[i]['n_train']", low=20)
        if protocol == "simulation2018":
            c18.check_setting(s)
    known = c18.METHODS_2018 if protocol == "simulation2018" else METHODS
    methods = list(known if methods is None else methods)
    for m in methods:
        validation.check_one_of(m, "methods", known)
    if selection is None:
        selection = "pooled" if protocol == "simulation2018" else "fold_mean"
    root = as_seed_sequence(random_state)
    extra = {"holdout": dict(c18.HOLDOUT)} if protocol == "simulation2018" else {}
    return {"protocol": protocol, "settings": settings, "methods": methods,
            "n_repetitions": validation.check_int(n_repetitions, "n_repetitions"),
            "alpha": validation.check_real_open(alpha, "alpha", 0.0, 0.5),
            "n_bootstraps": validation.check_int(n_bootstraps, "n_bootstraps", low=2, allow_none=True),
            "selection": validation.check_one_of(selection, "selection", ("fold_mean", "pooled")),
            "version": VERSION, "seed": entropy_of(root), **extra}


def _manifest(out_dir, design):
    """The study's arguments, written once; a resumed run must ask the same (more
    repetitions excepted: they extend the study)."""
    path = os.path.join(out_dir, "coverage.json")
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if {k: v for k, v in old.items() if k != "n_repetitions"} != \
                {k: v for k, v in design.items() if k != "n_repetitions"}:
            raise StoreMismatchError(
                f"{out_dir!r} holds a coverage study of other arguments ({path}); use another "
                f"directory or the same arguments to resume it.")
    _write_json(path, design)
    return design


def _write_json(path, obj):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, default=_plain)
    os.replace(tmp, path)  # a crash leaves the old file or the new one, never half of one


def _plain(v):
    return v.item() if isinstance(v, np.generic) else str(v)


def _run_path(out_dir, s, r):
    return os.path.join(out_dir, "runs", f"s{s:03d}_r{r:05d}.json")


def _run(out_dir, design, client):
    from distributed import as_completed

    from ..cluster import resolve_client

    todo = [(s, r) for s in range(len(design["settings"])) for r in range(design["n_repetitions"])
            if not os.path.exists(_run_path(out_dir, s, r))]
    if not todo:
        return
    client, owned = resolve_client(client)
    try:
        futures = [client.submit(repetition, design, s, r, key=f"coverage-{s}-{r}", pure=False)
                   for s, r in todo]
        for fut in as_completed(futures):
            rows = fut.result()
            _write_json(_run_path(out_dir, rows[0]["setting"], rows[0]["rep"]), rows)
            fut.release()
    finally:
        if owned:
            client.close()


def repetition(design, s, r):
    """One repetition of setting ``s``: every method's bound, selection and truth."""
    root = np.random.SeedSequence(int(design["seed"]["entropy"]), spawn_key=design["seed"]["spawn_key"])
    seed = child_seed(root, "coverage", s, r)
    setting = design["settings"][s]
    if design["protocol"] == "simulation2018":
        from ._coverage2018 import repetition_rows

        return repetition_rows(design, s, r, seed)
    if design["protocol"] == "simulation":
        pred, y, folds, truth = _simulated(setting, seed)
    else:
        pred, y, folds, truth = _real(setting, seed)


    rows = []
    for m in design["methods"]:
        with warnings.catch_warnings():  # counted as the paper counts it: a bound is a bound
            warnings.simplefilter("ignore", BoundAboveObservedWarning)
            bound, selected, reason = _bound(m, pred, y, folds, design, child_seed(seed, "method", m))
        rows.append({"setting": s, "rep": r, "method": m, "lower_bound": bound,
                     "selected": selected, "truth": truth[selected] if selected >= 0 else math.nan,
                     "reason": reason})
    return rows


def _bound(method, pred, y, folds, design, seed):
    from ..stats import bbc, bbc_f, naive_bootstrap, selection_ci

    alpha, boots = design["alpha"], design["n_bootstraps"]
    if method in BOOTSTRAP_METHODS:
        fn = {"bbc": bbc, "bbc_f": bbc_f, "naive_bootstrap": naive_bootstrap}[method]
        kw = {} if boots is None else {"n_bootstraps": boots}
        if method == "bbc":
            kw["selection"] = design["selection"]
        if method == "naive_bootstrap":  # the paper's NB: its code's 500 fold resamples
            kw = {"n_bootstraps": 500, **kw, "unit": "fold", "selection": design["selection"]}
        try:
            res = fn(pred, y, metric="roc_auc", folds=folds, confidence_level=round(1 - alpha, 12),
                     random_state=seed, **kw)
        except UndefinedScoreError as e:  # a fold of one class: no bound, as R's NA
            return math.nan, -1, str(e)
        return float(res.lower_bound), int(res.selected_config), None
    kw = {} if boots is None else {"n_bootstraps": boots}
    ci = selection_ci(pred, y, folds, method, alpha=alpha, random_state=seed, **kw)
    return float(ci.lower_bound), int(ci.selected), ci.reason


def _simulated(setting, seed):
    from ..simulate import auc_matrix

    from scipy.stats import norm

    sim = auc_matrix(setting["n_samples"], setting["n_configs"], a=setting["a"], b=setting["b"],
                     class_balance=1 - setting["class0_share"], random_state=seed)
    # The paper's generator draws class 1 from N(0, 1) and class 0 from N(-mu, 1); ours is
    # the same shifted by mu. Only HM sees the shift (it counts scores above 0).
    mu = np.sqrt(2.0) * norm.ppf(sim.true_performance)
    return sim.predictions - mu[None, :], sim.y, sim.folds, sim.true_performance


def _real(setting, seed):
    """A stratified training sample of ``n_train`` rows, the candidates cross-validated on
    it (stratified, ``min(10, minority)`` folds), each refit on it and scored on the rest."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    gen = np.random.Generator(np.random.PCG64(seed))
    tr, ho = train_test_split(np.arange(len(y)), train_size=setting["n_train"], stratify=y,
                              random_state=int(gen.integers(2**31)))
    k = int(min(10, np.bincount(y[tr]).min()))
    folds = np.empty(len(tr), dtype=np.int64)
    for i, (_, test) in enumerate(StratifiedKFold(k, shuffle=True, random_state=int(gen.integers(2**31)))
                                  .split(X[tr], y[tr])):
        folds[test] = i
    candidates = real_candidates()
    pred = np.empty((len(tr), len(candidates)))
    holdout = np.empty(len(candidates))
    for j, est in enumerate(candidates):
        for i in range(k):
            fit = est.fit(X[tr][folds != i], y[tr][folds != i])
            pred[folds == i, j] = _score(fit, X[tr][folds == i])
        holdout[j] = roc_auc_score(y[ho], _score(est.fit(X[tr], y[tr]), X[ho]))
    return pred, y[tr], folds, holdout


def _score(est, X):
    return est.predict_proba(X)[:, 1]


def real_candidates():
    """The configurations the real-data protocol tries (22): scaled logistic regression
    (6 C), decision trees (5 depths x 2 leaf sizes), scaled k-NN (5 k), naive Bayes."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    return ([make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=1000))
             for c in (1e-3, 1e-2, 1e-1, 1, 10, 100)]
            + [DecisionTreeClassifier(max_depth=d, min_samples_leaf=leaf, random_state=0)
               for d in (1, 2, 3, 4, 5) for leaf in (1, 5)]
            + [make_pipeline(StandardScaler(), KNeighborsClassifier(k)) for k in (1, 3, 5, 9, 15)]
            + [GaussianNB()])


def coverage_table(rows, alpha):
    """The table of a list of repetition rows: one line per (setting, method) with
    ``runs`` (with a bound), ``failed``, ``inclusion``, ``tightness``, ``binom_p`` and
    ``not_rejected`` (the paper's bold: ``binom_p >= 0.05``)."""
    import pandas as pd
    from scipy.stats import binom

    df = pd.DataFrame(rows)
    out = []
    for (s, m), g in df.groupby(["setting", "method"], sort=False):
        ok = g[np.isfinite(g["lower_bound"])]
        n, k = len(ok), int((ok["truth"] >= ok["lower_bound"]).sum())
        p = float(binom.cdf(k, n, 1 - alpha)) if n else math.nan
        out.append({"setting": s, "method": m, "runs": n, "failed": len(g) - n,
                    "inclusion": k / n if n else math.nan,
                    "tightness": float(ok["truth"].mean() - ok["lower_bound"].mean()) if n else math.nan,
                    "binom_p": p, "not_rejected": bool(p >= 0.05) if n else False})
    return pd.DataFrame(out)


def write_outputs(out_dir, design):
    """Read every finished repetition and write ``coverage.csv``, ``coverage.png`` and
    ``coverage.html``; return the table."""
    rows = []
    for s in range(len(design["settings"])):
        for r in range(design["n_repetitions"]):
            path = _run_path(out_dir, s, r)
            if os.path.exists(path):
                with open(path) as f:
                    rows.extend(json.load(f))
    if design["protocol"] == "simulation2018":
        from ._coverage2018 import bias_table

        table = bias_table(rows, design["alpha"])
    else:
        table = coverage_table(rows, design["alpha"])
    for i, key in enumerate(_SETTING_KEYS[design["protocol"]]):
        table.insert(1 + i, key, [design["settings"][s][key] for s in table["setting"]])
    table.to_csv(os.path.join(out_dir, "coverage.csv"), index=False)
    from . import _coverage_plot as plot

    bias = design["protocol"] == "simulation2018"
    (plot.write_bias_png if bias else plot.write_png)(table, design, os.path.join(out_dir, "coverage.png"))
    (plot.write_bias_html if bias else plot.write_html)(table, design,
                                                        os.path.join(out_dir, "coverage.html"))
    return table
