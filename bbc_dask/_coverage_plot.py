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


def write_html(table, design, path):
    settings, methods, cells = _grid(table, design)
    head = "".join(f"<th>{_LABEL[m]}</th>" for m in methods)
    body = []
    for s in settings:
        tds = []
        for m in methods:
            r = cells[s, m]
            txt = html.escape(_cell(r))
            p = "" if math.isnan(r.binom_p) else f" title='binomial p = {r.binom_p:.3g}'"
            tds.append(f"<td{p}>{'<b>' + txt + '</b>' if r.not_rejected else txt}</td>")
        body.append(f"<tr><th>{html.escape(_setting_label(design, s))}</th>{''.join(tds)}</tr>")
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
