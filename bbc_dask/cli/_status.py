"""What ``bbc-dask status`` prints of a study, once or as ``--watch`` follows a run: the
progress line, the live estimate and the failures, the lines while a store holds no study
yet, and why a watch ends."""
from __future__ import annotations

import time

import click

from .. import _json as strict_json
from ._tables import echo_failures, echo_progress, estimate_line, live_estimate

__all__ = ["NOT_RUNNING_GRACE", "WatchEnd", "echo_waiting", "print_status"]


#: Seconds a watch goes on reading an unfinished study that no run holds before it ends:
#: a run being started takes the store's lock only once it has loaded its data and
#: checked its arguments (seconds), so a watch started with it would end at once.
NOT_RUNNING_GRACE = 10.0


class WatchEnd:
    """Why ``status --watch`` ends, asked of each status ``st`` it reads (``finished``:
    the study is, or every configuration failed), or None while it goes on: at once on
    a finished study; on an unfinished one that no run holds once it has been so for
    :data:`NOT_RUNNING_GRACE` seconds of ``clock`` (interrupted, killed or failed, or
    stopped by its rule)."""

    def __init__(self, clock=time.monotonic):
        self.clock, self.idle_since = clock, None

    def __call__(self, st, finished):
        if finished:
            return ("every configuration failed: no pending cell can change the estimate"
                    if st["pending"] and st["failed"] else "the study is finished")
        if st["running"]:
            self.idle_since = None
            return None
        now = self.clock()
        self.idle_since = now if self.idle_since is None else self.idle_since
        if now - self.idle_since < NOT_RUNNING_GRACE:
            return None
        if st["stopped"]:
            return (f"its run was stopped early by its rule ({st['stopped']}); run it again "
                    f"without the rule to go on")
        return (f"no run holds the study: its last run ended with {st['pending']} of "
                f"{st['cells']} cells pending (interrupted, killed or failed); run the same "
                f"command to resume")


def echo_waiting(waiting, as_json):
    """A watch's line while the store holds no study yet: ``waiting`` is
    :func:`not_yet_a_study`'s ``(text, starting)``."""
    text, starting = waiting
    if as_json:
        click.echo(strict_json.dumps({"study": False, "running": starting,
                                      "starting": starting, "note": text, "time": time.time()}))
    else:
        click.echo(f"{time.strftime('%H:%M:%S')} {text}")


def print_status(study, as_json, bootstraps, stamp=False, st=None, ended=None):
    """One status of ``study`` (``st``: its ``status()``, if read already): progress,
    failures and (``bootstraps`` given) the live estimate; ``ended``: why a watch ends
    here, said last."""
    st = study.status() if st is None else st
    groups = study.failures()
    if not as_json:  # the progress first: the estimate takes a moment
        echo_progress(st, stamp)
    res, basis = live_estimate(study, bootstraps) if bootstraps else (None, None)
    if as_json:
        est = None if res is None else dict(res.to_dict(), basis=basis)
        click.echo(strict_json.dumps(dict(st, failures=groups, estimate=est, estimate_basis=basis,
                                          time=time.time(),
                                          **({} if ended is None else {"watch_ended": ended}))))
        return
    if bootstraps:
        click.echo(estimate_line(res, basis, st))
    echo_failures(study, groups)
    if ended is not None:
        click.echo(f"watch ended: {ended}")
