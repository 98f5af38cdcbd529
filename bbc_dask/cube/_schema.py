"""The prediction cube: a Zarr v3 store, read as an xarray Dataset.

Layout (schema 3; ``dims`` in brackets)::

    prediction   [repeat, fold, slot, config(, class)]  float64, NaN until written;
                 chunks (1, 1, s, w(, n_classes)): a task's output is its block's
                 chunks, s = L (the largest fold) or ~256 KiB along slots (4 MiB in an
                 object store; see _layout.py)
    slot_sample  [repeat, fold, slot]  int64  sample at each slot, -1 for padding
    fold         [sample, repeat]  int64  fold id (0..K-1) of every sample in every repeat
    y            [sample]          class codes (classification, labels in attrs) or values
    ledger, [config, repeat, split] chunked (~1024 configurations, 1, K):
    state        int8   0 pending, 1 done, 2 failed, 3 dropped; -1 = its chunk is missing
    fit_time     float64 seconds (fit + predict), NaN if not run
    fold_score   float64 the metric on the fold's samples (BBC-F, cv_results_)
    pooled       [config, repeat] float64 the metric on all pooled predictions (selection)
    chunk_crc    [repeat, split, block] int64 CRC-32 of each prediction chunk as its task
                 wrote it (-1: none recorded); ``Cube.verify`` checks chunks against it
    error        [config]  str  first error text of a failing configuration
    sample, config, repeat, split(, class)  coordinates (split = fold index 0..K-1)
    <parameter>  [config]  one coordinate per parameter of the search (``_attrs.py``)

Every array has CF-style attributes (``long_name``, ``description``, ``units``;
``flag_values``/``flag_meanings`` on ``state``) and the metadata is consolidated once
every array exists (``_attrs.py`` says why it stays current).

Study metadata is one JSON attribute ``bbc_dask`` (spec, seed entropy, configurations,
dropping decisions, digests of y and the folds, versions) — never pickles, so opening a
store runs no code.

Who writes what: tasks write their prediction chunks themselves (:class:`ChunkWriter`,
after the run lock's token check); the driver alone writes the ledger, in batches, the
``state`` last, so a chunk counts only once ``state`` says so. A dropping decision is one
attribute write (whole or not at all); the ``dropped`` states it implies are re-applied on
resume. Every write passes :meth:`Cube._guard` (the lock or lease check).
"""
from __future__ import annotations

import json
import time

import numpy as np
import zarr

from .._zarr import config_groups, config_width
from ..exceptions import (
    OldSchemaError,
    StoreDamagedError,
    StoreMismatchError,
    StoreNotFoundError,
)
from ._attrs import (
    SAMPLE_ORDER_PREDICTION,
    consolidate,
    describe_store,
    parameter_coordinates,
    root_attrs,
    variable_attrs,
    write_coordinates,
)
from ._direct import ChunkWriter
from ._layout import (
    ATTRS_DIGEST,
    CubeBlock,
    PredictionReader,
    SampleOrderView,
    SampleTable,
    attributes_digest,
    digest,
    slot_chunk,
    slot_layout,
    to_json,
)
from ._expected import LEDGER_CONFIGS, check_layout, schema_error, unreadable_root
from ._ledger_check import (
    CHECKED, IN_ARRAY, LedgerEdit, check_read, create_crc_array, record_batch, template_table)
from ._location import CREATING_NAME, as_location, writing
from ._lock import LOCK_NAME
from ._states import DONE, DROPPED, FAILED, MISSING, PENDING

__all__ = [
    "DONE",
    "DROPPED",
    "FAILED",
    "PENDING",
    "SCHEMA",
    "Cube",
    "OldSchemaError",
    "StoreMismatchError",
    "create_cube",
    "inspect_store",
    "open_cube",
]

ATTRIBUTES_EDITED = ("The store {!r} is damaged: its study attributes (the 'bbc_dask' attribute "
                     "of zarr.json) differ from what the study wrote (digest mismatch); they "
                     "cannot be trusted: run the study again with overwrite=True.")
SCHEMA = "bbc_dask.cube/3"



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


def inspect_store(location, read_only=False):
    """What a store holds, decided under its run lock: ``("empty", None)``,
    ``("interrupted", None)`` (a creation or an overwrite that did not finish: safe to
    wipe), or ``("study", Cube)``. A location holding anything else raises
    :class:`StoreMismatchError`. In a study, temporary files of killed writes are removed.

    A study is recognised by its attributes, which creation writes last; a creation
    marker next to a readable study is a leftover of a kill between the two and is
    removed, never read as permission to wipe. ``read_only``: the same answer without
    removing anything (a run's check before it takes the lock)."""
    location = as_location(location)
    entries = set(location.listdir()) - {LOCK_NAME}
    if not entries:
        return "empty", None
    if all(e.startswith(f".{CREATING_NAME}.") and e.endswith(".tmp") for e in entries):
        return "interrupted", None  # killed while writing the marker, the first write
    try:
        cube = open_cube(location, mode="r" if read_only else "r+")
    except StoreMismatchError as exc:
        if CREATING_NAME in entries and not isinstance(exc, OldSchemaError):
            return "interrupted", None  # the marker is ours: the wipe that follows is too
        raise
    if read_only:
        return "study", cube
    location.remove_temporaries(cube.array_names())
    if CREATING_NAME in entries:
        location.remove(CREATING_NAME)
    return "study", cube


def open_cube(location, mode="r", storage_options=None, check=True):
    """Open the study store at ``location`` (a path, an fsspec URL or a StoreLocation).

    ``check``: refuse a store whose ``y``, folds or slot layout differ from those it was
    created with (False only for :func:`~bbc_dask.cube.verify_store`, which reports it)."""
    location = as_location(location, storage_options)
    p = location.url
    if not location.exists():
        raise StoreNotFoundError(f"No study store at {p!r}.")
    if location.is_file() or not location.has("zarr.json"):
        if location.has(CREATING_NAME):
            raise StoreMismatchError(
                f"{p!r} holds an interrupted creation or overwrite of a study store (no "
                f"study yet); run the study again to create it.")
        raise StoreMismatchError(f"{p!r} is not a bbc_dask study store (no Zarr group there).")
    try:
        g = zarr.open_group(location.zarr_store(read_only=mode == "r"), mode=mode, zarr_format=3)
    except Exception as exc:  # zarr raises several types for "not a group"
        raise unreadable_root(location, exc) from None
    meta = g.attrs.get("bbc_dask")
    if not meta and location.has(CREATING_NAME):
        raise StoreMismatchError(
            f"{p!r} holds an interrupted creation or overwrite of a study store (no study "
            f"yet); run the study again to create it.")
    if not meta or meta.get("schema") != SCHEMA:
        raise schema_error(p, (meta or {}).get("schema"), SCHEMA)
    cube = Cube(g, location)
    if check:
        cube.check_digests()
        check_layout(cube)
    return cube


class Cube:
    """The study store: its ledger and metadata (written by the driver only), readers of
    its predictions, and the writer its tasks use. The only code that touches a store."""

    def __init__(self, group, location):
        self.group = group
        self.meta = dict(group.attrs["bbc_dask"])
        self.location = location
        self.path = location.url
        self._slots = self._finished = None
        self._arrays, self._checked = {}, set()
        #: Called before every write; the engine sets it to the run lock's ``check`` so a
        #: writer that lost an object-store lease stops before it writes again.
        self.guard = None

    def _guard(self):
        if self.guard is not None:
            self.guard()

    def _array(self, name):
        """The array ``name``, opened once: its metadata never changes in a store's life,
        and reading it for every ledger write cost the driver a JSON parse per call."""
        arr = self._arrays.get(name)
        if arr is None:
            arr = self._arrays[name] = self.group[name]
        return arr

    def _read(self, name, key=Ellipsis):
        """``group[name][key]``; an unreadable chunk names the array and the store; a
        whole ledger array checked once against its recorded checksums."""
        try:
            out = self._array(name)[key]
            if key is Ellipsis and name in CHECKED and name not in self._checked and not (
                    name == "state" and (out == MISSING).any()):  # state() names that
                check_read(self, name, out)
                self._checked.add(name)
            return out
        except StoreDamagedError:
            raise
        except (KeyError, FileNotFoundError):
            raise StoreDamagedError(f"The store {self.path!r} is damaged: its array {name!r} "
                                    f"is missing.") from None
        except Exception as exc:
            if isinstance(exc, (MemoryError, KeyboardInterrupt)):
                raise
            raise StoreDamagedError(f"The store {self.path!r} is damaged: a chunk of {name!r} "
                                    f"cannot be read ({type(exc).__name__}: {exc}); "
                                    f"'bbc-dask verify' names it.") from None

    def check_digests(self):
        """y and the folds as created (an edited ``y`` would silently change every score)."""
        stored = self.meta.get("digests") or {}
        if ATTRS_DIGEST in self.meta and attributes_digest(self.meta) != self.meta[ATTRS_DIGEST]:
            raise StoreDamagedError(ATTRIBUTES_EDITED.format(self.path))
        for name in ("y", "fold", "slot_sample"):
            if name in stored and digest(self._read(name)) != stored[name]:
                raise StoreDamagedError(
                    f"The store {self.path!r} is damaged: its array {name!r} differs from the "
                    f"one the study was created with (digest mismatch); it cannot be trusted "
                    f"('bbc-dask verify' lists what is damaged).")

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
        return self._array("fold").shape[0]

    @property
    def config_chunk(self):
        return self._array("prediction").chunks[3]

    @property
    def chunk_nbytes(self):
        """Bytes of one block's predictions of one (repeat, fold) in memory — its chunks
        along slots together: what a task holds per block."""
        arr = self._array("prediction")
        return int(np.prod(arr.chunks[3:])) * arr.shape[2] * arr.dtype.itemsize

    @property
    def needs_class_axis(self):
        return self._array("prediction").ndim == 5

    def state(self):
        st = self._read("state")
        if (st == MISSING).any():
            c, r, _ = np.argwhere(st == MISSING)[0]
            raise StoreDamagedError(
                f"The store {self.path!r} is damaged: the ledger chunk holding configuration "
                f"{c}, repeat {r} (array 'state') is missing; the study's results cannot be "
                f"trusted. 'bbc-dask verify --repair' marks its cells pending for a resume.")
        return st

    def folds(self):
        return self._read("fold")

    def y(self):
        return self._read("y")

    def errors(self):
        return self._read("error")

    def fit_times(self):
        return self._read("fit_time")

    def mean_fit_times(self, step=65536):
        """Per configuration, the mean recorded fit time over repeats and folds (NaN where
        none), read ``step`` configurations at a time: the whole float64 ledger of a
        million-configuration study would not fit the driver comfortably."""
        n = self._array("fit_time").shape[0]
        out = np.full(n, np.nan)
        for a in range(0, n, step):
            ft = self._read("fit_time", slice(a, a + step))
            seen = np.isfinite(ft).sum(axis=(1, 2))
            total = np.nansum(ft, axis=(1, 2))
            with np.errstate(invalid="ignore", divide="ignore"):
                out[a:a + step] = np.where(seen > 0, total / seen, np.nan)
        return out

    def fold_scores(self):
        """The ledger's per-(config, repeat, fold) metric values."""
        return self._read("fold_score")

    def fit_scorer_labels(self):
        """The labels of ``fit_score`` (``test_<name>``, ``train_<name>``), as the spec
        records them; () for a study without."""
        return tuple(d["label"] for d in (self.meta.get("spec") or {}).get("fit_scorers") or ())

    def fit_scores(self):
        """The ledger's scores of the fitted fold models, (config, repeat, split, scorer)."""
        return self._read("fit_score")

    def pooled(self):
        """The ledger's pooled scores per (config, repeat); NaN until computed."""
        return self._read("pooled")

    def slot_sample(self):
        if self._slots is None:
            self._slots = self._read("slot_sample")
        return self._slots

    def reader(self):
        """Predictions in sample order (:class:`PredictionReader`, picklable)."""
        if self._finished is None:  # once per open: a study without pending cells stays so
            self._finished = not (self._read("state") == PENDING).any()
        return PredictionReader(self._array("prediction"), self.slot_sample(), self.path,
                                key=(self.meta.get("digests") or {}).get("slot_sample"),
                                checked=self._finished)

    def predictions(self, configs):
        """(N, len(configs), R(, n_classes)) float64 in sample order, read in memory."""
        return self.reader().read(np.asarray(configs, dtype=np.int64))

    def blocks(self, configs, chunk_bytes=None):
        """:class:`CubeBlock`s over ``configs`` (sorted), each about ``chunk_bytes`` as
        float64 and aligned to the stored configuration chunks; and their offsets."""
        configs = np.asarray(configs, dtype=np.int64)
        reader = self.reader()  # one per call: its shape sizes the blocks, its blocks share it
        per = int(np.prod([s for i, s in enumerate(reader.shape) if i != 1])) * 8
        groups, offsets = config_groups(configs, config_width(per, self.config_chunk, chunk_bytes))
        return [CubeBlock(reader, g) for g in groups], offsets

    def sample_table(self, configs):
        """The configurations ``configs`` (sorted) as a :class:`SampleTable`: parts of
        any samples of any of them, for the chunked bootstraps' sample blocks."""
        arr = self._array("prediction")
        return SampleTable(self.reader(), configs, self.config_chunk,
                           fold_fraction=min(1.0, arr.chunks[2] / max(1, arr.shape[2])))

    def dataset(self):
        """The user's view: an xarray Dataset with ``prediction`` [sample, config,
        repeat(, class)] backed lazily by the stored chunks (one Dask chunk per stored
        configuration block and repeat), ``fold``, ``y`` and the ledger."""
        import warnings

        import dask.array as da
        import xarray as xr

        view = SampleOrderView(self.reader())
        n, c, r = view.shape[:3]
        w = self.config_chunk
        chunks = ((n,), tuple(min(w, c - a) for a in range(0, c, w)), (1,) * r) + tuple(
            (s,) for s in view.shape[3:])
        if getattr(self.location, "in_process_only", False):
            # a store in this process's memory: read now, not by tasks that a client's
            # worker processes would run against a memory of their own (and wait forever)
            pred = view[(slice(None),) * view.ndim]
        else:
            pred = da.from_array(view, chunks=chunks, name=f"bbc-cube-{self.path}-{self.meta.get('created')}",
                                 asarray=False, fancy=False, meta=np.empty((0,) * view.ndim))
        dims = ("sample", "config", "repeat") + (("class",) if self.needs_class_axis else ())
        coords = {"sample": np.arange(n), "config": np.arange(c), "repeat": np.arange(r),
                  "split": self._read("split")}
        if self.needs_class_axis:
            coords["class"] = self._read("class")
        ledger, scored = ("config", "repeat", "split"), self.fit_scorer_labels()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*not recognized as a component")
            ds = xr.Dataset(
                {"prediction": (dims, pred), "fold": (("sample", "repeat"), self.folds()),
                 "y": (("sample",), self.y()), "state": (ledger, self.state()),
                 "fit_time": (ledger, self.fit_times()), "fold_score": (ledger, self.fold_scores()),
                 "pooled": (("config", "repeat"), self.pooled()),
                 "error": (("config",), self.errors()),
                 **({"fit_score": (ledger + ("fit_scorer",), self.fit_scores())} if scored else {})},
                coords=coords | ({"fit_scorer": list(scored)} if scored else {}),
                attrs={"bbc_dask": json.dumps(self.meta)})
        # the parameters as coordinates on config, and every variable's attributes, as
        # stored (a store made before they were has none)
        names = str(self.group.attrs.get("coordinates") or "").split()
        ds = ds.assign_coords({name: ("config", self._read(name)) for name in names})
        for name in ds.variables:
            ds[name].attrs.update(self._array(name).attrs.asdict())
        if ds["prediction"].attrs:
            ds["prediction"].attrs.update(SAMPLE_ORDER_PREDICTION)
        return ds

    # --------------------------------------------------------------- writes
    def writer(self, check):
        """The :class:`ChunkWriter` of this run's tasks; ``check`` the lock token."""
        pred = self._array("prediction").with_config({"write_empty_chunks": True})
        return ChunkWriter(pred, check, self.path)

    def record(self, results):
        """Record a batch of finished tasks in the ledger: errors, fit times and fold
        scores first, ``state`` last, so a cell counts only once all of it is stored.

        ``results``: :class:`~._ledger_check.LedgerRows`, one per block.
        """
        record_batch(self, results)

    def record_pooled(self, configs, values):
        """Pooled scores (c, R) of complete ``configs``."""
        edit = LedgerEdit(self)
        values = np.asarray(values, dtype=np.float64).reshape(len(configs), -1)
        for r in range(values.shape[1]):
            edit.set("pooled", configs, r, values[:, r])
        edit.commit()

    def decisions(self):
        """The dropping decisions, one entry per tested wave (see :meth:`record_decision`)."""
        return list((self.meta.get("dropping") or {}).get("waves", []))

    def record_decision(self, entry):
        """Persist one wave's dropping decision — whole, in one attribute write — then mark
        its configurations' pending cells dropped (re-applied by :meth:`apply_decisions`
        if a kill falls in between)."""
        record = dict(self.meta.get("dropping") or {"decided": [], "waves": []})
        record["decided"] = sorted(set(record["decided"]) | {int(entry["wave"])})
        record["waves"] = [w for w in record["waves"] if w["wave"] != entry["wave"]] + [entry]
        self.set_meta(dropping=record)
        self.apply_decisions()

    def dropped_waves(self):
        """``(wave, p_hat)`` per configuration: the wave it was dropped after (-1 if never)
        and its p-hat then (NaN)."""
        n_cfg = self._array("state").shape[0]
        wave, p = np.full(n_cfg, -1, dtype=np.int64), np.full(n_cfg, np.nan)
        for entry in self.decisions():
            gone = np.asarray(entry.get("dropped", []), dtype=np.int64)
            wave[gone] = entry["wave"]
            p[gone] = np.asarray(entry.get("p_hat", [np.nan] * gone.size), dtype=np.float64)
        return wave, p

    def apply_decisions(self):
        """Mark dropped the pending cells of the waves after each dropped configuration's
        drop (idempotent). Its cells of the waves up to the drop were trained before it: a
        repair that reset one leaves it pending, and the next run trains it again."""
        wave, _ = self.dropped_waves()
        gone = np.flatnonzero(wave >= 0)
        if not gone.size:
            return
        rows = self._array("state").oindex[gone, :, :]
        later = np.arange(rows.shape[2])[None, None, :] > wave[gone][:, None, None]
        mark = (rows == PENDING) & later
        if mark.any():
            edit = LedgerEdit(self)
            for r in range(rows.shape[1]):
                if mark[:, r].any():
                    edit.set("state", gone, r, np.where(mark[:, r], DROPPED, rows[:, r]).astype(np.int8))
            edit.commit()

    def describe(self, columns):
        """Attributes, parameter coordinates (``columns()`` gives them: see
        :func:`~bbc_dask.cube._attrs.parameter_coordinates`) and consolidated metadata for a
        store made before stores had them (a resume of it, under the run lock)."""
        if self.group.metadata.consolidated_metadata is not None:
            return
        self._guard()
        with writing(self.path):
            self.group = describe_store(self.group, self.location.zarr_store(),
                                        (self.meta.get("spec") or {}).get("metric"), columns())
        self._arrays = {}

    def set_meta(self, **kw):
        self._guard()
        self.meta.update(to_json(kw))
        self.meta[ATTRS_DIGEST] = attributes_digest(self.meta)
        with writing(self.path):
            self.group.attrs["bbc_dask"] = self.meta
