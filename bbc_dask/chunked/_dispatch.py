"""The public ``bbc_dask.bbc`` and ``bbc_dask.bbc_f``: the statistics layer's functions
for arrays in memory, dispatching a lazy cube to the chunked path (the statistics never
import Dask); and the one rule that decides between the two (:func:`use_chunked`)."""
from __future__ import annotations

import functools
import inspect

from .. import _tuning as tuning
from .. import _validation
from .._doors import door
from .._zarr import zarr_of
from ..exceptions import InvalidParameterError
from ..stats import bbc as in_memory_bbc
from ..stats import bbc_f as in_memory_bbc_f
from ._lazy_bbc import lazy_bbc
from ._lazy_bbc_f import lazy_bbc_f

__all__ = ["bbc", "bbc_f", "is_lazy", "refuse_general", "use_chunked"]


def is_lazy(x):
    """Whether ``x`` is a Dask- or Zarr-backed cube (a Dataset by its ``prediction``)."""
    if zarr_of(x) is not None:
        return True
    if type(x).__name__ == "Dataset" and "prediction" in getattr(x, "data_vars", {}):
        return is_lazy(x["prediction"])
    data = getattr(x, "data", x)
    return type(data).__module__.startswith("dask.array")


def use_chunked(predictions=None, *, nbytes=None, chunked=None):
    """Whether an estimate goes by the chunked path: the one rule of the public
    estimators and of a study. The result is the same bit for bit either way; only
    resources differ.

    - ``chunked`` True or False: as told (checked: None, True or False);
    - else, ``predictions`` given: whether they are a Dask- or Zarr-backed cube
      (:func:`is_lazy`) — arrays in memory stay in memory;
    - else ``nbytes``, the predictions' bytes as float64 (a study's cube), or a function
      giving them (called only here): whether they exceed ``bbc_dask.in-memory-bytes``."""
    if chunked is not None:
        return _validation.check_bool(chunked, "chunked", allow_none=True)
    if predictions is not None:
        return is_lazy(predictions)
    return (nbytes() if callable(nbytes) else nbytes) > tuning.IN_MEMORY_BYTES


def refuse_general(metric):
    """An error before any work when ``metric`` is a general one (a scikit-learn scorer
    called per bootstrap): the chunked path takes the registered metrics only."""
    from ..metrics import get_metric

    m = get_metric(metric)
    if m.kind == "general":
        raise InvalidParameterError.of(
            "metric", f"one of {_metric_names()} on the chunked path (a Dask- or "
            f"Zarr-backed cube, or one over bbc_dask.in-memory-bytes)", m.name,
            note="A scikit-learn scorer's own function runs in memory only: pass arrays, "
                 "or chunked=False.")


def _metric_names():
    from ..metrics import metric_names

    return metric_names()


def _no_explicit(bootstrap_indices):
    if bootstrap_indices is not None:
        raise InvalidParameterError.of(
            "bootstrap_indices", "None with a Dask- or Zarr-backed cube",
            shown="explicit indices", note="Bootstraps of such a cube are drawn on the workers "
            "from random_state; pass in-memory arrays to use explicit indices.")


def _dispatching(in_memory, lazy, passed):
    """The public estimator ``in_memory`` (the statistics layer: arrays in memory) that
    also takes a Dask- or Zarr-backed cube, whose chunks ``lazy`` maps over. The dispatch
    lives here, in the layer that knows both, so that the statistics never import Dask.
    Same signature and docstring as ``in_memory``."""
    sig = inspect.signature(in_memory)

    @functools.wraps(in_memory)
    @door(in_memory.__name__)
    def estimator(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:  # the in-memory function words the error
            return in_memory(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if not use_chunked(a["predictions"]):
            return in_memory(*args, **kwargs)
        refuse_general(a["metric"])
        _no_explicit(a["bootstrap_indices"])
        return lazy(**{k: a[k] for k in passed})

    # defined here, whatever functools.wraps copied: help() and a reader's search land on
    # the door that dispatches (inspect.signature and getsource still follow __wrapped__)
    estimator.__module__ = __name__
    return estimator


_COMMON = ("predictions", "y", "metric", "n_bootstraps", "confidence_level", "random_state",
           "pos_label")
#: ``bbc_dask.bbc`` and ``bbc_dask.bbc_f``: arrays in memory or lazy cubes.
bbc = _dispatching(in_memory_bbc, lazy_bbc, _COMMON + ("folds", "selection", "include_incomplete"))
bbc_f = _dispatching(in_memory_bbc_f, lazy_bbc_f, _COMMON + ("folds", "block_size"))
