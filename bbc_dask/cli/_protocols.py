"""``bbc-dask compare``: the papers' protocols side by side on a study file's data and
grid."""
from __future__ import annotations

import os

import click

from .. import _json as strict_json
from ..exceptions import ComparisonInterrupted, StudyFileError
from ._commands import _client, main

__all__ = ["compare"]


@main.command()
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output directory: comparison.html, comparison.png, comparison.json and "
                   "the stores (stores/cvt.zarr, stores/nested.zarr; a rerun resumes them).")
@click.option("--protocols", default=None, metavar="P,P,...",
              help="Which to run (default all): cvt, tt, bbc, bbc_f, ncv, holdout, "
                   "repeated_holdout, bootstrap.")
@click.option("--test-size", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.3, show_default=True)
@click.option("--holdout-repeats", type=click.IntRange(min=2), default=10, show_default=True)
@click.option("--bootstrap-rounds", type=click.IntRange(min=2), default=50, show_default=True)
@click.option("--scheduler", default=None, help="Address of an existing Dask scheduler.")
@click.option("--no-progress", is_flag=True,
              help="Say nothing while it runs (by default: a line as each protocol starts "
                   "and ends, and their progress bars, on stderr).")
def compare(study_file, out_dir, protocols, test_size, holdout_repeats, bootstrap_rounds,
            scheduler, no_progress):
    """Run the papers' protocols on STUDY_FILE's data and grid — naive CVT, TT, BBC-CV,
    BBC-F, nested CV (the study file's protocol.n_outer/n_inner, else cv.splits and one
    fewer), holdout, repeated holdout, the .632+ bootstrap — and write one table and plot
    of estimate, interval, models trained, fit seconds and wall time.

    Ctrl-C (or SIGTERM) prints the table of the protocols that had finished and writes it
    where the full one goes, marked partial; the same command again resumes the stores."""
    from ..protocols import compare as run_compare
    from . import _studyfile as studyfile

    resolved = studyfile.load_study_file(study_file)
    if resolved["random_state"] is None:
        raise StudyFileError("random_state: compare needs a fixed seed (every protocol's)")
    X, y, groups, *_ = studyfile.load_data(resolved)
    if groups is not None:
        raise StudyFileError("cv.groups: compare does not take groups yet (the holdout "
                             "family splits samples)")
    estimator, grid = studyfile.build_search(resolved)
    nested = resolved.get("protocol") or {}
    try:
        res = run_compare(
            estimator, grid, X, y, store=os.path.join(out_dir, "stores"),
            metric=resolved["metric"], n_splits=resolved["cv"]["splits"],
            n_outer=nested.get("n_outer"), n_inner=nested.get("n_inner"), test_size=test_size,
            holdout_repeats=holdout_repeats, n_bootstraps=bootstrap_rounds,
            confidence_level=resolved.get("confidence", 0.95),
            protocols=None if protocols is None else [p.strip() for p in protocols.split(",")],
            random_state=resolved["random_state"], client=_client(resolved, scheduler),
            progress=not no_progress, out_dir=out_dir)
    except ComparisonInterrupted as e:
        # what finished is the user's: shown and written, then the interrupt's exit
        from .._signals import deferred_interrupts

        with deferred_interrupts():
            _write_json(e.partial, out_dir)
            click.echo(e.partial.summary())
            click.echo(f"partial report: {os.path.join(out_dir, 'comparison.html')}; run the "
                       f"same command to finish it (the stores resume)", err=True)
        raise
    _write_json(res, out_dir)
    click.echo(res.summary())
    click.echo(f"report: {os.path.join(out_dir, 'comparison.html')}")


def _write_json(comparison, out_dir):
    with open(os.path.join(out_dir, "comparison.json"), "w") as f:
        strict_json.dump(comparison.to_dict(), f, indent=2)
