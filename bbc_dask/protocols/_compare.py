"""One comparison of the papers' protocols on the user's data: :func:`compare`.

The 2018 journal paper (Tsamardinos, Greasidou, Borboudakis, Machine Learning 107, §5)
compares CVT, TT, NCV and BBC-CV on the bias of the selected model's estimate and on what
each costs. :func:`compare` runs them on one data set and one grid — the CVT study (its
naive estimate, BBC-CV, BBC-F and Tibshirani & Tibshirani's correction share its fits),
nested CV, and the everyday holdout family (holdout, repeated holdout, the .632+
bootstrap) — and tabulates estimate, interval, models trained, fit seconds and wall time.

The holdout family evaluates one estimator; to estimate the *tuned* model as the others
do, it evaluates ``GridSearchCV(estimator, param_grid, cv=n_inner)`` (tuning inside each
training set, scikit-learn's best mean fold score), so every protocol pays for its own
tuning and none scores a model selected on its test samples.
"""
from __future__ import annotations

import dataclasses
import math
import os
import signal
import sys
import time

import numpy as np

from .. import _validation as validation
from ..exceptions import ComparisonInterrupted, InvalidParameterError
from ..stats import ArrayEquality
from .._doors import door

__all__ = ["Comparison", "compare"]

#: The rows, in the table's order: (key, label).
PROTOCOLS = (("cvt", "CVT (naive)"), ("tt", "TT"), ("bbc", "BBC-CV"), ("bbc_f", "BBC-F"),
             ("ncv", "NCV"), ("holdout", "holdout"), ("repeated_holdout", "repeated holdout"),
             ("bootstrap", "bootstrap"))


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class Comparison(ArrayEquality):
    """The protocols side by side.

    Attributes
    ----------
    rows : list of dict
        Per protocol: ``protocol`` (its label), ``estimate``, ``ci_low``, ``ci_high`` (NaN
        without an interval), ``config`` (the configuration whose performance the row
        estimates: CVT's winner for CVT, TT and BBC-CV, the best mean fold score for BBC-F;
        None where each outer fold or split selects its own), ``naive`` (that
        configuration's own CV score, which the row corrects: the pooled score, or for
        BBC-F its mean fold score; NaN for the protocols that hold data out),
        ``models_trained`` (estimator fits, tuning included),
        ``fit_seconds`` (their summed fit time; for the holdout family each tuned fit's
        whole ``GridSearchCV.fit``, its inner predictions and scores included),
        ``wall_seconds`` (of the protocol's run;
        the CVT rows share the study's fits and add their own bootstrap time), ``note``.
    metric : str
    confidence_level : float
    partial : bool
        True for the table of an interrupted comparison
        (:class:`~bbc_dask.exceptions.ComparisonInterrupted`'s ``partial``): the rows of
        the protocols that had finished.
    not_run : tuple of str
        The labels of the protocols asked for that have no row (an interrupted
        comparison's).
    """

    rows: list
    metric: str
    confidence_level: float
    partial: bool = False
    not_run: tuple = ()

    def to_frame(self):
        """The table as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows).set_index("protocol")

    def __repr__(self):
        partial = ", partial=True" if self.partial else ""
        return (f"Comparison(metric={self.metric!r}, protocols="
                f"{[r['protocol'] for r in self.rows]}{partial})")

    def to_dict(self):
        """JSON-ready (NaN where a row has no value: write it with strict JSON, as null)."""
        return {"metric": self.metric, "confidence_level": self.confidence_level,
                "partial": self.partial, "not_run": list(self.not_run),
                "rows": [dict(r) for r in self.rows]}

    def _partial_note(self):
        return (f"partial: interrupted before {', '.join(self.not_run) or 'the end'} "
                f"finished" if self.partial else "")

    def summary(self):
        """The table as text."""
        head = (f"{'protocol':18s} {'estimate':>9s} {'interval':>19s} {'naive CV':>9s} "
                f"{'config':>6s} {'models':>9s} {'fit s':>8s} {'wall s':>8s}")
        lines = [head]
        for r in self.rows:
            ci = ("" if math.isnan(r["ci_low"]) else f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]")
            naive = "" if math.isnan(r.get("naive", math.nan)) else f"{r['naive']:.4f}"
            config = "" if r.get("config") is None else str(r["config"])
            lines.append(f"{r['protocol']:18s} {r['estimate']:9.4f} {ci:>19s} {naive:>9s} "
                         f"{config:>6s} {r['models_trained']:9,d} {r['fit_seconds']:8.1f} "
                         f"{r['wall_seconds']:8.1f}")
        lines.append(f"({self.metric}; {self.confidence_level:.0%} intervals; 'config' is the "
                     f"configuration a row estimates, 'naive CV' its own CV score, which the "
                     f"row corrects; blank where each outer fold or split selects its own)")
        if self.partial:
            lines.append(f"({self._partial_note()})")
        return "\n".join(lines)

    def plot(self):
        """A matplotlib Figure: each protocol's estimate and interval, and the models it
        trained (log scale)."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9, 4), layout="constrained")
        ax, cost = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
        labels = [r["protocol"] for r in self.rows][::-1]
        pos = np.arange(len(labels))
        rows = self.rows[::-1]
        est = np.array([r["estimate"] for r in rows])
        lo = np.array([r["ci_low"] for r in rows])
        hi = np.array([r["ci_high"] for r in rows])
        has = ~np.isnan(lo)
        if has.any():
            ax.errorbar(est[has], pos[has], xerr=[est[has] - lo[has], hi[has] - est[has]],
                        fmt="o", capsize=3, label=f"estimate, {self.confidence_level:.0%} interval")
        ax.plot(est[~has], pos[~has], "o", color="C1", label="estimate (no interval)")
        naive = np.array([r.get("naive", math.nan) for r in rows])
        shown = ~np.isnan(naive)
        ax.plot(naive[shown], pos[shown], "x", color="C3", label="naive CV score it corrects")
        ax.legend(loc="best", fontsize="small")
        ax.set_yticks(pos, labels)
        ax.set_ylabel("protocol")
        ax.set_xlabel(f"{self.metric} ({self.confidence_level:.0%} interval)")
        ax.set_title("Estimate of the selected model"
                     + (" (partial: interrupted)" if self.partial else ""))
        cost.barh(pos, [max(1, r["models_trained"]) for r in rows])
        cost.set_xscale("log")
        cost.set_xlim(left=1)
        cost.set_yticks(pos, [])
        cost.set_xlabel("models trained (log scale)")
        cost.set_title("Cost")
        return fig

    def write_report(self, out_dir):
        """``comparison.png`` and ``comparison.html`` in ``out_dir``; returns the HTML path."""
        import html

        from ..report import STYLE

        os.makedirs(out_dir, exist_ok=True)
        self.plot().savefig(os.path.join(out_dir, "comparison.png"), dpi=110)

        def num(v, f="{:.4f}"):
            return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f.format(v)

        rows = "".join(
            f"<tr><td style='text-align:left'>{html.escape(r['protocol'])}</td><td>{num(r['estimate'])}</td>"
            f"<td>{num(r['ci_low'])}</td><td>{num(r['ci_high'])}</td><td>{num(r.get('naive'))}</td>"
            f"<td>{'' if r.get('config') is None else r['config']}</td><td>{r['models_trained']:,}</td>"
            f"<td>{num(r['fit_seconds'], '{:.1f}')}</td><td>{num(r['wall_seconds'], '{:.1f}')}</td>"
            f"<td style='text-align:left'>{html.escape(r['note'])}</td></tr>" for r in self.rows)
        page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bbc_dask: protocols compared</title>
{STYLE}</head><body>
<h1>Protocols compared{" (partial)" if self.partial else ""}</h1>
{f"<p><b>{html.escape(self._partial_note())}</b>: the table holds the protocols that had finished; run the comparison again to complete it.</p>" if self.partial else ""}
<p>Metric <b>{html.escape(self.metric)}</b>; {self.confidence_level:.0%} intervals. Every
protocol tunes the same grid on the same data and estimates the model it selects: CVT's
naive estimate is optimistic (the winner's curse); TT, BBC-CV and BBC-F correct it from the
same fits; NCV and the holdout family pay for separate tuning (Tsamardinos et al., 2018).</p>
<img src="comparison.png" alt="estimates and costs">
<p>Each row estimates the performance of one configuration (<i>config</i>) and corrects
its own CV score (<i>naive CV</i>): CVT, TT and BBC-CV that of CVT's winner, BBC-F that of the
configuration with the best mean fold score. NCV and the holdout family select again in each
outer fold or split, so no single configuration is theirs.</p>
<table><tr><th>protocol</th><th>estimate</th><th>low</th><th>high</th><th>naive CV</th><th>config</th><th>models trained</th>
<th>fit s</th><th>wall s</th><th>note</th></tr>{rows}</table>
</body></html>
"""
        path = os.path.join(out_dir, "comparison.html")
        with open(path, "w") as f:
            f.write(page)
        return path


@door("compare")
def compare(estimator, param_grid, X, y, *, store, metric, n_splits=10, n_outer=None,
            n_inner=None, test_size=0.3, holdout_repeats=10, n_bootstraps=50,
            bootstrap_method=".632+", protocols=None, confidence_level=0.95, random_state,
            client=None, progress=True, out_dir=None):
    """Run the papers' protocols on one data set and grid and tabulate them.

    Parameters
    ----------
    estimator, param_grid, X, y
        As :func:`bbc_dask.run_study`'s (a grid).
    store : str or path
        A directory: the CVT study (``cvt.zarr``) and the nested CV (``nested.zarr``) go
        there, each resumed by a rerun with the same arguments.
    metric : str
    n_splits : int, default=10
        CVT's folds (BBC-CV, BBC-F and TT share its fits).
    n_outer, n_inner : int, optional
        Nested CV's folds; default ``n_splits`` and one fewer (the paper's 10 and 9).
        ``n_inner`` is also the tuning CV inside the holdout family.
    test_size : float, default=0.3
        Holdout and repeated holdout.
    holdout_repeats : int, default=10
    n_bootstraps : int, default=50
        The bootstrap protocol's rounds (each refits the tuned model).
    bootstrap_method : {"oob", ".632", ".632+"}, default=".632+"
    protocols : list of str, optional
        Keys of :data:`PROTOCOLS` to run (default all).
    confidence_level : float, default=0.95
    random_state : int
        Every protocol's seed.
    client, progress
        As :func:`bbc_dask.run_study`'s; one client serves every protocol, and every
        protocol's fits run on it (holdout's too). ``progress``: a line on stderr as each
        protocol starts (what it fits) and ends (its estimates), and the protocols'
        progress bars.
    out_dir : str or path, optional
        Where :meth:`Comparison.write_report` writes the table and plot.

    Returns
    -------
    Comparison

    Raises
    ------
    ComparisonInterrupted
        On SIGINT (Ctrl-C) or SIGTERM: its ``partial`` is the table of the protocols that
        had finished (also written to ``out_dir``, marked partial). The same call again
        resumes the CVT and nested CV stores.
    """
    keys = [k for k, _ in PROTOCOLS]
    chosen = keys if protocols is None else list(protocols)
    for p in chosen:
        validation.check_one_of(p, "protocols", keys)
    validation.check_confidence_level(confidence_level)
    n_splits = validation.check_int(n_splits, "n_splits", low=2)
    n_outer = n_splits if n_outer is None else validation.check_int(n_outer, "n_outer", low=2)
    n_inner = max(2, n_outer - 1) if n_inner is None else validation.check_int(n_inner, "n_inner", low=2)
    from ..metrics import get_metric

    m = get_metric(metric)
    if m.kind == "general":
        from ..metrics import metric_names

        raise InvalidParameterError.of(
            "metric", f"one of {metric_names()} (compare runs protocols that keep "
            f"no prediction cube, scored with the registered kernels)", m.name)
    _check_before_running(chosen, estimator, X, y, m, n_splits, n_outer, n_inner, test_size,
                          holdout_repeats, n_bootstraps, bootstrap_method)
    if not isinstance(random_state, (int, np.integer)) or isinstance(random_state, bool):
        raise InvalidParameterError.of("random_state", "an int (every protocol's seed)",
                                       random_state)
    from ..cluster import resolve_client

    c, owned = resolve_client(client)
    rows = []  # each protocol's rows, appended as it finishes: an interrupt keeps them
    talk = _Talk(progress, chosen)
    try:
        _run(chosen, estimator, param_grid, X, y, store, metric, n_splits, n_outer, n_inner,
             test_size, holdout_repeats, n_bootstraps, bootstrap_method, confidence_level,
             random_state, c, progress, rows, talk)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM's StudyInterrupted
        raise _interrupted(e, _comparison(rows, m.name, confidence_level, chosen), out_dir,
                           talk) from None
    finally:
        if owned:
            from ..cluster import close_client

            close_client(c, close_cluster=True)
    out = _comparison(rows, m.name, confidence_level)
    if out_dir is not None:
        out.write_report(out_dir)
    return out


def _comparison(rows, metric, level, chosen=None):
    """The :class:`Comparison` of ``rows`` (keyed); given the ``chosen`` keys, a partial
    one naming those without a row."""
    label = dict(PROTOCOLS)
    out = [{**{k: v for k, v in r.items() if k != "key"}, "protocol": label[r["key"]]}
           for r in rows]
    if chosen is None:
        return Comparison(out, metric, level)
    done = {r["key"] for r in rows}
    return Comparison(out, metric, level, partial=True,
                      not_run=tuple(label[k] for k, _ in PROTOCOLS if k in chosen and k not in done))


def _interrupted(exc, partial, out_dir, talk):
    """The :class:`ComparisonInterrupted` of an interrupt ``exc``, its partial table
    written to ``out_dir`` first (a signal meanwhile waits for the write to end, so the
    files are not left half-written; a second one acts at once)."""
    from .._signals import deferred_interrupts

    if out_dir is not None:
        with deferred_interrupts():
            partial.write_report(out_dir)
    during = f" during {talk.current}" if talk.current else ""
    return ComparisonInterrupted(
        f"interrupted{during}: {len(talk.finished)} of {len(talk.stages)} protocols finished "
        f"(the exception's partial holds their table); run compare again with the same "
        f"arguments to resume its stores", getattr(exc, "signum", signal.SIGINT), partial)


class _Talk:
    """What compare says on stderr (with ``progress``): which protocol starts and what it
    fits, and as it ends its estimates; it also knows which one runs (for an
    interrupt's message)."""

    def __init__(self, on, chosen):
        self.on = on
        self.stages = [s for s in ("CVT", "NCV", "holdout", "repeated holdout", "bootstrap")
                       if _STAGE_KEYS[s] & set(chosen)]
        self.finished = []
        self.current = None
        self._t = 0.0

    def start(self, stage, what):
        self.current, self._t = stage, time.perf_counter()
        self._say(f"{stage}: {what}")

    def done(self, rows):
        label = dict(PROTOCOLS)
        self._say(f"{self.current} done in {time.perf_counter() - self._t:.1f} s: "
                  + ", ".join(f"{label[r['key']]} {r['estimate']:.4f}" for r in rows))
        self.finished.append(self.current)
        self.current = None

    def _say(self, text):
        if self.on:
            n = len(self.finished) + 1
            print(f"bbc_dask: compare {n}/{len(self.stages)}, {text}", file=sys.stderr, flush=True)


#: The protocols each stage of a comparison runs (CVT's fits serve four rows).
_STAGE_KEYS = {"CVT": {"cvt", "tt", "bbc", "bbc_f"}, "NCV": {"ncv"}, "holdout": {"holdout"},
               "repeated holdout": {"repeated_holdout"}, "bootstrap": {"bootstrap"}}


def _check_before_running(chosen, estimator, X, y, m, n_splits, n_outer, n_inner, test_size,
                          holdout_repeats, n_bootstraps, method):
    """Every argument of every chosen protocol, checked in compare's words before any
    store is written or any fit runs."""
    from ..engine import NestedProtocol

    X = validation.check_X(X)
    target = validation.check_cv_data(estimator, X, y, None, m, n_splits, 1, np.nan, None)[0]
    if "ncv" in chosen:
        NestedProtocol.checked(n_outer, n_inner, 1, np.asarray(y), None, target,
                             m.is_classification)
    if {"holdout", "repeated_holdout", "bootstrap"} & set(chosen):
        _scorer(m)
        validation.check_real_open(test_size, "test_size", 0.0, 1.0)
        validation.check_int(holdout_repeats, "holdout_repeats", low=2)
        validation.check_int(n_bootstraps, "n_bootstraps", low=1)
        validation.check_one_of(method, "bootstrap_method", ("oob", ".632", ".632+"))


def _row(key, estimate, ci, models, fit_s, wall_s, note="", config=None, naive=math.nan):
    lo, hi = (math.nan, math.nan) if ci is None else (float(ci[0]), float(ci[1]))
    return {"key": key, "estimate": float(estimate), "ci_low": lo, "ci_high": hi,
            "config": None if config is None else int(config), "naive": float(naive),
            "models_trained": int(models), "fit_seconds": float(fit_s),
            "wall_seconds": float(wall_s), "note": note}


def _run(chosen, estimator, grid, X, y, store, metric, n_splits, n_outer, n_inner, test_size,
         holdout_repeats, n_bootstraps, method, level, seed, client, progress, rows, talk):
    """Each chosen protocol in turn, its rows appended to ``rows`` as it finishes."""
    os.makedirs(store, exist_ok=True)
    if _STAGE_KEYS["CVT"] & set(chosen):
        from sklearn.model_selection import ParameterGrid

        talk.start("CVT", f"{len(ParameterGrid(grid))} configurations x {n_splits} folds; "
                          f"TT, BBC-CV and BBC-F share its fits")
        got = _cvt_rows(chosen, estimator, grid, X, y, os.path.join(store, "cvt.zarr"), metric,
                        n_splits, level, seed, client, progress)
        rows += got
        talk.done(got)
    if "ncv" in chosen:
        from ._nested_cv import nested_cv

        talk.start("NCV", f"{n_outer} outer x {n_inner} inner folds")
        res = nested_cv(estimator, grid, X, y, store=os.path.join(store, "nested.zarr"),
                        metric=metric, n_outer=n_outer, n_inner=n_inner, random_state=seed,
                        client=client, progress=progress, confidence_level=level)
        rows.append(_row("ncv", res.estimate, None, res.models_trained, res.fit_seconds,
                         res.wall_seconds, f"{n_outer} outer x {n_inner} inner folds; no "
                         f"interval (one repeat)"))
        talk.done(rows[-1:])
    family = [k for k in ("holdout", "repeated_holdout", "bootstrap") if k in chosen]
    if family:
        _holdout_rows(family, estimator, grid, X, y, metric, n_inner, test_size, holdout_repeats,
                      n_bootstraps, method, level, seed, client, progress, rows, talk)


def _cvt_rows(chosen, estimator, grid, X, y, store, metric, n_splits, level, seed, client, progress):
    from ..cube import target_of
    from ..stats import tibshirani_tibshirani
    from ..study import run_study

    study = run_study(estimator, grid, X, y, store=store, metric=metric, n_splits=n_splits,
                      random_state=seed, client=client, progress=progress, refit=False)
    st = study._cube
    wall = st.wall_seconds()
    models, _ = study.models_trained
    fit_s = float(np.nansum(st.fit_times()))
    rows = []
    t = time.perf_counter()
    bbc = study.bbc(confidence_level=level)
    t_bbc = time.perf_counter() - t
    if "cvt" in chosen:
        rows.append(_row("cvt", bbc.naive_estimate, None, models, fit_s, wall,
                         "the winner's own CV score", bbc.selected_config, bbc.naive_estimate))
    if "tt" in chosen:
        t = time.perf_counter()
        idx = study.candidates()
        yc, pos = target_of(st)
        tt = tibshirani_tibshirani(st.predictions(idx), yc, st.folds(), metric=study.metric,
                                   pos_label=pos)
        rows.append(_row("tt", tt.estimate, None, models, fit_s, wall + time.perf_counter() - t,
                         "CVT's fits, bias from the fold scores", bbc.selected_config,
                         bbc.naive_estimate))
    if "bbc" in chosen:
        rows.append(_row("bbc", bbc.estimate, bbc.confidence_interval, models, fit_s, wall + t_bbc,
                         f"CVT's fits, {bbc.n_bootstraps} bootstraps", bbc.selected_config,
                         bbc.naive_estimate))
    if "bbc_f" in chosen:
        t = time.perf_counter()
        f = study.bbc_f(confidence_level=level)
        rows.append(_row("bbc_f", f.estimate, f.confidence_interval, models, fit_s,
                         wall + time.perf_counter() - t,
                         f"CVT's fits, {f.n_bootstraps} bootstraps; corrects its own winner's "
                         f"mean fold score", f.selected_config, f.naive_estimate))
    return rows


def _holdout_rows(family, estimator, grid, X, y, metric, n_inner, test_size, repeats,
                  n_bootstraps, method, level, seed, client, progress, rows, talk):
    from sklearn.model_selection import GridSearchCV, ParameterGrid

    from ._holdout import bootstrap_estimate, holdout, repeated_holdout
    from ..metrics import get_metric

    from sklearn.model_selection import KFold, StratifiedKFold

    m = get_metric(metric)
    # shuffled inner folds from the seed, as nested CV's (unshuffled folds of ordered data
    # would not be random)
    inner = (StratifiedKFold if m.is_classification else KFold)(n_inner, shuffle=True,
                                                               random_state=seed)
    tuned = GridSearchCV(estimator, grid, cv=inner, scoring=_scorer(m), refit=True)
    per_fit = len(ParameterGrid(grid)) * n_inner + 1  # GridSearchCV's fits per fit of it
    tuning = f"tuned inside: GridSearchCV({len(ParameterGrid(grid))} configurations, cv={n_inner})"

    def what(fits, unit):
        return (f"{fits} {unit}{'s' * (fits > 1)} x {per_fit} models (GridSearchCV of "
                f"{len(ParameterGrid(grid))} configurations, cv={n_inner}, and its refit)")

    if "holdout" in family:
        talk.start("holdout", f"test_size={test_size}; " + what(1, "split"))
        t = time.perf_counter()
        # on the cluster, as every other protocol's fits: fitted here, a model's OpenMP
        # threads (HistGradientBoosting's, a thread per core) contend with a busy machine
        r = holdout(tuned, X, y, metric=metric, test_size=test_size, confidence=level,
                    random_state=seed, client=client, progress=progress)
        rows.append(_row("holdout", r.estimate, r.ci, r.models_trained * per_fit, r.fit_seconds,
                         time.perf_counter() - t, f"test_size={test_size}; {tuning}"))
        talk.done(rows[-1:])
    if "repeated_holdout" in family:
        talk.start("repeated holdout", f"test_size={test_size}; " + what(repeats, "split"))
        t = time.perf_counter()
        r = repeated_holdout(tuned, X, y, metric=metric, n_repeats=repeats, test_size=test_size,
                             confidence=level, random_state=seed, client=client, progress=progress)
        rows.append(_row("repeated_holdout", r.estimate, r.ci, r.models_trained * per_fit,
                         r.fit_seconds, time.perf_counter() - t,
                         f"{repeats} x test_size={test_size}; the t interval ignores that the "
                         f"training sets overlap (too narrow); {tuning}"))
        talk.done(rows[-1:])
    if "bootstrap" in family:
        talk.start("bootstrap", f"{method}; " + what(n_bootstraps, "round"))
        t = time.perf_counter()
        r = bootstrap_estimate(tuned, X, y, metric=metric, n_bootstraps=n_bootstraps,
                               method=method, random_state=seed, client=client, progress=progress)
        rows.append(_row("bootstrap", r.estimate, getattr(r, "ci", None), r.models_trained * per_fit,
                         r.fit_seconds, time.perf_counter() - t,
                         f"{method}, {n_bootstraps} rounds; {tuning} (on a bootstrap sample "
                         f"copies of a row can fall in both an inner training and test fold, "
                         f"which favours configurations that overfit)"))
        talk.done(rows[-1:])


def _scorer(m):
    """GridSearchCV's scoring for the metric ``m``: scikit-learn's scorer of that name."""
    from sklearn.metrics import get_scorer_names

    if m.name in get_scorer_names():
        return m.name
    raise InvalidParameterError.of(
        "metric", "a metric scikit-learn has a scorer of (the holdout family tunes "
        "with GridSearchCV), or protocols without holdout, repeated_holdout and bootstrap",
        m.name)
