"""The ``bbc-dask`` command line: run, status, estimate, report, verify, demo, schema.

Errors a user can cause (:class:`bbc_dask.exceptions.UserError`: a bad study file or
option, a missing data file, a store that is not a study or is in use) are one line on
stderr and exit status 2, with no traceback unless ``--debug``. Anything else is a
failure of bbc_dask itself: exit status 1, named an internal error, with its traceback.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import warnings

import click

from .. import _json as strict_json
from .._doors import COMMAND_LINE, STUDY_FILE, door, entered
from ..exceptions import (
    BoundAboveObservedWarning,
    StudyInterrupted,
    UserError,
)
from ..stats import CI_METHODS, alpha_of
from ._stores import note_read_only, refuse_read_only
from ._stores import store_errors as _store_errors
from ._tables import (check_finished, echo_fit_warnings, estimate_line, live_estimate,
                      print_estimates)

_CI_METHODS = tuple(CI_METHODS)


class _Command(click.Command):
    """A command: errors below it are worded in the command line's words (``run``'s in
    the study file's, whose keys name the parameters)."""

    def invoke(self, ctx):
        with entered(STUDY_FILE if self.name == "run" else COMMAND_LINE):
            return super().invoke(ctx)


class _Group(click.Group):
    command_class = _Command

    def parse_args(self, ctx, args):
        # --debug is the group's option, but users type it after the command too
        # (``bbc-dask run study.yaml --debug``): take it from anywhere
        if "--debug" in args[1:]:
            args = ["--debug"] + [a for a in args if a != "--debug"]
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        from .._signals import signals_as_interrupts

        try:
            with signals_as_interrupts():
                return super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except (click.ClickException, click.Abort):
            raise
        except StudyInterrupted as e:
            # one line; the counts come from the store, the wording is the command line's
            if e.done is not None:
                click.echo(f"interrupted: {e.done} of {e.total} cells saved; run the same "
                           f"command to resume", err=True)
            else:
                click.echo("interrupted", err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except UserError as e:  # one line unless --debug
            if ctx.obj and ctx.obj.get("debug"):
                raise
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            click.echo(f"bbc-dask: error: {msg}", err=True)
            if ctx.obj and ctx.obj.get("verbose"):
                for line in getattr(e, "differences", ()):  # every one, a line each
                    click.echo(f"  {line}", err=True)
            ctx.exit(2)
        except BrokenPipeError:
            # the reader left (``| head``): what it read is all it wanted. Standard output
            # goes to /dev/null so that the interpreter's last flush does not fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except Exception as e:  # a failure of bbc_dask: say so, with what a report needs
            if ctx.obj and ctx.obj.get("debug"):
                raise
            import traceback

            click.echo("".join(traceback.format_exception(e)).rstrip(), err=True)
            click.echo(f"bbc-dask: internal error: {type(e).__name__}: {e} (a bug of bbc_dask, "
                       f"not of the study: please report it with the traceback above)", err=True)
            ctx.exit(1)


@click.group(cls=_Group)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.option("--verbose", is_flag=True,
              help="Say more of an error: every difference of a store holding another study.")
@click.version_option(package_name="bbc-dask")
@click.pass_context
def main(ctx, debug, verbose):
    """Cross-validation with tuning on Dask, with bias-corrected (BBC) estimates."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    ctx.obj["verbose"] = verbose
    if not debug:
        # A terminal gets this command's own lines; Dask's warnings ("event loop was
        # unresponsive", memory notes) from the scheduler that runs in this process are
        # noise there (--debug shows them).
        import logging

        from .. import _dask_logs as dask_logs

        dask_logs.silence(logging.ERROR)


def _parse_options(pairs, flag):
    """``KEY=VALUE`` pairs (values read as YAML; dotted keys nest) as a dict."""
    import yaml

    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=flag)
        *parents, last = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise click.BadParameter(f"{key!r} nests under a value", param_hint=flag)
        node[last] = yaml.safe_load(value) if value else ""
    return out


def _open(store, storage_options=None):
    from ..study import open_study

    with _store_errors(store):
        return open_study(store, storage_options=storage_options or None)


def _client(resolved, scheduler):
    """What run_study connects to: an address, or make_client's arguments (the run starts
    the cluster, and on an interrupt closes it without a word from its workers)."""
    cluster = dict(resolved["cluster"])
    kind = cluster.pop("kind", "local")
    cluster.pop("security", None)
    if scheduler:
        return scheduler
    if kind == "address":
        return cluster["address"]
    if kind == "local":
        import logging

        # The workers' lines are noise on a terminal that gets this command's own, even
        # at ERROR: a worker whose heartbeat meets the scheduler closing — after a run
        # stopped on an error — logs a traceback of 30 lines. Unless --debug (which
        # leaves the driver's Dask logging as it is), workers say nothing below CRITICAL.
        from .. import _dask_logs as dask_logs

        quiet = dask_logs.is_quiet(logging.ERROR)
        cluster.setdefault("silence_logs", logging.CRITICAL if quiet else logging.ERROR)
    return {"kind": kind, **cluster}


@door(STUDY_FILE)
def run_study_file(resolved, *, scheduler=None, store=None, progress=True, cluster=None,
             storage_options=None, overwrite=False, stop=None):
    """Run (or resume) a resolved study file; returns the Study.

    ``cluster`` overrides keys of the study file's ``cluster:`` section (``kind``, options,
    ``security``); ``storage_options`` updates its ``storage_options``; ``stop`` keys of
    its ``stop:`` section (the rule that ends the run early)."""
    from ..cube import StoreLocation
    from ..engine import Execution, Resampling, Scoring, Search, Storage, StudyRequest, run_cvt
    from ..stats import Dropping
    from ..study import study_of
    from . import _studyfile as studyfile

    if store:
        resolved = dict(resolved, store=StoreLocation.absolute(store))
    if cluster:
        merged = dict(resolved["cluster"])
        if cluster.get("kind", merged.get("kind")) != merged.get("kind"):
            merged = {k: v for k, v in merged.items() if k == "security"}  # another kind's options don't apply
        merged.update(cluster)
        resolved = dict(resolved, cluster=studyfile.check_cluster(merged))
    if storage_options:
        resolved = dict(resolved, storage_options={**(resolved.get("storage_options") or {}), **storage_options})
    X, y, groups, *folds = studyfile.load_data(resolved)
    if hasattr(X, "columns"):  # the resolved feature columns are part of the record
        resolved = dict(resolved, data=dict(resolved["data"], columns=list(X.columns)))
    estimator, grid = studyfile.build_search(resolved)
    protocol = resolved.get("protocol") or {"kind": "cvt"}
    scoring = Scoring(resolved["metric"], None,
                      "raise" if resolved.get("error_score") == "raise" else float("nan"),
                      resolved.get("selection", "pooled"))
    storage = Storage(resolved["store"], resolved.get("storage_options"))
    rule = {**(resolved.get("stop") or {}), **(stop or {})} or None
    execution = Execution(_client(resolved, scheduler), resolved["cluster"].get("security"),
                          progress, resolved["configs_per_task"], overwrite, stop=rule)
    if protocol["kind"] == "nested":
        from ..protocols import nested_result

        request = StudyRequest.build(
            estimator, X, y, search=Search(grid), scoring=scoring, storage=storage,
            resampling=Resampling(n_repeats=resolved["cv"]["repeats"], groups=groups,
                                  nested=(protocol["n_outer"], protocol["n_inner"])),
            execution=dataclasses.replace(execution, refit=False),
            random_state=resolved["random_state"], metadata=resolved)
        run = run_cvt(request)
        echo_fit_warnings(run.warned)
        return nested_result(run, resolved.get("confidence", 0.95))
    request = StudyRequest.build(
        estimator, X, y, search=Search(grid), scoring=scoring, storage=storage,
        resampling=Resampling(resolved["cv"]["splits"], resolved["cv"]["repeats"],
                              studyfile.build_cv(resolved, *folds), groups),
        execution=execution, dropping=Dropping.coerce(resolved["dropping"]),
        random_state=resolved["random_state"], metadata=resolved)
    study = study_of(run_cvt(request))
    echo_fit_warnings(study.fit_warnings_)
    return study


_storage_option = click.option(
    "--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
    help="fsspec option of a URL store, repeatable; dotted keys nest "
         "(client_kwargs.endpoint_url=http://minio:9000).")


@main.command()
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--scheduler", default=None, help="Address of an existing Dask scheduler.")
@click.option("--store", default=None, help="Store path or URL (overrides the study file's).")
@click.option("--cluster", "cluster_kind", type=click.Choice(["local", "address", "kubernetes"]),
              default=None, help="Cluster kind (overrides the study file's cluster.kind).")
@click.option("--cluster-option", multiple=True, metavar="KEY=VALUE",
              help="Cluster option, repeatable (n_workers=8, image=..., adapt_maximum=20).")
@click.option("--tls-ca-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="CA certificate of a TLS scheduler.")
@click.option("--tls-cert", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Client certificate for a TLS scheduler.")
@click.option("--tls-key", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Client private key for a TLS scheduler.")
@_storage_option
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--overwrite", is_flag=True,
              help="Replace a study of other arguments stored at the store (it is deleted).")
@click.option("--stop-ci-width", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="W", help="Stop once BBC's interval on the incomplete CV is at most W wide.")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="S", help="Submit no fit after S seconds of this run.")
@click.option("--max-fits", type=click.IntRange(min=1), default=None, metavar="F",
              help="Stop at F fitted cells of the study (a rerun without it resumes).")
def run(study_file, scheduler, store, cluster_kind, cluster_option, tls_ca_file, tls_cert,
        tls_key, storage_option, no_progress, overwrite, stop_ci_width, max_seconds, max_fits):
    """Run STUDY_FILE, or resume it if its store holds the same study."""
    from ._studyfile import load_study_file

    resolved = load_study_file(study_file)
    storage_options = _parse_options(storage_option, "--storage-option")
    # said before the data is loaded or a cluster started, in the reading commands' words
    refuse_read_only(store or resolved["store"],
                     {**(resolved.get("storage_options") or {}), **storage_options},
                     "run or resumed")
    cluster = _parse_options(cluster_option, "--cluster-option")
    if cluster_kind:
        cluster["kind"] = cluster_kind
    tls = {k: os.path.abspath(v) for k, v in (("tls_ca_file", tls_ca_file),
                                              ("tls_client_cert", tls_cert),
                                              ("tls_client_key", tls_key)) if v}
    if tls:
        cluster["security"] = tls
    t = time.time()
    stop = {k: v for k, v in (("ci_width", stop_ci_width), ("max_seconds", max_seconds),
                              ("max_fits", max_fits)) if v is not None}
    study = run_study_file(resolved, scheduler=scheduler, store=store, progress=not no_progress,
                     cluster=cluster, storage_options=storage_options,
                     overwrite=overwrite, stop=stop)
    if not hasattr(study, "status"):  # a nested CV's result
        click.echo(f"finished in {time.time() - t:.1f} s; store {study.store}")
        click.echo(study.summary())
        return
    st = study.status()
    rec = study.stopped_
    if rec is not None:  # the rule ended it: the estimate of its incomplete CV
        click.echo(f"stopped early ({rec.reason}): {st['cells'] - st['pending']} of {st['cells']} "
                   f"cells settled in {time.time() - t:.1f} s; store {study.store}; run it "
                   f"again without the rule to go on")
        click.echo(estimate_line(*live_estimate(study, resolved.get("bootstraps", 1000)), st))
        return
    click.echo(f"finished: {st['done']} cells done, {st['failed']} failed, {st['dropped']} dropped "
               f"in {time.time() - t:.1f} s; store {study.store}")
    print_estimates(study, resolved.get("bootstraps", 1000), resolved.get("confidence", 0.95), "both",
                     None)


@main.command()
@click.argument("store")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (with --watch, one object a line).")
@click.option("--watch", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="Print the status again every SECONDS as a run fills the store: waits "
                   "for a store a starting run has not created yet, and ends, saying why, "
                   "once the study is finished or no run has held it for 10 s "
                   "(interrupted, or stopped by its rule).")
@click.option("--bootstraps", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Bootstraps of the live BBC estimate.")
@click.option("--no-estimate", is_flag=True, help="Progress only: no BBC estimate.")
@_storage_option
def status(store, as_json, watch, bootstraps, no_estimate, storage_option):
    """Progress of the study at STORE (a path or a URL such as s3://bucket/study.zarr),
    and the BBC estimate it gives now: on the incomplete CV while a run goes on (once
    every configuration has a prediction in each repeat), with its interval, the share
    of cells done and the configurations it is conditioned on.

    Reads only: never takes the study's lock, so it may watch a running study."""
    from ._status import WatchEnd, echo_waiting, print_status
    from ._stores import nested_status, not_yet_a_study

    options = _parse_options(storage_option, "--storage-option")
    note_read_only(store, options)
    said = None  # the last waiting line, not repeated while nothing changes
    watch_end = WatchEnd(time.monotonic)
    seen = False  # a study was opened: the store cannot turn into a nested CV's
    while True:
        if not seen and nested_status(store, options, as_json):
            return
        try:
            study = _open(store, options)  # again each time: the run's newest ledger
        except UserError:
            waiting = None if watch is None else not_yet_a_study(store, options)
            if waiting is None:
                raise
            if waiting != said:
                echo_waiting(waiting, as_json)
                said = waiting
            time.sleep(watch)
            continue
        said, seen = None, True
        # finished (or every configuration failed) before the status is read, so the
        # last status printed is the finished one: a run may write its last results
        # between the two reads
        finished = study.unfinished() is None
        st = study.status()
        ended = None if watch is None else watch_end(st, finished)
        print_status(study, as_json, None if no_estimate else bootstraps,
                     stamp=watch is not None, st=st, ended=ended)
        if watch is None or ended is not None:
            return
        time.sleep(watch)


@main.command()
@click.argument("store")
@click.option("--method", type=click.Choice(["bbc", "bbc-f", "both"]), default="both", show_default=True)
@click.option("--bootstraps", type=click.IntRange(min=1), default=None, help="Default: the study file's, else 1000.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None)
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Bootstrap seed (default: the study's own seed, as Study.bbc() uses).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--partial", is_flag=True,
              help="Estimate an unfinished study: BBC on the incomplete CV once every "
                   "configuration has predictions in each repeat, else from the complete "
                   "configurations.")
@click.option("--ci", "ci_methods", multiple=True, type=click.Choice([*_CI_METHODS, "all"]),
              help="Also the 2024 paper's lower bounds (repeatable; AUC studies): DL, HM, BT, "
                   "their 10p variants, MABT (with --bootstraps resamples if given, else 2000).")
@_storage_option
def estimate(store, method, bootstraps, confidence, seed, as_json, partial, ci_methods,
             storage_option):
    """The estimate, CI, lower bound and naive estimate of the study at STORE (of a
    nested CV's store: its estimate, outer scores and interval over repeats).

    \b
    Which number to report:
    - The lower bound ('lower') as the performance you can claim: the selected model
      does at least this well with the confidence level's probability. The estimate is
      the best single guess; the naive CV score is optimistic (the winner's curse).
    - BBC (bootstrapping the samples) when the metric is defined per sample or on pooled
      predictions, as accuracy and AUC are; BBC-F (bootstrapping folds) when only fold
      scores exist or folds are the units. Each row estimates its own 'config': report
      the row of the model you deploy.
    - Nested CV when you can afford it and want the protocol most readers know; BBC
      estimates the same from the study's own fits.
    The coverage figures behind this are in docs/statistics.md ("Which number to report")."""
    from ._stores import nested_result_of

    options = _parse_options(storage_option, "--storage-option")
    note_read_only(store, options)
    nested = nested_result_of(store, options, confidence or 0.95)
    if nested is not None:
        click.echo(strict_json.dumps(nested.to_dict()) if as_json else nested.summary())
        return
    study = _open(store, options)
    missing = check_finished(study, partial, "estimates")
    resolved = study.metadata or {}
    level = confidence or resolved.get("confidence", 0.95)
    cis = {}
    kw = {} if seed is None else {"random_state": seed}  # None: the study's own seed
    if bootstraps is not None:  # else the methods' own 2000 (the paper's)
        kw["n_bootstraps"] = max(2, bootstraps)
    with warnings.catch_warnings():  # a bound above the observed AUC is said in its row
        warnings.simplefilter("ignore", BoundAboveObservedWarning)
        for m in (_CI_METHODS if "all" in ci_methods else dict.fromkeys(ci_methods)):
            cis[m] = study.selection_ci(m, alpha=alpha_of(level), **kw)
    print_estimates(study, bootstraps or resolved.get("bootstraps", 1000), level, method,
                     seed, as_json, partial=missing, cis=cis)


@main.command()
@click.argument("store")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--bootstraps", type=click.IntRange(min=1), default=None)
@click.option("--partial", is_flag=True,
              help="Report an unfinished study from its complete configurations.")
@_storage_option
def report(store, out_dir, bootstraps, partial, storage_option):
    """PNG plots and an HTML summary of the study at STORE."""
    from ..report import write_nested_report, write_report
    from ._stores import nested_result_of

    options = _parse_options(storage_option, "--storage-option")
    _check_out_dir(out_dir)
    note_read_only(store, options)
    nested = nested_result_of(store, options)
    if nested is not None:
        click.echo(f"report: {write_nested_report(nested, out_dir)}")
        return
    study = _open(store, options)
    check_finished(study, partial, "a report")
    resolved = study.metadata or {}
    # the defaults of `bbc-dask estimate --ci all`: BBC's bootstraps from the study file
    # (else 1000), the comparators' own 2000 unless --bootstraps says otherwise
    path = write_report(study, out_dir, n_bootstraps=bootstraps or resolved.get("bootstraps", 1000),
                        confidence_level=resolved.get("confidence", 0.95),
                        random_state=None,
                        ci_bootstraps=None if bootstraps is None else max(2, bootstraps))
    click.echo(f"report: {path}")


def _check_out_dir(out_dir):
    """Refuse an ``--out`` this user cannot write (a read-only mount, as the store's may
    be) before the study is read, in one line rather than a traceback after the plots
    are computed. Nothing is created to find out: the nearest folder that exists is asked."""
    folder = os.path.abspath(out_dir)
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    if os.path.isdir(folder) and not os.access(
            folder, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        raise UserError(f"The report directory {out_dir!r} (--out) cannot be written here: "
                        f"{folder} is read-only or not writable by this user")


@main.command()
@click.argument("store")
@click.option("--repair", is_flag=True,
              help="Mark the cells of damaged chunks pending (a rerun of the study recomputes them).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_storage_option
@click.pass_context
def verify(ctx, store, repair, as_json, storage_option):
    """Check every chunk the ledger of the study at STORE counts (present, readable, the
    bytes its task wrote), the ledger itself, the data's digests and the final model.

    Exit status: 0 whole (or repaired), 3 damaged (the files are named)."""
    from ..cube import verify_store

    options = _parse_options(storage_option, "--storage-option") or None
    if repair:
        refuse_read_only(store, options, "repaired")
    else:
        note_read_only(store, options)
    with _store_errors(store):
        rep, reset = verify_store(store, repair=repair, storage_options=options)
    if as_json:
        click.echo(strict_json.dumps(dict(rep.to_dict(), cells_reset=reset)))
    else:
        click.echo(f"{rep.store}: {rep.chunks_checked} prediction chunks and "
                   f"{rep.ledger_chunks_checked} ledger chunks checked; "
                   + ("no damage" if rep.ok else f"{len(rep.damaged)} damaged:"))
        for d in rep.damaged[:50]:
            click.echo(f"  {d}")
        if len(rep.damaged) > 50:
            click.echo(f"  ... {len(rep.damaged) - 50} more (--json lists all)")
        metadata = sum(d.kind == "metadata" for d in rep.damaged)
        if reset or (repair and not rep.ok):
            rebuilt = f", {rep.rebuilt} ledger chunks rebuilt from the stored predictions" \
                if rep.rebuilt else ""
            click.echo("repaired: " + f"{metadata} metadata files rewritten, " * bool(metadata)
                       + f"{reset} cells marked pending{rebuilt}"
                       + ("; run the study again to recompute them" if reset or rebuilt else ""))
        elif not rep.ok:
            click.echo("run 'bbc-dask verify --repair' to repair it (metadata from an intact "
                       "copy, chunks by marking their cells pending)" if rep.repairable else
                       "the study's data is damaged: run the study again with --overwrite")
    if not rep.ok and not repair:
        ctx.exit(3)


@main.command()
@click.option("--store", default="runs/demo.zarr", show_default=True)
@click.option("--out", "out_dir", default="runs/demo_report", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--no-progress", is_flag=True)
def demo(store, out_dir, workers, no_progress):
    """A real study (breast cancer; logistic regression, SVM and random forest grids) on
    a local Dask cluster, its estimates next to the naive one, and a report."""
    from ..report import write_report
    from ._studyfile import DEMO, resolve_study_file

    raw = json.loads(json.dumps(DEMO))  # a deep copy
    raw["store"] = os.path.abspath(store)
    raw["cluster"]["n_workers"] = workers
    resolved = resolve_study_file(raw)
    t = time.time()
    study = run_study_file(resolved, progress=not no_progress)
    click.echo(f"{len(study.params)} configurations × 5 folds × 2 repeats on {workers} local "
               f"workers in {time.time() - t:.1f} s")
    print_estimates(study, 1000, 0.95, "both", None)
    path = write_report(study, out_dir, n_bootstraps=1000)
    click.echo(f"store: {study.store}\nreport: {os.path.abspath(path)}")


@main.command("schema")
def schema_command():
    """Print the study file's JSON Schema, for editors: save it and start a study file
    with ``# yaml-language-server: $schema=study_file.schema.json`` (docs/usage.md)."""
    from ._schema import schema_text

    click.echo(schema_text(), nl=False)


@main.command()
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--protocol", type=click.Choice(["simulation", "real", "simulation2018"]),
              default="simulation", show_default=True,
              help="The 2024 paper's simulation or real-data protocol (lower bounds of AUC), or "
                   "the 2018 paper's simulation (bias and inclusion of accuracy estimates).")
@click.option("--setting", "settings", multiple=True, metavar="KEY=VALUE,...",
              help="A setting, repeatable: a=24,b=6,n_samples=500,n_configs=100,class0_share=0.1 "
                   "(simulation), dataset=breast_cancer,n_train=50 (real) or "
                   "a=9,b=6,n_samples=20,n_configs=100 (simulation2018). Default: part of "
                   "the paper's Table 2 / n_train 50 and 200 / part of the 2018 Figure 1.")
@click.option("--method", "methods", multiple=True,
              type=click.Choice(["bbc", "bbc_f", *_CI_METHODS, "naive_bootstrap", "cvt", "tt",
                                 "ncv", "bbcd", "repeated_holdout"]),
              help="Repeatable; default: all ten (simulation2018: cvt, tt, ncv, bbc, bbcd, "
                   "bbc_f, repeated_holdout).")
@click.option("--repetitions", type=click.IntRange(min=1), default=200, show_default=True)
@click.option("--alpha", type=click.FloatRange(0, 0.5, min_open=True, max_open=True), default=0.05,
              show_default=True)
@click.option("--bootstraps", type=click.IntRange(min=2), default=None,
              help="Default: each method's (BBC 1000, NB 500, tilting 2000).")
@click.option("--selection", type=click.Choice(["fold_mean", "pooled"]), default=None,
              help="The final winner of BBC and NB: the best mean fold score (the paper's "
                   "code; the default) or the best pooled score (simulation2018's default, "
                   "its code's).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--scheduler", default=None, help="Address of an existing Dask scheduler.")
@click.option("--cluster-option", multiple=True, metavar="KEY=VALUE",
              help="Local cluster option, repeatable (n_workers=2).")
def coverage(out_dir, protocol, settings, methods, repetitions, alpha, bootstraps, selection, seed,
             scheduler, cluster_option):
    """Run or resume a coverage study (the 2024 paper's protocol) into OUT_DIR: the
    inclusion rate, tightness and binomial test of each method's lower bound, as
    coverage.csv, coverage.html and coverage.png. With --protocol simulation2018, the 2018
    paper's §5.1: each method's bias and the inclusion of the truth in its interval."""
    from ..protocols import coverage as run_coverage

    parsed = [_parse_options(s.split(","), "--setting") for s in settings] or None
    client = scheduler or {"kind": "local", **_parse_options(cluster_option, "--cluster-option")}
    table = run_coverage(out_dir, protocol=protocol, settings=parsed, methods=list(methods) or None,
                         n_repetitions=repetitions, alpha=alpha, n_bootstraps=bootstraps,
                         selection=selection, random_state=seed, client=client)
    cols = [c for c in table.columns if c not in ("setting", "binom_p")]
    click.echo(table[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    click.echo(f"table: {os.path.abspath(os.path.join(out_dir, 'coverage.csv'))}\n"
               f"page: {os.path.abspath(os.path.join(out_dir, 'coverage.html'))}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
