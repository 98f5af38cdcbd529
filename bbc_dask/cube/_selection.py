"""What the ledger says about selection: complete configurations, pooled scores, CVT's
winner, the failures. Read by the engine (refit, the all-failed check) and by
:class:`bbc_dask.Study`, so both select with the same code."""
from __future__ import annotations

import numpy as np

from ._schema import DONE, DROPPED, FAILED, PENDING
from .. import _tuning as tuning
from .._doors import owned_by

__all__ = ["candidates", "complete", "failure_groups", "fitted_cells", "float_bytes", "incomplete_cv",
           "incomplete_scores", "incomplete_winner", "ledger_fold_matrix", "pooled_scores",
           "positive_class", "select_winner", "stopped_early", "study_seed", "target_of"]


def fitted_cells(state):
    """The cells of the ledger's ``state`` fitted so far: done or failed."""
    return int(((state == DONE) | (state == FAILED)).sum())


def float_bytes(cube, n_configs):
    """Bytes of ``n_configs`` configurations' predictions read as float64."""
    shape = cube.reader().shape
    return int(np.prod(shape)) // max(shape[1], 1) * 8 * int(n_configs)


def complete(state):
    """Configurations (a boolean per row of ``state``) with every cell done."""
    return np.all(state == DONE, axis=(1, 2))


def candidates(cube):
    """Configurations (a boolean each) the study selects among and estimates on: every
    cell done, and not dropped — BBCD's survivors (one dropped after the last wave has
    every cell done)."""
    return complete(cube.state()) & (cube.dropped_waves()[0] < 0)


def study_seed(spec):
    """The study's own seed, from its store's ``spec`` (see :attr:`bbc_dask.Study.seed`)."""
    ent = spec["seed"]
    return np.random.SeedSequence(int(ent["entropy"]), spawn_key=tuple(ent["spawn_key"]))


def incomplete_cv(cube):
    """What BBC on the study's incomplete CV reads (see :meth:`bbc_dask.Study.bbc`'s
    ``include_incomplete``): ``(idx, missing, final)`` — the configurations with a fold
    predicted in every repeat, the cells ``(N, len(idx), R)`` the ledger says were not
    predicted, and which of them the final winner may be (the candidates)."""
    st = cube.state()
    idx = np.flatnonzero((st == DONE).any(axis=2).all(axis=1))
    folds = cube.folds()
    done = st[idx] == DONE  # (c, R, K)
    missing = np.stack([~done[:, r, folds[:, r]].T for r in range(folds.shape[1])], axis=2)
    return idx, missing, np.isin(idx, np.flatnonzero(candidates(cube)))


def stopped_early(cube, state=None):
    """Whether the study's last run was stopped by its rule (``run_study(stop=...)``)
    and cells are still pending (``state``: the ledger's, if read already)."""
    runs = cube.runs
    st = cube.state() if state is None else state
    return bool(runs) and "stopped" in runs[-1] and bool((st == PENDING).any())


def incomplete_scores(cube, selection=None):
    """Each configuration's score on the cells it has predicted, by the study's selection,
    for a study stopped before any configuration completed: ``"pooled"``, the metric on
    the samples predicted in each repeat, mean over repeats (the score BBC on the
    incomplete CV gives it on all its samples); ``"fold_mean"``, the mean of its recorded
    fold scores (``selection``, a :class:`~bbc_dask.stats.Selection` or its name: another
    than the study's). NaN (C,) where a configuration cannot win: failed, dropped,
    without a prediction in each repeat, or undefined on what it predicted."""
    from ..stats import Selection

    st = cube.state()
    idx, missing, _ = incomplete_cv(cube)
    alive = ~np.isin(st[idx], (FAILED, DROPPED)).any(axis=(1, 2))
    idx, missing = idx[alive], missing[:, alive]
    out = np.full(st.shape[0], np.nan)
    if idx.size == 0:
        return out
    if not (cube.selection if selection is None else Selection.of(selection)).pooled:
        done = st[idx] == DONE
        total = np.where(done, cube.fold_scores()[idx], 0.0).sum(axis=(1, 2))
        out[idx] = total / done.sum(axis=(1, 2))
        return out
    from ..metrics import get_metric
    from ..stats import DroppingScorer, availability_groups
    from .._validation import as_predictions

    y, pos = target_of(cube)
    m = get_metric(cube.spec["metric"])
    # configurations that predicted the same cells are scored together (one scorer's
    # masks), a memory-bounded chunk of them at a time: each column's score is its own
    # a scorer holds about three copies of its predictions (filled, encoded, prepared)
    step = max(1, tuning.IN_MEMORY_BYTES // (3 * float_bytes(cube, 1)))
    for members in availability_groups(~missing):
        for lo in range(0, members.size, step):
            part = members[lo:lo + step]
            arr, coord = as_predictions(cube.predictions(idx[part]), m)
            out[idx[part]] = DroppingScorer(arr, y, ~missing[:, part[0], :], m.name, pos, coord).full
    return out


def target_of(cube):
    """``(y, pos_label)`` as stored: class codes (or values) and the positive code."""
    spec = cube.spec
    classes = cube.meta.get("classes")
    pos = None
    if classes is not None and spec.get("pos_label") is not None:
        pos = classes.index(spec["pos_label"])
    return cube.y(), pos


def positive_class(cube):
    """The class the study's metric scores as positive (``roc_auc``, ``f1``, a scorer
    that takes a ``pos_label``, on two classes): the study's ``pos_label``, by default
    the larger label; None where the metric has none (or is a scorer this process cannot
    rebuild), so that a report names it only where it means something."""
    from ..exceptions import UserError
    from ..metrics import get_metric, uses_positive_class

    classes = cube.target_classes
    if classes is None or cube.pos_label is None:
        return None
    try:
        metric = get_metric(cube.spec["metric"])
    except (UserError, ValueError, KeyError):
        return None
    return cube.pos_label if uses_positive_class(metric, len(classes)) else None


def failure_groups(cube):
    """Failed configurations' first errors grouped by text (see :meth:`Study.failures`)."""
    err = cube.errors()
    failed = np.flatnonzero(np.any(cube.state() == FAILED, axis=(1, 2)))
    groups = {}
    for c in failed:
        text = str(err[c]) or "no error text recorded"
        groups.setdefault(text, []).append(int(c))
    out = [{"error": t, "count": len(cs), "configs": cs} for t, cs in groups.items()]
    return sorted(out, key=lambda g: (-g["count"], g["configs"][0]))


def pooled_scores(cube, idx):
    """Pooled scores (len(idx), R) of complete configurations ``idx``, from the ledger;
    those not recorded yet (a run stopped before its last step) are computed here from
    their predictions, with the same function the engine's tasks use."""
    from ..chunked import chunk_pooled

    pooled = cube.pooled()[idx]
    missing = np.flatnonzero(np.isnan(pooled).any(axis=1))
    if missing.size:
        y, pos = target_of(cube)
        pooled[missing] = chunk_pooled(cube.predictions(idx[missing]), y, cube.spec["metric"], pos)
    return pooled


def ledger_fold_matrix(cube, idx):
    """``(F (R·K, len(idx)), rows)``: the ledger's fold × configuration matrix of the
    complete configurations ``idx`` (each task scored the fold it predicted, as
    :func:`bbc_dask.fold_score_matrix` does), repeat-major, and its rows' ``(repeat,
    fold)``; UndefinedScoreError naming the first fold where a score is undefined."""
    from ..stats import check_fold_matrix

    fs = cube.fold_scores()[idx]  # (c, R, K)
    rows = [(r, k) for r in range(fs.shape[1]) for k in range(fs.shape[2])]
    F = np.ascontiguousarray(fs.reshape(len(idx), -1).T)
    return check_fold_matrix(F, rows, cube.spec["metric"]), rows


def _winners_folds(cube, idx):
    with owned_by("the study's winner"):  # the refit's choice, whoever asked for it
        return ledger_fold_matrix(cube, idx)[0]


def select_winner(cube, selection=None):
    """The configuration CVT selects among the :func:`candidates`, by the study's
    ``selection``: the best pooled CV score (mean over repeats, as
    :func:`bbc_dask.naive_cvt` selects) or the best mean of the ledger's fold scores (as
    :func:`bbc_dask.bbc_f` selects), by :func:`bbc_dask.stats.select` — or None
    if none is complete. A study :func:`stopped_early` with none complete has the
    incomplete CV's winner: the best of its :func:`incomplete_scores` (an undefined one
    competes not), None if none can win. ``selection``: another rule than the study's."""
    from ..stats import Selection

    selection = cube.selection if selection is None else Selection.of(selection)
    idx = np.flatnonzero(candidates(cube))
    if idx.size == 0:
        return incomplete_winner(cube, selection)[0] if stopped_early(cube) else None
    best = selection.winner(lambda: pooled_scores(cube, idx).mean(axis=1),
                            lambda: _winners_folds(cube, idx))
    if best < 0:  # a NaN score: no configuration can be said the best
        from ..exceptions import UndefinedScoreError

        raise UndefinedScoreError(
            f"The study's metric {cube.meta['spec']['metric']!r} is undefined on the pooled "
            f"predictions of some configuration: no winner can be selected.")
    return int(idx[best])


def incomplete_winner(cube, selection=None):
    """``(config, score)``: the best of the :func:`incomplete_scores` by
    :func:`bbc_dask.stats.select`'s rule, an undefined one competing not (as in BBC on the
    incomplete CV), or ``(None, nan)`` where none can win."""
    from ..stats import select

    scores = incomplete_scores(cube, selection)
    if np.isnan(scores).all():
        return None, float("nan")
    best = int(select(np.where(np.isnan(scores), -np.inf, scores)))
    return best, float(scores[best])
