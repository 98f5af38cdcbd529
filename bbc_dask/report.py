"""Plots and an HTML report of a finished study (matplotlib).

Every ``plot_*`` function returns a :class:`matplotlib.figure.Figure` (no pyplot state,
so they work in notebooks, scripts and on headless machines alike);
:func:`write_report` writes them as PNG files with a one-page HTML summary.
"""
from __future__ import annotations

import datetime
import html
import json
import os

import numpy as np

from .stats import ranking

__all__ = [
    "estimates",
    "failures_html",
    "plot_active",
    "plot_bootstrap",
    "plot_configurations",
    "plot_fold_scores",
    "plot_outer_scores",
    "write_nested_report",
    "write_report",
]


def _figure(size=(7, 4)):
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


def plot_bootstrap(result, *, naive=None, title=None):
    """The bootstrap distribution of a :class:`BBCResult` with its estimate, confidence
    interval, one-sided lower bound and the naive (winner's CV) estimate marked."""
    fig = _figure()
    ax = fig.add_subplot()
    dist = np.asarray(result.bootstrap_distribution)
    dist = dist[np.isfinite(dist)]
    ax.hist(dist, bins=min(50, max(10, dist.size // 20)), color="#9bb7d4", edgecolor="white")
    lo, hi = result.confidence_interval
    ax.axvspan(lo, hi, color="#4c72b0", alpha=0.12, label=f"{result.confidence_level:.0%} CI")
    ax.axvline(result.estimate, color="#4c72b0", lw=2, label=f"estimate {result.estimate:.4f}")
    ax.axvline(result.lower_bound, color="#55a868", lw=2, ls="--",
               label=f"lower bound {result.lower_bound:.4f}")
    nv = result.naive_estimate if naive is None else naive
    ax.axvline(nv, color="#c44e52", lw=2, ls=":", label=f"naive CV {nv:.4f}")
    ax.set_xlabel(f"{result.metric} of the selected configuration (out-of-bag)")
    ax.set_ylabel("bootstraps")
    ax.set_title(title or f"{result.method.upper()}: {result.n_bootstraps} bootstraps")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def plot_configurations(study):
    """Configurations ranked by pooled CV score; the winner marked; for BBCD the wave each
    dropped configuration left at (its score is over the folds it trained)."""
    cvr = study.cv_results_
    score = np.asarray(cvr["pooled_test_score"], dtype=float)
    dropped = {d["config"]: d["wave"] for d in study.dropped}
    partial = np.full(score.size, np.nan)
    if dropped:  # dropped configurations: mean over the folds they trained
        F = study.fold_scores()
        for c in dropped:
            if np.isfinite(F[:, c]).any():
                partial[c] = np.nanmean(F[:, c])
    shown = np.where(np.isnan(score), partial, score)
    order = ranking(shown)
    fig = _figure((7, 4))
    ax = fig.add_subplot()
    x = np.arange(score.size)
    colors = np.array(["#4c72b0"] * score.size, dtype=object)
    if dropped:
        import matplotlib

        cmap = matplotlib.colormaps["autumn"]
        n_w = max(dropped.values()) + 1
        for c, w in dropped.items():
            colors[c] = cmap(w / max(n_w, 1))
    ax.bar(x, shown[order], color=list(colors[order]), width=1.0)
    best = study.best_index_
    pos = int(np.flatnonzero(order == best)[0])
    ax.bar([pos], [shown[best]], color="#c44e52", width=1.0, label=f"winner (config {best})")
    finite = shown[np.isfinite(shown)]
    if finite.size:
        span = finite.max() - finite.min()
        ax.set_ylim(finite.min() - 0.05 * span - 1e-9, finite.max() + 0.05 * span + 1e-9)
    ax.set_xlabel("configurations, ranked by CV score")
    ax.set_ylabel(f"pooled CV {study.metric}")
    title = "Configurations"
    if dropped:
        title += f" (orange-red: dropped by BBCD, darker = earlier wave; {len(dropped)} dropped)"
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return fig


def plot_fold_scores(study, max_configs=200):
    """Per-fold scores (rows: repeat × fold, columns: configurations ranked by CV score),
    the matrix BBC-F bootstraps."""
    F = study.fold_scores()
    score = np.asarray(study.cv_results_["pooled_test_score"], dtype=float)
    order = ranking(score)[:max_configs]
    fig = _figure((7, 3.5))
    ax = fig.add_subplot()
    im = ax.imshow(F[:, order], aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_xlabel(f"configurations ranked by CV score (first {order.size})")
    ax.set_ylabel("repeat × fold")
    ax.set_title(f"Per-fold {study.metric} (blank: not trained — failed or dropped)")
    fig.colorbar(im, ax=ax)
    return fig


def plot_active(study):
    """Active configurations per fold wave (BBCD drops shrink them; plain CVT is flat)."""
    n_cfg = len(study.params)
    waves = study.status()["waves"]
    active = np.full(waves, n_cfg, dtype=float)
    for entry in study.dropping_log:
        if "active_after" in entry:
            active[entry["wave"] + 1:] = entry["active_after"]
    fig = _figure((6, 3))
    ax = fig.add_subplot()
    ax.step(np.arange(1, waves + 1), active, where="mid", color="#4c72b0")
    ax.plot(np.arange(1, waves + 1), active, "o", color="#4c72b0")
    ax.set_xlabel("fold wave")
    ax.set_ylabel("configurations trained")
    ax.set_ylim(0, n_cfg * 1.05)
    trained, full = study.models_trained
    ax.set_title(f"Active configurations per wave ({trained} of {full} models trained)")
    return fig


def estimates(study, *, method="both", n_bootstraps=1000, confidence_level=0.95, random_state=None):
    """``{"bbc": BBCResult, "bbc_f": BBCResult}`` (per ``method``) of a study;
    ``random_state=None`` uses the study's own seed (:attr:`Study.seed`)."""
    out = {}
    kw = dict(n_bootstraps=n_bootstraps, confidence_level=confidence_level)
    if random_state is not None:
        kw["random_state"] = random_state
    if method in ("bbc", "both"):
        out["bbc"] = study.bbc(**kw)
    if method in ("bbc-f", "bbc_f", "both"):
        out["bbc_f"] = study.bbc_f(**kw)
    return out


_MEANING = [
    ("estimate", "Bias-corrected estimate of the selected model's performance on new data: "
                 "the mean over bootstraps of the out-of-bag score of the configuration that won "
                 "in-bag (Tsamardinos et al. 2018). Corrects the winner's curse of the naive estimate."),
    ("CI", "Two-sided percentile interval of the bootstrap distribution at the confidence level."),
    ("lower bound", "One-sided lower confidence bound: the selected model performs at least this "
                    "well with the confidence level's probability (percentile bootstrap)."),
    ("naive CV", "The selected configuration's own cross-validation score (BBC: by the "
                 "study's selection, its pooled out-of-sample score unless selection is "
                 "fold_mean; BBC-F: the mean of its fold scores): optimistic when many "
                 "configurations were tried."),
    ("BBC-F", "The same on the fold × configuration score matrix (bootstrapping folds; "
              "Paraschakis et al. 2024): cheaper, for folds as units."),
]


def failures_html(study):
    """An HTML table of the failed configurations' errors (grouped), or ''."""
    groups = study.failures()
    if not groups:
        return ""
    rows = "".join(
        f"<tr><td>{g['count']}</td><td>{html.escape(', '.join(map(str, g['configs'][:10])))}"
        f"{' ...' if g['count'] > 10 else ''}</td><td style='text-align:left'><code>"
        f"{html.escape(g['error'])}</code></td></tr>" for g in groups)
    n = sum(g["count"] for g in groups)
    return (f"<h2>Failed configurations ({n})</h2><p>Their cells hold no predictions and they "
            f"take no part in selection or in the estimates.</p><table><tr><th>configurations"
            f"</th><th>which</th><th>first error</th></tr>{rows}</table>")


def comparators_html(study, *, n_bootstraps=None, confidence_level=0.95, random_state=None):
    """The 2024 paper's lower bounds (:meth:`Study.selection_ci`) as an HTML table, for an
    AUC study; empty for any other metric. ``n_bootstraps=None``: the methods' own 2000
    resamples (the paper's), as ``bbc-dask estimate --ci`` uses."""
    if study.metric != "roc_auc":
        return ""
    from ._display import describe
    from .stats import CI_METHODS, alpha_of

    seeded = {} if random_state is None else {"random_state": random_state}
    if n_bootstraps is not None:
        seeded["n_bootstraps"] = n_bootstraps
    import warnings

    from .exceptions import BoundAboveObservedWarning

    rows = []
    for method, name in CI_METHODS.items():
        with warnings.catch_warnings():  # said in the row
            warnings.simplefilter("ignore", BoundAboveObservedWarning)
            r = study.selection_ci(method, alpha=alpha_of(confidence_level), **seeded)
        lower = "NaN" if r.reason else f"{r.lower_bound:.4f}"
        note = r.reason or ("above the evaluation AUC: the tilted resamples fell below 0.5 and "
                            "count as 1 - AUC (pROC's direction 'auto', as the paper's R code); "
                            "uninformative" if r.above_observed else "")
        drawn = str(r.n_bootstraps) if r.n_bootstraps else "-"
        which = (f"{r.selected}: <code>{html.escape(describe(study.params[r.selected]))}</code>"
                 if r.selected >= 0 else "-")
        rows.append(f"<tr><td>{name}</td><td>{lower}</td><td>{r.auc:.4f}</td>"
                    f"<td style='text-align:left'>{which}</td><td>{drawn}</td>"
                    f"<td>{r.alpha:.4g}</td><td style='text-align:left'>"
                    f"{html.escape(note)}</td></tr>")
    return ("<h2>The 2024 paper's comparators</h2><p>One-sided lower bounds on the AUC of the "
            "configuration each method selects with its own split (75% learning, 25% "
            "evaluation; the first repeat): DeLong, Hanley-McNeil, bootstrap tilting, their "
            "10p variants and MABT (Paraschakis et al., 2024).</p><table><tr><th>method</th>"
            "<th>lower bound</th><th>evaluation AUC</th><th>configuration</th><th>resamples</th>"
            "<th>level</th>"
            f"<th>note</th></tr>{''.join(rows)}</table>")


#: The reports' one style sheet.
STYLE = """<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
img{max-width:100%}pre{background:#f5f5f5;padding:1em;overflow:auto}dt{font-weight:bold}</style>"""


def plot_outer_scores(result):
    """Nested CV's outer scores, one point per outer fold, by repeat, and the estimate."""
    fig = _figure((6, 3.5))
    ax = fig.subplots()
    for r in range(result.n_repeats):
        ax.plot(np.full(result.n_outer, r), result.outer_scores[r], "o", alpha=0.7)
    ax.axhline(result.estimate, color="k", lw=1, label=f"estimate {result.estimate:.4f}")
    ax.set_xlabel("repeat")
    ax.set_ylabel(result.metric)
    ax.set_title("Nested CV: outer fold scores")
    ax.legend()
    return fig


def write_nested_report(result, out_dir):
    """``outer_scores.png`` and ``index.html`` of a :class:`~bbc_dask.NestedCVResult` in
    ``out_dir``; returns the HTML path."""
    os.makedirs(out_dir, exist_ok=True)
    plot_outer_scores(result).savefig(os.path.join(out_dir, "outer_scores.png"), dpi=110)
    rows = "".join(
        f"<tr><td>{r}</td><td>{o}</td><td>{result.outer_scores[r, o]:.4f}</td>"
        f"<td>{result.selected[r, o]}</td><td style='text-align:left'><code>"
        f"{html.escape(json.dumps(result.params[result.selected[r, o]], default=str))}</code></td></tr>"
        for r in range(result.n_repeats) for o in range(result.n_outer))
    ci = ("" if result.ci is None else
          f"; {result.confidence_level:.0%} interval over repeats [{result.ci[0]:.4f}, {result.ci[1]:.4f}]")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bbc_dask report: nested CV</title>
{STYLE}</head><body>
<h1>Nested cross-validation</h1>
<p>Store <code>{html.escape(result.store)}</code>; metric <b>{html.escape(result.metric)}</b>;
{result.n_outer} outer folds × {result.n_repeats} repeat(s). Estimate (mean outer score)
<b>{result.estimate:.4f}</b>{ci}. {result.models_trained:,} models trained, {result.fit_seconds:.1f}
fit seconds, {result.wall_seconds:.1f} s wall. Generated {datetime.datetime.now().isoformat(timespec='seconds')}.</p>
<img src="outer_scores.png" alt="outer fold scores">
<table><tr><th>repeat</th><th>outer fold</th><th>score</th><th>configuration</th><th>parameters</th></tr>
{rows}</table>
</body></html>
"""
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path


def write_report(study, out_dir, *, n_bootstraps=1000, confidence_level=0.95, random_state=None,
                 ci_bootstraps=None):
    """Write ``bootstrap_bbc.png``, ``bootstrap_bbc_f.png``, ``configurations.png``,
    ``fold_scores.png``, ``active.png`` and ``index.html`` into ``out_dir``; returns the
    HTML path. ``n_bootstraps`` is BBC's and BBC-F's; ``ci_bootstraps`` the comparators'
    (None: their own 2000), the same defaults as ``bbc-dask estimate --ci all``."""
    from ._display import describe

    os.makedirs(out_dir, exist_ok=True)
    est = estimates(study, n_bootstraps=n_bootstraps, confidence_level=confidence_level,
                    random_state=random_state)
    figs = {
        "bootstrap_bbc.png": plot_bootstrap(est["bbc"], title="BBC-CV" if est["bbc"].method == "bbc" else "BBCD-CV"),
        "bootstrap_bbc_f.png": plot_bootstrap(est["bbc_f"], naive=est["bbc"].naive_estimate, title="BBC-F"),
        "configurations.png": plot_configurations(study),
        "fold_scores.png": plot_fold_scores(study),
        "active.png": plot_active(study),
    }
    for name, fig in figs.items():
        fig.savefig(os.path.join(out_dir, name), dpi=110)
    st = study.status()
    rows = []
    for key, r in est.items():
        rows.append(f"<tr><td>{'BBC-F' if key == 'bbc_f' else r.method.upper()}</td><td>{r.estimate:.4f}</td>"
                    f"<td>[{r.confidence_interval[0]:.4f}, {r.confidence_interval[1]:.4f}]</td>"
                    f"<td>{r.lower_bound:.4f}</td><td>{r.naive_estimate:.4f}</td>"
                    f"<td>{r.selected_config}</td><td>{r.n_bootstraps}</td></tr>")
    spec = study.metadata or {"run_study": study.spec}
    meaning = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in _MEANING)
    chosen = {}
    for key, r in est.items():  # each estimate's own winner (BBC-F's: the best fold mean)
        chosen.setdefault(r.selected_config, []).append("BBC-F" if key == "bbc_f" else r.method.upper())
    selected = "".join(f"<li>configuration {c} ({', '.join(names)}): <code>"
                       f"{html.escape(describe(study.params[c]))}</code></li>"
                       for c, names in chosen.items())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bbc_dask report: {html.escape(str(spec.get('name', 'study')))}</title>
{STYLE}</head>
<body>
<h1>Study report</h1>
<p>Store <code>{html.escape(study.store)}</code>; metric <b>{html.escape(study.metric)}</b>;
{st['configs']} configurations, {st['waves']} folds × {study.spec['n_repeats']} repeat(s);
{st['models_trained']} of {st['models_full']} models trained; {st['failed']} failed cells.
Generated {datetime.datetime.now().isoformat(timespec='seconds')}.</p>
<h2>Estimates ({confidence_level:.0%} confidence)</h2>
<table><tr><th>method</th><th>estimate</th><th>CI</th><th>lower bound</th><th>naive CV</th><th>configuration</th><th>bootstraps</th></tr>
{''.join(rows)}</table>
<p>The configuration each method selected (the refit model is configuration {study.best_index_}):</p><ul>{selected}</ul>
<dl>{meaning}</dl>
{comparators_html(study, n_bootstraps=ci_bootstraps, confidence_level=confidence_level,
                  random_state=random_state)}
{failures_html(study)}
<h2>Bootstrap distributions</h2>
<img src="bootstrap_bbc.png" alt="BBC bootstrap distribution"><img src="bootstrap_bbc_f.png" alt="BBC-F bootstrap distribution">
<h2>Configurations</h2><img src="configurations.png" alt="configurations ranked">
<h2>Per-fold scores</h2><img src="fold_scores.png" alt="fold x configuration scores">
<h2>Active configurations per wave</h2><img src="active.png" alt="active configurations">
<h2>Study specification</h2><pre>{html.escape(json.dumps(spec, indent=2, default=str))}</pre>
</body></html>
"""
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path
