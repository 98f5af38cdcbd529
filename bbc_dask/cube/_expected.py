"""What the schema says each array of a study store is — data type, fill value, shape,
dimension names, chunking — derived from what the study trusts: its attributes (the
configurations, the classes, the scorers of fitted models) and its folds (whose values
the digest checks).

An array's metadata can be edited behind the study's back (``data_type`` float64 →
float32 in ``prediction/zarr.json``): its chunks then decode to nonsense or not at all,
and a check of the chunks alone blames every one of them. Comparing the metadata with
the schema first tells metadata damage from chunk damage (:func:`problems`), so that a
repair restores the metadata file and never deletes a readable chunk.
"""
from __future__ import annotations

import json
import numpy as np

from .._doors import spelled
from ..exceptions import OldSchemaError, StoreDamagedError, StoreMismatchError

__all__ = ["LEDGER_CONFIGS", "check_layout", "expected_arrays", "layout_problem", "n_configurations", "problems",
           "schema_error", "unreadable_root"]

_FLOAT = ("float64", np.nan)
#: Configurations per ledger chunk (rounded to the task block): ~1024 configurations of
#: one repeat per chunk keeps a million-configuration ledger to a thousand files per
#: repeat (read at every start) while a batch rewrites a few kB.
LEDGER_CONFIGS = 1024
_LEDGER = ("config", "repeat", "split")


def n_configurations(meta):
    """The number of configurations the study's attributes describe (a grid's product
    of value counts summed over its dicts, or a random search's draws); None when the
    attributes do not say."""
    desc = meta.get("configurations")
    if not isinstance(desc, dict):
        return None
    if desc.get("kind") == "grid":
        return int(sum(int(np.prod([len(v) for v in g.values()])) if g else 1
                       for g in desc.get("grid", [])))
    params = desc.get("params")
    return len(params) if isinstance(params, list) else None


def expected_arrays(meta, folds, config_chunk):
    """``{name: (dtype, fill value or None, shape, dimension names, chunks)}`` of every
    array the schema defines, for a study with attributes ``meta``, folds ``folds``
    (N, R) and ``config_chunk`` configurations per prediction chunk (``class`` exists
    only in a study whose metric reads one response per class). ``dtype`` None: any
    (``y``, ``class``); ``"str"``: variable-length strings. ``chunks`` None in a place:
    any (the prediction chunk's length along slots)."""

    n, n_rep = folds.shape
    n_spl = int((meta.get("spec") or {}).get("n_splits") or (folds.max() + 1))
    n_cfg = n_configurations(meta)
    counts = [int((folds[:, r] == k).sum()) for r in range(n_rep) for k in range(n_spl)]
    slots = max(counts) if counts else 0
    classes = meta.get("classes")
    labels = [d["label"] for d in (meta.get("spec") or {}).get("fit_scorers") or ()]
    def whole(dtype, fill, shape, dims):  # one chunk: written once at creation
        return dtype, fill, shape, dims, shape

    out = {
        "slot_sample": whole("int64", -1, (n_rep, n_spl, slots), ("repeat", "split", "slot")),
        "fold": whole("int64", None, (n, n_rep), ("sample", "repeat")),
        "y": whole(None, None, (n,), ("sample",)),
        "sample": whole("int64", None, (n,), ("sample",)),
        "repeat": whole("int64", None, (n_rep,), ("repeat",)),
        "split": whole("int64", None, (n_spl,), ("split",)),
    }
    if n_cfg is None:
        return out
    w = max(1, config_chunk)
    ledger = min(n_cfg, w * max(1, -(-LEDGER_CONFIGS // w)))  # as _create chunks it
    cell, by = (n_cfg, n_rep, n_spl), (ledger, 1, n_spl)
    cls = () if classes is None else (len(classes),)
    out.update({
        "prediction": ("float64", np.nan, (n_rep, n_spl, slots, n_cfg), ("repeat", "split",
                       "slot", "config"), (1, 1, None, w)),
        "state": ("int8", -1, cell, _LEDGER, by),
        "fit_time": (*_FLOAT, cell, _LEDGER, by),
        "fold_score": (*_FLOAT, cell, _LEDGER, by),
        "pooled": (*_FLOAT, cell[:2], _LEDGER[:2], by[:2]),
        "chunk_crc": ("int64", -1, (n_rep, n_spl, -(-n_cfg // w)), ("repeat", "split", "block"),
                      (1, n_spl, -(-ledger // w))),
        "error": ("str", None, (n_cfg,), ("config",), (ledger,)),
        "config": whole("int64", None, (n_cfg,), ("config",)),
    })
    if meta.get("ledger_crc") == "array":  # a store from before it has none
        n_lc = -(-n_cfg // ledger)
        out["ledger_crc"] = ("int64", -1, (n_lc, n_rep, 6, 2), ("ledger_chunk", "repeat",
                             "ledger_array", "crc_slot"), (min(n_lc, 64), n_rep, 6, 2))
    if cls:
        out["class"] = whole(None, None, cls, ("class",))
    if labels:
        out["fit_score"] = (*_FLOAT, cell + (len(labels),), _LEDGER + ("fit_scorer",),
                            by + (len(labels),))
        out["fit_scorer"] = whole("str", None, (len(labels),), ("fit_scorer",))
    return out


def problems(md, want):
    """What in the array metadata ``md`` (Zarr's ``ArrayV3Metadata``) differs from the
    schema's ``want`` (see :func:`expected_arrays`), as short phrases; [] when none."""
    dtype, fill, shape, dims, chunks = want
    out = []
    try:
        native = md.dtype.to_native_dtype()
    except Exception:  # noqa: BLE001 - a data type Zarr cannot map is a problem itself
        native = None
    have = "str" if native is not None and native.kind in "TOU" else str(native)
    if dtype is not None and have != dtype:
        out.append(f"data_type {have} where the schema says {dtype}")
    if fill is not None:
        got = md.fill_value
        same = (np.isnan(got) if isinstance(fill, float) and np.isnan(fill) else got == fill) \
            if np.ndim(got) == 0 and not isinstance(got, (str, bytes)) else False
        if not same:
            out.append(f"fill_value {got!r} where the schema says {fill!r}")
    extra = 1 if dims and dims[-1] == "config" else 0  # the prediction's class axis
    if tuple(md.shape)[:len(shape)] != tuple(shape) or len(md.shape) not in (
            len(shape), len(shape) + extra):
        out.append(f"shape {tuple(md.shape)} where the schema says {tuple(shape)}")
    got_chunks = tuple(md.chunks)
    if len(got_chunks) < len(chunks) or any(
            c is not None and g != c for g, c in zip(got_chunks, chunks)):
        out.append(f"chunks {got_chunks} where the schema says "
                   f"{tuple('*' if c is None else c for c in chunks)}")
    if tuple(md.dimension_names or ())[:len(dims)] != tuple(dims):
        out.append(f"dimension_names {list(md.dimension_names or ())} where the schema says "
                   f"{list(dims)}")
    return out


def layout_problem(cube):
    """``(file, problem)`` of the first array whose metadata as the package reads it
    (the consolidated copy) differs from the schema, or None: checked when a study is
    opened, so that an estimate never reads through edited metadata (a float32
    ``prediction``, a fill value of 0.5 for unwritten cells)."""
    consolidated = cube.group.metadata.consolidated_metadata
    if consolidated is None:  # a store made before stores had it: `verify` checks it
        return None
    want = expected_arrays(cube.meta, np.asarray(cube.folds()), cube.config_chunk)
    copies = consolidated.metadata
    for name, spec in want.items():
        if name == "class" and name not in copies:
            continue  # a study without a class axis
        if name not in copies:
            return f"{name}/zarr.json", "is missing from the store's consolidated metadata"
        found = problems(copies[name], spec)
        if found:
            return f"{name}/zarr.json", "says " + "; ".join(found)
    return None


def check_layout(cube):
    """Refuse, in one line naming the file, a study whose metadata as read differs from
    the schema (:func:`layout_problem`)."""
    found = layout_problem(cube)
    if found:
        raise StoreDamagedError(
            f"The store {cube.path!r} is damaged: {found[0]} {found[1]}; 'bbc-dask verify "
            f"--repair' repairs it where an intact copy of it remains.")


def restored(raw, spec):
    """The array metadata JSON ``raw`` with what the schema ``spec`` determines put back
    (data type, fill value, shape, chunks; the rest — codecs, attributes — kept), as
    bytes; None when the schema cannot say it (strings, any data type, a damaged length
    along slots) or the result still differs from it."""
    from zarr.core.metadata.v3 import ArrayV3Metadata

    dtype, fill, shape, _dims, chunks = spec
    out = dict(raw)
    if dtype not in (None, "str"):
        out["data_type"] = dtype
    if fill is not None:
        out["fill_value"] = "NaN" if isinstance(fill, float) and np.isnan(fill) else fill
    have = list(out.get("shape") or ())
    out["shape"] = list(shape) + have[len(shape):]  # the prediction's class axis stays
    grid = dict(out.get("chunk_grid") or {})
    old = list((grid.get("configuration") or {}).get("chunk_shape") or ())
    if len(old) < len(chunks):
        return None
    grid["configuration"] = {"chunk_shape": [o if c is None else c for o, c in
                                             zip(old, chunks)] + old[len(chunks):]}
    out["chunk_grid"] = grid
    try:
        md = ArrayV3Metadata.from_dict(dict(out))
    except Exception:  # noqa: BLE001 - beyond what the schema can restore
        return None
    if problems(md, spec):
        return None
    return json.dumps(out, indent=2).encode()


def schema_error(p, found, schema):
    """Why the store at ``p`` whose attributes say schema ``found`` is not one this
    version reads (``schema``)."""
    if isinstance(found, str) and found.startswith("bbc_dask.cube/"):
        return OldSchemaError(
            f"{p!r} is a bbc_dask study store of schema {found!r}; this version reads "
            f"{schema!r} only (its stored layout differs). Run the study again "
            f"into a new store (or with {spelled('overwrite=True')}) to recompute it.")
    return StoreMismatchError(
        f"{p!r} is a Zarr store but not a bbc_dask study store (schema {schema}).")


def unreadable_root(location, exc):
    """The error of a store whose root ``zarr.json`` Zarr cannot open: a damaged study
    where the study's arrays are there (named, never "not a study store"), else not a
    study store."""
    try:
        study = all(location.has(f"{name}/zarr.json") for name in ("prediction", "state"))
    except Exception:  # noqa: BLE001 - an unreachable store: not recognisable
        study = False
    if study:
        return StoreDamagedError(
            f"The store {location.url!r} is damaged: its zarr.json (the study's attributes) "
            f"cannot be read ({type(exc).__name__}); the study cannot be recovered: run it "
            f"again with {spelled('overwrite=True')}.")
    return StoreMismatchError(f"{location.url!r} is not a bbc_dask study store ({exc}).")
