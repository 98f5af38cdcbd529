"""Checksums of the ledger the estimates read: ``state``, ``fit_time``, ``fold_score``,
``pooled`` (and ``fit_score``), one CRC-32 per ledger chunk (configurations of one
repeat), recorded in the study attributes (``ledger_crc``) when a run has written its
last ledger batch, dropped by the next run before it writes any.

A value edited behind the study's back (a winner's fold score set to 0.99) changes BBC-F
and the selection with no error anywhere: with the checksums, the first read of each
array by an estimate compares them (:func:`check_read`) and :func:`~._verify.verify` names
the chunk, which a repair resets for the next run to recompute. A study whose run is in
progress (or was killed) has none recorded: nothing to compare, nothing falsely blamed.
"""
from __future__ import annotations

import zlib

import numpy as np

__all__ = ["CHECKED", "check_read", "ledger_checksums", "mismatches", "region_crc"]

#: The ledger arrays with checksums.
CHECKED = ("state", "fit_time", "fold_score", "pooled", "fit_score")


def _regions(n_configs, n_repeats, step):
    for i, c0 in enumerate(range(0, n_configs, step)):
        for r in range(n_repeats):
            yield i, r, c0, min(c0 + step, n_configs)


def region_crc(values):
    """CRC-32 of one ledger chunk's values (C order), as :func:`ledger_checksums` records it."""
    return zlib.crc32(memoryview(np.ascontiguousarray(values)).cast("B"))


def ledger_checksums(cube):
    """``{array: [[crc of ledger chunk i of repeat r for r] for i]}`` of the arrays of
    :data:`CHECKED` the study has, as stored now."""
    out = {}
    for name in CHECKED:
        if name == "fit_score" and not cube.fit_scorer_labels():
            continue
        arr = cube._read(name)
        step = cube._array(name).chunks[0]
        table = {}
        for i, r, c0, c1 in _regions(arr.shape[0], arr.shape[1], step):
            table.setdefault(i, []).append(region_crc(arr[c0:c1, r]))
        out[name] = [table[i] for i in sorted(table)]
    return out


def mismatches(cube, name, values):
    """``[(ledger chunk i, repeat r, first configuration, end)]`` where ``values`` (the
    whole array ``name``) differ from the recorded checksums; [] when none are recorded."""
    recorded = (cube.meta.get("ledger_crc") or {}).get(name)
    if not recorded:
        return []
    step = cube._array(name).chunks[0]
    return [(i, r, c0, c1) for i, r, c0, c1 in _regions(values.shape[0], values.shape[1], step)
            if i >= len(recorded) or r >= len(recorded[i]) or region_crc(values[c0:c1, r]) != recorded[i][r]]


def check_read(cube, name, values):
    """Refuse, naming the chunk file, a whole-array read of a ledger array that differs
    from its recorded checksums."""
    from ..exceptions import StoreDamagedError
    from ._layout import chunk_file

    bad = mismatches(cube, name, values)
    if bad:
        i, r, _, _ = bad[0]
        coords = (i, r) + (0,) * (values.ndim - 2)
        raise StoreDamagedError(
            f"The store {cube.path!r} is damaged: {chunk_file(cube._array(name), coords)} "
            f"differs from what the study recorded (checksum mismatch); 'bbc-dask verify "
            f"--repair' marks its cells pending for a resume.")
