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
import warnings

from ._report_names import configuration_names, one_line, params_text
from .exceptions import BoundAboveObservedWarning
from .stats import metric_text, ranking

__all__ = [
    "estimates",
    "failures_html",
    "plot_active",
    "plot_bootstrap",
    "plot_configurations",
    "plot_fold_scores",
    "plot_outer_scores",
    "top_configurations_html",
    "write_nested_report",
    "write_report",
]


def _figure(size=(7, 4)):
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


def _integer_axis(axis):
    """Ticks at whole numbers only (counts, ranks, repeats, folds, waves)."""
    from matplotlib.ticker import MaxNLocator

    # min_n_ticks=1: with one integer in view (one configuration, one repeat) the
    # default falls back to ticks at 0.5, 0.6, ...
    axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def _plain_numbers(axis):
    """Tick labels that are the values themselves: no ``1e-9+9.6e-1`` offset above the
    axis, which a reader takes for the scale of the numbers."""
    from matplotlib.ticker import ScalarFormatter

    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    axis.set_major_formatter(fmt)


def _fmt(v):
    return f"{v:.4f}" if abs(v) < 100 else f"{v:,.1f}"


def _honest_limits(values, rel=0.02):
    """Axis limits around ``values`` that do not blow up a tiny spread: at least
    ``rel`` of the values' magnitude wide (a single value sits in the middle), and for
    scores within [0, 1] (AUC, accuracy) a window inside [0, 1]."""
    lo, hi = float(np.min(values)), float(np.max(values))
    least = max(rel * max(abs(lo), abs(hi)), 1e-3)
    mid, half = (lo + hi) / 2, max(hi - lo, least) / 2
    a, b = mid - half, mid + half
    if 0 <= lo and hi <= 1:  # no tick at 1.005 of a score that cannot pass 1
        a, b = a - max(b - 1, 0), min(b, 1)
        a, b = max(a, 0), b + max(-a, 0)
    pad = 0.08 * (b - a)
    return a - pad, b + pad


def study_names(study):
    """``(families, shown)`` of every configuration of ``study`` (see
    :func:`~bbc_dask._report_names.configuration_names`)."""
    return configuration_names(study.params, study.metadata, study.spec)


def configuration_text(study, c, names=None):
    """Configuration ``c`` of ``study`` on one line as the user wrote it: ``"SVC: svc__C=10,
    svc__gamma=0.01"`` (its family, when the store names one, and its parameters).
    ``names``: ``study_names(study)`` when already computed (it reads every configuration)."""
    families, params = names or study_names(study)
    return (f"{families[c]}: " if families[c] else "") + params_text(params[c])


def _family_colours(families):
    """``{family: colour}`` in the order families first appear (tab10, then tab20)."""
    import matplotlib

    seen = list(dict.fromkeys(families))
    cmap = matplotlib.colormaps["tab10" if len(seen) <= 10 else "tab20"]
    return {f: cmap(i % cmap.N) for i, f in enumerate(seen)}


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
    ax.axvline(result.estimate, color="#4c72b0", lw=2, label=f"estimate {_fmt(result.estimate)}")
    ax.axvline(result.lower_bound, color="#55a868", lw=2, ls="--",
               label=f"lower bound {_fmt(result.lower_bound)}")
    nv = result.naive_estimate if naive is None else naive
    ax.axvline(nv, color="#c44e52", lw=2, ls=":", label=f"naive CV {_fmt(nv)}")
    ax.set_xlabel(f"{metric_text(result.metric, result.pos_label)} of the selected "
                  f"configuration (out-of-bag)")
    ax.set_ylabel("bootstraps")
    _integer_axis(ax.yaxis)
    _plain_numbers(ax.xaxis)
    ax.set_title(title or f"{result.method.upper()}: {result.n_bootstraps} bootstraps")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def _shown_scores(study):
    """Each configuration's pooled CV score, or for one BBCD dropped before its last
    fold its mean over the folds it trained; ``{config: wave}`` of the dropped ones; and
    ``{config: folds}`` of those shown by a fold mean."""
    score = np.asarray(study.cv_results_["pooled_test_score"], dtype=float)
    dropped = {d["config"]: d["wave"] for d in study.dropped}
    shown, partial = score.copy(), {}
    if dropped:
        F = study.fold_scores()
        for c in dropped:
            if np.isnan(score[c]) and np.isfinite(F[:, c]).any():
                shown[c] = np.nanmean(F[:, c])
                partial[c] = int(np.isfinite(F[:, c]).sum())
    return shown, dropped, partial


def plot_configurations(study, top_k=5):
    """Configurations ranked by CV score, one point each, coloured by family (the class
    each fits: a pipeline's final step's); the winner ringed, BBCD's dropped ones hollow
    (their score over the folds they trained), and the ``top_k`` listed with their
    parameters as the user wrote them.

    Points, not bars: the axis spans the scores (a bar's length from an axis that does not
    start at 0 would exaggerate their differences); the title states the range."""
    shown, dropped, partial = _shown_scores(study)
    families, params = study_names(study)
    order = [int(c) for c in ranking(shown) if np.isfinite(shown[c])]
    k = min(top_k, len(order))
    fig = _figure((7.5, 3.6 + 0.18 * (k + 1)))
    ax, notes = fig.subplots(2, 1, height_ratios=[3.4, 0.18 * (k + 1)])
    colours = _family_colours([families[c] for c in order])
    rank = {c: i + 1 for i, c in enumerate(order)}
    if len(order) > 1:
        ax.plot([rank[c] for c in order], shown[order], color="#bbbbbb", lw=0.8, zorder=1)
    for fam, colour in colours.items():
        mine = [c for c in order if families[c] == fam]
        kept = [c for c in mine if c not in dropped]
        gone = [c for c in mine if c in dropped]
        label = fam or "configurations"
        if kept:
            ax.scatter([rank[c] for c in kept], shown[kept], color=colour, s=28, zorder=2,
                       label=label)
        if gone:
            ax.scatter([rank[c] for c in gone], shown[gone], facecolors="none",
                       edgecolors=colour, s=28, zorder=2, label=None if kept else label)
    if dropped:
        ax.scatter([], [], facecolors="none", edgecolors="#555555", s=28,
                   label=f"hollow: dropped by BBCD ({len(dropped)})"
                   + ("\n(before the last fold: mean over the folds trained)" if partial else ""))
    best = int(study.best_index_)
    if best in rank:
        ax.scatter([rank[best]], [shown[best]], s=170, facecolors="none", edgecolors="#c44e52",
                   lw=2, zorder=3, label=f"winner: configuration {best}")
    _integer_axis(ax.xaxis)
    _plain_numbers(ax.yaxis)
    ax.set_xlim(0.5, max(len(order), 1) + 0.5)
    if order:
        ax.set_ylim(*_honest_limits(shown[order]))
        lo, hi = shown[order].min(), shown[order].max()
        spread = (f"from {_fmt(lo)} to {_fmt(hi)}" if len(order) > 1 else f"{_fmt(hi)}")
    else:
        spread = "none finished"
    ax.set_xlabel("rank by CV score (1 = best)")
    ax.set_ylabel(f"pooled CV {study.metric}")
    n = len(order)
    ax.set_title(f"{n} configuration{'s' if n != 1 else ''}: pooled CV {study.metric} "
                 f"{spread}" + ("\n(the axis spans the scores; it does not start at 0)"
                                if n > 1 else ""), fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # none finished (a study stopped early): no legend
        ax.legend(loc="best", fontsize=7, ncols=2 if len(colours) > 3 else 1)
    notes.axis("off")
    lines = []
    for c in order[:k]:
        head = (f"{rank[c]}. configuration {c} · {_fmt(shown[c])}"
                + (f" · {families[c]}" if families[c] else ""))
        # about 100 monospace characters fit right of the axis at this size
        lines.append(f"{head} · {params_text(params[c], max(20, 100 - len(head)))}")
    notes.text(0, 1, "\n".join(["Best by CV score:"] + lines), va="top", ha="left",
               fontsize=7.5, family="monospace", transform=notes.transAxes,
               in_layout=False)  # sized to fit: the layout need not make room for it
    return fig


def _fold_labels(n_repeats, n_splits):
    """Tick positions (1-based rows) and labels of the repeat × fold axis: every row when
    they fit, else each repeat's first fold."""
    rows = n_repeats * n_splits
    if rows <= 12:
        return (list(range(1, rows + 1)),
                [f"repeat {r + 1} · fold {k + 1}" if n_repeats > 1 else f"fold {k + 1}"
                 for r in range(n_repeats) for k in range(n_splits)])
    if rows <= 40:
        return (list(range(1, rows + 1)),
                [f"r{r + 1} f{k + 1}" for r in range(n_repeats) for k in range(n_splits)])
    step = max(1, n_repeats // 20)
    return ([r * n_splits + 1 for r in range(0, n_repeats, step)],
            [f"repeat {r + 1}" for r in range(0, n_repeats, step)])


def plot_fold_scores(study, max_configs=200):
    """Per-fold scores (rows: each repeat's folds, columns: configurations ranked by CV
    score, 1 = best), the matrix BBC-F bootstraps; blank cells were not trained."""
    F = study.fold_scores()
    n_rep, n_spl = int(study.spec["n_repeats"]), F.shape[0] // int(study.spec["n_repeats"])
    shown = _shown_scores(study)[0]
    order = ranking(shown)[:max_configs]
    rows = F.shape[0]
    fig = _figure((7, min(8.0, max(3.2, 1.6 + 0.17 * rows))))
    ax = fig.add_subplot()
    im = ax.imshow(F[:, order], aspect="auto", interpolation="nearest", cmap="viridis",
                   extent=(0.5, order.size + 0.5, rows + 0.5, 0.5))
    for r in range(1, n_rep):  # a white line between repeats
        ax.axhline(r * n_spl + 0.5, color="white", lw=1.5)
    ticks, labels = _fold_labels(n_rep, n_spl)
    ax.set_yticks(ticks, labels, fontsize=7 if rows > 12 else 8)
    _integer_axis(ax.xaxis)
    ax.set_xlabel(f"configuration rank by CV score (1 = best; first {order.size} of {shown.size})"
                  if order.size < shown.size else "configuration rank by CV score (1 = best)")
    ax.set_ylabel("repeat · fold" if n_rep > 1 else "fold")
    ax.set_title(f"Per-fold {study.metric} (blank: not trained, failed or dropped)", fontsize=10)
    bar = fig.colorbar(im, ax=ax)
    bar.set_label(study.metric)
    _plain_numbers(bar.ax.yaxis)
    return fig


def plot_active(study):
    """Active configurations per fold wave as BBCD dropped them; None when dropping was
    off (every configuration trains on every fold: nothing to draw)."""
    if not study.spec.get("dropping"):
        return None
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
    ax.set_xlabel("fold wave (fold k of every repeat)")
    ax.set_ylabel("configurations trained")
    _integer_axis(ax.xaxis)
    _integer_axis(ax.yaxis)
    ax.set_xlim(0.5, waves + 0.5)
    ax.set_ylim(0, n_cfg * 1.05 + 0.5)
    trained, full = study.models_trained
    ax.set_title(f"Active configurations per wave ({trained} of {full} models trained)",
                 fontsize=10)
    return fig


def estimates(study, *, method="both", n_bootstraps=1000, confidence_level=0.95, random_state=None,
              include_incomplete=False):
    """``{"bbc": BBCResult, "bbc_f": BBCResult}`` (per ``method``) of a study;
    ``random_state=None`` uses the study's own seed (:attr:`Study.seed`).
    ``include_incomplete``: BBC on the incomplete CV (every configuration with a
    prediction in each repeat); BBC-F, which needs every fold of a configuration, is then
    left out while no configuration is complete."""
    out = {}
    kw = dict(n_bootstraps=n_bootstraps, confidence_level=confidence_level)
    if random_state is not None:
        kw["random_state"] = random_state
    if method in ("bbc", "both"):
        out["bbc"] = study.bbc(include_incomplete=include_incomplete, **kw)
    if method in ("bbc-f", "bbc_f", "both") and (not include_incomplete or study.candidates().size):
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
    if not study.candidates().size:  # a study stopped early, before any completed
        return ("<h2>The 2024 paper's comparators</h2><p>None yet: they select among "
                "configurations with every fold predicted, and none is complete.</p>")
    from .stats import CI_METHODS, alpha_of

    seeded = {} if random_state is None else {"random_state": random_state}
    if n_bootstraps is not None:
        seeded["n_bootstraps"] = n_bootstraps


    rows, names, results = [], study_names(study), {}
    for method, name in CI_METHODS.items():
        with warnings.catch_warnings():  # said in the row
            warnings.simplefilter("ignore", BoundAboveObservedWarning)
            r = results[method] = study.selection_ci(method, alpha=alpha_of(confidence_level),
                                                     **seeded)
        lower = "NaN" if r.reason else f"{r.lower_bound:.4f}"
        note = r.reason or ("above the evaluation AUC: the tilted resamples fell below 0.5 and "
                            "count as 1 - AUC (pROC's direction 'auto', as the paper's R code); "
                            "uninformative" if r.above_observed else "")
        drawn = str(r.n_bootstraps) if r.n_bootstraps else "-"
        which = (f"{r.selected}: <code>{html.escape(configuration_text(study, r.selected, names))}</code>"
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
            f"<th>note</th></tr>{''.join(rows)}</table>{_comparators_note(results)}")


def _comparators_note(results):
    """Why the comparators' rows name different configurations and levels: their two
    selection rules, and Šidák's level of DL10p and BT10p (from ``results``, by method)."""
    first, ten = results["delong"], results["mabt"]
    if first.selected < 0 or ten.selected < 0:
        return ""
    alpha, k = first.alpha, ten.k
    sidak = results["delong_10p"].alpha
    return (f"<p>The rows select by two rules, so they may name different configurations: "
            f"DL, HM and BT bound the best configuration on the learning part "
            f"({first.selected}); DL10p, HM10p, BT10p and MABT take the top 10% by that score "
            f"(here {k} configuration{'s' if k != 1 else ''}) and bound the best of them on "
            f"the evaluation part ({ten.selected}). The level is each bound's one-sided "
            f"α: {alpha:.4g} (1 − the confidence level), but for DL10p and BT10p Šidák's "
            f"1 − (1 − {alpha:.4g})<sup>1/{k}</sup> = {sidak:.4g}, which pays for choosing "
            f"among the {k}; HM10p keeps {alpha:.4g} and MABT pays by its max-T, as the "
            f"authors' code does.</p>")


#: The reports' one style sheet.
STYLE = """<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
img{max-width:100%}pre{background:#f5f5f5;padding:1em;overflow:auto}dt{font-weight:bold}</style>"""


def plot_outer_scores(result):
    """Nested CV's outer scores: one point per outer fold (numbered), a column per repeat,
    and the estimate."""
    fig = _figure((6, 3.5))
    ax = fig.subplots()
    spread = (np.arange(result.n_outer) - (result.n_outer - 1) / 2) * min(0.08, 0.6 / result.n_outer)
    for r in range(result.n_repeats):
        ax.plot(r + 1 + spread, result.outer_scores[r], "o", alpha=0.8)
        for o in range(result.n_outer):
            ax.annotate(str(o + 1), (r + 1 + spread[o], result.outer_scores[r, o]), fontsize=6,
                        xytext=(3, 2), textcoords="offset points")
    ax.axhline(result.estimate, color="k", lw=1, label=f"estimate {_fmt(result.estimate)}")
    ax.set_xticks(range(1, result.n_repeats + 1),
                  [f"repeat {r + 1}" for r in range(result.n_repeats)] if result.n_repeats <= 10
                  else [str(r + 1) for r in range(result.n_repeats)])
    ax.set_xlim(0.5, result.n_repeats + 0.5)
    finite = result.outer_scores[np.isfinite(result.outer_scores)]
    if finite.size:
        ax.set_ylim(*_honest_limits(finite))
    _plain_numbers(ax.yaxis)
    ax.set_xlabel("outer repeat (points: its outer folds, numbered)")
    ax.set_ylabel(f"outer-fold {result.metric}")
    ax.set_title("Nested CV: outer fold scores", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def write_nested_report(result, out_dir):
    """``outer_scores.png`` and ``index.html`` of a :class:`~bbc_dask.NestedCVResult` in
    ``out_dir``; returns the HTML path."""
    os.makedirs(out_dir, exist_ok=True)
    plot_outer_scores(result).savefig(os.path.join(out_dir, "outer_scores.png"), dpi=110)
    families, shown = configuration_names(result.params, getattr(result, "metadata", None))
    rows = "".join(
        f"<tr><td>{r + 1}</td><td>{o + 1}</td><td>{result.outer_scores[r, o]:.4f}</td>"
        f"<td>{c}</td>{_model_cell(families, c)}"
        f"<td style='text-align:left'><code>{html.escape(params_text(shown[c]))}</code></td></tr>"
        for r in range(result.n_repeats) for o in range(result.n_outer)
        for c in [int(result.selected[r, o])])
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
<table><tr><th>repeat</th><th>outer fold</th><th>score</th><th>configuration</th>{_model_cell(families)}<th>parameters</th></tr>
{rows}</table>
</body></html>
"""
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path


def _model_cell(families, c=None):
    """A table's ``model`` cell of configuration ``c`` (its header when ``c`` is None);
    nothing when the store names no configuration's model (a bare estimator's study)."""
    if not any(families):
        return ""
    if c is None:
        return "<th>model</th>"
    return f"<td style='text-align:left'>{html.escape(families[c] or '')}</td>"


def top_configurations_html(study, k=10):
    """The ``k`` best configurations by CV score as an HTML table: family, parameters as
    the user wrote them, score, and for BBCD the wave a dropped one left at."""
    shown, dropped, partial = _shown_scores(study)
    families, params = study_names(study)
    order = [int(c) for c in ranking(shown) if np.isfinite(shown[c])][:k]
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{c}</td>{_model_cell(families, c)}<td style='text-align:left'><code>"
        f"{html.escape(params_text(params[c]))}</code></td><td>{_fmt(shown[c])}</td><td>"
        f"{'' if c not in dropped else f'dropped after wave {dropped[c] + 1}'}"
        f"{f' (score: mean of its {partial[c]} folds)' if c in partial else ''}"
        f"{' winner' if c == study.best_index_ else ''}</td></tr>"
        for i, c in enumerate(order))
    return (f"<table><tr><th>rank</th><th>configuration</th>{_model_cell(families)}<th>parameters</th>"
            f"<th>pooled CV {html.escape(study.metric)}</th><th></th></tr>{rows}</table>")


def _stopped_html(rec):
    if rec is None:
        return ""
    return (f" <b>Stopped early by its rule ({html.escape(rec.reason)}) after {rec.fits:,} fits:"
            f"</b> the estimates are BBC on the incomplete CV (Tsamardinos et al., 2018, §4), "
            f"and the winner is the best on the cells each configuration predicted; run the "
            f"study again without the rule to complete it.")


def write_report(study, out_dir, *, n_bootstraps=1000, confidence_level=0.95, random_state=None,
                 ci_bootstraps=None):
    """Write ``bootstrap_bbc.png``, ``bootstrap_bbc_f.png``, ``configurations.png``,
    ``fold_scores.png``, ``active.png`` (with dropping on) and ``index.html`` into
    ``out_dir``; returns the HTML path. ``n_bootstraps`` is BBC's and BBC-F's;
    ``ci_bootstraps`` the comparators' (None: their own 2000), the same defaults as
    ``bbc-dask estimate --ci all``."""
    said = getattr(study, "said_unfinished", False)
    try:
        return _write_report(study, out_dir, n_bootstraps, confidence_level, random_state,
                             ci_bootstraps)
    finally:
        study.said_unfinished = said


def _write_report(study, out_dir, n_bootstraps, confidence_level, random_state, ci_bootstraps):
    os.makedirs(out_dir, exist_ok=True)
    stopped = getattr(study, "stopped_", None)  # stopped by its rule: its incomplete CV's
    est = estimates(study, n_bootstraps=n_bootstraps, confidence_level=confidence_level,
                    random_state=random_state, include_incomplete=stopped is not None)
    # an unfinished study was said by the estimates' warnings: not again by each figure
    study.said_unfinished = True
    figs = {
        "bootstrap_bbc.png": plot_bootstrap(est["bbc"], title="BBC-CV" if est["bbc"].method == "bbc" else "BBCD-CV"),
        "bootstrap_bbc_f.png": plot_bootstrap(est["bbc_f"], naive=est["bbc"].naive_estimate,
                                              title="BBC-F") if "bbc_f" in est else None,
        "configurations.png": plot_configurations(study),
        "fold_scores.png": plot_fold_scores(study),
        "active.png": plot_active(study),
    }
    for name, fig in figs.items():
        if fig is not None:
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
    names = study_names(study)
    saved = study.final_model_record  # the model the store holds, if any
    refit_note = "" if not saved else f" (the saved final model is configuration {saved['config']})"
    selected = "".join(f"<li>configuration {c} ({', '.join(by)}): <code>"
                       f"{html.escape(configuration_text(study, c, names))}</code></li>"
                       for c, by in chosen.items())
    if figs["active.png"] is None:
        active = (f"<p>Dropping was off: every configuration was trained on every fold "
                  f"({st['models_trained']} of {st['models_full']} models), so there is no "
                  f"plot of configurations dropped per wave.</p>")
    else:
        active = '<img src="active.png" alt="active configurations">'
    bbc_f_img = ('<img src="bootstrap_bbc_f.png" alt="BBC-F bootstrap distribution">'
                 if figs["bootstrap_bbc_f.png"] is not None else "")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bbc_dask report: {html.escape(str(spec.get('name', 'study')))}</title>
{STYLE}</head>
<body>
<h1>Study report</h1>
<p>Store <code>{html.escape(study.store)}</code>; metric <b>{html.escape(metric_text(study.metric, getattr(study, "pos_label", None)))}</b>;
{st['configs']} configurations, {st['waves']} folds × {study.spec['n_repeats']} repeat(s);
{st['models_trained']} of {st['models_full']} models trained; {st['failed']} failed cells.{_stopped_html(stopped)}
Generated {datetime.datetime.now().isoformat(timespec='seconds')}.</p>
<h2>Estimates ({confidence_level:.0%} confidence)</h2>
<table><tr><th>method</th><th>estimate</th><th>CI</th><th>lower bound</th><th>naive CV</th><th>configuration</th><th>bootstraps</th></tr>
{''.join(rows)}</table>
<p>The configuration each method selected{refit_note}:</p><ul>{selected}</ul>
<dl>{meaning}</dl>
{comparators_html(study, n_bootstraps=ci_bootstraps, confidence_level=confidence_level,
                  random_state=random_state)}
{failures_html(study)}
<h2>Bootstrap distributions</h2>
<img src="bootstrap_bbc.png" alt="BBC bootstrap distribution">{bbc_f_img}
<h2>Configurations</h2><img src="configurations.png" alt="configurations ranked">
{top_configurations_html(study)}
<h2>Per-fold scores</h2><img src="fold_scores.png" alt="fold x configuration scores">
<h2>Active configurations per wave</h2>{active}
<h2>Study specification</h2><pre>{html.escape(json.dumps(one_line(spec), indent=2, default=str))}</pre>
</body></html>
"""
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path
