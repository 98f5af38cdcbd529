"""The fold-aligned layout of predictions (schema 3) and its readers (the tasks' chunk
writer is :mod:`._direct`'s).

Why this layout: a CVT task fits a block of configurations on the training samples of one
(repeat, fold) and predicts that fold's test samples. Stored in sample order, its output
would be scattered over every sample chunk of its configurations, and the K folds of a
block would all rewrite the same chunks (K× write amplification, or read-modify-write).
Instead each repeat's samples are ordered by fold (the permutation is stored as
``slot_sample``) and every fold is padded to the largest fold, so::

    prediction  [repeat, fold, slot, config(, class)]  chunks (1, 1, s, w(, n_classes))

holds one task's output (``w`` configurations, the task's block) in chunks of its own:
no chunk is shared by two tasks, every write covers its chunks whole (Zarr writes them
without reading them first) and is idempotent (a task's predictions are deterministic), so
a chunk rewritten on resume gets the same bytes. Padding costs at most one slot per fold
(stratified folds differ in size by at most one sample per class).

Along slots a fold is cut into chunks of ``s`` slots, the store's target to twice it each
(:func:`slot_chunk`; one chunk, ``s = L``, while the whole fold fits; the target is the
store location's: ``bbc_dask.slot-chunk-bytes`` on disk,
``bbc_dask.slot-chunk-bytes-remote`` in an object store): a read of some samples decodes the
chunks holding their slots, not the whole fold, so what a reader of a sample range holds
does not grow with N. (Zarr's sharding would keep one file per task, but zarr-python reads a
shard before writing it even whole — a damaged shard could then not be rewritten — and
decoded a fold 3–4× slower, measured.) Stores written before hold one chunk per fold
(``s = L``); every reader takes ``s`` from the array.

Readers give the user's view — ``[sample, config, repeat(, class)]`` in sample order —
from these chunks: :class:`PredictionReader` in memory for a set of configurations,
:class:`CubeBlock` for one chunked task, :class:`SampleOrderView` behind the lazy
xarray cube (``dask.array.from_array``, one Dask chunk per stored configuration block).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading

import numpy as np

from .. import _tuning as tuning
from ..exceptions import StoreDamagedError
from ._direct import DirectChunks, chunk_crc

__all__ = ["ATTRS_DIGEST", "CubeBlock", "PredictionReader", "SampleOrderView",
           "SampleTable", "attributes_digest", "chunk_crc", "chunk_file", "decoded_rows", "digest", "prediction_chunks", "slot_chunk",
           "slot_layout", "to_json", "unreadable_chunk"]


def slot_layout(folds, n_splits):
    """``slot_sample`` (R, K, L) int64 of fold ids ``folds`` (N, R): the samples of fold k
    of repeat r in increasing order, then -1 (padding to L, the largest fold). A sample
    whose id is -1 in a repeat is in no test set of it (nested CV's inner partitions leave
    out the outer test set) and has no slot there."""
    folds = np.asarray(folds)
    n, n_rep = folds.shape
    sizes = np.stack([np.bincount(folds[:, r][folds[:, r] >= 0], minlength=n_splits)
                      for r in range(n_rep)])
    width = int(sizes.max())
    out = np.full((n_rep, n_splits, width), -1, dtype=np.int64)
    for r in range(n_rep):
        order = np.argsort(folds[:, r], kind="stable")  # by fold, then by sample
        start = int((folds[:, r] < 0).sum())  # the left-out samples sort first
        for k in range(n_splits):
            out[r, k, : sizes[r, k]] = order[start : start + sizes[r, k]]
            start += sizes[r, k]
    return out


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return repr(o)


def to_json(obj):
    """``obj`` as JSON gives it back (numpy scalars and arrays as Python values)."""
    return json.loads(json.dumps(obj, default=_json_default))


#: The key of the study attributes that holds their own digest.
ATTRS_DIGEST = "attributes_digest"


def attributes_digest(meta):
    """SHA-256 of the study attributes ``meta`` (JSON as stored) but their digest: every
    attribute write records it, so that an attribute edited behind the study's back (a
    configuration's parameter, the metric, a dropping decision) is refused, not read."""
    body = {k: v for k, v in meta.items() if k != ATTRS_DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def digest(a):
    """SHA-256 of an array's values (dtype and shape included)."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    if a.dtype.kind in "OUS":
        h.update(json.dumps([str(v) for v in a.ravel()]).encode())
    else:
        h.update(a.tobytes())
    return h.hexdigest()


def slot_chunk(n_slots, row_bytes, target=None):
    """Slots per stored chunk of a fold of ``n_slots`` slots whose slot takes ``row_bytes``
    (a block's configurations and classes, float64): the whole fold while it fits in
    ``target`` bytes (the store location's ``slot_chunk_bytes``; None:
    ``bbc_dask.slot-chunk-bytes``) or ``bbc_dask.slot-chunk-min`` slots, whichever holds
    more, else equal chunks of at least that and less than twice it."""
    n_slots = max(1, int(n_slots))
    target = tuning.SLOT_CHUNK_BYTES if target is None else target
    per = max(tuning.SLOT_CHUNK_MIN, target // max(1, int(row_bytes)))
    m = max(1, n_slots // per)
    return -(-n_slots // m)


#: Slot layouts a worker has loaded, by digest: (slot_sample, sample -> flat slot).
_LAYOUTS = {}
_LAYOUTS_KEPT = 4
_LAYOUTS_LOCK = threading.Lock()
#: Blocks this process checked against their CRC-32 (forgotten past ``_VERIFIED_KEPT``),
#: and the ledger's checksums, per reader session (``PredictionReader._checksums``).
_VERIFIED, _CRCS, _VERIFIED_KEPT = set(), {}, 1_000_000


def _keep_layout(key, layout):
    with _LAYOUTS_LOCK:
        while len(_LAYOUTS) >= _LAYOUTS_KEPT:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
        _LAYOUTS[key] = layout


def _where(slot_sample):
    """Per repeat, the flat (fold * L + slot) position of every sample; K * L (one past
    the last slot, where a reader keeps a NaN row) for a sample in no fold of a repeat."""
    n = int(slot_sample.max()) + 1
    out = np.full((slot_sample.shape[0], n), slot_sample.shape[1] * slot_sample.shape[2],
                  dtype=np.int64)
    for r in range(slot_sample.shape[0]):
        flat = slot_sample[r].ravel()
        pos = np.flatnonzero(flat >= 0)
        out[r, flat[pos]] = pos
    return out


class PredictionReader:
    """Predictions in sample order from the fold-aligned array (picklable: tasks use it).

    Parameters
    ----------
    array : zarr.Array
        ``prediction`` [repeat, fold, slot, config(, class)].
    slot_sample : ndarray (R, K, L)
    """

    def __init__(self, array, slot_sample, url="", key=None, checked=False):
        self.array, self.url, self.key = array, url, key
        #: whether reads check each whole block against the ledger's CRC-32 (a study with
        #: no pending cell: no task writes its chunks any more, so a mismatch is damage)
        self.checked = checked
        #: with ``checked``, the last fold whose blocks are checked (None: all): between
        #: BBCD's waves only the waves done are stable
        self.check_folds = None
        #: this reader's own: blocks are checked once per process and reader (an
        #: estimate), so damage done between two estimates is found by the second
        self.session = os.urandom(8).hex()
        self._crc = None
        layout = None
        if key:  # the layout of this digest, computed once per process (a run makes one
            with _LAYOUTS_LOCK:  # reader per pooled block: ~3 ms each at N = 200,000)
                layout = _LAYOUTS.get(key)
        if layout is None:
            slot_sample = np.asarray(slot_sample)
            layout = (slot_sample, _where(slot_sample))
            if key and digest(slot_sample) == key:  # only a layout that is the digest's
                _keep_layout(key, layout)
        self._set_layout(*layout)

    def _set_layout(self, slot_sample, where):
        self.slot_sample = slot_sample
        self._fold_n = (slot_sample >= 0).sum(axis=2)
        self.n_samples = where.shape[1]
        # a repeat leaves some samples out (nested CV): rows read for them are NaN
        self._partial = bool((self._fold_n.sum(axis=1) < self.n_samples).any())
        # per repeat: flat (fold*L + slot) positions of the samples, indexed by sample
        self._where = where

    def __getstate__(self):
        # With a key (the layout's digest) the layout is not shipped with every task: a
        # worker reads it from the store once (2 x 8 bytes per sample and repeat otherwise,
        # per task: 3.2 MB at N = 200,000)
        return {"array": self.array, "url": self.url, "key": self.key,
                "slot_sample": None if self.key else self.slot_sample,
                "checked": self.checked, "session": self.session,
                "check_folds": self.check_folds}

    def __setstate__(self, state):
        self.array, self.url, self.key = state["array"], state["url"], state["key"]
        self.checked, self._crc = state.get("checked", False), None
        self.session = state.get("session", "")
        self.check_folds = state.get("check_folds")
        if state["slot_sample"] is not None:
            slots = state["slot_sample"]
            self._set_layout(slots, _where(slots))
            return
        with _LAYOUTS_LOCK:
            layout = _LAYOUTS.get(self.key)
        if layout is None:
            import posixpath

            import zarr

            from ..exceptions import StoreDamagedError

            path = posixpath.join(posixpath.dirname(self.array.path), "slot_sample")
            slots = zarr.open_array(self.array.store, path=path, mode="r")[...]
            if digest(slots) != self.key:
                raise StoreDamagedError(
                    f"The store {self.url!r} is damaged: its array 'slot_sample' differs from "
                    f"the one the study was created with (digest mismatch).")
            layout = (slots, _where(slots))
            _keep_layout(self.key, layout)
        self._set_layout(*layout)

    @property
    def shape(self):
        """The user's view: (N, C, R(, n_classes))."""
        s = self.array.shape
        return (self.n_samples, s[3], s[0]) + tuple(s[4:])

    def read(self, configs, repeats=None, rows=None):
        """``(N, len(configs), len(repeats)(, n_classes))`` float64 in sample order, NaN
        where nothing is stored; ``configs`` a slice or sorted indices. With ``rows =
        (lo, hi)``, samples ``lo:hi`` alone (``hi - lo`` rows)."""
        repeats = range(self.array.shape[0]) if repeats is None else repeats
        if not isinstance(configs, slice):
            configs = np.asarray(configs, dtype=np.int64)
            if configs.size and configs[-1] - configs[0] == configs.size - 1:
                # consecutive (a stored block): a slice read, without Zarr's orthogonal
                # indexing of every chunk (np.ix_ and a gather per chunk)
                configs = slice(int(configs[0]), int(configs[-1]) + 1)
        n_folds, n_slots = self.array.shape[1], self.array.shape[2]
        width = len(range(*configs.indices(self.array.shape[3]))) if isinstance(configs, slice) \
            else configs.size
        tail = tuple(self.array.shape[4:])
        if rows is not None:
            return self._read_rows(configs, repeats, int(rows[0]), int(rows[1]), width, tail)
        out = np.empty((self.n_samples, width, len(repeats)) + tail)
        flat = np.empty((n_folds * n_slots + 1, width) + tail)
        flat[-1] = np.nan  # the row of a sample in no fold of the repeat
        wide = self._covering(configs) if self.checked else None
        for i, r in enumerate(repeats):
            # one fold's chunk at a time: Zarr would decode every fold's chunk at once
            for k in range(n_folds):
                if wide is None:
                    if self.checked:  # sparse: the blocks touched, each read whole once
                        self._verify_once(r, k, np.unique(
                            np.arange(self.array.shape[3])[configs] // self.array.chunks[3]))
                    flat[k * n_slots:(k + 1) * n_slots] = self._fetch(r, k, slice(None), configs)
                    continue
                cover, take = wide  # whole blocks, each checked against its CRC-32
                got = self._fetch(r, k, slice(None), cover)
                self._check_blocks(r, k, cover.start, got)
                flat[k * n_slots:(k + 1) * n_slots] = got if take is None else got[:, take]
            # np.take, not fancy indexing: the same gather, ~2.8x faster on rows of a
            # few floats (5.6 vs 2.0 ms for 200,000 x 10)
            out[:, :, i] = np.take(flat, self._where[r], axis=0)
        return out

    def _covering(self, configs):
        """``(slice of whole blocks covering configs, their columns in it)``, or None when
        the covering blocks would more than double the read (sparse configurations: their
        blocks are not checked)."""
        w, n = self.array.chunks[3], self.array.shape[3]
        cfg = np.arange(n)[configs] if isinstance(configs, slice) else configs
        if cfg.size == 0:
            return None
        lo, hi = int(cfg[0]) // w * w, min(n, -(-(int(cfg[-1]) + 1) // w) * w)
        if hi - lo > 2 * cfg.size + w:
            return None
        whole = cfg.size == hi - lo  # sorted and distinct: exactly the covering blocks
        return slice(lo, hi), None if whole else cfg - lo

    def _check_blocks(self, r, k, lo, values):
        """Each whole block of ``values`` (configurations from ``lo``, a block start) equal
        to the CRC-32 its task recorded in the ledger, else StoreDamagedError naming it."""
        if self.check_folds is not None and k > self.check_folds:
            return
        w = self.array.chunks[3]
        crc = self._checksums()
        for b in range(0, values.shape[1], w):
            j = (lo + b) // w
            want = crc[r, k, j]
            if want >= 0 and chunk_crc(values[:, b:b + w]) != want:
                names = [chunk_file(self.array, c) for c in prediction_chunks(self.array, r, k, j)]
                raise StoreDamagedError(
                    f"The store {self.url!r} is damaged: {names[0]}"
                    f"{f' (or another of its {len(names)} chunks along slots)' if len(names) > 1 else ''}"
                    f" differs from what its task wrote (checksum mismatch); 'bbc-dask verify "
                    f"--repair' marks its cells pending for a resume.")

    def _checksums(self):
        """The ledger's CRC-32 of every block, ``chunk_crc`` (R, K, blocks), read once per
        process and reader session (each task unpickles its own copy of the reader)."""
        if self._crc is None:
            with _LAYOUTS_LOCK:  # a run's dropping tests share a session, wave by wave
                self._crc = _CRCS.get((self.session, self.check_folds))
        if self._crc is None:
            import posixpath

            import zarr

            path = posixpath.join(posixpath.dirname(self.array.path), "chunk_crc")
            try:
                self._crc = zarr.open_array(self.array.store, path=path, mode="r")[...]
            except Exception as exc:  # noqa: BLE001
                from ..exceptions import StoreDamagedError

                raise StoreDamagedError(
                    f"The store {self.url!r} is damaged: its array 'chunk_crc' cannot be read "
                    f"({type(exc).__name__}); 'bbc-dask verify' names the file.") from None
            with _LAYOUTS_LOCK:
                while len(_CRCS) >= _LAYOUTS_KEPT:
                    _CRCS.pop(next(iter(_CRCS)))
                _CRCS[(self.session, self.check_folds)] = self._crc
        return self._crc

    def _read_rows(self, configs, repeats, lo, hi, width, tail):
        """:meth:`read` of samples ``lo:hi``: within a fold the slots hold its samples in
        increasing order, so those of ``lo:hi`` are one run of slots per fold. Zarr decodes
        each stored chunk holding some of them whole (along slots a chunk holds a whole
        fold in stores of one chunk per fold), so they are read a few configuration chunks
        at a time — up to ``bbc_dask.read-bytes`` decoded beside the output, or one column of
        chunks (a call per chunk would cost Zarr's overhead per chunk: docs/performance.md,
        "Tuning constants")."""
        shape = (hi - lo, width, len(repeats)) + tail
        out = np.full(shape, np.nan) if self._partial else np.empty(shape)
        cfg = np.arange(self.array.shape[3])[configs] if isinstance(configs, slice) else configs
        if cfg.size == 0 or hi <= lo:
            return out
        runs = []  # per (repeat, fold): its run of slots
        for i, r in enumerate(repeats):
            for k in range(self.array.shape[1]):
                slots = self.slot_sample[r, k, : self._fold_n[r, k]]  # -1 pads the fold's end
                s0, s1 = (int(v) for v in np.searchsorted(slots, [lo, hi]))
                if s1 > s0:
                    runs.append((i, r, k, s0, s1, slots[s0:s1] - lo))
        if not runs:
            return out
        w = self.array.chunks[3]
        longest = max(s1 - s0 for _, _, _, s0, s1, _ in runs)
        per_chunk = decoded_rows(self.array, longest) * int(np.prod(self.array.chunks[3:])) \
            * self.array.dtype.itemsize
        stored = cfg // (w * max(1, tuning.READ_BYTES // per_chunk))
        windows = np.split(np.arange(cfg.size), np.flatnonzero(np.diff(stored)) + 1)
        for i, r, k, s0, s1, at in runs:
            for win in windows:
                sel = cfg[win]
                if self.checked and self._first_read(r, k, sel, out, at, win, i, s0, s1):
                    continue
                if sel[-1] - sel[0] == sel.size - 1:  # consecutive: a slice read
                    sel = slice(int(sel[0]), int(sel[-1]) + 1)
                out[at, win[0]:win[-1] + 1, i] = self._fetch(r, k, slice(s0, s1), sel)
        return out

    def _first_read(self, r, k, sel, out, at, win, i, s0, s1):
        """A run's read of configurations ``sel`` of (``r``, ``k``) whose blocks this
        process has not checked for this reader: read whole — Zarr decodes the whole
        chunks for a run anyway — checked against their CRC-32, and the run taken from
        them. Returns whether it did (False: the blocks are known good, or sparse)."""
        if self.check_folds is not None and k > self.check_folds:
            return False
        w = self.array.chunks[3]
        blocks = np.unique(sel // w)
        with _LAYOUTS_LOCK:  # claimed by one thread: the others read the run as usual
            todo = [(self.session, r, k, int(j)) for j in blocks
                    if (self.session, r, k, int(j)) not in _VERIFIED]
            if len(_VERIFIED) + len(todo) > _VERIFIED_KEPT:
                _VERIFIED.clear()
            _VERIFIED.update(todo)
        if not todo:
            return False
        wide = self._covering(sel)
        if wide is None:  # sparse: the blocks alone, each read whole once
            self._verify_once(r, k, np.array([t[3] for t in todo]), claimed=True)
            return False
        cover, take = wide
        got = self._fetch(r, k, slice(None), cover)
        self._check_blocks(r, k, cover.start, got)
        out[at, win[0]:win[-1] + 1, i] = got[s0:s1] if take is None else got[s0:s1][:, take]
        return True

    def _verify_once(self, r, k, blocks, claimed=False):
        """Check the blocks ``blocks`` of (repeat ``r``, fold ``k``), each read whole, once
        per process and reader session (an estimate; the next checks again), unless
        ``claimed`` (by :meth:`_first_read`) they are checked already."""
        if self.check_folds is not None and k > self.check_folds:
            return
        crc = self._checksums()
        n, w = self.array.shape[3], self.array.chunks[3]
        todo = [j for j in blocks.tolist() if crc[r, k, j] >= 0 and (
            claimed or (self.session, r, k, j) not in _VERIFIED)]
        if not todo:
            return
        # one read per run of consecutive blocks (a call per block costs Zarr's overhead)
        todo = np.asarray(todo)
        for run in np.split(todo, np.flatnonzero(np.diff(todo) > 1) + 1):
            lo, hi = int(run[0]) * w, min((int(run[-1]) + 1) * w, n)
            self._check_blocks(r, k, lo, self._fetch(r, k, slice(None), slice(lo, hi)))
        with _LAYOUTS_LOCK:
            if len(_VERIFIED) >= _VERIFIED_KEPT:
                _VERIFIED.clear()
            _VERIFIED.update((self.session, r, k, int(j)) for j in todo)

    def _fetch(self, r, k, slots, configs):
        """``prediction[r, k, slots, configs]`` (``configs`` a slice or sorted indices);
        a chunk that cannot be read is reported as damage, naming its file."""
        try:
            if isinstance(configs, slice) and (slots.step or 1) == 1 and (configs.step or 1) == 1:
                direct = self._direct()
                if direct is not None:  # a local directory: read from this thread
                    tail = (slice(None),) * (self.array.ndim - 4)
                    return direct.read((slice(r, r + 1), slice(k, k + 1), slots, configs)
                                       + tail)[0, 0]
                return self.array[r, k, slots, configs]
            return self.array.oindex[r, k, slots, configs]
        except (MemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise self._damaged(r, configs, exc, k) from None

    def _direct(self):
        """The array's :class:`~._direct.DirectChunks` (None: read through Zarr), made
        once per reader and process."""
        if not hasattr(self, "_chunks"):
            self._chunks = DirectChunks.of(self.array)
        return self._chunks

    def _damaged(self, r, configs, exc, first=0):
        """The error of an unreadable read, naming the first chunk file that fails (the
        read's own fold ``first`` probed first)."""
        w = self.array.chunks[3]
        cfg = np.arange(self.array.shape[3])[configs] if isinstance(configs, slice) else configs
        name = "prediction"
        for j in np.unique(np.asarray(cfg, dtype=np.int64) // w):
            folds = [first] + [k for k in range(self.array.shape[1]) if k != first]
            bad = next(filter(None, (unreadable_chunk(self.array, r, k, int(j)) for k in folds)), None)
            if bad is not None:
                name, exc = bad
                break
        return StoreDamagedError(
            f"The store {self.url!r} is damaged: {name} cannot be read ({type(exc).__name__}: "
            f"{exc}); 'bbc-dask verify --repair' marks its cells pending for a resume.")


class CubeBlock:
    """A block of configurations of a study cube, read on a worker in sample order:
    ``read()`` gives (N, c, R(, n_classes)) as the chunked bootstraps expect — or, with
    ``rows = (lo, hi)``, samples ``lo:hi`` alone."""

    __slots__ = ("configs", "reader", "rows")

    def __init__(self, reader, configs, rows=None):
        self.reader = reader
        self.configs = configs if isinstance(configs, slice) else np.asarray(configs, dtype=np.int64)
        self.rows = None if rows is None else (int(rows[0]), int(rows[1]))

    def __getstate__(self):
        return self.reader, self.configs, self.rows

    def __setstate__(self, state):
        self.reader, self.configs, self.rows = state

    def read(self):
        return self.reader.read(self.configs, rows=self.rows)


class SampleTable:
    """The complete configurations ``configs`` (sorted) of a study cube as the chunked
    bootstraps' sample-block source: :meth:`part` reads samples ``lo:hi`` of some of
    them. Reading any samples of a configuration decodes the stored chunks holding their
    slots whole — in a store of one chunk per fold, whole folds — so the tasks read runs
    of samples at once (:attr:`fold_fraction`)."""

    def __init__(self, reader, configs, chunk_width, fold_fraction=1.0):
        self.reader = reader
        self.configs = np.asarray(configs, dtype=np.int64)
        self.chunk_width = int(chunk_width)
        # the part of a fold one stored chunk holds along slots (1: whole folds)
        self.fold_fraction = float(fold_fraction)
        s = reader.shape
        self.shape = (s[0], self.configs.size) + tuple(s[2:])
        self.dims = ("sample", "config", "repeat") + (("class",) if len(s) > 3 else ())

    def part(self, positions, lo, hi):
        """A :class:`CubeBlock` of samples ``lo:hi`` of the configurations at
        ``positions`` (a slice or sorted positions in :attr:`configs`)."""
        return CubeBlock(self.reader, self.configs[positions], rows=(lo, hi))


class SampleOrderView:
    """An array-like of the user's view for ``dask.array.from_array``: indexing with
    slices reads the stored chunks of those configurations and repeats only."""

    def __init__(self, reader):
        self.reader = reader
        self.shape = reader.shape
        self.ndim = len(self.shape)
        self.dtype = np.dtype("float64")

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        key = key + (slice(None),) * (self.ndim - len(key))
        if not all(isinstance(k, slice) for k in key):
            raise IndexError("SampleOrderView takes slices only")
        n_rep = self.shape[2]
        repeats = range(*key[2].indices(n_rep))
        out = self.reader.read(key[1], repeats=repeats)
        return out[(key[0], slice(None), slice(None)) + tuple(key[3:])]


def chunk_file(array, coords):
    """The store-relative file name of ``array``'s chunk at chunk coordinates ``coords``."""
    return f"{array.path}/{array.metadata.encode_chunk_key(tuple(coords))}"


def prediction_chunks(array, r, k, j):
    """Chunk coordinates of the prediction chunks of repeat r, fold k, block j: one per
    run of slots (see :func:`slot_chunk`)."""
    n_along = -(-array.shape[2] // array.chunks[2])
    return [(r, k, s, j) + (0,) * (array.ndim - 4) for s in range(n_along)]


def decoded_rows(array, n_rows):
    """Slots Zarr decodes, at most, to read a run of ``n_rows`` consecutive slots of one
    fold: the chunks along slots holding them."""
    s = array.chunks[2]
    return min(-(-array.shape[2] // s), -(-max(1, n_rows) // s) + 1) * s


def unreadable_chunk(array, r, k, j):
    """``(file, error)`` of the first chunk of block j, repeat r, fold k that cannot be
    read, else None."""
    for coords in prediction_chunks(array, r, k, j):
        try:
            array.get_block_selection(coords)
        except (MemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 — reported by the caller
            return chunk_file(array, coords), exc
    return None
