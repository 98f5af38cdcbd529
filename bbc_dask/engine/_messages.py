"""What crosses the line between the driver and its tasks, and what the executor keeps
of a task in flight: frozen dataclasses, read by name (never tuples unpacked by position
or dicts read by key), picklable as they travel to and from Dask's workers.

A fit task takes a :class:`TaskScoring` (how its fold is scored) and a :class:`ShippedFit`
(the fit parameters and scorers every fit takes, or None); it returns a
:class:`TaskOutcome`: one :class:`BlockOutcome` per block it recorded, and the one
reason it stopped early, if any (:class:`Raised` under ``error_score="raise"``, a
:class:`StoreProblem` when the store is full or the run lost its lock).
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["BlockFits", "BlockOutcome", "FitInFlight", "FitWork", "OuterOutcome", "Placement",
           "PlannedBlock", "PooledInFlight", "Raised", "ShippedFit", "StoreProblem", "TaskOutcome",
           "TaskScoring", "WaveSettings"]

_frozen = dataclasses.dataclass(frozen=True, eq=False)  # arrays inside: identity, not ==


@_frozen
class TaskScoring:
    """How a task scores what it predicts: the metric (its registry reference), the
    study's ``classes`` (sorted; None for a regression) and positive class code, the width
    of the class axis of the stored predictions (0: none), ``error_score`` and the
    client's ``sample_block`` (fold scores are summed in its blocks, so that a task's
    score is the driver's to the bit)."""

    metric: str
    classes: np.ndarray | None
    pos_code: int | None
    n_classes_axis: int
    error_score: object
    sample_block: int

    @classmethod
    def of(cls, m, target, error_score):
        """The scoring of a study of metric ``m`` on ``target``."""
        from .. import metrics

        return cls(m.ref, target.classes, target.pos_code,
                   len(target.classes) if m.needs_class_axis else 0, error_score,
                   metrics.SAMPLE_BLOCK)


@_frozen
class ShippedFit:
    """What every fit takes beyond X and y, shipped to the workers as X is: ``params`` the
    fit parameters (one row per sample where an array: each task slices its training
    rows), ``routing`` whether scikit-learn's metadata routing was on where they were
    given, ``scoring`` the fitted models' scorers (a
    :class:`~bbc_dask.engine.FitScoring`) or None, ``callbacks`` scikit-learn's callback
    contexts (a :class:`~bbc_dask.engine.FitCallbacks`) or None."""

    params: dict
    routing: bool
    scoring: object = None
    callbacks: object = None


@_frozen
class FitWork:
    """What a run's fit tasks fit: ``estimator`` on each of ``configs`` (the
    :class:`~bbc_dask.engine.Configurations`), with ``X``, ``y`` (``target`` its encoding
    for ``metric``), ``error_score`` and ``shipped`` (a :class:`ShippedFit` or None)."""

    estimator: object
    configs: object
    X: object
    y: np.ndarray
    target: object
    metric: object
    error_score: object
    shipped: ShippedFit | None = None


@_frozen
class WaveSettings:
    """How the waves run, not what they compute: ``progress`` bars; ``cancel_on_exit``
    (cancel the tasks left when the run stops: False on a cluster the user keeps, whose
    tasks are only released); ``token`` the run lock's token the tasks check before they
    write (None: no lock); ``stop_if_all_failed`` (stop as soon as every active
    configuration has a failed cell); and what receives the run's record: ``warned``
    (``{(module, class, text): count}`` of the fits' warnings), ``phases`` (a
    :class:`~bbc_dask.engine._phases.Phases`) and ``score_times`` (a ``CellTimes`` of the
    cells run, or None); ``budget`` (a :class:`~bbc_dask.engine._stop.Budget`: the run's
    :class:`~bbc_dask.Stop` rule, checked as it goes; None without one)."""

    progress: bool = False
    cancel_on_exit: bool = True
    token: object = None
    stop_if_all_failed: bool = False
    warned: dict = dataclasses.field(default_factory=dict)
    phases: object = None
    score_times: object = None
    budget: object = None


@_frozen
class Raised:
    """``error_score="raise"``: configuration ``index`` of the block raised ``text``
    (its traceback ``traceback``); ``error`` the exception itself where it survives a
    pickle round trip (the driver raises the study's error from it, so that a door can
    raise the estimator's own, as ``GridSearchCV`` does), else None."""

    index: int
    text: str
    traceback: str
    error: object = None


@_frozen
class StoreProblem:
    """The store is full or the run lost its lock: the run must stop, not retry, and the
    driver raises ``kind`` (the exception's class name) with ``text``."""

    kind: str
    text: str


@_frozen
class BlockFits:
    """A block of configurations fitted on one training set: ``values`` its predictions
    (n_test, n_block[, K]; NaN where failed), ``fit_time`` (fit and prediction),
    ``score_time`` (the part after the fit; NaN where failed), ``failed``, ``errors``
    (one text per configuration, "" if none) and ``fit_score`` (the fitted models'
    scores, (n_block, scorers), or None); or only ``raised``."""

    values: np.ndarray | None = None
    fit_time: np.ndarray | None = None
    score_time: np.ndarray | None = None
    failed: np.ndarray | None = None
    errors: tuple = ()
    fit_score: np.ndarray | None = None
    raised: Raised | None = None


@_frozen
class BlockOutcome:
    """What the ledger records of one block of one (repeat, fold): per configuration its
    ``fit_time``, ``fit_only`` (the fit alone) and ``score_time``, ``failed``,
    ``errors``, ``fold_score``, ``fit_score`` (or None), and ``crc`` the checksum of the
    prediction chunk the task wrote."""

    fit_time: np.ndarray
    fit_only: np.ndarray
    score_time: np.ndarray
    failed: np.ndarray
    errors: tuple
    fold_score: np.ndarray
    fit_score: np.ndarray | None = None
    crc: int | None = None


@_frozen
class TaskOutcome:
    """A fit task's result: its blocks' outcomes in order (``parts``), the seconds it
    took, the fits' warnings (``(module, class, text, count)``), and what stopped it
    before its last block, if anything (``raised`` in its block ``raised_block``, nothing
    of the task written or recorded; or ``store_problem``, nothing recorded)."""

    parts: tuple = ()
    elapsed: float = 0.0
    warnings: tuple = ()
    raised: Raised | None = None
    raised_block: int = 0
    store_problem: StoreProblem | None = None


@_frozen
class OuterOutcome:
    """Nested CV's outer step: the outer fold's ``score`` (NaN if the fit failed or the
    metric is undefined), ``fit_time`` and ``error`` ("" if none); or only ``raised``."""

    score: float = float("nan")
    fit_time: float = float("nan")
    error: str = ""
    raised: Raised | None = None


@_frozen
class PlannedBlock:
    """A block of the plan: the pending ``configs`` (of one configuration chunk) of fold
    ``wave`` in repeat ``repeat``; the executor groups blocks of one (wave, repeat) into
    a task."""

    wave: int
    repeat: int
    configs: np.ndarray

    @property
    def cell(self):
        """``(wave, repeat)``: blocks of one cell share a task's training set."""
        return self.wave, self.repeat


@_frozen
class Placement:
    """Where a task writes a block's predictions: the chunks that start at configuration
    ``first``, the block's configurations at ``columns`` of them."""

    first: int
    columns: np.ndarray


@_frozen
class FitInFlight:
    """A fit task in the executor's table: its group of :class:`PlannedBlock`, how often
    it was resubmitted, its future."""

    group: list
    tries: int
    future: object


@_frozen
class PooledInFlight:
    """A pooled-score task in the executor's table: the block it scores, its future."""

    block: object
    future: object
