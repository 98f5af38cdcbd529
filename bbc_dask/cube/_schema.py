"""The prediction cube: a Zarr v3 store read as an xarray Dataset.

Layout (``dims`` in brackets; chunks chosen so that one engine task writes one chunk)::

    prediction  [sample, config, repeat(, class)]  float64, NaN until written
                chunks (N, config_chunk, 1(, K)): all samples of a block of configurations
                in one repeat
    fold        [sample, repeat]   int64  fold id (0..K-1) of every sample in every repeat
    y           [sample]           class codes (classification, labels in attrs) or values
    state       [config, repeat, split]  int8  0 pending, 1 done, 2 failed, 3 dropped
    fit_time    [config, repeat, split]  float64 seconds (fit + predict), NaN if not run
    error       [config]           str    first error text of a failing configuration
    drop_wave   [config]           int16  wave at which a configuration was dropped, -1
    drop_p      [config]           float64  its p-hat at that wave, NaN
    sample, config, repeat, split(, class)  coordinates (split = fold index 0..K-1)

Study metadata is one JSON attribute ``bbc_dask`` (spec, fingerprint, seed entropy,
configuration parameters, versions) — never pickles, so opening a store runs no code.

Writes: only the process that runs the study writes (one writer per chunk by design), data
first, then the ledger (``state``/``fit_time``); Zarr's local store replaces a chunk file
atomically, so a kill at any instant leaves every chunk either old or new.
"""
from __future__ import annotations

import json
import time

import numpy as np
import zarr

from ._location import CREATING_NAME, LOCK_NAME, as_location, writing

__all__ = [
    "PENDING", "DONE", "FAILED", "DROPPED", "SCHEMA", "create_cube", "open_cube", "Cube",
    "StoreMismatchError", "inspect_store",
]

PENDING, DONE, FAILED, DROPPED = 0, 1, 2, 3
SCHEMA = "bbc_dask.cube/1"


class StoreMismatchError(ValueError):
    """The store holds a different study."""


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return repr(o)


def to_json(obj):
    return json.loads(json.dumps(obj, default=_json_default))


def create_cube(location, **kw):
    """Create the store and write the template (see :func:`_create`)."""
    location = as_location(location)
    with writing(location.url):
        return _create(location, **kw)


def _create(location, *, n_configs, n_repeats, n_splits, folds, y_stored, classes,
            n_classes_axis, config_chunk, meta):
    """Create the store and write the template; refuses a location that holds a Zarr
    store already. The study attributes are written last: a store without them is an
    interrupted creation (marked by ``.bbc_creating``), which the engine recreates."""
    n = folds.shape[0]
    location = as_location(location)
    if location.has("zarr.json"):
        raise FileExistsError(f"{location.url!r} already holds a Zarr store.")
    location.write_bytes(CREATING_NAME, b"")  # removed once the attributes are written
    # The location may hold the run lock already, so Zarr's mode "w-" cannot be used.
    g = zarr.open_group(location.zarr_store(), mode="a", zarr_format=3)
    shape = (n, n_configs, n_repeats) + ((n_classes_axis,) if n_classes_axis else ())
    chunks = (n, config_chunk, 1) + ((n_classes_axis,) if n_classes_axis else ())
    dims = ["sample", "config", "repeat"] + (["class"] if n_classes_axis else [])
    g.create_array("prediction", shape=shape, chunks=chunks, dtype="float64",
                   fill_value=np.nan, dimension_names=dims)
    g.create_array("fold", shape=folds.shape, chunks=folds.shape, dtype="int64",
                   dimension_names=["sample", "repeat"])[:] = folds
    ya = g.create_array("y", shape=(n,), chunks=(n,), dtype=y_stored.dtype, dimension_names=["sample"])
    ya[:] = y_stored
    cell = (n_configs, n_repeats, n_splits)
    # The ledger has one writer (the driver), so its chunks need not follow the tasks:
    # ~1024 configurations of one repeat per chunk keeps a million-configuration ledger to
    # a thousand files per repeat (read at every start) while a task's update rewrites a
    # few kilobytes.
    ledger = min(n_configs, config_chunk * max(1, -(-1024 // config_chunk)))
    cchunk = (ledger, 1, n_splits)
    g.create_array("state", shape=cell, chunks=cchunk, dtype="int8", fill_value=PENDING,
                   dimension_names=["config", "repeat", "split"])
    g.create_array("fit_time", shape=cell, chunks=cchunk, dtype="float64", fill_value=np.nan,
                   dimension_names=["config", "repeat", "split"])
    g.create_array("error", shape=(n_configs,), chunks=(ledger,), dtype=str,
                   dimension_names=["config"])
    g.create_array("drop_wave", shape=(n_configs,), chunks=(n_configs,), dtype="int16",
                   fill_value=-1, dimension_names=["config"])
    g.create_array("drop_p", shape=(n_configs,), chunks=(n_configs,), dtype="float64",
                   fill_value=np.nan, dimension_names=["config"])
    for name, values in (("sample", np.arange(n)), ("config", np.arange(n_configs)),
                         ("repeat", np.arange(n_repeats)), ("split", np.arange(n_splits))):
        g.create_array(name, shape=values.shape, chunks=values.shape, dtype="int64",
                       dimension_names=[name])[:] = values
    if n_classes_axis:
        cls = np.asarray(classes)
        dtype = str if cls.dtype.kind in "OUS" else cls.dtype
        g.create_array("class", shape=cls.shape, chunks=cls.shape, dtype=dtype,
                       dimension_names=["class"])[:] = cls.astype(dtype) if dtype is str else cls
    g.attrs["bbc_dask"] = to_json(dict(meta, schema=SCHEMA, created=time.strftime("%Y-%m-%dT%H:%M:%S")))
    location.remove(CREATING_NAME)
    return Cube(g, location)


def inspect_store(location):
    """What a store holds, decided under its run lock: ``("empty", None)``,
    ``("interrupted", None)`` (a creation or an overwrite that did not finish: safe to
    wipe), or ``("study", Cube)``. A location holding anything else raises
    :class:`StoreMismatchError`. In a study, temporary files of killed writes are removed.

    A study is recognised by its attributes, which creation writes last; a creation
    marker next to a readable study is a leftover of a kill between the two and is
    removed, never read as permission to wipe."""
    location = as_location(location)
    entries = set(location.listdir()) - {LOCK_NAME}
    if not entries:
        return "empty", None
    try:
        cube = open_cube(location, mode="r+")
    except StoreMismatchError:
        if CREATING_NAME in entries:
            return "interrupted", None  # the marker is ours: the wipe that follows is too
        raise
    location.remove_temporaries(cube.array_names())
    if CREATING_NAME in entries:
        location.remove(CREATING_NAME)
    return "study", cube


def open_cube(location, mode="r", storage_options=None):
    """Open the study store at ``location`` (a path, an fsspec URL or a StoreLocation)."""
    location = as_location(location, storage_options)
    p = location.url
    if not location.exists():
        raise FileNotFoundError(f"No study store at {p!r}.")
    if location.is_file() or not location.has("zarr.json"):
        if location.has(CREATING_NAME):
            raise StoreMismatchError(
                f"{p!r} holds an interrupted creation or overwrite of a study store (no "
                f"study yet); run the study again to create it.")
        raise StoreMismatchError(f"{p!r} is not a bbc_dask study store (no Zarr group there).")
    try:
        g = zarr.open_group(location.zarr_store(read_only=mode == "r"), mode=mode, zarr_format=3)
    except Exception as exc:  # zarr raises several types for "not a group"
        raise StoreMismatchError(f"{p!r} is not a bbc_dask study store ({exc}).") from None
    meta = g.attrs.get("bbc_dask")
    if not meta and location.has(CREATING_NAME):
        raise StoreMismatchError(
            f"{p!r} holds an interrupted creation or overwrite of a study store (no study "
            f"yet); run the study again to create it.")
    if not meta or meta.get("schema") != SCHEMA:
        raise StoreMismatchError(
            f"{p!r} is a Zarr store but not a bbc_dask study store (schema {SCHEMA})."
        )
    return Cube(g, location)


class Cube:
    """Thin accessor over the store's Zarr group (the engine's only writer path)."""

    def __init__(self, group, location):
        self.group = group
        self.meta = dict(group.attrs["bbc_dask"])
        self.location = location
        self.path = location.url
        #: Called before every write; the engine sets it to the run lock's ``check`` so a
        #: writer that lost an object-store lease stops before it writes again.
        self.guard = None

    def _guard(self):
        if self.guard is not None:
            self.guard()

    # ---------------------------------------------------------------- reads
    def array_names(self):
        """Names of the arrays of the study (the folders of a local store)."""
        import warnings

        with warnings.catch_warnings():
            # the lock and the skops model live beside the arrays; Zarr notes them
            warnings.filterwarnings("ignore", message=".*not recognized as a component")
            return [name for name, _ in self.group.members()]

    @property
    def n_samples(self):
        return self.group["fold"].shape[0]

    @property
    def config_chunk(self):
        return self.group["prediction"].chunks[1]

    def state(self):
        return self.group["state"][...]

    def folds(self):
        return self.group["fold"][...]

    def y(self):
        return self.group["y"][...]

    def errors(self):
        return self.group["error"][...]

    def dataset(self):
        import warnings

        import xarray as xr

        with warnings.catch_warnings():
            # The lock and the skops model live beside the arrays; Zarr notes them.
            warnings.filterwarnings("ignore", message=".*not recognized as a component")
            return xr.open_zarr(self.group.store, consolidated=False, zarr_format=3)

    # --------------------------------------------------------------- writes
    def write_cells(self, rows, configs, r, k, values, fit_times, failed, errors):
        """Write one task's predictions, then mark its cells done/failed.

        ``rows`` test-sample positions; ``configs`` sorted configuration indices inside
        one chunk; repeat ``r``, fold ``k``; ``values`` (len(rows), len(configs)[, K]).
        """
        self._guard()
        with writing(self.path):
            self._write_cells(rows, configs, r, k, values, fit_times, failed, errors)

    def _write_cells(self, rows, configs, r, k, values, fit_times, failed, errors):
        pred = self.group["prediction"]
        configs = np.asarray(configs)
        if pred.ndim == 4:
            pred.oindex[rows, configs, r, slice(None)] = values
        else:
            pred.oindex[rows, configs, r] = values
        for j, text in enumerate(errors):
            if text and not self.group["error"][configs[j]]:
                self.group["error"][int(configs[j])] = text[:4000]
        self.group["fit_time"].oindex[configs, r, k] = fit_times
        self.group["state"].oindex[configs, r, k] = np.where(failed, FAILED, DONE).astype(np.int8)

    def record_dropped(self, configs, wave, p_hat):
        """BBCD dropped ``configs`` after ``wave`` with these p-hats: their pending cells
        become "dropped"; the wave and p-hat are kept per configuration."""
        self._guard()
        configs = np.asarray(configs, dtype=np.int64)
        with writing(self.path):
            st = self.group["state"]
            for c in configs:
                row = st[int(c)]
                st[int(c)] = np.where(row == PENDING, DROPPED, row).astype(np.int8)
            self.group["drop_wave"].oindex[configs] = np.full(configs.size, wave, dtype=np.int16)
            self.group["drop_p"].oindex[configs] = np.asarray(p_hat, dtype=np.float64)

    def set_meta(self, **kw):
        self._guard()
        self.meta.update(to_json(kw))
        with writing(self.path):
            self.group.attrs["bbc_dask"] = self.meta
