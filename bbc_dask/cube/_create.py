"""Creating a study store: every array of the layout (see :mod:`._schema`) with its
attributes, the ledger's template and its checksums, then the study attributes last — a
store without them is an interrupted creation, which the engine recreates."""
from __future__ import annotations

import time

import numpy as np
import zarr

from ._attrs import consolidate, parameter_coordinates, root_attrs, variable_attrs, write_coordinates
from ._expected import LEDGER_CONFIGS
from ._layout import ATTRS_DIGEST, attributes_digest, digest, slot_chunk, slot_layout, to_json
from ._ledger_check import IN_ARRAY, create_crc_array, template_table
from ._location import CREATING_NAME, as_location, writing
from ._schema import SCHEMA, Cube
from ._states import MISSING

__all__ = ["create_cube"]


def _PREDICTION_CODECS():
    """LZ4 at level 1, no byte shuffle, then a CRC-32C of the compressed bytes. LZ4 writes
    a task's chunk faster than Zarr's default Zstd and still folds the NaN columns of
    dropped or failed configurations (docs/performance.md, "Tuning constants"); model
    outputs are mostly incompressible anyway.
    The checksum is needed because Blosc decodes a truncated chunk as zeros without a
    word (checked): with it, a damaged chunk fails to read and its file is named."""
    from zarr.codecs import BloscCodec, Crc32cCodec

    return [BloscCodec(cname="lz4", clevel=1, shuffle="noshuffle"), Crc32cCodec()]


def create_cube(location, **kw):
    """Create the store and write the template (see :func:`_create`)."""
    location = as_location(location)
    with writing(location.url):
        return _create(location, **kw)


def _create(location, *, n_configs, n_repeats, n_splits, folds, y_stored, classes,
            n_classes_axis, config_chunk, meta, config_coords=None, fit_scorers=()):
    """Create the store and write the template; refuses a location that holds a Zarr
    store already. Every array carries its attributes (``_attrs.py``) and the parameters
    of the configurations are coordinates on ``config`` (``config_coords``, see
    :func:`~bbc_dask.cube._attrs.parameter_coordinates`); the metadata is consolidated
    once all arrays exist. The study attributes are written last: a store without them is
    an interrupted creation (marked by ``.bbc_creating``), which the engine recreates.
    ``fit_scorers``: the labels of the scores the tasks compute with each fold's fitted
    model (``fit_score``; none: no such array)."""
    n = folds.shape[0]
    location = as_location(location)
    if location.has("zarr.json"):
        raise FileExistsError(f"{location.url!r} already holds a Zarr store.")
    location.write_bytes(CREATING_NAME, b"")  # removed once the attributes are written
    # The location may hold the run lock already, so Zarr's mode "w-" cannot be used.
    g = zarr.open_group(location.zarr_store(), mode="a", zarr_format=3)
    metric = (meta.get("spec") or {}).get("metric", "the metric")

    def create(name, dims, **kw):
        return g.create_array(name, dimension_names=dims, attributes=variable_attrs(name, metric), **kw)

    slots = slot_layout(folds, n_splits)
    cls = (n_classes_axis,) if n_classes_axis else ()
    along = slot_chunk(slots.shape[2], config_chunk * max(1, n_classes_axis) * 8,
                       location.slot_chunk_bytes)
    create("prediction", ["repeat", "split", "slot", "config"] + (["class"] if cls else []),
           shape=(n_repeats, n_splits, slots.shape[2], n_configs) + cls,
           chunks=(1, 1, along, config_chunk) + cls, dtype="float64", fill_value=np.nan,
           compressors=_PREDICTION_CODECS())
    create("slot_sample", ["repeat", "split", "slot"], shape=slots.shape, chunks=slots.shape,
           dtype="int64", fill_value=-1)[...] = slots
    create("fold", ["sample", "repeat"], shape=folds.shape, chunks=folds.shape,
           dtype="int64")[...] = folds
    create("y", ["sample"], shape=(n,), chunks=(n,), dtype=y_stored.dtype)[...] = y_stored
    cell = (n_configs, n_repeats, n_splits)
    # The ledger has one writer (the driver), so its chunks need not follow the tasks:
    # ~1024 configurations of one repeat per chunk keeps a million-configuration ledger to
    # a thousand files per repeat (read at every start) while a batch rewrites a few kB.
    ledger = min(n_configs, config_chunk * max(1, -(-LEDGER_CONFIGS // config_chunk)))
    dims = ["config", "repeat", "split"]
    st = create("state", dims, shape=cell, chunks=(ledger, 1, n_splits), dtype="int8",
                fill_value=MISSING, config={"write_empty_chunks": True})
    for c0 in range(0, n_configs, ledger):  # every chunk exists: a missing one is damage
        for r in range(n_repeats):
            st[c0:c0 + ledger, r] = np.zeros((min(ledger, n_configs - c0), n_splits), np.int8)
    for name in ("fit_time", "fold_score"):
        create(name, dims, shape=cell, chunks=(ledger, 1, n_splits), dtype="float64",
               fill_value=np.nan)
    if fit_scorers:  # a ledger array: the driver writes it with the fold scores
        create("fit_score", dims + ["fit_scorer"], shape=cell + (len(fit_scorers),),
               chunks=(ledger, 1, n_splits, len(fit_scorers)), dtype="float64",
               fill_value=np.nan)
        create("fit_scorer", ["fit_scorer"], shape=(len(fit_scorers),),
               chunks=(len(fit_scorers),), dtype=str)[...] = np.asarray(fit_scorers, dtype=object)
    create("pooled", ["config", "repeat"], shape=cell[:2], chunks=(ledger, 1), dtype="float64",
           fill_value=np.nan)
    n_blocks = -(-n_configs // config_chunk)
    create("chunk_crc", ["repeat", "split", "block"], shape=(n_repeats, n_splits, n_blocks),
           chunks=(1, n_splits, -(-ledger // config_chunk)), dtype="int64", fill_value=-1)
    create("error", ["config"], shape=(n_configs,), chunks=(ledger,), dtype=str)
    for name, values in (("sample", np.arange(n)), ("config", np.arange(n_configs)),
                         ("repeat", np.arange(n_repeats)), ("split", np.arange(n_splits))):
        create(name, [name], shape=values.shape, chunks=values.shape, dtype="int64")[...] = values
    if n_classes_axis:
        cls = np.asarray(classes)
        dtype = str if cls.dtype.kind in "OUS" else cls.dtype
        create("class", ["class"], shape=cls.shape, chunks=cls.shape,
               dtype=dtype)[...] = cls.astype(dtype) if dtype is str else cls
    coords = parameter_coordinates(config_coords or {})
    write_coordinates(g, coords, ledger)
    crc = create_crc_array(g, n_configs, n_repeats, ledger)
    # the template's checksums, before the attributes: a kill before those is a creation
    crc[...] = template_table(g, fit_scorers)
    # every array exists now, with its attributes: consolidated once, current for good
    g = consolidate(location.zarr_store())
    digests = {"y": digest(y_stored), "fold": digest(folds), "slot_sample": digest(slots)}
    meta = to_json(dict(meta, schema=SCHEMA, digests=digests, ledger_crc=IN_ARRAY,
                        created=time.strftime("%Y-%m-%dT%H:%M:%S")))
    g.update_attributes({**root_attrs(coords), "bbc_dask": {**meta, ATTRS_DIGEST: attributes_digest(meta)}})
    location.remove(CREATING_NAME)
    return Cube(g, location)
