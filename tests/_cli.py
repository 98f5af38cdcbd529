"""The command line in this process: ``run_cli("status", store)`` is ``bbc-dask status
STORE`` as a shell runs it — the same ``bbc_dask.cli.main``, its output and exit code
captured by click's ``CliRunner`` — without starting an interpreter (about 2 CPU-seconds of
imports each time on a 2-core machine).

The tests whose subject is the process itself run the installed ``bbc-dask`` in a
subprocess and say so: the entry point, signals (Ctrl-C, SIGTERM), a broken pipe, exit
codes as a shell sees them, ``status --watch`` beside a running study, a read-only mount.
"""
import os
import subprocess
import sys
import traceback

from click.testing import CliRunner

#: the installed entry point, for the tests of the process
CLI = os.path.join(os.path.dirname(sys.executable), "bbc-dask")


def _runner():
    try:  # click < 8.2 mixes stderr into stdout unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def run_cli(*args, check=False):
    """Run the command line with ``args`` (each passed through ``str``) in this process:
    a ``subprocess.CompletedProcess`` as ``subprocess.run(..., capture_output=True,
    text=True)`` gives it. ``check``: raise AssertionError with the end of stderr on a
    non-zero exit. The process's logging levels are as before afterwards."""
    from bbc_dask import _dask_logs
    from bbc_dask.cli import main

    argv = [str(a) for a in args]
    with _dask_logs.restored():  # the command silences distributed's logs
        result = _runner().invoke(main, argv, prog_name="bbc-dask")
    stderr, code = result.stderr, result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # what escapes main (--debug's raise): the interpreter prints it and exits 1
        stderr += "".join(traceback.format_exception(*result.exc_info))
        code = 1
    out = subprocess.CompletedProcess(["bbc-dask", *argv], code, result.stdout, stderr)
    if check and out.returncode != 0:
        raise AssertionError(f"bbc-dask {' '.join(argv)}: exit {out.returncode}: "
                             f"{out.stderr[-3000:]}")
    return out
