"""Configurations as the user wrote them, for the report: each one's family (the model it
fits) and its parameters under the user's own names.

A study file's configurations run as a one-step pipeline whose ``model`` step is set per
configuration (``bbc_dask.cli``'s ``build_search``), so the store's parameters read
``model`` (the estimator's repr, possibly over several lines) and ``model__svc__C`` where
the study file says ``svc__C``. The store's ``metadata`` keeps the resolved study file,
which is how a study file's store is told from a Python study whose own pipeline step may
be called ``model``.
"""
from __future__ import annotations

import json
import re

__all__ = ["configuration_names", "one_line", "params_text"]

#: ``('name', ClassName(`` in a Pipeline's repr: its steps, in order.
_STEP = re.compile(r"\(\s*'[^']*'\s*,\s*([A-Za-z_]\w*)\(")
#: ``ClassName(...)``: the repr of a scikit-learn estimator.
_ESTIMATOR_REPR = re.compile(r"^\s*([A-Za-z_]\w*)\((.|\n)*\)\s*$")
#: The command line's wrapping step (``build_search``).
_WRAP = "model"


def one_line(value):
    """``value`` with every run of whitespace in its strings made one space (reprs of
    pipelines span lines; a page or a legend shows them on one), recursively."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return {one_line(k): one_line(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [one_line(v) for v in value]
    return value


def _final_class(value):
    """The class that fits, of an estimator or its repr: a pipeline's final step's, else
    the estimator's own; None for a value that is no estimator."""
    if hasattr(value, "get_params") and hasattr(value, "fit"):
        steps = getattr(value, "steps", None)
        if steps:
            return _final_class(steps[-1][1])
        return type(value).__name__
    if not isinstance(value, str):
        return None
    m = _ESTIMATOR_REPR.match(value)
    if m is None:
        return None
    steps = _STEP.findall(value)
    return steps[-1] if m.group(1) == "Pipeline" and steps else m.group(1)


def _is_study_file(params, metadata):
    from .engine import is_study_file

    return is_study_file({k for p in params for k in p}, metadata)


def _spec_family(spec):
    """The fitted class of the study's own estimator, from its recorded parameters (a
    pipeline's ``steps`` repr names its last step); None when they do not say."""
    est = (spec or {}).get("estimator")
    if isinstance(est, dict) and isinstance(est.get("steps"), str):
        steps = _STEP.findall(est["steps"])
        if steps:
            return steps[-1]
    return None


def configuration_names(params, metadata=None, spec=None):
    """``(families, shown)`` of a study's configurations.

    Parameters
    ----------
    params : list of dict
        Every configuration's parameters, as the store holds them (``Study.params``).
    metadata : dict, default=None
        The store's ``metadata`` (the command line's resolved study file, if any).
    spec : dict, default=None
        The store's ``spec``; its recorded estimator names the family of a study that
        sets no estimator per configuration.

    Returns
    -------
    families : list of str or None
        The class each configuration fits (a pipeline's final step's), or None when the
        store does not say.
    shown : list of dict
        Each configuration's parameters under the names the user wrote (a study file's
        grid keys, without the command line's ``model__``), values on one line; a
        study file's ``model`` (its family) is left out.
    """
    wrapped = _is_study_file(params, metadata)
    default = _spec_family(spec)
    families, shown = [], []
    for p in params:
        if wrapped:
            families.append(_final_class(p.get(_WRAP)))
            shown.append({k[len(_WRAP) + 2:]: one_line(v) for k, v in p.items() if k != _WRAP})
            continue
        named = [c for k, v in sorted(p.items()) if "__" not in k
                 for c in [_final_class(v)] if c is not None]
        families.append(named[-1] if named else default)
        shown.append({k: (_final_class(v) if _final_class(v) else one_line(v))
                      for k, v in p.items()})
    return families, shown


def _value_text(v):
    """A value as a reader writes it: strings quoted, floats to 6 significant digits
    (``np.logspace``'s 0.018478497974222907 reads 0.0184785)."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def params_text(shown, limit=None):
    """``C=1.0, gamma='scale'``: one configuration's parameters (sorted by name) on one
    line, cut to ``limit`` characters with an ellipsis."""
    text = ", ".join(f"{k}={_value_text(v)}" for k, v in sorted(shown.items()))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text or "(defaults)"
