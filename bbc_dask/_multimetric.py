"""Multimetric scoring of :class:`~bbc_dask.BBCSearchCV`, as ``GridSearchCV``'s: the study
runs with the ``refit`` scorer; every other scorer is scored per split on the study's
stored predictions, so it must read the same ones (the same response method)."""
from __future__ import annotations

import numpy as np

from .exceptions import InvalidParameterError


def multimetric_scorers(search):
    """``{name: scoring}`` of multimetric ``scoring`` (the refit one first), or None.

    The study runs with the refit scorer (``refit`` names it; with ``refit`` False or
    a callable, the first); each other scorer is scored per split on the study's
    stored predictions, so it must read the same predictions (the same response
    method): said before anything runs."""
    sc, caller = search.scoring, type(search).__name__
    if sc is None or isinstance(sc, str) or callable(sc):
        if isinstance(search.refit, str):  # a key names one of several scorers
            raise InvalidParameterError.of(
                "refit", caller, "a bool or a callable (a scorer's key only with multimetric "
                "scoring)", search.refit)
        return None
    if isinstance(sc, dict):
        names = list(sc)
        if not names or not all(isinstance(k, str) for k in names):
            raise InvalidParameterError.of("scoring", caller, "a non-empty dict with str "
                                           "keys", sc)
        scorers = dict(sc)
    else:
        names = sorted(sc) if isinstance(sc, set) else list(sc)
        if not names or not all(isinstance(k, str) for k in names) or len(set(names)) < len(names):
            raise InvalidParameterError.of("scoring", caller, "a non-empty list of distinct "
                                           "scorer names", sc)
        scorers = {k: k for k in names}
    if isinstance(search.refit, str):
        if search.refit not in scorers:
            raise InvalidParameterError.of(
                "refit", caller, f"one of the scoring keys {names}, a callable or False "
                f"with multimetric scoring", search.refit)
        first = search.refit
    elif search.refit is True:
        raise InvalidParameterError.of(
            "refit", caller, f"one of the scoring keys {names}, a callable or False with "
            f"multimetric scoring (the key says which scorer selects)", True)
    else:
        first = names[0]
    from .engine import stored_as
    from .metrics import get_metric

    ordered = {first: scorers[first]} | {k: v for k, v in scorers.items() if k != first}
    metrics = {k: get_metric(v, caller=caller, name="scoring") for k, v in ordered.items()}
    want = stored_as(metrics[first])
    for k, m in metrics.items():
        if stored_as(m) != want:
            raise InvalidParameterError.of(
                "scoring", caller, f"scorers that read the predictions the study stores for "
                f"{first!r} ({' or '.join(want[0])}{' per class' if want[1] else ''})",
                shown=f"{k!r}, which needs {' or '.join(stored_as(m)[0])}"
                      f"{' per class' if stored_as(m)[1] else ''}",
                note="One prediction per fit is stored: score such metrics in studies of "
                     "their own.")
    return ordered

def multimetric_results(search, study, scorers):
    """``cv_results_`` with every scorer's keys (``split{i}_test_<name>``,
    ``mean_``, ``std_``, ``rank_test_<name>``, as ``GridSearchCV``'s multimetric): the
    refit scorer's are the study's own (and ``pooled_test_<name>``); the others are
    scored on its stored predictions (complete configurations; NaN for the others)."""
    from .cube import FAILED

    first, out = next(iter(scorers)), {}
    for key, value in search.cv_results_.items():
        out[key[:-len("_score")] + f"_{first}" if key.endswith("test_score") else key] = value
    st = study.state
    failed_cells = (st == FAILED).reshape(st.shape[0], -1).T  # (R*K, C)
    es = search.error_score
    for name, scoring in list(scorers.items())[1:]:
        F = study.fold_scores(scoring)
        if not isinstance(es, str) and not np.isnan(es):
            F[failed_cells] = es  # as the refit scorer's: a failed fit's split score
        for i, row in enumerate(F):
            out[f"split{i}_test_{name}"] = row
        with np.errstate(invalid="ignore"):
            mean = F.mean(axis=0)
            out[f"mean_test_{name}"], out[f"std_test_{name}"] = mean, F.std(axis=0)
        out[f"rank_test_{name}"] = _rank(mean)
    return out


def _rank(mean):
    """``GridSearchCV``'s ranks of ``mean`` scores: 1 for the best, ties sharing the
    smallest rank, NaN last."""
    key = np.where(np.isnan(mean), np.inf, -mean)
    return (np.searchsorted(np.sort(key), key, side="left") + 1).astype(np.int32)
