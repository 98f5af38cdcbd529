"""What a study store says about itself: CF-style attributes of its arrays, the
configurations' parameters as coordinates of ``config``, and Zarr's consolidated metadata.

Anyone opening a store with ``xarray.open_zarr(store)`` sees, on every variable,
``long_name`` and ``description`` (``units`` where one exists; ``flag_values`` and
``flag_meanings`` for ``state``), and one coordinate on ``config`` per parameter of the
search, named as the user wrote it (the root attribute ``coordinates`` lists them, which
xarray reads as CF does).

Consolidated metadata (Zarr v3: the children's metadata copied into the root
``zarr.json``) lets a reader open the store without listing it: faster on an object store,
and blind to the files beside the arrays that are not Zarr's (the run lock, the final model,
the creation marker), which a listing reports one warning each. The copy cannot go stale:
an array's metadata (shape, chunks, attributes) never changes after creation, which
consolidates it once, and the root attributes that runs rewrite (``bbc_dask``) live in
the same ``zarr.json`` as the copy and are written through a group that carries it.
"""
from __future__ import annotations

import json
import warnings

import numpy as np

__all__ = ["VARIABLE_ATTRS", "consolidate", "parameter_coordinates", "variable_attrs"]

#: Arrays of a store whose name a parameter coordinate may not take (it gets ``param_``).
RESERVED = frozenset({"prediction", "slot_sample", "fold", "y", "state", "fit_time",
                      "fold_score", "pooled", "chunk_crc", "error", "sample", "config",
                      "repeat", "split", "class", "slot", "block"})

_STATE = ("The ledger's state of each (configuration, repeat, split) cell: 0 pending (not "
          "run yet), 1 done (predictions stored), 2 failed (the fit or predict raised; its "
          "predictions are NaN, the error text is in 'error'), 3 dropped (BBCD-CV dropped "
          "the configuration before this fold's wave ran). -1 (the fill value) means the "
          "ledger chunk is missing: the store is damaged ('bbc-dask verify').")

#: Attributes of each array of a store, by name (``{metric}`` is the study's metric).
VARIABLE_ATTRS = {
    "prediction": {
        "long_name": "out-of-fold prediction",
        "description": (
            "The output of each configuration's model (the metric's response: decision "
            "function, probabilities or predicted values) for each test sample of each "
            "repeat and split, stored by fold: slot s of split k of repeat r is sample "
            "slot_sample[r, k, s]. NaN where not computed (pending, failed or dropped "
            "cells) and on padding slots. bbc_dask.open_study(store).cube gives it in "
            "sample order, as [sample, config, repeat(, class)]."),
    },
    "slot_sample": {
        "long_name": "sample at each prediction slot",
        "description": ("The sample whose prediction slot s of split k of repeat r holds "
                        "(the test samples of the fold in increasing order); -1 on padding "
                        "slots (folds are padded to the largest)."),
    },
    "fold": {
        "long_name": "fold of each sample",
        "description": ("The split (0..K-1) whose test set holds each sample in each "
                        "repeat; -1 where the sample is in no test set of the repeat (the "
                        "outer test samples of nested CV)."),
    },
    "y": {
        "long_name": "target",
        "description": ("The target of each sample: for classification, the code of its "
                        "class (an index into the coordinate 'class', or into the study "
                        "attribute bbc_dask.classes); for regression, its value."),
    },
    "state": {
        "long_name": "cell state",
        "description": _STATE,
        "flag_values": [0, 1, 2, 3],
        "flag_meanings": "pending done failed dropped",
    },
    "fit_time": {
        "long_name": "fit and predict time",
        "description": ("Seconds spent fitting the configuration on the training samples "
                        "of the cell and predicting its test samples; NaN if not run."),
        "units": "s",
    },
    "fold_score": {
        "long_name": "{metric} on the split's test samples",
        "description": ("The metric ({metric}) of the configuration's predictions on the "
                        "test samples of the split (the fold scores of BBC-F and "
                        "cv_results_); NaN if not run or failed."),
    },
    "pooled": {
        "long_name": "{metric} on the pooled out-of-fold predictions",
        "description": ("The metric ({metric}) of the configuration on all out-of-fold "
                        "predictions of the repeat at once (the score by which the study "
                        "selects by default); NaN until the configuration is complete."),
    },
    "chunk_crc": {
        "long_name": "CRC-32 of each prediction chunk",
        "description": ("The CRC-32 of the predictions of each block of configurations of "
                        "each (repeat, split) as its task wrote them, which 'bbc-dask "
                        "verify' checks the stored chunks against; -1 where none is "
                        "recorded."),
    },
    "error": {
        "long_name": "first error of the configuration",
        "description": ("The text of the first error the configuration raised (its failed "
                        "cells); empty where it never failed."),
    },
    "sample": {
        "long_name": "sample",
        "description": "The position of each sample in the study's X and y.",
    },
    "config": {
        "long_name": "configuration",
        "description": ("The index of each configuration in the search's order "
                        "(scikit-learn's ParameterGrid order for a grid); its parameters "
                        "are the other coordinates on 'config'."),
    },
    "repeat": {
        "long_name": "repeat",
        "description": ("The repetition of the cross-validation (each its own partition of "
                        "the samples); for nested CV, outer repeat r and outer fold o are "
                        "repeat r * n_outer + o."),
    },
    "split": {
        "long_name": "split",
        "description": "The fold (0..K-1) whose test set a cell predicts.",
    },
    "class": {
        "long_name": "class",
        "description": "The class labels, in the order of the class axis of 'prediction'.",
    },
}

#: ``prediction`` as :meth:`bbc_dask.cube.Cube.dataset` shows it (in sample order).
SAMPLE_ORDER_PREDICTION = {
    "long_name": "out-of-fold prediction",
    "description": (
        "The output of each configuration's model (the metric's response: decision "
        "function, probabilities or predicted values) for each sample, from the split of "
        "each repeat whose test set holds it; NaN where not computed (pending, failed or "
        "dropped cells)."),
}


def variable_attrs(name, metric):
    """The attributes of the array ``name`` of a study whose metric is ``metric``."""
    return {k: v.format(metric=metric) if isinstance(v, str) else v
            for k, v in VARIABLE_ATTRS[name].items()}


def _column(values, present):
    """``(array, how)`` of one parameter's stored values (JSON-safe, as the store's
    ``configurations`` describes them) over the configurations; ``present`` marks those
    that have the parameter. ``how`` is what the description says about the encoding."""
    vals = [v for v, p in zip(values, present) if p]
    every = bool(np.all(present))
    if vals and all(isinstance(v, bool) for v in vals) and every:
        return np.array(values, dtype=bool), ""
    numbers = vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    if numbers and every and all(isinstance(v, int) for v in vals):
        return np.array(values, dtype=np.int64), ""
    if numbers:
        out = np.array([float(v) if p else np.nan for v, p in zip(values, present)])
        return out, " NaN where the configuration has no such parameter." if not every else ""
    if vals and every and all(isinstance(v, str) for v in vals):
        return np.array(values, dtype=object), ""
    # mixed types, None, or text beside missing values: one encoding for all of them
    out = np.array([json.dumps(v) if p else "" for v, p in zip(values, present)], dtype=object)
    return out, (" Values are JSON text (the values are of several types or include "
                 "null); an empty string where the configuration has no such parameter.")


def parameter_coordinates(columns):
    """The coordinates on ``config`` of the configurations' parameters.

    Parameters
    ----------
    columns : dict
        ``{name: (parameter, values, present)}``: the coordinate's name (as the user
        wrote the parameter), the estimator's parameter name, the JSON-safe value of
        every configuration (estimators and other objects are their ``repr``) and whether
        each has the parameter (a grid of several dicts with different keys).

    Returns
    -------
    dict
        ``{coordinate name: (values, attrs)}``; a name that is an array of the store gets
        the prefix ``param_``.
    """
    out = {}
    for name, (parameter, values, present) in columns.items():
        array, how = _column(list(values), np.asarray(present, dtype=bool))
        key = f"param_{name}" if name in RESERVED else name
        said = f"parameter {name!r}" + (f" (the estimator's {parameter!r})" if parameter != name else "")
        attrs = {"long_name": f"parameter {name}",
                 "description": f"The value of the {said} in each configuration.{how}",
                 "parameter": parameter}
        if how.startswith(" Values are JSON"):
            attrs["encoding"] = "json"
        out[key] = (array, attrs)
    return out


def consolidate(store):
    """Copy every array's metadata into the root ``zarr.json`` (Zarr's consolidated
    metadata) and return the root group, opened with it. Zarr lists the store to do so:
    the warnings it gives about files that are not its own (the run lock, the creation
    marker) and about consolidated metadata not being in the v3 specification yet are
    expected here and silenced."""
    import zarr

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not recognized as a component")
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
        return zarr.consolidate_metadata(store, zarr_format=3)
