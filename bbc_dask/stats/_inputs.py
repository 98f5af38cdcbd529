"""Predictions and targets checked and encoded for a metric: the one entry of every
estimator of the statistics layer (BBC, BBC-F, the dropping test, the comparators)."""
from __future__ import annotations

import numpy as np

from .. import _validation as validation
from ..metrics import get_metric

__all__ = ["prepare_inputs"]


def prepare_inputs(predictions, y, metric, pos_label, class_coord=None, check_scores=True):
    """Validate and encode ``(predictions, y)`` for ``metric``.

    ``class_coord`` gives the class order of a plain array's class axis (a DataArray
    carries its own). ``check_scores``: warn when a ranking metric is given labels (a
    user's array). Returns ``(metric, target, pred)`` with ``pred`` float64
    (N, C, R[, K]).
    """
    m = get_metric(metric)
    if m.task == "auto":  # a make_scorer of the user's function on predict: y says which
        m = m.resolved(getattr(y, "dtype", np.asarray(y).dtype).kind == "f")
    arr, coord = validation.as_predictions(predictions, m)
    target = validation.as_target(y, m, pos_label=pos_label)
    pred = validation.encode_predictions(arr, coord if class_coord is None else class_coord, m, target,
                                check_scores)
    return m, target, pred
