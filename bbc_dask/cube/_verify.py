"""Checking a study store against its ledger, and repairing what can be recomputed.

A store can be damaged behind the study's back: files deleted, truncated, swapped or
edited (a full disk, a bad copy, a hand edit). Reads name what they cannot read, but only a
check of every chunk the ledger counts can say that a study is whole. :func:`verify` does
it — every ledger chunk readable, every counted prediction chunk present, readable and
its block equal to the values its task wrote (CRC-32 in ``chunk_crc``; a missing chunk
that held padding alone reads as it was), the data's digests, every array's metadata
equal to its consolidated copy, the final model's file — and :func:`repair` marks what
depends on a damaged chunk pending, so that
the next run of the same study recomputes exactly those cells (task writes are
deterministic: the repaired study equals one never damaged, bit for bit).

The study's identity — ``y``, the folds, the slot layout, the coordinates and the study
attributes — cannot be recomputed from the store; damage there is reported as such.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json

import numpy as np

from .. import _tuning as tuning
from .. import _validation as validation
from ..exceptions import StoreDamagedError
from ._layout import chunk_crc, chunk_file, prediction_chunks, unreadable_chunk
from ._ledger_check import CHECKED, CRC_ARRAY, LedgerEdit, recorded, unrecorded
from ._rebuild import DERIVED, derived_regions, rebuild
from .._doors import door, spelled

__all__ = ["Damage", "VerifyReport", "repair", "verify", "verify_store"]

_IDENTITY = ("y", "fold", "slot_sample", "sample", "config", "repeat", "split")
#: Coordinates that are positions (their values known: a repair rewrites them).
_INDEXES = ("sample", "config", "repeat", "split")
_LEDGER = ("state", "fit_time", "fold_score", "pooled", "chunk_crc", "error", "fit_score")


@dataclasses.dataclass(frozen=True)
class Damage:
    """One damaged part of a store.

    ``kind``: ``"identity"`` (cannot be repaired), ``"metadata"`` (an array's metadata file
    or its consolidated copy, the other one intact: rewritten from it), ``"ledger"`` (a
    ledger chunk: configurations ``configs`` = (start, stop) of repeat ``repeat``),
    ``"error"`` (the error texts of ``configs``), ``"prediction"`` (the chunk of
    ``repeat``, fold ``fold``, block ``block``), ``"model"`` (the final model's file) or
    ``"coordinate"`` (a coordinate of positions, rewritten)."""

    kind: str
    file: str
    problem: str
    repeat: int = -1
    fold: int = -1
    block: int = -1
    configs: tuple = ()
    #: ``"metadata"`` damage: the array and which copy of its metadata a repair rewrites
    #: (``"own"``: its ``zarr.json`` from the consolidated copy; ``"copy"``: the copy)
    array: str = ""
    fix: str = ""

    def __str__(self):
        return f"{self.file}: {self.problem}"


@dataclasses.dataclass
class VerifyReport:
    """What :func:`verify` checked and found."""

    store: str
    chunks_checked: int
    ledger_chunks_checked: int
    damaged: list
    #: Ledger chunks a repair rebuilt from intact data instead of resetting their cells.
    rebuilt: int = 0

    @property
    def ok(self):
        return not self.damaged

    @property
    def repairable(self):
        return all(d.kind != "identity" for d in self.damaged)

    def to_dict(self):
        return {"store": self.store, "ok": self.ok, "repairable": self.repairable,
                "chunks_checked": self.chunks_checked,
                "ledger_chunks_checked": self.ledger_chunks_checked, "rebuilt": self.rebuilt,
                "damaged": [dataclasses.asdict(d) for d in self.damaged]}


def _problem(exc):
    return f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})"


def _exists(cube, name):
    try:
        return cube.location.has(name)
    except Exception:  # noqa: BLE001 — an unreachable store is reported by the read itself
        return True


def _check_identity(cube, skip=()):
    """The study's data arrays readable and equal to their digests (``skip``: arrays
    whose metadata is damaged, named for that)."""
    from ._layout import ATTRS_DIGEST, attributes_digest, digest

    out = []
    stored = cube.meta.get("digests") or {}
    if ATTRS_DIGEST in cube.meta and attributes_digest(cube.meta) != cube.meta[ATTRS_DIGEST]:
        out.append(Damage("identity", "zarr.json", "its study attributes ('bbc_dask') differ "
                          "from what the study wrote (digest mismatch); run the study again "
                          f"with {spelled('overwrite=True')}"))
    labels = cube.fit_scorer_labels()
    names = list(_IDENTITY) + (["class"] if cube.needs_class_axis else []) + (
        ["fit_scorer"] if labels else []) + str(cube.group.attrs.get("coordinates") or "").split()
    for name in (n for n in names if n not in skip):
        index = name in _INDEXES  # 0, 1, 2...: known, so a repair rewrites it
        try:
            values = cube.group[name][...]
        except Exception as exc:  # noqa: BLE001
            out.append(Damage("coordinate", name, _problem(exc)) if index else
                       Damage("identity", name, _problem(exc) + "; the study's data cannot "
                              f"be recomputed: run it again with {spelled('overwrite=True')}"))
            continue
        if index and not np.array_equal(values, np.arange(values.size)):
            out.append(Damage("coordinate", name, "differs from its positions 0, 1, 2, ..."))
        if name == "fit_scorer" and [str(v) for v in values] != list(labels):
            out.append(Damage("identity", name, "differs from the scorers the study records; "
                              f"run the study again with {spelled('overwrite=True')}"))
        if name in stored and digest(values) != stored[name]:
            out.append(Damage("identity", name, "differs from the array the study was created "
                              f"with (digest mismatch); run the study again with {spelled('overwrite=True')}"))
    return out


def _check_metadata(cube):
    """Each array's metadata — its own ``zarr.json`` and its copy in the store's
    consolidated metadata, which the package and xarray read instead — against the
    schema (:mod:`._expected`: data type, fill value, shape, chunks, dimensions) and
    against each other. Where one is intact the damage is ``"metadata"`` (a repair
    rewrites the other from it); where neither is, the layout is lost (``"identity"``).
    No chunk is blamed for what its metadata says."""
    import zarr

    from ._expected import expected_arrays, problems

    consolidated = cube.group.metadata.consolidated_metadata
    copies = {} if consolidated is None else dict(consolidated.metadata)
    from ._layout import digest

    try:
        folds = np.asarray(cube.group["fold"][...])
        trusted = (cube.meta.get("digests") or {}).get("fold") in (None, digest(folds))
        want = expected_arrays(cube.meta, folds, cube.config_chunk) if trusted else {}
    except Exception:  # noqa: BLE001 - the folds or the layout unreadable: compare copies only
        want = {}  # (the identity check names them; the schema is derived from them)
    out = []
    for name in sorted(set(copies) | set(want)):
        file = f"{name}/zarr.json"
        spec = want.get(name)
        copy = copies.get(name)
        try:
            own = zarr.open_array(cube.group.store, path=name, mode="r").metadata
            own_bad = problems(own, spec) if spec is not None else []
        except Exception as exc:  # noqa: BLE001
            if copy is None and name == "class":
                continue  # a study without a class axis
            own, own_bad = None, [_problem(exc) if _exists(cube, file) else "is missing"]
        copy_bad = problems(copy, spec) if copy is not None and spec is not None else []
        if own is not None and not own_bad and not copy_bad and (
                copy is None or own.to_dict() == copy.to_dict()):
            continue
        if copy is not None and not copy_bad:
            problem = "; ".join(own_bad) or "differs from its copy in the store's consolidated metadata"
            out.append(Damage("metadata", file, problem, array=name, fix="own"))
        elif own is not None and not own_bad and copy is not None:
            out.append(Damage("metadata", "zarr.json", f"its consolidated copy of {file} says "
                              f"{'; '.join(copy_bad)}", array=name, fix="copy"))
        elif spec is not None and _schema_restored(cube, file, copy, spec) is not None:
            out.append(Damage("metadata", file, f"{'; '.join(copy_bad or own_bad)} (the "
                              "consolidated copy too; a repair restores it from the schema)",
                              array=name, fix="schema"))
        else:
            out.append(Damage("identity", file, f"{'; '.join(copy_bad or own_bad)}; the study's "
                              f"layout cannot be recomputed: run it again with {spelled('overwrite=True')}",
                              array=name))
    return out


def _schema_restored(cube, file, copy, spec):
    """The metadata file ``file`` restored from the schema ``spec`` (bytes; see
    :func:`~._expected.restored`) from its own JSON, or its consolidated ``copy``'s."""
    from zarr.core.buffer import default_buffer_prototype

    from ._expected import restored

    try:
        raw = json.loads(cube.location.read_bytes(file))
    except Exception:  # noqa: BLE001 - unreadable: the consolidated copy's
        if copy is None:
            return None
        raw = json.loads(copy.to_buffer_dict(default_buffer_prototype())["zarr.json"].to_bytes())
    return restored(raw, spec) if isinstance(raw, dict) else None


def _reads_damaged(damages):
    """Whether the package reads damaged metadata (the consolidated copy): then the
    chunks cannot be checked until it is repaired (they would all look damaged)."""
    return any(d.array and (d.kind == "identity" or d.fix in ("copy", "schema")) for d in damages)


def _ledger_regions(cube):
    st = cube.group["state"]
    step = st.chunks[0]
    for i, c0 in enumerate(range(0, st.shape[0], step)):
        for r in range(st.shape[1]):
            yield i, r, c0, min(c0 + step, st.shape[0])


def _check_ledger(cube):
    """Every ledger chunk readable and complete; returns (damages, the cells whose
    prediction chunks are to be checked, their CRC per (r, k, block) (-1: none to compare
    with), the number of chunks checked)."""
    from ._schema import DONE, FAILED, MISSING

    g = cube.group
    n_cfg, n_rep, n_spl = g["state"].shape
    w = cube.config_chunk
    state = np.full((n_cfg, n_rep, n_spl), MISSING, dtype=np.int8)
    crc = np.full((n_rep, n_spl, g["chunk_crc"].shape[2]), -1, dtype=np.int64)
    damages, checked = [], 0
    # the scores of the fitted fold models, in a study that has them (one chunk per region)
    scored = bool(cube.fit_scorer_labels())
    try:
        table = recorded(cube)
    except Exception as exc:  # noqa: BLE001 - its chunks then count as lost (see below)
        damages.append(Damage("ledger", CRC_ARRAY, _problem(exc), configs=(0, n_cfg)))
        table = np.full((-(-n_cfg // g["state"].chunks[0]), n_rep, len(CHECKED), 2), -1)
    for i, r, c0, c1 in _ledger_regions(cube):
        fit_score = (("fit_score", (i, r, 0, 0)),) if scored else ()
        bad = []
        values = {}
        for name, coords in (("state", (i, r, 0)), ("fit_time", (i, r, 0)),
                             ("fold_score", (i, r, 0)), ("pooled", (i, r)),
                             ("chunk_crc", (r, 0, i))) + fit_score:
            checked += 1
            try:
                values[name] = g[name].get_block_selection(coords)
                if name in ("state", "fit_time", "fold_score"):
                    values[name] = values[name][:, 0]  # (configs, folds) of repeat r
            except Exception as exc:  # noqa: BLE001
                bad.append((name, coords, _problem(exc)))
        if "state" in values and (values["state"] == MISSING).any():
            bad.append(("state", (i, r, 0), "is missing"))
        if "state" in values and not bad:
            counted = np.isin(values["state"], (DONE, FAILED))
            if "fit_time" in values and np.isnan(values["fit_time"][counted]).any() and (
                    table is None or (table[i, r, CHECKED.index("fit_time")] < 0).all()):
                # (with a checksum, a repair's unknown fit times are NaN by design)
                name = chunk_file(g["fit_time"], (i, r, 0))
                bad.append(("fit_time", (i, r, 0), "is missing" if not _exists(cube, name)
                            else "is missing values of done cells"))
            for name, coords in (("fold_score", (i, r, 0)),) + fit_score:
                # a fold score may be NaN (undefined on the fold): the chunk itself, which
                # the ledger wrote with its done cells, must be there (a missing one reads
                # as NaN: BBC-F would say "a fold holds a single class")
                if counted.any() and not _exists(cube, chunk_file(g[name], coords)):
                    bad.append((name, coords, "is missing"))
            named = {b[0] for b in bad}
            for name in (n for n in CHECKED if n in values and n not in named and table is not None):
                # the values the study wrote: an edit changes them
                if unrecorded(cube, table, i, r, name, values[name], bad, _exists):
                    break
            blocks = np.unique(np.flatnonzero(counted.any(axis=1)) // w)
            if "chunk_crc" in values and blocks.size:
                # c0 is a multiple of w: local block b is the store's block c0 // w + b
                local = values["chunk_crc"][0][:, blocks]
                cells = np.stack([counted[b * w:(b + 1) * w].any(axis=0) for b in blocks], axis=1)
                if (local[cells] < 0).any():
                    bad.append(("chunk_crc", (r, 0, i), "is missing checksums of done cells"))
        for name, coords, problem in bad:
            damages.append(Damage("ledger", chunk_file(g[name], coords), problem, repeat=r,
                                  configs=(c0, c1)))
        if bad and not ({b[0] for b in bad} <= set(DERIVED) and "chunk_crc" in values):
            # the region is reset by a repair; its prediction chunks are still checked
            # for readability (no checksum to compare with)
            state[c0:c1, r] = DONE
        else:
            state[c0:c1, r] = values["state"]
            crc[r, :, c0 // w:c0 // w + values["chunk_crc"].shape[2]] = values["chunk_crc"][0]
    for i, c0 in enumerate(range(0, n_cfg, g["error"].chunks[0])):
        checked += 1
        c1 = min(c0 + g["error"].chunks[0], n_cfg)
        try:
            texts = g["error"].get_block_selection((i,))
        except Exception as exc:  # noqa: BLE001
            damages.append(Damage("error", chunk_file(g["error"], (i,)), _problem(exc), configs=(c0, c1)))
            continue
        found = []
        if table is not None:
            unrecorded(cube, table, i, 0, "error", texts, found, _exists)
        for name, coords, problem in found[:1]:
            damages.append(Damage("error", chunk_file(g[name], coords), problem, configs=(c0, c1)))
    counted = np.isin(state, (DONE, FAILED))
    return damages, counted, crc, checked


def _check_predictions(cube, counted, crc):
    """Every prediction chunk the ledger counts: present, readable, the task's bytes."""
    arr = cube.group["prediction"]
    w = arr.chunks[3]
    n_cfg = arr.shape[3]
    group = max(1, tuning.VERIFY_READ_BYTES // cube.chunk_nbytes)  # a block's chunks along slots together
    along = len(prediction_chunks(arr, 0, 0, 0))
    damages, checked = [], 0
    for r in range(arr.shape[0]):
        for k in range(arr.shape[1]):
            blocks = np.unique(np.flatnonzero(counted[:, r, k]) // w)
            for start in range(0, blocks.size, group):
                part = blocks[start:start + group]
                lo, hi = int(part[0]) * w, min((int(part[-1]) + 1) * w, n_cfg)
                try:
                    row = arr[r, k, :, lo:hi]
                except Exception:  # noqa: BLE001 — find the chunk(s) one by one
                    row = None
                for j in part.tolist():
                    checked += along
                    if row is not None:
                        values = row[:, j * w - lo:min((j + 1) * w, n_cfg) - lo]
                    else:
                        bad = unreadable_chunk(arr, r, k, j)
                        if bad is None:
                            try:
                                values = arr[r, k, :, j * w:min((j + 1) * w, n_cfg)]
                            except Exception as exc:  # noqa: BLE001
                                bad = chunk_file(arr, prediction_chunks(arr, r, k, j)[0]), exc
                        if bad is not None:
                            damages.append(Damage("prediction", bad[0], _problem(bad[1]), r, k, j))
                            continue
                    if crc[r, k, j] >= 0 and chunk_crc(values) != crc[r, k, j]:
                        names = [chunk_file(arr, c) for c in prediction_chunks(arr, r, k, j)]
                        missing = [n for n in names if not _exists(cube, n)]
                        if missing:
                            damages.append(Damage("prediction", missing[0], "is missing", r, k, j))
                        else:
                            # one checksum covers the block's chunks along slots together
                            what = names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}"
                            over = "" if len(names) == 1 else f" of its {len(names)} chunks along slots"
                            damages.append(Damage("prediction", what, "differs from what its "
                                                  f"task wrote (checksum mismatch{over})", r, k, j))
    return damages, checked


def _check_model(cube):
    record = cube.meta.get("final_model")
    if not record:
        return []
    name = record.get("file", "")
    try:
        data = cube.location.read_bytes(name)
    except Exception as exc:  # noqa: BLE001
        return [Damage("model", name, _problem(exc) if _exists(cube, name) else "is missing")]
    if record.get("sha256") and hashlib.sha256(data).hexdigest() != record["sha256"]:
        return [Damage("model", name, "differs from the model the study saved (SHA-256)")]
    import zipfile

    if not zipfile.is_zipfile(io.BytesIO(data)):  # skops writes a zip
        return [Damage("model", name, "is not a model file (not a zip archive)")]
    return []


def verify(cube):
    """Check every chunk the ledger counts; see the module docstring. Returns a
    :class:`VerifyReport` (nothing is written)."""
    metadata = _check_metadata(cube)
    if _reads_damaged(metadata):  # repair the metadata, then verify the chunks
        return VerifyReport(cube.path, 0, 0, metadata)
    damaged = _check_identity(cube, {d.array for d in metadata}) + metadata
    ledger, counted, crc, n_ledger = _check_ledger(cube)
    damaged += ledger
    preds, n_chunks = _check_predictions(cube, counted, crc)
    damaged += preds + _check_model(cube)
    return VerifyReport(cube.path, n_chunks, n_ledger, damaged)


def repair(cube, report):
    """Mark every cell that depends on a damaged chunk pending (the next run of the study
    recomputes exactly those), remove the damaged files, forget a damaged or outdated final
    model. Writes pass the cube's guard; the caller holds the run lock.

    Crash-safe: the ledger is reset before any damaged file is removed, so a kill in
    between leaves cells pending whose chunks are rewritten by the next run.

    Returns the number of cells marked pending.
    """
    from ._location import writing
    from ._schema import DONE, FAILED, PENDING

    identity = [d for d in report.damaged if d.kind == "identity"]
    if [d for d in report.damaged if d.kind == "metadata"] and not identity:
        raise StoreDamagedError(  # verify_store repairs the metadata before the chunks
            f"The store {cube.path!r} has damaged metadata: repair it with verify_store("
            f"store, repair=True) ('bbc-dask verify --repair').")
    if identity:
        raise StoreDamagedError(
            f"The store {cube.path!r} cannot be repaired: {identity[0]} (the study's data, not "
            f"a result). Run the study again with {spelled('overwrite=True')}.")
    g = cube.group
    w = cube.config_chunk
    n_cfg, n_rep, n_spl = g["state"].shape
    scored = ("fit_score",) if cube.fit_scorer_labels() else ()
    cube._guard()
    reset = 0
    with writing(cube.path):
        # what is rebuilt from intact predictions costs no model (cube/_rebuild.py)
        derived = derived_regions(cube, report.damaged)
        whole = {(d.repeat, d.configs) for d in report.damaged
                 if d.kind == "ledger" and (d.repeat, d.configs) not in derived}
        for d in report.damaged:
            if d.kind == "error":  # a failed configuration's text is lost: fit it again
                whole.add((-1, d.configs))
            if d.file == CRC_ARRAY:  # unreadable: rewritten whole (its regions reset)
                g[CRC_ARRAY][...] = np.full(g[CRC_ARRAY].shape, -1, dtype=np.int64)
        edit = LedgerEdit(cube)  # every chunk written with its checksum
        step = edit.step
        cleared = set()
        for r, (c0, c1) in sorted(whole):
            for rr in range(n_rep) if r < 0 else (r,):
                for i in range(c0 // step, -(-c1 // step)):
                    if (rr, i) in cleared:
                        continue
                    cleared.add((rr, i))
                    a0, a1 = i * step, min((i + 1) * step, n_cfg)
                    # whole-chunk writes: Zarr replaces a damaged chunk without reading it
                    edit.replace("state", i, rr, np.full((a1 - a0, n_spl), PENDING, np.int8))
                    for name in ("fit_time", "fold_score") + scored:
                        edit.replace(name, i, rr, np.full((a1 - a0,) + g[name].shape[2:], np.nan))
                    edit.replace("pooled", i, rr, np.full(a1 - a0, np.nan))
                    g["chunk_crc"][rr, :, a0 // w:-(-a1 // w)] = -1
                    reset += (a1 - a0) * n_spl
        for r, (c0, c1) in sorted(whole):
            if r < 0:
                for i in range(c0 // step, -(-c1 // step)):
                    a0, a1 = i * step, min((i + 1) * step, n_cfg)
                    edit.replace("error", i, 0, np.full(a1 - a0, "", dtype=object))
        for d in report.damaged:
            if d.kind == "coordinate":  # positions: whole-chunk writes of 0, 1, 2...
                g[d.file][...] = np.arange(g[d.file].shape[0], dtype=np.int64)
        for d in report.damaged:
            if d.kind != "prediction":
                continue
            c0, c1 = d.block * w, min((d.block + 1) * w, n_cfg)
            i = c0 // step
            rows = slice(c0 - i * step, c1 - i * step)
            st = edit.chunk("state", i, d.repeat)
            cells = np.isin(st[rows, d.fold], (DONE, FAILED))
            st[rows, d.fold] = np.where(cells, PENDING, st[rows, d.fold])
            for name in ("fit_time", "fold_score") + scored:
                edit.chunk(name, i, d.repeat)[rows, d.fold] = np.nan
            for rr in range(n_rep):
                edit.chunk("pooled", i, rr)[rows] = np.nan
            g["chunk_crc"][d.repeat, d.fold, d.block] = -1
            reset += int(cells.sum())
        rebuild(cube, edit, derived)
        edit.commit()
        report.rebuilt = len(derived)
        # after the ledger: a kill before this leaves pending cells whose chunks the next
        # run rewrites anyway
        arr = g["prediction"]
        for d in report.damaged:
            if d.kind != "prediction":
                continue
            for coords in prediction_chunks(arr, d.repeat, d.fold, d.block):
                name = chunk_file(arr, coords)
                if _exists(cube, name):
                    cube.location.remove(name)
    if report.damaged:
        repairs = list(cube.meta.get("repairs", [])) + [
            {"cells_reset": reset, "chunks_rebuilt": len(derived),
             "damaged": [str(d) for d in report.damaged][:100]}]
        if not all(d.kind == "ledger" and (d.repeat, d.configs) in derived for d in report.damaged):
            # the next run refits (its winner may differ); a rebuild alone restores the
            # study's own values, and so its winner
            cube.meta.pop("final_model", None)
        cube.set_meta(repairs=repairs)
        cube.apply_decisions()  # cells of dropped configurations reset above: dropped again
    return reset


@door("verify_store")
def verify_store(store, *, repair=False, storage_options=None):
    """Check a study store (see :func:`verify`); with ``repair``, under the store's run
    lock, mark the cells of damaged chunks pending so that running the same study again
    recomputes exactly those.

    Parameters
    ----------
    store : str, path or StoreLocation
    repair : bool, default=False
    storage_options : dict, default=None
        fsspec options of a URL store.

    Returns
    -------
    report : VerifyReport
        What was found (before the repair).
    reset : int
        Cells marked pending (0 without ``repair``).

    Raises
    ------
    StoreDamagedError
        With ``repair``, when the damage is in the study's data (``y``, folds), which no
        run can recompute.
    StoreLockedError
        With ``repair``, while a run holds the store.
    """
    from ._location import as_location, writing
    from ._schema import open_cube

    repair = validation.check_bool(repair, "repair")
    location = as_location(store, storage_options)
    cube = open_cube(location, mode="r+" if repair else "r", check=False)
    report = verify(cube)
    if not repair or report.ok:
        return report, 0
    with writing(location.url):
        lock = location.lock().acquire()
    try:
        cube = open_cube(location, mode="r+", check=False)  # as it is now, under the lock
        cube.bind_lock(lock.check)
        report = verify(cube)
        metadata = [d for d in report.damaged if d.kind == "metadata"]
        if metadata and report.repairable:
            # the metadata first, from its intact copy; then the chunks, read through it
            _repair_metadata(cube, metadata)
            cube = open_cube(location, mode="r+", check=False)
            cube.bind_lock(lock.check)
            chunks = verify(cube)
            reset = _repair(cube, chunks)
            return dataclasses.replace(chunks, damaged=metadata + chunks.damaged), reset
        return report, _repair(cube, report)
    finally:
        lock.release()


def _repair_metadata(cube, damages):
    """Rewrite each damaged metadata file from its intact copy: an array's ``zarr.json``
    from the consolidated copy, or the consolidated metadata from the arrays' own files.
    No chunk is touched."""
    from zarr.core.buffer import default_buffer_prototype

    from ._attrs import consolidate
    from ._location import writing

    from ._expected import expected_arrays

    copies = cube.group.metadata.consolidated_metadata.metadata
    cube._guard()
    with writing(cube.path):
        for d in damages:
            if d.fix == "own":
                data = copies[d.array].to_buffer_dict(default_buffer_prototype())["zarr.json"]
                cube.location.write_bytes(d.file, data.to_bytes())
            elif d.fix == "schema":
                spec = expected_arrays(cube.meta, np.asarray(cube.group["fold"][...]),
                                       cube.config_chunk)[d.array]
                cube.location.write_bytes(d.file, _schema_restored(cube, d.file,
                                                                   copies.get(d.array), spec))
        if any(d.fix in ("copy", "schema") for d in damages):
            consolidate(cube.location.zarr_store())


_repair = repair
