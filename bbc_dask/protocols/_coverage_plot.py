"""The coverage table as the paper's Table 2: a PNG and an HTML page."""
from __future__ import annotations

import html
import math

_LABEL = {"bbc": "BBC", "bbc_f": "BBC-F", "naive_bootstrap": "NB", "delong": "DL",
          "hanley_mcneil": "HM", "tilting": "BT", "delong_10p": "DL10p",
          "hanley_mcneil_10p": "HM10p", "tilting_10p": "BT10p", "mabt": "MABT"}


def _setting_label(design, s):
    st = design["settings"][s]
    if design["protocol"] == "simulation":
        return (f"Beta({st['a']:g},{st['b']:g}) N={st['n_samples']} C={st['n_configs']} "
                f"b={st['class0_share']:g}")
    return f"{st['dataset']} n_train={st['n_train']}"


def _cell(row):
    """``0.93 (0.04)``; the paper's "-" where the simulation protocol had a failure."""
    if row.runs == 0:
        return "-"
    text = f"{row.inclusion:.2f} ({row.tightness:.2f})"
    return text + (f" [{row.failed} NA]" if row.failed else "")


def _grid(table, design):
    settings = list(dict.fromkeys(table["setting"]))
    methods = [m for m in design["methods"]]
    cells = {(r.setting, r.method): r for r in table.itertuples()}
    return settings, methods, cells


def write_png(table, design, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings, methods, cells = _grid(table, design)
    fig, ax = plt.subplots(figsize=(1.45 * len(methods) + 3.2, 0.55 * len(settings) + 1.4))
    ax.set_axis_off()
    text = [[_cell(cells[s, m]) for m in methods] for s in settings]
    colours = [["#cfe8cf" if cells[s, m].not_rejected else
                ("#eeeeee" if cells[s, m].runs == 0 else "#f6d5c1") for m in methods]
               for s in settings]
    tab = ax.table(cellText=text, cellColours=colours, colLabels=[_LABEL[m] for m in methods],
                   rowLabels=[_setting_label(design, s) for s in settings], loc="center",
                   cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    tab.scale(1, 1.5)
    ax.set_title(f"Inclusion of the truth (tightness) at {1 - design['alpha']:.0%}, "
                 f"{design['n_repetitions']} repetitions; green: not rejected by the exact "
                 f"binomial test", fontsize=8)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def _html_rows(table, design, labels, cell, setting_label):
    """``(head, body)`` of a coverage page's table: one row per setting, one cell per
    method (``cell(row)`` its text), bold where the binomial test does not reject."""
    settings, methods, cells = _grid(table, design)
    head = "".join(f"<th>{labels[m]}</th>" for m in methods)
    body = []
    for s in settings:
        tds = []
        for m in methods:
            r = cells[s, m]
            txt = html.escape(cell(r))
            p = "" if math.isnan(r.binom_p) else f" title='binomial p = {r.binom_p:.3g}'"
            tds.append(f"<td{p}>{'<b>' + txt + '</b>' if r.not_rejected else txt}</td>")
        body.append(f"<tr><th>{html.escape(setting_label(s))}</th>{''.join(tds)}</tr>")
    return head, body


def write_html(table, design, path):
    head, body = _html_rows(table, design, _LABEL, _cell, lambda s: _setting_label(design, s))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bbc_dask coverage</title>
<style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style></head><body>
<h1>Coverage ({html.escape(design['protocol'])} protocol)</h1>
<p>Inclusion rate of the truth by the one-sided {1 - design['alpha']:.0%} lower bound, and in
parentheses the tightness (mean truth minus mean bound), over {design['n_repetitions']}
repetitions. <b>Bold</b>: the exact binomial test does not reject an inclusion of at least
{1 - design['alpha']:.0%} at the 5% level (the paper's bold cells). [k NA]: repetitions where
the method gave no bound (excluded from the rates).</p>
<table><tr><th>setting</th>{head}</tr>{''.join(body)}</table>
<p><img src="coverage.png" alt="coverage table"></p></body></html>
"""
    with open(path, "w") as f:
        f.write(page)


_LABEL_2018 = {"cvt": "CVT", "tt": "TT", "ncv": "NCV", "bbc": "BBC-CV", "bbcd": "BBCD-CV",
               "bbc_f": "BBC-F", "repeated_holdout": "RH"}


def write_bias_png(table, design, path):
    """The 2018 protocol's table as the paper's Figure 1: one panel per method, the mean
    bias (± 2 standard errors) against N, one line per number of configurations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    st = design["settings"]
    methods = list(design["methods"])
    sizes = sorted({s["n_samples"] for s in st})
    cols = min(4, len(methods))
    n_rows = -(-len(methods) // cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(3.0 * cols, 2.6 * n_rows), sharey=True,
                             squeeze=False)
    for ax in axes.ravel()[len(methods):]:
        ax.set_axis_off()
    for ax, m in zip(axes.ravel(), methods):
        rows = table[table["method"] == m]
        for (a, b, c), g in _by_line(rows, st):
            x = [sizes.index(st[s]["n_samples"]) for s in g["setting"]]
            ax.errorbar(x, g["bias"], yerr=2 * g["bias_se"], marker="o", ms=3, lw=1, capsize=2,
                        label=f"C={c}" + ("" if len({(s['a'], s['b']) for s in st}) == 1
                                          else f" Beta({a:g},{b:g})"))
        ax.axhline(0, color="k", ls="--", lw=0.8)
        ax.set_xticks(range(len(sizes)), [str(n) for n in sizes], fontsize=7)
        ax.set_title(_LABEL_2018[m], fontsize=9)
        ax.set_xlabel("sample size", fontsize=8)
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("average bias (accuracy)", fontsize=8)
    axes.ravel()[len(methods) - 1].legend(fontsize=6)
    fig.suptitle(f"Bias of the estimate of the returned model's accuracy, "
                 f"{design['n_repetitions']} repetitions (bars: 2 s.e.)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def _by_line(rows, st):
    """Rows grouped by (a, b, n_configs), each sorted by sample size."""
    key = [(st[s]["a"], st[s]["b"], st[s]["n_configs"]) for s in rows["setting"]]
    rows = rows.assign(_n=[st[s]["n_samples"] for s in rows["setting"]], _k=key)
    for k in dict.fromkeys(key):
        yield k, rows[rows["_k"].map(lambda v, k=k: v == k)].sort_values("_n")


def _bias_cell(row):
    if row.runs == 0:
        return "-"
    text = f"{row.bias:+.3f} ± {row.bias_se:.3f}"
    if not math.isnan(row.inclusion):
        text += f" ({row.inclusion:.2f})"
    return text + (f" [{row.failed} NA]" if row.failed else "")


def write_bias_html(table, design, path):
    def label(s):
        st = design["settings"][s]
        return f"Beta({st['a']:g},{st['b']:g}) N={st['n_samples']} C={st['n_configs']}"

    head, body = _html_rows(table, design, _LABEL_2018, _bias_cell, label)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>bbc_dask bias</title>
<style>body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style></head><body>
<h1>Bias and inclusion (simulation2018 protocol)</h1>
<p>Mean bias (estimate minus the true accuracy of the returned configuration) ± its standard
error over {design['n_repetitions']} repetitions, and in parentheses the inclusion rate of the
truth in the method's two-sided {1 - design['alpha']:.0%} interval. <b>Bold</b>: the exact
binomial test does not reject an inclusion of at least {1 - design['alpha']:.0%} at the 5%
level.</p>
<table><tr><th>setting</th>{head}</tr>{''.join(body)}</table>
<p><img src="coverage.png" alt="bias against sample size"></p></body></html>
"""
    with open(path, "w") as f:
        f.write(page)
