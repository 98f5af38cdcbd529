"""Configurations as a reader wrote them: the command line's and the report's one way of
naming a configuration.

A study file of several model families runs one pipeline whose ``model`` step is set per
configuration (``{"model": est, "model__svc__C": 1.0}``, see
:mod:`bbc_dask.cli._studyfile`); the user wrote ``svc__C: 1.0`` under that family. Stored
parameters that are not JSON are their ``repr`` (a ``Pipeline(...)`` string, newlines
included), which a table or a title must show on one line.
"""
from __future__ import annotations

import re

_STEP = re.compile(r"\(\s*'[^']*'\s*,\s*([A-Za-z_]\w*)\(")


def model_label(model):
    """A short name of an estimator or of its stored ``repr``: the class name, or a
    pipeline's steps joined by arrows (``"StandardScaler → SVC"``)."""
    text = model if isinstance(model, str) else repr(model)
    text = " ".join(text.split())
    head = text.split("(", 1)[0].strip()
    if head == "Pipeline":
        steps = _STEP.findall(text)
        if steps:
            return " → ".join(steps)
    return head or text


def user_params(params):
    """``params`` with the keys the user wrote: a study file's ``model__`` prefix dropped
    and its ``model`` entry named by :func:`model_label`; other values on one line."""
    params = dict(params)
    out = {}
    if "model" in params and all(k == "model" or k.startswith("model__") for k in params):
        out["model"] = model_label(params.pop("model"))
        params = {k[len("model__"):]: v for k, v in params.items()}
    for k, v in params.items():
        out[k] = " ".join(v.split()) if isinstance(v, str) else v
    return out


def describe(params):
    """One line: ``model=StandardScaler → SVC, svc__C=10.0, svc__gamma=0.01``."""
    return ", ".join(f"{k}={v!r}" if isinstance(v, str) and k != "model" else f"{k}={v}"
                     for k, v in user_params(params).items())
