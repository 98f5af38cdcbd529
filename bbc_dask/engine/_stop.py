"""Stopping a study early: the rule a run checks as it goes (:class:`Stop`) — the width of
BBC's interval on the incomplete CV, the run's seconds, the study's fits — and what the
store records when the rule stopped a run (:class:`StopRecord`).

BBC applies to whatever predictions exist (the 2018 paper, §3, "incomplete CV"), so a
study stopped between fold waves still has an honest estimate: ``Study.bbc(
include_incomplete=True)``. A rerun without the rule, or with a laxer one, resumes where
the stopped run left off.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from .. import _tuning as tuning
from .. import _validation as validation
from .._doors import door, spelled
from .._signals import deferred_interrupts
from ..exceptions import InvalidParameterError

__all__ = ["Stop", "StopRecord"]

#: why a run stopped, by the rule's field that stopped it
REASONS = ("ci_width", "max_seconds", "max_fits")


@dataclasses.dataclass(frozen=True)
class Stop:
    """When a study's run stops before every cell is fitted.

    A run stops at the first of these that holds: nothing more is submitted, the tasks
    running finish and are recorded (by ``ci_width`` or ``max_seconds``, those queued and
    not yet started are cancelled: their cells stay pending), and the store records why
    (:attr:`bbc_dask.Study.stopped_`). Running the study again without a rule, or with a
    laxer one, resumes from there: nothing finished is fitted again.

    Parameters
    ----------
    ci_width : float or None, default=None
        Stop once the ``confidence_level`` interval of BBC on the incomplete CV (what
        ``Study.bbc(include_incomplete=True, n_bootstraps=n_bootstraps)`` gives on the
        cells recorded so far) is at most this wide, and not empty (an interval of one
        point, every bootstrap scored alike, never stops a run). Checked each time a fold wave is
        complete (every active configuration's fold k of every repeat recorded), from the
        first at which every configuration trained so far has a prediction in each repeat.
        Its predictions are read into memory for each check: a study whose cube exceeds
        ``bbc_dask.in-memory-bytes`` is refused.
    max_seconds : float or None, default=None
        Submit nothing more once this run has lasted this long (from the call; the cluster's
        start included): a run ends past it by about its longest running task.
    max_fits : int or None, default=None
        Stop once the study has this many fitted cells (configuration × repeat × fold,
        failed ones included, over all its runs): no task is submitted beyond it, so a
        rerun with the same rule fits nothing more. Tasks are cut at whole stored chunks
        (``configs_per_task`` configurations each), so it is at most this many: exactly
        with chunks of one configuration.
    n_bootstraps : int, default=1000
        B of the width rule's BBC.
    confidence_level : float, default=0.95
        The level of the width rule's interval.

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), §3 (BBC on an
       incomplete CV, as BBCD-CV leaves it).
    """

    ci_width: float | None = None
    max_seconds: float | None = None
    max_fits: int | None = None
    n_bootstraps: int = 1000
    confidence_level: float = 0.95

    @door("Stop", always=True)
    def __post_init__(self):
        if self.ci_width is not None:
            validation.check_real_open(self.ci_width, "ci_width", 0.0, math.inf)
        if self.max_seconds is not None:
            validation.check_real_open(self.max_seconds, "max_seconds", 0.0, math.inf)
        validation.check_int(self.max_fits, "max_fits", allow_none=True)
        validation.check_int(self.n_bootstraps, "n_bootstraps", low=2)
        validation.check_real_open(self.confidence_level, "confidence_level", 0.0, 1.0)

    @classmethod
    def coerce(cls, stop):
        """``stop`` as a :class:`Stop` or None: a Stop, None, or a dict of its arguments
        (a study file's ``stop:`` section); anything else is refused naming ``stop``."""
        if stop is None or isinstance(stop, cls):
            return stop
        if isinstance(stop, dict):
            fields = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(stop) - fields)
            if not unknown:
                return cls(**stop)
            raise InvalidParameterError.of("stop", f"a dict of Stop's arguments {sorted(fields)}",
                                           shown=f"the unknown key(s) {unknown}",
                                           note=validation.did_you_mean(unknown[0], fields) or None)
        raise InvalidParameterError.of("stop", "None, a bbc_dask.Stop or a dict of its arguments",
                                       stop)

    def describe(self):
        """The rule as the store records it (JSON)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class StopRecord:
    """Why and where a run stopped early (:attr:`bbc_dask.Study.stopped_`).

    Attributes
    ----------
    reason : {"ci_width", "max_seconds", "max_fits"}
        The rule's field that stopped the run.
    rule : Stop
        The whole rule the run was given.
    fits : int
        The study's fitted cells when it stopped (failed ones included), the tasks that
        were in flight included.
    seconds : float
        The run's seconds when the rule held (its tasks in flight then finished).
    interval : tuple of float or None
        The width rule's last interval (BBC on the incomplete CV, ``rule.confidence_level``)
        when it was checked, else None.
    at : str
        When the rule held (local time, ISO 8601).
    """

    reason: str
    rule: Stop
    fits: int
    seconds: float
    interval: tuple | None
    at: str

    def to_json(self):
        return {"reason": self.reason, "rule": self.rule.describe(), "fits": self.fits,
                "seconds": self.seconds,
                "interval": None if self.interval is None else list(self.interval),
                "at": self.at}

    @classmethod
    def from_json(cls, d):
        return cls(d["reason"], Stop(**d["rule"]), int(d["fits"]), float(d["seconds"]),
                   None if d.get("interval") is None else tuple(d["interval"]), d["at"])


def check_width_rule(stop, metric, n_samples, n_configs, n_repeats, n_classes):
    """Refuse a width rule whose check could neither read the cube into memory (at most
    its ``n_samples`` x ``n_configs`` x ``n_repeats`` x class float64 predictions) nor go
    by the chunked path, which takes the registered metrics only."""
    if stop is None or stop.ci_width is None or metric.kind != "general":
        return
    nbytes = n_samples * n_configs * n_repeats * max(1, n_classes) * 8
    if nbytes > tuning.IN_MEMORY_BYTES:
        raise InvalidParameterError.of(
            "stop", "a rule without ci_width for a study this large scored by a "
                    "scikit-learn scorer's own function",
            shown=f"Stop(ci_width={stop.ci_width})",
            note=f"The width rule's check reads the trained configurations' predictions, up "
                 f"to {nbytes:,} bytes as float64: beyond bbc_dask.in-memory-bytes "
                 f"({tuning.IN_MEMORY_BYTES:,}) it goes by the chunked path, which takes "
                 f"the registered metrics only.")


class Budget:
    """A run's :class:`Stop` as the run goes: whether to submit more, and why it stopped.

    ``fits_before``: the study's fitted cells when the run began; ``started``: the run's
    start (``time.monotonic()``); ``width``: a callable giving BBC on the store's
    incomplete CV now (a :class:`~bbc_dask.BBCResult`, or None while it is not
    estimable)."""

    def __init__(self, stop, fits_before, started, width):
        self.stop, self.fits_before, self.started, self.width = stop, fits_before, started, width
        self.reason, self.interval, self.at, self.seconds = None, None, None, None

    @property
    def checks_width(self):
        """Whether the run checks the width rule as fold waves complete."""
        return self.stop.ci_width is not None

    def fits_left(self, fits, in_flight):
        """Cells the run may still submit (None: no limit), ``fits`` done by this run and
        ``in_flight`` submitted and not yet recorded."""
        if self.stop.max_fits is None:
            return None
        left = self.stop.max_fits - self.fits_before - fits - in_flight
        if left <= 0:
            self._stopped("max_fits")
        return max(0, left)

    def cut(self, group, fits, in_flight):
        """``group`` (blocks of a task) cut to the fits ``max_fits`` leaves (``fits`` done
        by this run, ``in_flight`` submitted and not yet recorded), whole blocks only: a
        block is the configurations of one stored chunk, which its task writes whole
        (the chunk's other columns NaN), so a block cut in two would have its second
        part's task blank the first's. None when none is left. A cut that leaves blocks
        out stops the run then (they may be its stage's last: the stage must not end as
        if complete)."""
        left = self.fits_left(fits, in_flight)
        if left is None:
            return group
        kept = []
        for block in group:
            if block.configs.size > left:
                break
            kept.append(block)
            left -= block.configs.size
        if len(kept) < len(group):
            self._stopped("max_fits")
        return kept or None

    def out_of_time(self):
        """Whether the run's ``max_seconds`` are spent (then it has stopped)."""
        if self.stop.max_seconds is not None and self.elapsed() >= self.stop.max_seconds:
            self._stopped("max_seconds")
        return self.reason is not None

    def wave_complete(self):
        """A fold wave's cells are all recorded (and written): the width rule's check."""
        if self.stop.ci_width is None or self.reason is not None:
            return
        from ..exceptions import UndefinedScoreError

        try:
            res = self.width()
        except UndefinedScoreError:  # no interval on these cells yet (e.g. one class)
            return
        if res is None:
            return
        lo, hi = res.confidence_interval
        self.interval = (float(lo), float(hi))
        # a degenerate interval (every bootstrap scored alike: early, a configuration
        # with few lucky predictions wins each one) says nothing of precision
        if np.isfinite(hi - lo) and 0 < hi - lo <= self.stop.ci_width:
            self._stopped("ci_width")

    def elapsed(self):
        return time.monotonic() - self.started

    def _stopped(self, reason):
        if self.reason is None:
            self.reason, self.at = reason, time.strftime("%Y-%m-%dT%H:%M:%S")
            self.seconds = self.elapsed()

    def record(self, fits_now):
        """The :class:`StopRecord` of a run the rule stopped (None if it did not), with
        the study's fitted cells ``fits_now`` once its tasks in flight were recorded."""
        if self.reason is None:
            return None
        return StopRecord(self.reason, self.stop, int(fits_now), float(self.seconds),
                          self.interval, self.at)


def executing_keys(dask_worker):
    """The keys a worker is running now (``Client.run``)."""
    return [ts.key for ts in dask_worker.state.executing | dask_worker.state.long_running]


def cancel_unstarted(client, futures):
    """Cancel the fit tasks of ``futures`` that no worker has started (their cells stay
    pending: a rerun fits them); the running ones finish and are recorded. A task that
    starts between the question and the cancel is cancelled too: its chunk may be
    written, but the ledger never says so, and a rerun writes it again."""
    waiting = [f for f in futures if not f.done()]
    if not waiting:
        return
    with deferred_interrupts():
        try:
            running = {k for keys in client.run(executing_keys).values() for k in keys}
        except Exception:  # noqa: BLE001 - the workers cannot say: let them all finish
            return
        client.cancel([f for f in waiting if f.key not in running])


def cells(group):
    """The cells (configuration fits) of a group of planned blocks."""
    return sum(int(b.configs.size) for b in group)


def incomplete_bbc(cube, client, stop):
    """BBC on the store's incomplete CV, as ``Study.bbc(include_incomplete=True,
    n_bootstraps=stop.n_bootstraps, confidence_level=stop.confidence_level)`` gives it
    (the study's own seed; on ``client`` by the chunked path beyond
    ``bbc_dask.in-memory-bytes``), or None while no configuration has a prediction in
    every repeat."""
    from ..cube import study_seed, target_of
    from ..cube import incomplete_bbc as of_the_cube

    with client.as_current():  # the chunked path's tasks, if it goes that way
        return of_the_cube(cube, n_bootstraps=stop.n_bootstraps,
                           confidence_level=stop.confidence_level,
                           random_state=study_seed(cube.spec), pos_label=target_of(cube)[1],
                           chunked=None, winner=False)  # the rule reads the interval


def stopped_message(record, state):
    """The line a run stopped by its rule prints."""
    from ..cube import PENDING

    done = int((state != PENDING).sum())
    why = {"ci_width": f"the interval of BBC on the incomplete CV is "
                       f"{record.interval[1] - record.interval[0]:.4g} wide "
                       f"(ci_width={record.rule.ci_width})" if record.interval else "ci_width",
           "max_seconds": f"max_seconds={record.rule.max_seconds} spent",
           "max_fits": f"max_fits={record.rule.max_fits} reached"}[record.reason]
    return (f"bbc_dask: stopped early, {why}: {done:,} of {state.size:,} cells settled. "
            f"Study.bbc(include_incomplete=True) estimates it; run it again without "
            f"{spelled('stop')} (or with a laxer rule) to go on.")
