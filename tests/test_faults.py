"""Fault injection: the driver SIGKILLs itself (with its in-process workers) at chosen
internal calls — every kind of store write a run makes — and a resume on a different
cluster must give a study bit-identical to an uninterrupted run, recomputing nothing the
ledger recorded, with `verify` finding nothing damaged.

The points (tests/scripts/fault_run.py): the N-th array write (ledger batches, creation,
the tasks' own chunk writes), the N-th attribute write (runs, dropping decisions, final
model record), after the N-th file written (creation marker, model file), before the
creation marker's removal, and the N-th entry deleted by an ``overwrite=True`` wipe.
"""
import json
import os
import shutil

import numpy as np
import pytest

import bbc_dask as bd

from _zygote import fault_run
from fault_run import study as _study



def _fault(store, kind, point, n, overwrite=False):
    """``fault_run.py STORE KIND POINT N [overwrite]`` in a process of its own, forked from
    one that imported the study once (``_zygote``): ~2 CPU-seconds of imports spared a run."""
    return fault_run([store, kind, point, n] + (["overwrite"] if overwrite else []))


def _snapshot(store):
    study = bd.open_study(store)
    c = study._cube
    return {"prediction": study.cube["prediction"].values, "state": c.state(),
            "fold_score": c.fold_scores(), "pooled": c.pooled(),
            "chunk_crc": c.group["chunk_crc"][...],
            "decisions": json.dumps(c.decisions(), sort_keys=True),
            "winner": study.best_index_, "final": c.meta["final_model"]["config"],
            "bbc": study.bbc(n_bootstraps=100).estimate}


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """Uninterrupted runs of both kinds (in a process of their own, as the killed runs) and the
    number of calls of every kill point they make."""
    out = {}
    for kind in ("cvt", "bbcd"):
        store = tmp_path_factory.mktemp(kind) / "ref.zarr"
        p = _fault(store, kind, "count", 0)
        assert p.returncode == 0, p.stderr[-2000:]
        out[kind] = (_snapshot(store), json.loads(p.stdout.strip().splitlines()[-1]))
    return out


def _cases(slow):
    """(kind, point, which call as a fraction of the calls the reference made)."""
    # the default suite keeps three points (8-10 s each); CI runs the others every time
    fast = [("cvt", "array_write", 0.5), ("bbcd", "decision", 0.0), ("cvt", "attrs", 1.0)]
    more = [("cvt", "array_write", f) for f in (0.0, 0.15, 0.35, 0.7, 1.0)]
    more += [("bbcd", "array_write", f) for f in (0.35, 0.9)]
    more += [("bbcd", "decision", 1.0), ("bbcd", "attrs", 0.5), ("cvt", "attrs", 0.0),
             ("cvt", "file_write_after", 1.0), ("cvt", "file_remove", 0.0),
             ("cvt", "wipe_entry", 0.0), ("cvt", "wipe_entry", 1.0)]
    return more if slow else fast


@pytest.mark.parametrize("kind,point,frac", _cases(False) + [
    pytest.param(*c, marks=pytest.mark.slow) for c in _cases(True)])
def test_a_kill_at_any_store_write_resumes_bit_identical(tmp_path, client, references, kind, point, frac):
    ref, calls = references[kind]
    store = tmp_path / "s.zarr"
    overwrite = point == "wipe_entry"
    if overwrite:  # a finished study of another kind, replaced by this one
        assert _fault(store, "bbcd" if kind == "cvt" else "cvt", "count", 0).returncode == 0
        calls = json.loads(_fault(tmp_path / "probe.zarr", kind, "count", 0).stdout.splitlines()[-1])
        calls["wipe_entry"] = sum(e.is_dir() for e in os.scandir(store))  # rmtree: folders
    n = max(1, round(frac * calls[point]))
    before = sorted(os.listdir(store)) if overwrite else None
    while True:
        p = _fault(store, kind, point, n, overwrite=overwrite)
        if p.returncode == -9 or n == 1 or "NOT KILLED" not in p.stdout:
            break
        # fewer ledger batches than in the reference run (their number depends on timing):
        # kill at an earlier write of this run instead
        shutil.rmtree(store)
        if overwrite:
            assert _fault(store, "bbcd" if kind == "cvt" else "cvt", "count", 0).returncode == 0
            assert sorted(os.listdir(store)) == before
        n = n * 3 // 4
    assert p.returncode == -9, f"not killed at {point} #{n}: {p.stdout[-500:]} {p.stderr[-2000:]}"
    try:
        killed = bd.open_study(store)
        trained_before = int(np.isin(killed._cube.state(), (1, 2)).sum())
    except Exception:  # killed before the study existed (or mid-wipe): nothing counts
        killed, trained_before = None, 0
    if killed is not None and killed._cube.runs and "t1" not in killed._cube.runs[-1]:
        # killed inside a run: when it ended is unknown (not "until now", which grows)
        status = killed.status()  # read once: each call reads the store
        assert status["elapsed_s"] is None and not status["running"]
    resumed = _study(store, kind, client)
    trained = int(np.isin(ref["state"], (1, 2)).sum())
    assert resumed.n_fits_ == trained - trained_before  # nothing the ledger kept is refit
    got = _snapshot(store)
    for key in ref:
        np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(ref[key]), err_msg=key)
    assert bd.verify_store(store)[0].ok


def _damage(store):
    """Damage of every repairable kind at once: a prediction chunk deleted and one
    truncated (a repair removes it), a ledger chunk deleted, an array's metadata file
    deleted, the final model edited."""
    os.remove(store / "prediction/c/0/1/0/1")
    bad = store / "prediction/c/1/2/0/0"
    bad.write_bytes(bad.read_bytes()[:20])
    os.remove(store / "fit_time/c/0/0/0")
    os.remove(store / "pooled/zarr.json")
    with open(store / "final_model.skops", "ab") as f:
        f.write(b"x")


#: Where a repair is killed (3 runs in processes of their own each, ~8 s: the slow suite, run by CI).
REPAIR_KILLS = [("array_write", 0.0), ("array_write", 0.5), ("array_write", 1.0),
                ("attrs", 0.0), ("attrs", 1.0), ("file_write_after", 0.0),
                ("file_remove", 0.0), ("file_remove", 1.0)]


@pytest.mark.slow
@pytest.mark.parametrize("point,frac", REPAIR_KILLS)
def test_a_repair_killed_mid_way_is_finished_by_the_next(tmp_path, client, references, point, frac):
    """`verify --repair` SIGKILLed at one of its writes: the next `verify --repair` finishes
    it, a rerun restores the study bit for bit, and verify finds nothing."""
    ref, _ = references["cvt"]
    base = tmp_path / "base.zarr"
    assert _fault(base, "cvt", "count", 0).returncode == 0
    _damage(base)
    probe = tmp_path / "probe.zarr"
    shutil.copytree(base, probe)
    calls = json.loads(_fault(probe, "repair", "count", 0).stdout.splitlines()[-1])
    assert calls.get(point), calls
    store = tmp_path / "s.zarr"
    shutil.copytree(base, store)
    n = max(1, round(frac * calls[point]))
    p = _fault(store, "repair", point, n)
    assert p.returncode == -9, f"not killed at {point} #{n}: {p.stdout[-500:]} {p.stderr[-2000:]}"
    bd.verify_store(store, repair=True)
    _study(store, "cvt", client)
    got = _snapshot(store)
    for key in ref:
        np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(ref[key]), err_msg=key)
    assert bd.verify_store(store)[0].ok
