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
import uuid

import numpy as np
import warnings
import zarr

from .._zarr import config_groups, config_width
from ..exceptions import (
    OldSchemaError,
    StoreDamagedError,
    StoreMismatchError,
    StoreNotFoundError,
)
from ._attrs import SAMPLE_ORDER_PREDICTION, describe_store
from ._direct import ChunkWriter
from ._layout import (
    ATTRS_DIGEST,
    CubeBlock,
    PredictionReader,
    SampleOrderView,
    SampleTable,
    attributes_digest,
    digest,
    to_json,
)
from ._expected import check_layout, schema_error, unreadable_root
from ._ledger_check import (
    CHECKED, LedgerEdit, check_read, record_batch)
from ._location import CREATING_NAME, as_location, writing
from ._lock import LOCK_NAME
from ._states import DONE, DROPPED, FAILED, MISSING, PENDING
from .._doors import spelled

__all__ = [
    "DONE",
    "DROPPED",
    "FAILED",
    "PENDING",
    "SCHEMA",
    "Cube",
    "OldSchemaError",
    "StoreMismatchError",
    "inspect_store",
    "open_cube",
]

ATTRIBUTES_EDITED = ("The store {!r} is damaged: its study attributes (the 'bbc_dask' attribute "
                     "of zarr.json) differ from what the study wrote (digest mismatch); they "
                     "cannot be trusted: run the study again with {advice}.")
SCHEMA = "bbc_dask.cube/3"



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
        #: Called before every write (:meth:`bind_lock`): the run lock's ``check``, so a
        #: writer that lost an object-store lease stops before it writes again.
        self.guard = None
        self._wave_session = None

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
            raise StoreDamagedError(ATTRIBUTES_EDITED.format(self.path, advice=spelled("overwrite=True")))
        for name in ("y", "fold", "slot_sample"):
            if name in stored and digest(self._read(name)) != stored[name]:
                raise StoreDamagedError(
                    f"The store {self.path!r} is damaged: its array {name!r} differs from the "
                    f"one the study was created with (digest mismatch); it cannot be trusted "
                    f"('bbc-dask verify' lists what is damaged).")

    # ---------------------------------------------------------------- reads
    def array_names(self):
        """Names of the arrays of the study (the folders of a local store)."""
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
                                key=self.digests.get("slot_sample"),
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
                                        self.spec.get("metric"), columns())
        self._arrays = {}

    # ------------------------------------------------ the study's record (attributes)
    def bind_lock(self, check):
        """Every write from now on calls ``check`` first (a run lock's, or one that raises
        once the run let its lock go)."""
        self.guard = check

    @property
    def spec(self):
        """The study's recorded fingerprint: what a resume must match (a JSON dict)."""
        return self.meta.get("spec") or {}

    @property
    def target_classes(self):
        """The labels of y a classification study encoded (sorted; their positions are
        the stored codes), or None (regression, survival)."""
        return self.meta.get("classes")

    @property
    def pos_label(self):
        """The positive class the study scored its metric for (the spec's ``pos_label``;
        the larger label unless the user named one), or None where y has no classes."""
        return self.spec.get("pos_label")

    @property
    def protocol_kind(self):
        """``"nested"``, ``"splits"``, or None for K-fold (the spec's protocol)."""
        return (self.spec.get("protocol") or {}).get("kind")

    @property
    def selection(self):
        """How the study selects its winner: a :class:`~bbc_dask.stats.Selection` (the
        pooled score, or the mean fold score)."""
        from ..stats import Selection

        return Selection.of(self.spec.get("selection", "pooled"))

    @property
    def configurations(self):
        """The stored description of the candidates (JSON), or None in a store made before
        lazy planning (see :attr:`listed_params`)."""
        return self.meta.get("configurations")

    @property
    def listed_params(self):
        """The parameter dicts a store made before lazy planning listed, or None."""
        return self.meta.get("params")

    @property
    def metadata(self):
        """The user's metadata recorded with the study (a study file's own, for one)."""
        return self.meta.get("metadata")

    @property
    def digests(self):
        """The digests of y, the folds and the slot layout, as created."""
        return self.meta.get("digests") or {}

    def record_classes(self, classes):
        """Add the estimators' classes to the fingerprint of a store made before it named
        them (compared without them until then)."""
        if "classes" not in self.spec:
            self.set_meta(spec={**self.spec, "classes": classes})

    @property
    def runs(self):
        """The runs of the study so far, oldest first (JSON dicts: start, end, fits)."""
        return [dict(r) for r in self.meta.get("runs") or []]

    def begin_run(self):
        """Record that a run starts now, with the cells done before it and the token of
        the run lock it holds: a reader that finds the lock held by a token that no run
        record names sees a run that has not begun yet (``Study.status``'s
        ``starting``)."""
        holder = self.location.lock().holder() or {}
        self.set_meta(runs=self.runs + [{
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "t0": time.time(),
            "done_before": int((self.state() != PENDING).sum()),
            **({"lock": holder["token"]} if holder.get("token") else {})}])

    def end_run(self, **fields):
        """Record the end of the last run: ``fields`` (fits, outer fits) and now."""
        runs = self.runs
        runs[-1].update(fields, t1=time.time())
        self.set_meta(runs=runs)

    def wall_seconds(self):
        """The wall time of the study's runs, summed over resumes; a run killed before it
        recorded an end counts nothing."""
        return float(sum(r["t1"] - r["t0"] for r in self.runs if "t1" in r and "t0" in r))

    @property
    def final_model_record(self):
        """The saved final model's record (its configuration, refit time, files), or None."""
        return self.meta.get("final_model")

    def save_final_model(self, config, refit_time, files):
        """Record the final model: configuration ``config`` refitted in ``refit_time``
        seconds, saved as ``files`` (what :func:`~._model.save_model` returned)."""
        self.set_meta(final_model={"config": int(config), "refit_time": refit_time, **files})

    @property
    def outer_results(self):
        """Nested CV's recorded outer folds (repeat, outer, selected, score, fit time,
        error), in order."""
        return [dict(e) for e in self.meta.get("outer") or []]

    def add_outer_results(self, entries):
        """Record outer folds' results (see :attr:`outer_results`)."""
        self.set_meta(outer=sorted(self.outer_results + list(entries),
                                   key=lambda e: (e["repeat"], e["outer"])))

    def between_waves(self, configs, wave):
        """:meth:`blocks` and :meth:`sample_table` of ``configs`` as a dropping test reads
        them after wave ``wave``: no task writes then, so the chunks of waves 0..``wave``
        (done and recorded) are checked against their tasks' checksums, as a finished
        study's are (a later wave's may hold a killed run's write its ledger never
        recorded); one checksum read per run (its session)."""
        if self._wave_session is None:
            self._wave_session = uuid.uuid4().hex[:16]
        blocks, _ = self.blocks(configs)
        table = self.sample_table(configs)
        for reader in [table.reader] + [b.reader for b in blocks]:
            reader.checked, reader.check_folds, reader.session = True, wave, self._wave_session
        return blocks, table

    def set_meta(self, **kw):
        self._guard()
        self.meta.update(to_json(kw))
        self.meta[ATTRS_DIGEST] = attributes_digest(self.meta)
        with writing(self.path):
            self.group.attrs["bbc_dask"] = self.meta
