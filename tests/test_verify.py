"""verify / repair: every chunk the ledger counts is checked against the bytes its task
wrote; a repair marks exactly the dependent cells pending and a rerun restores the study
bit for bit. Unfinished studies are not estimated unless asked (--partial)."""
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import bbc_dask as bd
from bbc_dask.cli import main
from bbc_dask.exceptions import StoreDamagedError

from fault_run import study as small_study
from _helpers import rewrite_ledger


def _run(store, client):
    """The fault-injection matrix's small study (tests/scripts/fault_run.py): 7
    configurations, 3 folds x 2 repeats, 240 samples, a final model."""
    return small_study(store, "cvt", client)


def _snapshot(study):
    c = study._cube
    return {"prediction": study.cube["prediction"].values, "state": c.state(),
            "fold_score": c.fold_scores(), "pooled": c.pooled(),
            "bbc": study.bbc(n_bootstraps=200).estimate, "winner": study.best_index_}


def _assert_same(a, b):
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, client):
    """A finished study, never damaged, and its results."""
    store = tmp_path_factory.mktemp("ref") / "ref.zarr"
    return store, _snapshot(_run(store, client))


def _copy(reference, tmp_path):
    store = tmp_path / "s.zarr"
    shutil.copytree(reference[0], store)
    return store


DAMAGE = {
    # name: (what to do to the store, the file verify must name, its problem)
    "deleted chunk": (lambda s: os.remove(s / "prediction/c/0/1/0/1"),
                      "prediction/c/0/1/0/1", "is missing"),
    "truncated chunk": (lambda s: _truncate(s / "prediction/c/1/2/0/0"),
                        "prediction/c/1/2/0/0", "cannot be read"),
    "swapped chunk": (lambda s: shutil.copy(s / "prediction/c/0/0/0/0", s / "prediction/c/0/0/0/2"),
                      "prediction/c/0/0/0/2", "checksum mismatch"),
    "deleted ledger chunk": (lambda s: os.remove(s / "fit_time/c/0/1/0"),
                             "fit_time/c/0/1/0", "is missing"),
    "deleted state chunk": (lambda s: os.remove(s / "state/c/0/0/0"),
                            "state/c/0/0/0", "is missing"),
    "deleted fold score chunk": (lambda s: os.remove(s / "fold_score/c/0/1/0"),
                                 "fold_score/c/0/1/0", "is missing"),
    "garbage checksum chunk": (lambda s: (s / "chunk_crc/c/1/0/0").write_bytes(b"\x00" * 7),
                               "chunk_crc/c/1/0/0", "cannot be read"),
    "edited model": (lambda s: _append(s / "final_model.skops"),
                     "final_model.skops", "differs from the model"),
}


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _append(path):
    with open(path, "ab") as f:
        f.write(b"x")


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_verify_names_the_damage_and_repair_restores_the_study_bit_for_bit(
        tmp_path, client, reference, damage):
    store = _copy(reference, tmp_path)
    assert bd.verify_store(store)[0].ok
    act, name, problem = DAMAGE[damage]
    act(store)
    rep, reset = bd.verify_store(store)
    assert reset == 0 and not rep.ok and rep.repairable
    assert [d.file for d in rep.damaged] == [name], rep.damaged
    assert problem in rep.damaged[0].problem
    rep, reset = bd.verify_store(store, repair=True)
    assert [d.file for d in rep.damaged] == [name]
    after = bd.open_study(store)
    assert after.status()["pending"] == reset
    assert bd.verify_store(store)[0].ok
    # a lost fit time or fold score is rebuilt from the intact predictions: no cell reset
    rebuilt = ("edited model", "deleted ledger chunk", "deleted fold score chunk")
    assert (reset == 0) if damage in rebuilt else (reset > 0)
    again = _run(store, client)
    assert again.n_fits_ == reset  # exactly the cells the repair reset, nothing the ledger kept
    _assert_same(reference[1], _snapshot(again))
    assert again.load_final_model() is not None
    assert bd.verify_store(store)[0].ok


CUT_DAMAGE = {
    # a store whose folds are cut into 3 chunks along slots (block j of fold k of repeat r:
    # prediction/c/r/k/0..2/j); one checksum covers a block's 3 chunks
    "deleted chunk": (lambda s: os.remove(s / "prediction/c/0/1/2/1"),
                      "prediction/c/0/1/2/1", "is missing"),
    "truncated chunk": (lambda s: _truncate(s / "prediction/c/1/2/1/0"),
                        "prediction/c/1/2/1/0", "cannot be read"),
    "swapped chunk": (lambda s: shutil.copy(s / "prediction/c/0/0/1/0", s / "prediction/c/0/0/1/2"),
                      "prediction/c/0/0/0/2 to prediction/c/0/0/2/2",
                      "checksum mismatch of its 3 chunks along slots"),
}


@pytest.mark.parametrize("damage", list(CUT_DAMAGE))
def test_a_fold_cut_along_slots_is_verified_and_repaired_chunk_by_chunk(
        tmp_path, client, reference, dask_config, damage):
    """A store whose folds are cut along slots (SLOT_CHUNK_BYTES) holds the reference
    study bit for bit; damage to one of a block's chunks is named, the repair removes
    the block's chunks and resets its cells, and a rerun restores the study."""
    import zarr


    dask_config({"bbc_dask.slot-chunk-min": 8})
    dask_config({"bbc_dask.slot-chunk-bytes": 26 * 3 * 8})  # 80 slots of 3 configurations
    store = tmp_path / "s.zarr"
    _assert_same(reference[1], _snapshot(_run(store, client)))
    assert zarr.open_group(str(store), mode="r")["prediction"].chunks[2] == 27
    files = [f for _, _, fs in os.walk(store / "prediction" / "c") for f in fs]
    assert bd.verify_store(store)[0].chunks_checked == len(files) == 2 * 3 * 3 * 3
    act, name, problem = CUT_DAMAGE[damage]
    act(store)
    rep, reset = bd.verify_store(store, repair=True)
    assert [d.file for d in rep.damaged] == [name], rep.damaged
    assert problem in rep.damaged[0].problem
    _, _, r, k, _, j = name.split()[0].split("/")
    assert list((store / "prediction/c" / r / k).glob(f"*/{j}")) == []  # all 3 removed
    assert bd.verify_store(store)[0].ok
    again = _run(store, client)
    assert again.n_fits_ == reset > 0  # the damaged block's cells of one (repeat, fold)
    _assert_same(reference[1], _snapshot(again))


def test_damaged_data_is_named_and_not_repairable(tmp_path, reference):
    import zarr

    store = _copy(reference, tmp_path)
    g = zarr.open_group(str(store), mode="r+")
    y = g["y"][...]
    g["y"][:3] = 1 - y[:3]
    with pytest.raises(StoreDamagedError, match="'y' differs"):
        bd.open_study(store)
    rep, _ = bd.verify_store(store)
    assert [d.file for d in rep.damaged] == ["y"] and not rep.repairable
    with pytest.raises(StoreDamagedError, match="cannot be repaired.*overwrite=True"):
        bd.verify_store(store, repair=True)
    assert (g["state"][...] == 1).all()  # nothing was reset


def test_a_read_of_a_damaged_chunk_names_its_file(tmp_path, reference):
    store = _copy(reference, tmp_path)
    _truncate(store / "prediction/c/1/2/0/0")
    study = bd.open_study(store)
    with pytest.raises(StoreDamagedError, match=r"prediction/c/1/2/0/0 cannot be read.*verify --repair"):
        study.bbc(n_bootstraps=50)
    os.remove(store / "state/c/0/0/0")
    with pytest.raises(StoreDamagedError, match=r"configuration 0, repeat 0 \(array 'state'\) is missing"):
        bd.open_study(store).status()


def test_cli_verify_repair_and_partial_estimates(tmp_path, client, reference):
    store = _copy(reference, tmp_path)
    run = CliRunner()
    ok = run.invoke(main, ["verify", str(store)])
    assert ok.exit_code == 0 and "no damage" in ok.output
    os.remove(store / "prediction/c/0/1/0/1")
    bad = run.invoke(main, ["verify", str(store)])
    assert bad.exit_code == 3 and "prediction/c/0/1/0/1: is missing" in bad.output
    got = json.loads(run.invoke(main, ["verify", str(store), "--json"]).output)
    assert not got["ok"] and got["damaged"][0]["file"] == "prediction/c/0/1/0/1"
    fixed = run.invoke(main, ["verify", str(store), "--repair"])
    assert fixed.exit_code == 0 and "3 cells marked pending" in fixed.output
    # the study is now unfinished: no numbers without --partial
    refused = run.invoke(main, ["estimate", str(store)])
    assert refused.exit_code == 2
    assert "unfinished (3 of 42 cells pending; 4 of 7 configurations complete)" in refused.output
    assert "--partial" in refused.output
    part = run.invoke(main, ["estimate", str(store), "--partial", "--json", "--method", "bbc",
                             "--bootstraps", "50"])
    assert part.exit_code == 0, part.output
    assert json.loads(part.stdout)["bbc"]["partial"].startswith("3 of 42 cells pending")
    assert "UnfinishedStudyWarning" not in part.output  # said once, by the command line
    # the Python API says it too, in a warning of the package's own class
    unfinished = bd.open_study(store)
    for estimate in (unfinished.bbc, unfinished.bbc_f,
                     lambda **kw: unfinished.selection_ci("delong")):
        with pytest.warns(bd.exceptions.UnfinishedStudyWarning,
                          match=r"is unfinished \(3 of 42 cells pending; 4 of 7 configurations "
                                r"complete\): Study\.\w+ estimates from the complete"):
            estimate(n_bootstraps=20)
    assert run.invoke(main, ["report", str(store), "--out", str(tmp_path / "r")]).exit_code == 2
    _run(store, client)
    assert run.invoke(main, ["verify", str(store)]).exit_code == 0
    assert json.loads(run.invoke(main, ["estimate", str(store), "--json", "--method", "bbc",
                                        "--bootstraps", "50"]).stdout)["bbc"]["partial"] is None


def test_rerunning_a_finished_study_fits_nothing_and_keeps_its_model(tmp_path, client, reference):
    store = _copy(reference, tmp_path)
    model = store / "final_model.skops"
    stamp = model.stat().st_mtime_ns
    again = _run(store, client)
    assert again.n_fits_ == 0 and model.stat().st_mtime_ns == stamp
    assert again.load_final_model() is not None


@pytest.mark.parametrize("part", ["prediction", "ledger"])
def test_repair_restores_cells_trained_before_their_configuration_was_dropped(
        tmp_path, client, part):
    """BBCD: a damaged chunk holding cells of a configuration dropped after them; the
    repair resets them pending, the rerun trains them again (not 'dropped'), and the
    study equals the undamaged one bit for bit."""
    ref = tmp_path / "ref.zarr"
    study = small_study(ref, "bbcd", client)
    dropped = study._cube.dropped_waves()[0]
    assert (dropped == 0).any(), dropped  # dropped after wave 0: its fold-0 cells trained
    c = int(np.flatnonzero(dropped == 0)[0])
    w = study._cube.config_chunk

    def snap(s):
        cube = s._cube
        return {"prediction": cube.group["prediction"][...], "state": cube.state(),
                "fold_score": cube.fold_scores(), "chunk_crc": cube.group["chunk_crc"][...],
                "pooled": cube.pooled()}

    before = snap(study)
    store = tmp_path / "s.zarr"
    shutil.copytree(ref, store)
    if part == "prediction":
        os.remove(store / f"prediction/c/0/0/0/{c // w}")
        region = before["state"][c // w * w:(c // w + 1) * w, 0, 0]
    else:
        os.remove(store / "state/c/0/0/0")
        region = before["state"][:, 0, :]  # one ledger chunk: every configuration of repeat 0
    rep, reset = bd.verify_store(store, repair=True)
    assert not rep.ok and reset > 0
    assert (bd.open_study(store).state[c, 0, 0]) == 0  # pending again, not dropped
    again = small_study(store, "bbcd", client)
    assert again.n_fits_ == int((region != 3).sum())  # exactly the cells trained before
    after = snap(again)
    for key in before:
        np.testing.assert_array_equal(before[key], after[key], err_msg=key)
    assert bd.verify_store(store)[0].ok


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _own(name, key, value):
    return lambda s: _edit_json(s / f"{name}/zarr.json", lambda m: m.update({key: value}))


def _copy_of(name, key, value):
    return lambda s: _edit_json(s / "zarr.json", lambda m: m["consolidated_metadata"]["metadata"][
        name].update({key: value}))


METADATA_DAMAGE = {
    # name: (what to do, the file verify names, words of its problem, kind)
    "own data type": (_own("prediction", "data_type", "float32"), "prediction/zarr.json",
                      "data_type float32 where the schema says float64", "own"),
    "copied data type": (_copy_of("prediction", "data_type", "float32"), "zarr.json",
                         "consolidated copy of prediction/zarr.json says data_type float32", "copy"),
    "both data types": (lambda s: (_own("prediction", "data_type", "float32")(s),
                                   _copy_of("prediction", "data_type", "float32")(s)),
                        "prediction/zarr.json", "the consolidated copy too", "schema"),
    "both fill values": (lambda s: (_own("prediction", "fill_value", 0.5)(s),
                                    _copy_of("prediction", "fill_value", 0.5)(s)),
                         "prediction/zarr.json", "fill_value", "schema"),
    "ledger fill value": (lambda s: (_own("fold_score", "fill_value", 0.0)(s),
                                     _copy_of("fold_score", "fill_value", 0.0)(s)),
                          "fold_score/zarr.json", "fill_value", "schema"),
    "missing metadata": (lambda s: os.remove(s / "state/zarr.json"), "state/zarr.json",
                         "is missing", "own"),
    "truncated metadata": (lambda s: _truncate(s / "chunk_crc/zarr.json"), "chunk_crc/zarr.json",
                           "cannot be read", "own"),
}


@pytest.mark.parametrize("damage", list(METADATA_DAMAGE))
def test_metadata_damage_is_told_from_chunk_damage_and_repaired(tmp_path, reference, damage):
    """Edited, missing or truncated array metadata: verify names the metadata file, not
    the chunks; estimates refuse to read through damaged metadata; a repair rewrites it
    from its intact copy or from the schema, never deleting a chunk, and the study is
    the undamaged one again."""
    store = _copy(reference, tmp_path)
    act, name, problem, fix = METADATA_DAMAGE[damage]
    act(store)
    chunks = sorted(p.relative_to(store) for p in store.rglob("c/**/*") if p.is_file())
    rep, _ = bd.verify_store(store)
    assert [(d.file, d.kind, d.fix) for d in rep.damaged] == [(name, "metadata", fix)], rep.damaged
    assert problem in rep.damaged[0].problem
    if fix != "own":  # the package reads the consolidated copy: damaged there, it refuses
        with pytest.raises(StoreDamagedError, match=r"is damaged: .*zarr\.json says "):
            bd.open_study(store)
    rep, reset = bd.verify_store(store, repair=True)
    assert reset == 0
    assert sorted(p.relative_to(store) for p in store.rglob("c/**/*") if p.is_file()) == chunks
    assert bd.verify_store(store)[0].ok
    _assert_same(reference[1], _snapshot(bd.open_study(store)))


@pytest.mark.parametrize("edit", ["metric", "pos_label", "parameter", "decision"])
def test_edited_study_attributes_are_refused_not_read(tmp_path, reference, edit):
    """A hand edit of the study attributes (the metric, the positive class, a
    configuration's parameter, a recorded decision) changes numbers silently: it is
    refused on open and named by verify."""
    store = _copy(reference, tmp_path)
    root = store / "zarr.json"

    def change(m):
        meta = m["attributes"]["bbc_dask"]
        if edit == "metric":
            meta["spec"]["metric"] = "accuracy"
        elif edit == "pos_label":
            meta["spec"]["pos_label"] = 0
        elif edit == "parameter":
            meta["configurations"]["grid"][0]["C"][0] = 123.0
        else:
            meta["runs"][0]["fits"] = 0

    _edit_json(root, change)
    with pytest.raises(StoreDamagedError, match=r"study attributes .* differ from what the "
                                                r"study wrote \(digest mismatch\)"):
        bd.open_study(store)
    rep, _ = bd.verify_store(store)
    assert [(d.kind, d.file) for d in rep.damaged] == [("identity", "zarr.json")]


def test_a_damaged_root_is_named_and_overwrite_replaces_it(tmp_path, client, reference):
    """A truncated root zarr.json is a damaged study (named), not 'not a study store';
    overwrite=True replaces it as it replaces any damaged study."""
    store = _copy(reference, tmp_path)
    _truncate(store / "zarr.json")
    for call in (lambda: bd.open_study(store), lambda: bd.verify_store(store),
                 lambda: _run(store, client)):
        with pytest.raises(StoreDamagedError, match=r"is damaged: its zarr\.json \(the study's "
                                                    r"attributes\) cannot be read"):
            call()
    again = small_study(store, "cvt", client, overwrite=True)
    _assert_same(reference[1], _snapshot(again))


def test_a_kill_while_writing_the_creation_marker_does_not_block_the_store(
        tmp_path, client, reference):
    """The marker is the first write: its temporary left alone means nothing else was
    written, and the same command creates the study."""
    store = tmp_path / "s.zarr"
    store.mkdir()
    (store / "..bbc_creating.0123abcd.tmp").write_bytes(b"")
    _assert_same(reference[1], _snapshot(_run(store, client)))
    assert not list(store.glob(".*.tmp"))


def test_a_model_file_that_is_not_a_model_names_the_store_and_file(tmp_path, client, reference):
    """Random bytes in place of the model (its record rewritten to match): loading says
    which store and file, verify finds it, a repair and a rerun refit it."""
    import hashlib

    import zarr

    store = _copy(reference, tmp_path)
    junk = os.urandom(500)
    (store / "final_model.skops").write_bytes(junk)
    g = zarr.open_group(str(store), mode="r+")
    meta = dict(g.attrs["bbc_dask"])
    meta["final_model"] = dict(meta["final_model"], sha256=hashlib.sha256(junk).hexdigest())
    meta.pop("attributes_digest")  # as a crafter would
    g.attrs["bbc_dask"] = meta
    with pytest.raises(StoreDamagedError, match=r"^The store '.*s\.zarr' is damaged: its final "
                                                r"model 'final_model\.skops' is not a model file"):
        bd.open_study(store).load_final_model()
    rep, reset = bd.verify_store(store, repair=True)
    assert [(d.kind, d.file, d.problem) for d in rep.damaged] == [
        ("model", "final_model.skops", "is not a model file (not a zip archive)")]
    assert _run(store, client).load_final_model() is not None


@pytest.mark.parametrize("damage", ["swapped chunk", "value rewritten"])
@pytest.mark.parametrize("chunked", [False, True])
def test_estimates_check_the_blocks_they_read(tmp_path, client, reference, damage, chunked):
    """Chunks swapped, or one value rewritten through Zarr (its chunk's own checksum then
    agrees): every estimate reading the block refuses with one line naming the file —
    in memory and on the cluster's workers — never a number."""
    import zarr

    store = _copy(reference, tmp_path)
    if damage == "swapped chunk":
        shutil.copy(store / "prediction/c/0/0/0/0", store / "prediction/c/0/0/0/2")
        name = "prediction/c/0/0/0/2"
    else:
        arr = zarr.open_array(str(store / "prediction"), mode="r+")
        arr[1, 2, 5, 4] = arr[1, 2, 5, 4] + 0.25
        name = "prediction/c/1/2/0/1"
    study = bd.open_study(store)
    with pytest.raises(StoreDamagedError, match=rf"is damaged: {name} differs from what its "
                                                r"task wrote \(checksum mismatch\); 'bbc-dask "
                                                r"verify --repair'"):
        study.bbc(n_bootstraps=50, chunked=chunked)
    if not chunked:
        with pytest.raises(StoreDamagedError, match=name):
            study.selection_ci("delong")


@pytest.mark.parametrize("array", ["fold_score", "pooled", "state"])
def test_an_edited_ledger_value_is_refused_and_repaired(tmp_path, client, reference, array):
    """A ledger value edited through Zarr (the winner's fold score set to 0.99...): the
    estimates refuse to read it, verify names its chunk, a repair and a rerun restore the
    study bit for bit."""
    import zarr

    store = _copy(reference, tmp_path)
    arr = zarr.open_array(str(store / array), mode="r+")
    winner = reference[1]["winner"]
    if array == "state":
        arr[winner, 1, 0] = 3  # "dropped"
    elif array == "pooled":
        arr[winner, 1] = 0.99
    else:
        arr[winner, 1, 0] = 0.99
    chunk = f"{array}/c/0/1" + ("/0" if array != "pooled" else "")
    with pytest.raises(StoreDamagedError, match=rf"is damaged: {chunk} differs from what the "
                                                r"study recorded \(checksum mismatch\)"):
        study = bd.open_study(store)
        study.bbc_f(n_bootstraps=50), study.best_index_, study.bbc(n_bootstraps=50)
    rep, reset = bd.verify_store(store, repair=True)
    assert [(d.kind, d.file) for d in rep.damaged] == [("ledger", chunk)]
    again = _run(store, client)
    assert again.n_fits_ == reset
    _assert_same(reference[1], _snapshot(again))
    assert bd.verify_store(store)[0].ok


#: Every array of the reference study that has a chunk (a parameter coordinate "C"
#: included; "error" has none: no configuration failed, and test_failures covers it).
ARRAYS = ["prediction", "slot_sample", "fold", "y", "state", "fit_time", "fold_score",
          "pooled", "chunk_crc", "sample", "config", "repeat", "split", "C"]


#: Those of the default suite (the others, and every garbled chunk, in the slow suite).
QUICK = ("prediction", "state", "fold_score", "y")


@pytest.mark.parametrize("array,how", [
    pytest.param(a, h, marks=() if (h, a in QUICK) == ("deleted", True) else pytest.mark.slow)
    for a in ARRAYS for h in ("deleted", "garbage")])
def test_any_damaged_chunk_gives_the_same_numbers_or_names_a_file(
        tmp_path, client, reference, array, how):
    """The corruption matrix: the first chunk of each array garbled or deleted. Reading
    gives the undamaged study's numbers or refuses, naming the file; verify then names it
    (or finds nothing, where the numbers are the same), and a repairable one is restored
    bit for bit by a repair and a rerun."""
    store = _copy(reference, tmp_path)
    chunk = sorted(p for p in (store / array / "c").rglob("*") if p.is_file())[0]
    if how == "garbage":
        chunk.write_bytes(b"\x00garbage\xff" * 3)
    else:
        chunk.unlink()
    try:
        got = _snapshot(bd.open_study(store))
    except StoreDamagedError as exc:
        assert f"{array}" in str(exc) and "\n" not in str(exc), exc
    else:
        _assert_same(reference[1], got)
    rep, _ = bd.verify_store(store)
    assert rep.ok or all(d.file and d.problem for d in rep.damaged)
    if rep.ok:  # only where nothing reads differently
        _assert_same(reference[1], _snapshot(bd.open_study(store)))
        return
    assert any(array in d.file for d in rep.damaged), rep.damaged
    if not rep.repairable:
        return
    bd.verify_store(store, repair=True)
    again = _run(store, client)
    _assert_same(reference[1], _snapshot(again))
    assert bd.verify_store(store)[0].ok


def test_the_chunked_bootstraps_check_the_blocks_of_their_sample_runs(tmp_path, client,
                                                                       monkeypatch):
    """A pointwise metric's chunked BBC reads runs of samples (a part of each chunk, which
    no checksum covers): each worker process checks each block whole once, so a swapped
    chunk is refused there too."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    X, y = load_breast_cancer(return_X_y=True)
    store = tmp_path / "acc.zarr"
    study = bd.run_study(LogisticRegression(max_iter=500), {"C": [0.01, 0.1, 1.0, 10.0]},
                         X[:200, :5], y[:200], store=store, metric="accuracy", n_splits=3,
                         random_state=0, client=client, progress=False, configs_per_task=2,
                         refit=False)
    import bbc_dask.metrics as M

    monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)  # 4 sample blocks: BBC over sample runs
    want = study.bbc(n_bootstraps=50, chunked=True).estimate
    assert bd.open_study(store).bbc(n_bootstraps=50, chunked=True).estimate == want
    shutil.copy(store / "prediction/c/0/1/0/0", store / "prediction/c/0/1/0/1")
    with pytest.raises(StoreDamagedError, match=r"prediction/c/0/1/0/1 differs from what its "
                                                r"task wrote \(checksum mismatch\)"):
        bd.open_study(store).bbc(n_bootstraps=50, chunked=True)


def test_the_dropping_test_checks_the_waves_it_reads(tmp_path, client):
    """Between BBCD's waves no task writes: the dropping test checks the blocks of the
    waves done against their checksums (a later wave's chunks, which a killed run may
    have written unrecorded, are not blamed), so a chunk swapped before a decision stops
    the run with the file named instead of dropping on wrong predictions."""
    from bbc_dask.cube import open_cube

    store = tmp_path / "b.zarr"
    small_study(store, "bbcd", client)
    cube = open_cube(store, mode="r+")
    cube.bind_lock(lambda: None)
    st = cube.state()
    st[:, :, 1:] = 0  # waves 2 and 3 pending again, their chunks left as a killed run's
    rewrite_ledger(cube, "state", st)
    cube.set_meta(dropping={"decided": [], "waves": []})
    resumed = tmp_path / "r.zarr"
    shutil.copytree(store, resumed)
    again = small_study(resumed, "bbcd", client)  # undamaged: the decisions are remade
    assert again.dropping_log
    shutil.copy(store / "prediction/c/0/0/0/0", store / "prediction/c/0/0/0/2")
    with pytest.raises(StoreDamagedError, match=r"prediction/c/0/0/0/2 differs from what its "
                                                r"task wrote \(checksum mismatch\)"):
        small_study(store, "bbcd", client)


def test_a_sparse_read_checks_the_blocks_it_touches(tmp_path, client):
    """Configurations read sparsely (BBCD's few survivors among many: their covering
    blocks would more than double the read) have each touched block checked whole."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    X, y = load_breast_cancer(return_X_y=True)
    store = tmp_path / "sparse.zarr"
    bd.run_study(LogisticRegression(max_iter=500), {"C": list(np.logspace(-3, 2, 7))},
                 X[:150, :5], y[:150], store=store, metric="roc_auc", n_splits=3,
                 random_state=0, client=client, progress=False, configs_per_task=1,
                 refit=False)
    whole = bd.open_study(store)._cube.predictions(np.arange(7))
    np.testing.assert_array_equal(bd.open_study(store)._cube.predictions(np.array([0, 6])),
                                  whole[:, [0, 6]])
    shutil.copy(store / "prediction/c/0/2/0/5", store / "prediction/c/0/2/0/6")
    with pytest.raises(StoreDamagedError, match=r"prediction/c/0/2/0/6 differs from what its "
                                                r"task wrote \(checksum mismatch\)"):
        bd.open_study(store)._cube.predictions(np.array([0, 6]))
