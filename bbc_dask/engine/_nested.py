"""Nested cross-validation as a protocol of the engine (2018 journal paper, Algorithm 3,
and its repeated form).

Every outer fold's inner cross-validation is one *repeat* of the study's cube: repeat
``r * n_outer + o`` holds the inner partition of outer fold ``o`` of outer repeat ``r``,
whose outer test samples have fold id -1 (in no inner fold: never trained on, never
predicted). So the inner fits are ordinary engine tasks writing their chunks into one
store — resumed, verified and repaired like any study's — and the pooled pass scores
every inner repeat on its own samples. The outer stage then selects, per outer fold, by
the study's own rule (:func:`bbc_dask.stats.select` on the pooled inner score, or the
mean inner fold score), refits the winner on the outer training set and scores the
outer test set; each outer result is recorded in the store as it arrives, so a killed
run resumes with nothing finished recomputed.
"""
from __future__ import annotations

import sys
import time
import uuid
from concurrent.futures import CancelledError

import numpy as np

from .. import _tuning as tuning
from .. import _validation as validation
from .._random import child_seed
from .._signals import deferred_interrupts
from ..cube import DONE, PENDING
from ..exceptions import (
    AllConfigurationsFailedError, InvalidParameterError, StudyError, UndefinedScoreError,
)
from ._messages import TaskScoring
from ._protocol import Protocol, register_protocol
from .._doors import carried

__all__ = ["NestedProtocol", "nested_outcome", "run_outer"]


@register_protocol
class NestedProtocol(Protocol):
    """``n_repeats`` × ``n_outer`` outer folds, each tuned by ``n_inner``-fold CV of its
    training set: stratified for classification, grouped with groups (an inner fold never
    holds an outer test sample, nor splits a group). With ``n_inner = n_outer - 1`` the
    inner folds are the other outer folds, as the paper's Algorithm 3 (and its authors'
    simulation code) cross-validate; otherwise the training set is split afresh, from
    the seed's ``nested-inner`` child of that outer fold."""

    kind = "nested"
    opens_as_study = False  # its repeats leave each outer test set out: BBC is not defined
    stops_when_all_failed = False  # each outer fold has its own rule (check_failures)

    def __init__(self, n_outer, n_inner, n_repeats):
        self.n_outer, self.n_inner, self.outer_repeats = n_outer, n_inner, n_repeats
        self.n_splits = n_inner
        self.n_repeats = n_outer * n_repeats  # the cube's repeats: one per outer fold
        self._cached = None  # (seed key, folds): computed before the lock, used at creation

    @classmethod
    def checked(cls, n_outer, n_inner, n_repeats, y, groups, target, classification):
        """The protocol, its numbers checked against the data (one-line errors naming
        ``n_outer``, ``n_inner`` or ``n_repeats``). With groups, whether every outer
        training set has ``n_inner`` groups depends on the seed's outer folds: the run
        computes them (:meth:`folds`) before it takes the store's lock."""
        n_outer = validation.check_int(n_outer, "n_outer", low=2)
        n_inner = validation.check_int(n_inner, "n_inner", low=2)
        n_repeats = validation.check_int(n_repeats, "n_repeats")
        if groups is not None:
            units, what = np.unique(groups, return_counts=True)[1], "groups"
        elif classification:
            units, what = np.bincount(target.codes, minlength=len(target.classes)), "members"
        else:
            units, what = np.array([len(y)]), "samples"
        if groups is not None:
            units = np.array([units.size])  # a group is one unit of a fold
        i = int(np.argmin(units))
        have = int(units[i])
        label = ("'y'" if groups is None and not classification else
                 "'groups'" if groups is not None else
                 f"the class {validation.plain(target.classes[i])!r} of 'y'")
        if have < n_outer:
            raise InvalidParameterError.of(
                "n_outer", f"at most {have}, the {what} of {label} (every outer fold "
                f"needs one)", n_outer)
        least = have - -(-have // n_outer)  # in the outer training set with the largest test fold
        if groups is None and least < n_inner:
            raise InvalidParameterError.of(
                "n_inner", f"at most {least}: an outer training set holds as few as "
                f"{least} of the {have} {what} of {label}, and every inner fold needs one",
                n_inner)
        return cls(n_outer, n_inner, n_repeats)

    def folds(self, y, groups, classification, root):
        """Fold ids ``(N, n_repeats * n_outer)``: the inner partition of each outer fold,
        -1 on its outer test samples. The outer partitions come from the seed's
        ``nested-outer`` child, each inner one from its own ``nested-inner`` child."""
        key = (root.entropy, tuple(root.spawn_key))
        if self._cached is None or self._cached[0] != key:
            self._cached = (key, self._folds(y, groups, classification, root))
        return self._cached[1].copy()

    def _folds(self, y, groups, classification, root):
        from ._plan import make_folds

        y = np.asarray(y)  # the target as given to the fits (a list, a Series): by position
        outer = self.outer_folds(y, groups, classification, root)
        out = np.full((len(y), self.n_repeats), -1, dtype=np.int64)
        for r in range(self.outer_repeats):
            for o in range(self.n_outer):
                train = np.flatnonzero(outer[:, r] != o)
                if self.n_inner == self.n_outer - 1:
                    # Algorithm 3 itself: the inner folds are the other outer folds
                    # (renumbered 0..K-2), each already stratified or grouped
                    ids = outer[train, r]
                    out[train, r * self.n_outer + o] = ids - (ids > o)
                    continue
                g = None if groups is None else groups[train]
                if g is not None and np.unique(g).size < self.n_inner:
                    raise InvalidParameterError.of(
                        "n_inner", f"at most {np.unique(g).size}, the groups in "
                        f"the training set of outer fold {o} (repeat {r}); every inner fold "
                        f"needs one", self.n_inner)
                out[train, r * self.n_outer + o] = make_folds(
                    y[train], g, self.n_inner, 1, classification,
                    child_seed(root, "nested-inner", r, o))[:, 0]
        return out

    def outer_folds(self, y, groups, classification, root):
        from ._plan import make_folds

        return make_folds(np.asarray(y), groups, self.n_outer, self.outer_repeats, classification,
                          child_seed(root, "nested-outer"))

    def describe(self):
        return {"protocol": {"kind": self.kind, "n_outer": self.n_outer,
                             "n_inner": self.n_inner, "n_repeats": self.outer_repeats}}

    def before_lock(self, run, planned):
        """The inner folds with groups can be impossible for this seed's outer folds:
        found here, before the lock is taken or an old store replaced."""
        if not planned:
            run.plan_new()  # the seed, for the folds
        req = run.request
        self.folds(req.data.y, req.data.groups, req.metric.is_classification, run.root)

    def default_block(self, n_configs):
        """``n_repeats · n_outer · n_inner`` training sets to balance the blocks over, so
        they need not be small: up to 10 configurations each (on
        ``benchmarks/bench_nested.py``'s grids, 100 trees and 20 scaled logistic
        regressions in 5 × 4 folds, 20% less wall time than blocks of one: 3.63 s against
        4.56 s and 1.30 s against 1.61 s; the block's chunk write, fold scoring and ledger
        entry are shared by its configurations)."""
        return max(1, min(10, n_configs))

    def shape_text(self, state):
        reps = self.outer_repeats
        return (f"{self.n_outer} outer folds x {self.n_inner} inner folds"
                f"{f' x {reps} repeats' if reps > 1 else ''} = {state.size:,} inner fits "
                f"(then {self.n_outer * reps} outer refits)")

    def needs_pooled(self, selection):
        """Not when the inner CVs select by the mean fold score: their pooled scores would
        be read by nothing."""
        return selection.pooled

    def check_failures(self, cube):
        """Each outer fold selects among the configurations complete in its inner CV:
        one with none stops the study."""
        from ..cube import failure_groups

        ok = np.all(cube.state() == DONE, axis=2).any(axis=0)
        if ok.all():
            return
        j = int(np.flatnonzero(~ok)[0])
        groups = failure_groups(cube)
        raise AllConfigurationsFailedError(
            f"Every configuration failed on the inner CV of outer fold {j % self.n_outer} "
            f"(repeat {j // self.n_outer}): no model can be selected there. First error: "
            f"{groups[0]['error'].splitlines()[0] if groups and groups[0]['error'] else '?'}. "
            f"The errors are kept in the store ({cube.path}).", groups)

    def after_waves(self, run, client):
        """The outer stage: per outer fold, the inner CV's winner refit on the outer
        training set and scored on its test set (no final model)."""
        fits = run_outer(run, client)
        run.fits += fits
        run.cube.end_run(outer_fits=fits)
        return None


def _layout(cube):
    """``(n_outer, n_repeats)`` of a nested study's store."""
    p = cube.spec["protocol"]
    return p["n_outer"], p["n_repeats"]


def outer_of(folds, n_outer, n_repeats):
    """Outer fold ids ``(N, n_repeats)`` from the cube's fold ids: a sample's outer fold
    in repeat r is the inner repeat that leaves it out."""
    out = np.full((folds.shape[0], n_repeats), -1, dtype=np.int64)
    for r in range(n_repeats):
        for o in range(n_outer):
            out[folds[:, r * n_outer + o] < 0, r] = o
    return out


def _select(state, pooled, fold_score, j, selection, metric):
    """The configuration the study's rule (``selection``, a
    :class:`~bbc_dask.stats.Selection`) selects on inner repeat ``j`` among those with
    every inner fold done, or raise UndefinedScoreError (``state``, ``pooled``,
    ``fold_score`` as the cube holds them)."""
    idx = np.flatnonzero(np.all(state[:, j, :] == DONE, axis=1))  # not empty: checked by the run
    best = selection.winner(lambda: pooled[idx, j], lambda: fold_score[idx, j, :].T)
    if best < 0:
        raise UndefinedScoreError(
            f"The metric {metric!r} is undefined on the inner "
            f"predictions of some configuration of inner repeat {j}: no configuration "
            f"can be selected there.")
    return int(idx[best])


def run_outer(run, client):
    """The outer stage: per outer fold not yet recorded, select, refit on its training
    set and score its test set (tasks), recording each result as it arrives. Returns the
    number of fits run."""
    from ._tasks import fit_outer
    from ._waves import _Data

    cube, req = run.cube, run.request
    n_outer, n_rep = _layout(cube)
    recorded = _recorded(cube)
    todo = [(r, o) for r in range(n_rep) for o in range(n_outer) if (r, o) not in recorded]
    if not todo:
        return 0
    outer = outer_of(cube.folds(), n_outer, n_rep)
    state, pooled, fold_score = cube.state(), cube.pooled(), cube.fold_scores()
    target, m = req.data.target, req.metric
    scoring = TaskScoring.of(m, target, req.error_score)
    chosen = {(r, o): _select(state, pooled, fold_score, r * n_outer + o, req.selection, m.name)
              for r, o in todo}
    if req.execution.progress:
        print(f"bbc_dask: outer stage: {len(todo)} outer fold(s) to refit and score",
              file=sys.stderr)
    data = _Data(client, req.data.X, req.data.y, broadcast=False)
    fits = 0
    for attempt in range(tuning.MAX_RESUBMITS + 1):
        X_f, y_f = data.refresh()
        futures = {}
        for r, o in todo:
            futures[(r, o)] = client.submit(
                carried(fit_outer), req.estimator, run.configs[chosen[(r, o)]], np.flatnonzero(outer[:, r] != o),
                np.flatnonzero(outer[:, r] == o), scoring, X_f, y_f, pure=False, retries=3,
                key=f"bbc-outer-{r}-{o}-{uuid.uuid4().hex[:8]}")
        try:
            fits += _collect(cube, futures, chosen, run.configs)
            return fits
        except CancelledError:  # the data was lost with a worker: scatter it again
            recorded = _recorded(cube)  # once, not per outer fold
            todo = [(r, o) for (r, o) in todo if (r, o) not in recorded]
            if attempt == tuning.MAX_RESUBMITS:
                raise
    return fits


def _recorded(cube):
    """The (repeat, outer fold) pairs whose outer results the store holds."""
    return {(e["repeat"], e["outer"]) for e in cube.outer_results}


def _collect(cube, futures, chosen, configs):
    """Record each outer result as its task finishes; a task's error is raised."""
    pending = dict(futures)
    fits = 0
    while pending:
        ready = [key for key, f in pending.items() if f.done()]
        if not ready:
            time.sleep(0.02)
            continue
        entries = []
        for r, o in ready:
            f = pending.pop((r, o))
            with deferred_interrupts():
                res = f.result()
            if res.raised is not None:
                c = chosen[(r, o)]
                raise StudyError(f"Configuration {c} ({configs[c]!r}) raised on the outer "
                                 f"refit of repeat {r}, outer fold {o} (error_score='raise'): "
                                 f"{res.raised.text}\n{res.raised.traceback}")
            entries.append({"repeat": r, "outer": o, "selected": chosen[(r, o)],
                            "score": float(res.score) if np.isfinite(res.score) else None,
                            "fit_time": res.fit_time, "error": res.error})
            fits += 1
        cube.add_outer_results(entries)
    return fits


def nested_outcome(cube):
    """What a nested study's store holds: the outer folds, inner folds, the recorded
    outer results (repeat × outer fold arrays, NaN / -1 where not recorded yet) and the
    number of fits recorded."""
    n_outer, n_rep = _layout(cube)
    folds = cube.folds()
    outer = outer_of(folds, n_outer, n_rep)
    inner = folds.reshape(folds.shape[0], n_rep, n_outer)
    scores = np.full((n_rep, n_outer), np.nan)
    selected = np.full((n_rep, n_outer), -1, dtype=np.int64)
    fit_time = np.full((n_rep, n_outer), np.nan)
    errors = {}
    outer_results = cube.outer_results
    for e in outer_results:
        r, o = e["repeat"], e["outer"]
        selected[r, o] = e["selected"]
        if e["score"] is not None:
            scores[r, o] = e["score"]
        if e["fit_time"] is not None:
            fit_time[r, o] = e["fit_time"]
        if e.get("error"):
            errors[(r, o)] = e["error"]
    st = cube.state()
    inner_fits = int((st != PENDING).sum())  # cells done or failed: each a fit
    return {"outer_fold": outer, "inner_fold": inner, "outer_scores": scores,
            "selected": selected, "outer_fit_time": fit_time, "errors": errors,
            "recorded": len(outer_results), "inner_fits": inner_fits,
            "inner_fit_seconds": float(np.nansum(cube.fit_times()))}
