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

__all__ = ["VARIABLE_ATTRS", "consolidate", "describe_store", "parameter_coordinates", "variable_attrs"]

#: Arrays of a store whose name a parameter coordinate may not take (it gets ``param_``).
RESERVED = frozenset({"prediction", "slot_sample", "fold", "y", "state", "fit_time",
                      "fold_score", "pooled", "chunk_crc", "error", "sample", "config", "ledger_crc",
                      "repeat", "split", "class", "slot", "block", "fit_score",
                      "fit_scorer"})

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
    "fit_score": {
        "long_name": "scores of each fold's fitted model",
        "description": ("Each scorer of the coordinate 'fit_scorer' called on the "
                        "configuration's model fitted on the split's training samples: "
                        "'test_<name>' on its test samples, 'train_<name>' on its training "
                        "samples (scikit-learn's scorer(estimator, X, y)); NaN if not run "
                        "or failed."),
    },
    "fit_scorer": {
        "long_name": "scorer of fit_score",
        "description": ("'test_<name>' or 'train_<name>': the scorer and the samples it "
                        "scored (the keys of cv_results_)."),
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
    "ledger_crc": {
        "long_name": "CRC-32 of each ledger chunk",
        "description": ("Per ledger chunk (configurations of one chunk of 'state'), repeat "
                        "and ledger array (state, fit_time, fold_score, pooled, fit_score, "
                        "error), the CRC-32 of the values the study wrote: the committed one "
                        "and, while a write is under way, the pending one; -1 where none. "
                        "A run, an estimate and 'bbc-dask verify' compare the ledger with it."),
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


def _column(choices, codes):
    """``(array, how)``: one parameter's values over the configurations, from the values
    it takes (``choices``: JSON-safe, as the store's ``configurations`` describes them)
    and each configuration's position among them (``codes``; -1 where the configuration
    has no such parameter). ``how`` is what the description says about the encoding."""
    codes = np.asarray(codes)
    used = np.unique(codes)
    vals = [choices[i] for i in used[used >= 0]]
    every = used.size == 0 or used[0] >= 0
    if vals and every and all(isinstance(v, bool) for v in vals):
        return np.array(choices, dtype=bool)[codes], ""
    numbers = vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    if numbers and every and all(isinstance(v, int) for v in vals):
        return np.array([v if isinstance(v, int) else 0 for v in choices], dtype=np.int64)[codes], ""
    if numbers:
        table = np.array([float(v) if isinstance(v, (int, float)) else np.nan for v in choices]
                         + [np.nan])  # codes -1 take the last: NaN
        return table[codes], "" if every else " NaN where the configuration has no such parameter."
    missing = " An empty string where the configuration has no such parameter."
    if vals and all(isinstance(v, str) for v in vals) and (every or "" not in vals):
        table = np.array(list(choices) + [""], dtype=object)
        return table[codes], "" if every else missing
    # several types, null, or booleans beside missing values: JSON keeps them apart
    table = np.array([json.dumps(v) for v in choices] + [""], dtype=object)
    return table[codes], (" Values are JSON text (of several types, or null, or beside "
                          "configurations without the parameter)." + missing)


def parameter_coordinates(columns):
    """The coordinates on ``config`` of the configurations' parameters.

    Parameters
    ----------
    columns : dict
        ``{name: (parameter, choices, codes)}``: the coordinate's name (the parameter as
        the user wrote it), the estimator's parameter name, the JSON-safe values it takes
        (estimators and other objects are their ``repr``) and each configuration's
        position among them, -1 where it has no such parameter (a grid of several dicts
        with different keys); see :meth:`bbc_dask.engine.Configurations.columns`.

    Returns
    -------
    dict
        ``{coordinate name: (values, attrs)}``; a name that is an array of the store gets
        the prefix ``param_``.
    """
    out = {}
    for name, (parameter, choices, codes) in columns.items():
        array, how = _column(list(choices), codes)
        key = f"param_{name}" if name in RESERVED else name
        said = f"parameter {name!r}" + (f" (the estimator's {parameter!r})" if parameter != name else "")
        attrs = {"long_name": f"parameter {name}",
                 "description": f"The value of the {said} in each configuration.{how}",
                 "parameter": parameter}
        if "JSON" in how:
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


def write_coordinates(group, coords, chunk):
    """Write the parameter coordinates ``coords`` (of :func:`parameter_coordinates`) as
    arrays of ``group`` over ``config``, ``chunk`` configurations per chunk."""
    for name, (values, attrs) in coords.items():
        dtype = str if values.dtype == object else values.dtype
        group.create_array(name, shape=values.shape, chunks=(min(chunk, values.size),),
                           dimension_names=["config"], attributes=attrs,
                           dtype=dtype)[...] = values


def root_attrs(coords):
    """The root attributes beside ``bbc_dask``: a pointer to the layout's documentation
    and the names of the parameter coordinates (CF's ``coordinates``)."""
    return {"description": "A bbc_dask study store (schema 3); its layout: bbc_dask's "
                           "docs/usage.md, 'The cube'.",
            **({"coordinates": " ".join(coords)} if coords else {})}


def describe_store(group, store, metric, columns):
    """Give a store made before its arrays had attributes those attributes, its
    parameter coordinates (``columns`` as in :func:`parameter_coordinates`) and
    consolidated metadata; nothing when it has them already. Returns the root group to
    use from then on (carrying the consolidated metadata). The caller holds the run lock
    and has checked it; a kill part-way leaves a store without consolidated metadata,
    which the next run describes again (every step is idempotent)."""
    if group.metadata.consolidated_metadata is not None:
        return group
    names = {name for name, _ in _members(group)}
    for name in sorted(names & set(VARIABLE_ATTRS)):
        array = group[name]
        if not array.attrs.asdict():
            array.update_attributes(variable_attrs(name, metric))
    coords = {k: v for k, v in parameter_coordinates(columns).items() if k not in names}
    chunk = group["error"].chunks[0]
    write_coordinates(group, coords, chunk)
    old = str(group.attrs.get("coordinates") or "").split()
    group.update_attributes(root_attrs(old + list(coords)))
    return consolidate(store)


def _members(group):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not recognized as a component")
        return list(group.members())
