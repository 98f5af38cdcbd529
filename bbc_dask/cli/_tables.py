"""What the command line prints of a study: its estimates table (BBC, BBC-F and the 2024
paper's bounds, each row with the configuration it selected and the naive score it
corrects), its failures, and the note of an unfinished one."""
from __future__ import annotations

import time

import click
import numpy as np

from .. import _json as strict_json
from ..cube import DROPPED, FAILED
from ..exceptions import UserError
from ..stats import CI_METHODS, metric_text

__all__ = ["check_finished", "echo_failures", "echo_fit_warnings", "echo_progress",
           "estimate_line", "live_estimate", "print_estimates"]


def live_estimate(study, bootstraps):
    """``(result, basis)``: the BBC estimate the study gives now, with its study's seed —
    ``basis`` ``"complete CV"`` once it is finished; ``"incomplete CV"`` while every
    configuration still in the study has a prediction in each repeat (BBC on the
    incomplete CV is valid: Tsamardinos et al. 2018, §4); else ``"complete
    configurations"`` (those alone). ``result`` None when no estimate can be given now,
    ``basis`` then says why. Reads only: a running study is not disturbed."""
    study.said_unfinished = True  # the status line says it
    complete = study.candidates().size > 0  # read once: each read goes to the ledger
    if not complete and np.isin(study.state, (FAILED, DROPPED)).any(axis=(1, 2)).all():
        return None, "none: every configuration failed"
    try:
        if study.unfinished() is None:
            return study.bbc(n_bootstraps=bootstraps), "complete CV"
        if study.incomplete_estimable() and (study.selection == "pooled" or complete):
            return study.bbc(n_bootstraps=bootstraps, include_incomplete=True), "incomplete CV"
        if complete:
            return study.bbc(n_bootstraps=bootstraps), "complete configurations"
    except UserError as exc:  # what the estimate needs and the study cannot give yet
        return None, f"not computed: {str(exc).splitlines()[0]}"
    if study.selection != "pooled":
        return None, "not yet: selection='fold_mean' needs a complete configuration"
    return None, "not yet: not every configuration has a prediction in each repeat"


def estimate_line(res, basis, st):
    """The status line of :func:`live_estimate`'s answer."""
    if res is None:
        return f"estimate {basis}"
    lo, hi = res.confidence_interval
    # dropped and failed cells are settled, not owed: a finished BBCD study is 100%
    settled = st["cells"] - st["pending"]
    share = f"{settled:,} of {st['cells']:,} cells settled, {settled / st['cells']:.0%}"
    if st["dropped"] or st["failed"]:
        share += f": {st['done']:,} done"
    # early, a configuration with a few predictions ranked perfectly wins every bootstrap
    point = "; one point: every bootstrap scored alike, too few predictions yet" if lo == hi else ""
    return (f"estimate now: {res.method.upper()} {res.estimate:.4f}, "
            f"{res.confidence_level:.0%} CI [{lo:.4f}, {hi:.4f}] (width {hi - lo:.4f}{point}), "
            f"lower bound {res.lower_bound:.4f}; on the {basis} ({share}), conditioned on "
            f"{len(res.configs)} configurations; selected configuration {res.selected_config} "
            f"({res.n_bootstraps} bootstraps, the study's seed)"
            f"{'' if res.pos_label is None else f'; positive class {res.pos_label!r}'}")


def echo_failures(study, groups=None, err=False):
    """The failed configurations' first errors, grouped by message (at most 5 lines)."""
    groups = study.failures() if groups is None else groups
    if not groups:
        return
    n = sum(g["count"] for g in groups)
    click.echo(f"{n} configuration{'s' if n > 1 else ''} failed (first error of each, grouped):",
               err=err)
    for g in groups[:5]:
        which = ", ".join(map(str, g["configs"][:5])) + (", ..." if g["count"] > 5 else "")
        first = g["error"].splitlines()[0] if g["error"] else ""
        click.echo(f"  {g['count']} x {first}  (configurations {which})", err=err)
    if len(groups) > 5:
        click.echo(f"  ... {len(groups) - 5} other messages: bbc-dask status --json lists all",
                   err=err)


def check_finished(study, partial, what):
    """Refuse numbers from an unfinished study unless ``--partial`` asked for them, or
    its rule stopped it (``run_study(stop=...)``: its numbers are its incomplete CV's);
    say what is missing either way."""
    missing = study.unfinished()
    if missing is None:
        return None
    stopped = study.stopped_
    if not partial and stopped is None:
        raise UserError(f"The study at {study.store} is unfinished ({missing}); run it again to "
                        f"finish it, or pass --partial for {what} so far.")
    if stopped is not None:
        missing = f"{missing}; stopped early by its rule, {stopped.reason}"
    if what == "estimates" and study.incomplete_estimable():
        from ..cube import DONE

        st = study.state
        done = int((st == DONE).sum())
        bbc_f = ("BBC-F from the complete configurations" if study.candidates().size else
                 "BBC-F once a configuration is complete (it needs every fold)")
        click.echo(f"partial: the study is unfinished ({missing}); BBC on the incomplete CV "
                   f"(every configuration has predictions in each repeat; {done:,} of "
                   f"{st.size:,} cells done, {done / st.size:.0%}); {bbc_f}.", err=True)
    else:
        click.echo(f"partial: the study is unfinished ({missing}); {what} from the complete "
                   f"configurations only.", err=True)
    study.said_unfinished = True  # said here: not again by each estimate's warning
    return missing


def print_estimates(study, bootstraps, confidence, method, seed, as_json=False, partial=None,
                     cis=None):
    from ..report import estimates

    res = estimates(study, method=method, n_bootstraps=bootstraps, confidence_level=confidence,
                    random_state=seed, include_incomplete=partial is not None and study.incomplete_estimable())
    if as_json:
        out = {k: dict(r.to_dict(), random_state=seed if seed is not None else study.spec["seed"],
                       partial=partial)
               for k, r in res.items()}
        if cis:
            out["selection_ci"] = {m: r.to_dict() for m, r in cis.items()}
        click.echo(strict_json.dumps(out))
        return
    from ..report import configuration_text, study_names

    click.echo(f"{'method':8s} {'estimate':>9s} {'CI':>21s} {'lower':>8s} {'naive CV':>9s} "
               f"{'config':>7s} {'bootstraps':>10s}")
    chosen, names = {}, study_names(study)
    for k, r in res.items():
        name = "BBC-F" if k == "bbc_f" else r.method.upper()
        ci = f"[{r.confidence_interval[0]:.4f}, {r.confidence_interval[1]:.4f}]"
        click.echo(f"{name:8s} {r.estimate:9.4f} {ci:>21s} {r.lower_bound:8.4f} "
                   f"{r.naive_estimate:9.4f} {r.selected_config:7d} {r.n_bootstraps:10d}")
        chosen.setdefault(r.selected_config, []).append(name)
    # each line's own winner: BBC's is the study's selection, BBC-F's the best fold mean
    click.echo(f"({metric_text(study.metric, study.pos_label)}; {confidence:.0%} confidence; "
               f"'config' is the configuration "
               f"each method selected; 'naive CV' its own CV score)")
    for c, by in chosen.items():
        click.echo(f"configuration {c} ({', '.join(by)}): {configuration_text(study, c, names)}")
    others = {}
    if cis:
        click.echo(f"\n{'method':8s} {'lower':>8s} {'AUC':>8s} {'config':>7s} {'resamples':>10s}  "
                   f"(2024 paper's comparators: their own 75/25 selection)")
        for r in cis.values():
            lower = "NaN" if r.reason else f"{r.lower_bound:.4f}"
            why = f"  {r.reason}" if r.reason else ""
            if r.above_observed:
                why = ("  above the observed AUC: the tilted resamples fell below 0.5 and count "
                       "as 1 - AUC (pROC's direction 'auto', as the paper's R code); uninformative")
            drawn = str(r.n_bootstraps) if r.n_bootstraps else "-"
            click.echo(f"{CI_METHODS[r.method]:8s} {lower:>8s} {r.auc:8.4f} {r.selected:7d} "
                       f"{drawn:>10s}{why}")
            if r.selected >= 0:
                others.setdefault(r.selected, []).append(CI_METHODS[r.method])
        for c, by in others.items():
            if c not in chosen:
                click.echo(f"configuration {c} ({', '.join(by)}): {configuration_text(study, c, names)}")
    echo_failures(study)


def echo_fit_warnings(warned):
    """The fits' warnings, each distinct one once with its count (the tasks collect them:
    printed by each worker, one scikit-learn FutureWarning fills a screen)."""
    from .._run_warnings import fit_warning_groups

    groups = fit_warning_groups(warned)
    if not groups:
        return
    n = sum(g[3] for g in groups)
    click.echo(f"warnings from the fits ({len(groups)} distinct, each shown once; at least "
               f"{n} in all):", err=True)
    for _, name, text, count in groups[:5]:
        first = text.splitlines()[0] if text else ""
        click.echo(f"  {count} x {name}: {first}", err=True)
    if len(groups) > 5:
        click.echo(f"  ... {len(groups) - 5} other warnings", err=True)


def echo_progress(st, stamp):
    """The progress line of a study's ``status()``."""
    def sec(v):
        return "-" if v is None else f"{v:.0f} s"

    click.echo(
        f"{time.strftime('%H:%M:%S ') if stamp else ''}"
        f"{_activity(st)}; waves done {st['waves_done']}/{st['waves']}; "
        f"cells {st['done']} done, {st['failed']} failed, {st['dropped']} dropped, "
        f"{st['pending']} pending of {st['cells']}; active configs {st['active_configs']}/{st['configs']}; "
        f"elapsed {sec(st['elapsed_s'])}, remaining {sec(st['remaining_s'])}"
        f"{'; stopped early by its rule (' + st['stopped'] + ')' if st.get('stopped') else ''}")


def _activity(st):
    """Whether a run holds the study, and whether it has begun its waves."""
    if st.get("starting"):
        return "starting (a run holds the store and has not begun its waves)"
    return "running" if st["running"] else "not running"
