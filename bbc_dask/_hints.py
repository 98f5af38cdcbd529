"""The one wording of a hint at the closest valid name ("Did you mean 'roc_auc'?"), for
every error that lists the valid options: a study file's keys, a metric, a grid's
parameter names, a choice among strings. Imports nothing of the package: every layer may
use it."""
from __future__ import annotations

__all__ = ["did_you_mean", "parameter_hint"]


def did_you_mean(given, options, prefix=""):
    """``"Did you mean 'roc_auc'?"``: the option closest to the string ``given``
    (difflib, case aside), for an error listing ``options``, shown after ``prefix``; ``""``
    when none is close. The one wording of every such hint of the package."""
    import difflib

    names = [o for o in options if isinstance(o, str) and o != given]
    close = difflib.get_close_matches(given, names, n=1) if isinstance(given, str) else []
    if not close and isinstance(given, str):  # 'ROC_AUC': the same name in another case
        lower = {o.lower(): o for o in reversed(names)}
        close = [lower[m] for m in difflib.get_close_matches(given.lower(), list(lower), n=1)]
    return f"Did you mean {prefix + close[0]!r}?" if close else ""


def parameter_hint(estimator, params):
    """:func:`did_you_mean` for the first name of the configuration ``params`` that
    ``estimator`` does not take (``get_params(deep=True)``: a pipeline's too), or ``""``."""
    try:
        valid = estimator.get_params(deep=True)
    except Exception:  # noqa: BLE001 - a hint only: the error itself is said anyway
        return ""
    return next((did_you_mean(name, valid) for name in params if name not in valid), "")
