"""Checksums of the ledger the estimates read: ``state``, ``fit_time``, ``fold_score``,
``pooled``, ``fit_score`` and ``error``, one CRC-32 per ledger chunk (the configurations
of one ledger chunk, of one repeat), kept in the store's ``ledger_crc`` array as each
ledger batch is written — so an unfinished study is covered too.

A value edited behind the study's back (a winner's fold score set to 0.99) changes BBC-F
and the selection with no error anywhere. With the checksums, the first whole read of each
array by an estimate compares them (:func:`check_read`), :func:`~._verify.verify` names
the chunk, and a run compares every chunk before it writes any ledger batch
(:func:`settle`): a rerun can never record an edit as the study's own.

Each ledger write is a :class:`LedgerEdit`: it loads the chunks it changes, computes
their new checksums, records them as *pending* beside the committed ones, writes the
chunks (whole: Zarr need not read them back), then commits the new checksums. A kill at
any instant leaves each chunk either as it was (its committed checksum) or as written (its
pending one), both accepted, so a killed run's store never looks damaged; the next run
commits what it finds.

``ledger_crc`` is (ledger chunk, repeat, array, slot) int64: slot 0 the committed CRC,
slot 1 the pending one, -1 none; ``error`` (no repeat axis) is kept at repeat 0, and
``fit_score`` only in a study that scores fitted models. A store made before the array
existed kept its checksums in the study attributes, recorded at the end of a run
(``meta["ledger_crc"]`` a dict): it is checked against those, then given the array.
"""
from __future__ import annotations

import dataclasses
import zlib
from collections import OrderedDict

import numpy as np

from ..exceptions import StoreDamagedError

__all__ = ["CHECKED", "CRC_ARRAY", "IN_ARRAY", "LedgerEdit", "LedgerRows", "check_read", "create_crc_array",
           "current", "mismatches", "record_batch", "recorded", "region_crc", "settle",
           "template_table", "unrecorded"]

#: The ledger arrays with checksums, in the order of ``ledger_crc``'s array axis.
CHECKED = ("state", "fit_time", "fold_score", "pooled", "fit_score", "error")
CRC_ARRAY = "ledger_crc"
#: ``meta["ledger_crc"]`` of a store whose checksums are in the array.
IN_ARRAY = "array"
#: Ledger chunks per chunk of ``ledger_crc``: a batch rewrites a few kB of it.
CRC_ROWS = 64
_NONE = -1


def region_crc(values):
    """CRC-32 of one ledger chunk's values (C order; strings as UTF-8 joined by a unit
    separator)."""
    values = np.asarray(values)
    if values.dtype.kind in "OUT":
        data = "\x1f".join("" if v is None else str(v) for v in values.ravel()).encode()
        return zlib.crc32(data)
    return zlib.crc32(memoryview(np.ascontiguousarray(values)).cast("B"))


def _step(cube):
    return cube._array("state").chunks[0]


def _names(cube):
    return [n for n in CHECKED if n != "fit_score" or cube.fit_scorer_labels()]


def _per_repeat(name):
    return name != "error"


def _selection(cube, name, i, r):
    n = cube._array("state").shape[0]
    step = _step(cube)
    c0, c1 = i * step, min((i + 1) * step, n)
    return (slice(c0, c1), r) if _per_repeat(name) else (slice(c0, c1),)


def _shape(cube):
    n_cfg, n_rep, _ = cube._array("state").shape
    return -(-n_cfg // _step(cube)), n_rep, len(CHECKED)


def _regions(cube, name):
    n_lc, n_rep, _ = _shape(cube)
    for i in range(n_lc):
        for r in range(n_rep if _per_repeat(name) else 1):
            yield i, r


def in_array(cube):
    return cube.meta.get("ledger_crc") == IN_ARRAY


def recorded(cube):
    """The recorded checksums (n_lc, R, A, 2), or None where the study records none (a
    store from before checksums, or an older one whose run had not ended)."""
    if in_array(cube):
        return np.asarray(cube._array(CRC_ARRAY)[...], dtype=np.int64)
    old = cube.meta.get("ledger_crc")
    if not isinstance(old, dict) or not old:
        return None
    table = np.full(_shape(cube) + (2,), _NONE, dtype=np.int64)
    for name, rows in old.items():
        if name in CHECKED:
            for i, per_r in enumerate(rows):
                for r, crc in enumerate(per_r):
                    if i < table.shape[0] and r < table.shape[1]:
                        table[i, r, CHECKED.index(name), 0] = crc
    return table


def _accepted(table, i, r, a, crc):
    committed, pending = (int(v) for v in table[i, r, a])
    if committed == _NONE and pending == _NONE:
        return None  # nothing recorded to compare with
    return bool(crc == committed or (pending != _NONE and crc == pending))


def mismatches(cube, name, values, table=None):
    """``[(ledger chunk i, repeat r)]`` where ``values`` (the whole array ``name``) differ
    from the recorded checksums; [] when none are recorded. In a store with the array, a
    chunk with no checksum recorded is a mismatch too (its row of ``ledger_crc`` lost)."""
    table = recorded(cube) if table is None else table
    if table is None:
        return []
    a = CHECKED.index(name)
    out = []
    for i, r in _regions(cube, name):
        sel = _selection(cube, name, i, r)
        ok = _accepted(table, i, r, a, region_crc(values[sel]))
        if ok is False or (ok is None and in_array(cube)):
            out.append((i, r))
    return out


def _damaged(cube, name, i, r, how="differs from what the study recorded (checksum mismatch)"):
    from ._layout import chunk_file

    arr = cube._array(name)
    coords = (i, r) + (0,) * (arr.ndim - 2) if _per_repeat(name) else (i,)
    return StoreDamagedError(
        f"The store {cube.path!r} is damaged: {chunk_file(arr, coords)} {how}; "
        f"'bbc-dask verify --repair' repairs it.")


def check_read(cube, name, values):
    """Refuse, naming the chunk file, a whole-array read of a ledger array that differs
    from its recorded checksums. A reader beside a running study may see a chunk newer
    than the checksums it read: a mismatch is read again once before it is damage."""
    bad = mismatches(cube, name, values)
    if bad:
        bad = mismatches(cube, name, cube._array(name)[...])
    if bad:
        raise _damaged(cube, name, *bad[0])


def create_crc_array(group, n_configs, n_repeats, ledger):
    """The ``ledger_crc`` array of a new store (every entry -1)."""
    from ._attrs import variable_attrs

    n_lc = -(-n_configs // ledger)
    return group.create_array(
        CRC_ARRAY, shape=(n_lc, n_repeats, len(CHECKED), 2),
        chunks=(min(n_lc, CRC_ROWS), n_repeats, len(CHECKED), 2), dtype="int64",
        fill_value=_NONE, dimension_names=["ledger_chunk", "repeat", "ledger_array", "crc_slot"],
        attributes=variable_attrs(CRC_ARRAY, None))


def current(cube):
    """The checksums (n_lc, R, A) of the ledger as stored now (-1 where an array has no
    such chunk: ``error`` beyond repeat 0, ``fit_score`` in a study without)."""
    out = np.full(_shape(cube), _NONE, dtype=np.int64)
    for name in _names(cube):
        values = cube._array(name)[...]
        a = CHECKED.index(name)
        for i, r in _regions(cube, name):
            out[i, r, a] = region_crc(values[_selection(cube, name, i, r)])
    return out


def unrecorded(cube, table, i, r, name, values, bad, exists):
    """Whether the chunk ``(i, r)`` of ``name`` (its ``values``) has no checksum where the
    store keeps them in ``ledger_crc`` (that array's chunk is lost); appends
    ``(array, chunk coordinates, problem)`` to ``bad`` for that and for a mismatch (a
    missing chunk file named as missing: ``exists(cube, file)``), for
    :func:`~._verify.verify`."""
    from ._layout import chunk_file

    ok = _accepted(table, i, r, CHECKED.index(name), region_crc(values))
    if ok is None:
        if not in_array(cube):
            return False  # a store from before checksums, or its run unfinished
        crc = cube.group[CRC_ARRAY]
        bad.append((CRC_ARRAY, (i // crc.chunks[0], 0, 0, 0), "has no checksum of "
                    f"{name} for configurations from {i * cube.group['state'].chunks[0]} (lost)"))
        return True
    if ok:
        return False
    coords = (i, r) + (0,) * (cube.group[name].ndim - 2) if name != "error" else (i,)
    bad.append((name, coords, "differs from what the study recorded (checksum mismatch)"
                if exists(cube, chunk_file(cube.group[name], coords)) else "is missing"))
    return False


class _Template:
    """The ledger of a store being created, read as a cube's (its attributes, which a
    cube reads, are written last)."""

    def __init__(self, group, fit_scorers):
        self.group, self.labels = group, tuple(fit_scorers)

    def _array(self, name):
        return self.group[name]

    def fit_scorer_labels(self):
        return self.labels


def template_table(group, fit_scorers):
    """The ``ledger_crc`` of a new store's template ledger (all committed), from the
    template's values (``state`` 0, the scores NaN, no error text) without reading them
    back: a run's first check (:func:`settle`) compares them with what the store reads."""
    view = _Template(group, fit_scorers)
    n_cfg, _, n_spl = group["state"].shape
    step = group["state"].chunks[0]
    out = np.full(_shape(view), _NONE, dtype=np.int64)
    for name in _names(view):
        a = CHECKED.index(name)
        tail = group[name].shape[2:] if _per_repeat(name) and name != "pooled" else ()
        for i, r in _regions(view, name):
            rows = min(step, n_cfg - i * step)
            if name == "state":
                values = np.zeros((rows, n_spl), dtype=np.int8)
            elif name == "error":
                values = np.full(rows, "", dtype=object)
            else:
                values = np.full((rows,) + tail, np.nan)
            out[i, r, a] = region_crc(values)
    return np.stack([out, np.full_like(out, _NONE)], axis=-1)


def settle(cube):
    """At a run's start, under the lock and before it writes any ledger batch: every
    ledger chunk compared with its recorded checksum (a mismatch raises the damage error
    naming the chunk), then the pending checksums a killed run left committed. A store
    from before the array gets it, its values checked against the attributes' checksums
    where a finished run recorded them (those of an unfinished older run could not be)."""
    from ._attrs import consolidate
    from ._location import writing

    now = current(cube)
    table = recorded(cube)
    if table is not None:
        for name in _names(cube):
            a = CHECKED.index(name)
            for i, r in _regions(cube, name):
                ok = _accepted(table, i, r, a, now[i, r, a])
                if ok is False or (ok is None and in_array(cube)):
                    raise _damaged(cube, name, i, r, "differs from what the study recorded "
                                   "(checksum mismatch)" if ok is False else
                                   "has no checksum recorded (ledger_crc damaged)")
    want = np.stack([now, np.full_like(now, _NONE)], axis=-1)
    if in_array(cube) and np.array_equal(table, want):
        return
    cube._guard()
    with writing(cube.path):
        if not in_array(cube) and not cube.location.has(f"{CRC_ARRAY}/zarr.json"):  # (a kill after it: reused)
            n_cfg, n_rep, _ = cube._array("state").shape
            create_crc_array(cube.group, n_cfg, n_rep, _step(cube))
            cube.group = consolidate(cube.location.zarr_store())
            cube._arrays = {}
        cube._array(CRC_ARRAY)[...] = want
    cube._written = None  # the table as settled: read again by the first batch
    if not in_array(cube):
        cube.set_meta(ledger_crc=IN_ARRAY)


@dataclasses.dataclass(frozen=True, eq=False)
class LedgerRows:
    """What the ledger records of one block of configurations ``configs`` on (repeat
    ``r``, fold ``k``): per configuration its ``fit_time``, ``failed``, ``errors`` (text,
    "" if none), ``fold_score`` and ``fit_score`` ((configs, scorers), or None), and
    ``crc`` the checksum of the prediction chunk the block was written to."""

    r: int
    k: int
    configs: np.ndarray
    fit_time: np.ndarray
    failed: np.ndarray
    errors: tuple
    fold_score: np.ndarray
    crc: int
    fit_score: np.ndarray | None = None


def record_batch(cube, results):
    """Record a batch of finished tasks (:meth:`~._schema.Cube.record`) as one edit:
    errors, fit times and fold scores first, the prediction chunks' checksums, then
    ``state``, so a cell counts only once all of it is stored."""
    from ._states import DONE, FAILED

    if not results:
        return
    edit = LedgerEdit(cube)
    by_cell = {}
    for res in results:
        by_cell.setdefault((res.r, res.k), []).append(res)
    crcs = []
    for (r, k), group in by_cell.items():
        cfgs = np.concatenate([np.asarray(g.configs, dtype=np.int64) for g in group])

        def col(name, dtype):
            return np.concatenate([np.asarray(getattr(g, name), dtype=dtype) for g in group])

        for g in group:
            for c, text in zip(g.configs, g.errors):
                if text and not edit.chunk("error", int(c) // edit.step)[int(c) % edit.step]:
                    edit.set("error", [int(c)], 0, [text[:4000]])
        edit.set("fit_time", cfgs, r, col("fit_time", np.float64), k)
        edit.set("fold_score", cfgs, r, col("fold_score", np.float64), k)
        if group[0].fit_score is not None:  # (configs, scorers) per task
            edit.set("fit_score", cfgs, r, col("fit_score", np.float64), k)
        blocks = np.array([int(g.configs[0]) // cube.config_chunk for g in group])
        crcs.append((r, k, blocks, [int(g.crc) for g in group]))
        edit.set("state", cfgs, r, np.where(col("failed", bool), FAILED, DONE).astype(np.int8), k)

    def chunk_crcs():  # the prediction chunks' checksums, before the cells count
        for r, k, blocks, values in crcs:
            cube._array("chunk_crc").oindex[r, k, blocks] = values

    edit.commit(before_state=chunk_crcs)


class LedgerEdit:
    """One ledger write (see the module docstring): ``set`` values, then :meth:`commit`.
    Chunks not loaded before (``replace``) are written whole without reading them, as a
    repair writes over a damaged one."""

    def __init__(self, cube):
        self.cube = cube
        self.step = _step(cube)  # configurations per ledger chunk
        self.regions = {}  # (name, i, r) -> the chunk's values, as they will be
        # the chunks and checksums this cube last wrote: the driver is their one writer
        # (under the run lock), so a batch need not read them back (see _Written)
        if getattr(cube, "_written", None) is None:
            cube._written = _Written()
        self.written = cube._written

    def chunk(self, name, i, r=0):
        key = (name, i, r if _per_repeat(name) else 0)
        if key not in self.regions:
            kept = self.written.get(key)
            self.regions[key] = kept if kept is not None else np.array(
                self.cube._array(name)[_selection(self.cube, name, i, key[2])])
        return self.regions[key]

    def replace(self, name, i, r, values):
        self.regions[(name, i, r if _per_repeat(name) else 0)] = values

    def set(self, name, configs, r, values, k=None):
        """``name[configs, r(, k)] = values`` (``error``: ``r`` ignored)."""
        configs = np.asarray(configs, dtype=np.int64)
        values = np.asarray(values, dtype=object if name == "error" else None)
        step = self.step
        for i in np.unique(configs // step).tolist():
            at = np.flatnonzero(configs // step == i)
            chunk = self.chunk(name, i, r)
            rows = configs[at] - i * step
            if k is None:
                chunk[rows] = values[at]
            else:
                chunk[rows, k] = values[at]

    def commit(self, before_state=None):
        """Write the chunks, ``state`` last (a cell counts only once all of it is
        stored); ``before_state()`` runs before the ``state`` chunks are written."""
        if not self.regions:
            if before_state is not None:
                before_state()
            return
        cube = self.cube
        cube._guard()
        tracked = in_array(cube)
        crc = cube._array(CRC_ARRAY) if tracked else None
        try:
            self._write(cube, tracked, crc, before_state)
        except BaseException:
            self.written.clear()  # the store may now differ from what was kept
            raise
        for key, values in self.regions.items():
            self.written.put(key, values)

    def _write(self, cube, tracked, crc, before_state):
        from ._location import writing

        with writing(cube.path):
            if tracked:
                if self.written.table is None:
                    self.written.table = np.asarray(crc[...], dtype=np.int64)
                rows = sorted({i for _, i, _ in self.regions})
                lo, hi = rows[0] // CRC_ROWS * CRC_ROWS, min((rows[-1] // CRC_ROWS + 1) * CRC_ROWS, crc.shape[0])
                table = self.written.table[lo:hi]  # a view: the kept table is updated
                for (name, i, r), values in self.regions.items():
                    table[i - lo, r, CHECKED.index(name), 1] = region_crc(values)
                crc[lo:hi] = table  # pending: the chunks below may be old or new
            order = sorted(self.regions, key=lambda key: key[0] == "state")
            called = False
            for name, i, r in order:
                if name == "state" and not called and before_state is not None:
                    before_state()
                    called = True
                cube._array(name)[_selection(cube, name, i, r)] = self.regions[(name, i, r)]
            if before_state is not None and not called:
                before_state()
            if tracked:
                done = table[..., 1] != _NONE
                table[..., 0] = np.where(done, table[..., 1], table[..., 0])
                table[..., 1] = _NONE
                crc[lo:hi] = table


class _Written:
    """What a cube's own ledger writes left in the store: the chunks (least recently written
    dropped beyond ``bbc_dask.ledger-cache-bytes``) and the checksum table. Cleared when a
    write fails part-way."""

    def __init__(self):
        self.chunks, self.nbytes, self.table = OrderedDict(), 0, None

    def get(self, key):
        values = self.chunks.get(key)
        if values is None:
            return None
        self.chunks.move_to_end(key)
        return values.copy()  # the edit's own: kept as written until it is written

    def put(self, key, values):
        from .. import _tuning as tuning

        old = self.chunks.pop(key, None)
        self.nbytes -= 0 if old is None else old.nbytes
        self.chunks[key] = values
        self.nbytes += values.nbytes
        while self.nbytes > tuning.LEDGER_CACHE_BYTES and len(self.chunks) > 1:
            _, dropped = self.chunks.popitem(last=False)
            self.nbytes -= dropped.nbytes

    def clear(self):
        self.chunks.clear()
        self.nbytes, self.table = 0, None
