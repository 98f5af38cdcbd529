"""The settings (bbc_dask._tuning): Dask's configuration under ``bbc_dask``, their defaults
in the package's YAML file equal to the constants they replace, read at every use, set
by ``dask.config.set`` or an environment variable, never by assignment, listed in
docs/configuration.md, and seen by the workers a nanny starts."""
import os
import re
import subprocess
import sys

import dask
import pytest
import yaml

import bbc_dask as bd
import bbc_dask._tuning as tuning

DOC = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "configuration.md")

#: The values of the module constants the settings replaced, and their types: every
#: estimate stays bit-identical only while the defaults read back as exactly these.
BEFORE = {
    "IN_MEMORY_BYTES": 2**30, "COUNTS_BYTES": 32 * 2**20, "SUMS_BYTES": 32 * 2**20,
    "HOLD_BYTES": 64 * 2**20, "RANK_SAMPLES": 2**20, "RANK_TILE": 2**17,
    "RANK_FOLD_TILE": 2**18, "RANK_CELL_BYTES": 24, "CHUNK_BYTES": 16 * 2**20,
    "MAX_RESUBMITS": 5, "LEDGER_INTERVAL": 0.5, "LEDGER_CACHE_BYTES": 64 * 2**20,
    "TARGET_TASK_SECONDS": 1.0, "TASK_PREDICTION_BYTES": 64 * 2**20, "TAIL_TASKS_PER_THREAD": 3,
    "DRIVER_SHARE": 0.25, "DRIVER_TASK_SECONDS": 0.004, "DRIVER_TASKS_MEASURED": 20,
    "CLUSTER_POLL_SECONDS": 1.0, "QUEUE_SECONDS": 30.0, "QUEUE_TASKS_PER_THREAD": 50,
    "RANK_SECONDS": 0.01, "SPLIT_CACHE_BYTES": 256 * 2**20, "BOOTSTRAP_BLOCK_BYTES": 256 * 2**20,
    "RULE_BYTES": 4 * 2**20, "SLICE_BYTES": 4 * 2**20, "SLOT_CHUNK_BYTES": 2**18,
    "SLOT_CHUNK_BYTES_REMOTE": 2**22, "SLOT_CHUNK_MIN": 256, "READ_BYTES": 16 * 2**20,
    "VERIFY_READ_BYTES": 64 * 2**20, "RESAMPLING_TASKS_PER_THREAD": 4,
}


def _defaults():
    with open(tuning.DEFAULTS_FILE) as fh:
        return yaml.safe_load(fh)["bbc_dask"]


def test_the_defaults_read_back_as_the_constants_they_replace():
    assert set(tuning.NAMES) == set(BEFORE)
    got = {name: getattr(tuning, name) for name in tuning.NAMES}
    assert got == BEFORE
    assert {n: type(v) for n, v in got.items()} == {n: type(v) for n, v in BEFORE.items()}
    # the file holds one key per setting, and Dask's configuration has them as defaults
    assert set(_defaults()) == {tuning.config_key(n).split(".", 1)[1] for n in tuning.NAMES}
    assert dask.config.get("bbc_dask.ledger-interval") == "500ms"


def test_a_setting_is_read_at_every_use(dask_config):
    dask_config({"bbc_dask.chunk-bytes": "8 MiB", "bbc_dask.ledger-interval": "250ms",
                 "bbc_dask.target-task-seconds": 2, "bbc_dask.rank-tile": 256})
    assert tuning.CHUNK_BYTES == 8 * 2**20 and tuning.LEDGER_INTERVAL == 0.25
    assert tuning.TARGET_TASK_SECONDS == 2.0 and type(tuning.TARGET_TASK_SECONDS) is float
    assert tuning.RANK_TILE == 256
    with dask.config.set({"bbc_dask.chunk-bytes": 1}):
        assert tuning.CHUNK_BYTES == 1
    assert tuning.CHUNK_BYTES == 8 * 2**20


def test_assigning_a_setting_fails_and_says_what_to_do_instead(monkeypatch):
    with pytest.raises(AttributeError, match=re.escape(
            "bbc_dask._tuning.CHUNK_BYTES is a Dask setting: use "
            "dask.config.set({'bbc_dask.chunk-bytes': 3})")):
        tuning.CHUNK_BYTES = 3
    with pytest.raises(AttributeError, match="dask.config.set"):
        monkeypatch.setattr(tuning, "HOLD_BYTES", 3)
    assert tuning.CHUNK_BYTES == BEFORE["CHUNK_BYTES"] and tuning.HOLD_BYTES == BEFORE["HOLD_BYTES"]
    with pytest.raises(AttributeError, match="has no attribute 'CHUNK_BYTE'"):
        tuning.CHUNK_BYTE  # noqa: B018 - a misspelt setting
    assert not hasattr(tuning, "__path__") and "CHUNK_BYTES" in dir(tuning)


def test_an_environment_variable_sets_one():
    code = ("import dask, bbc_dask._tuning as t; "
            "print(t.CHUNK_BYTES, t.SLOT_CHUNK_MIN, dask.config.get('bbc_dask.chunk-bytes'))")
    env = dict(os.environ, DASK_BBC_DASK__CHUNK_BYTES="2 MiB", DASK_BBC_DASK__SLOT_CHUNK_MIN="64")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == [str(2 * 2**20), "64", "2", "MiB"], out.stderr


def test_the_docs_list_every_setting_with_its_default():
    with open(DOC) as fh:
        rows = re.findall(r"^\| `bbc_dask\.([a-z-]+)` \| ([^|]+) \|", fh.read(), re.M)
    assert [k for k, _ in rows] == list(_defaults())  # every key once, in the file's order
    assert {k: d.strip() for k, d in rows} == {k: str(v) for k, v in _defaults().items()}


def _read_on_worker(names):
    """What a task reads (run on a worker)."""
    return os.getpid(), [getattr(tuning, n) for n in names]


def test_workers_of_a_local_cluster_see_what_was_set_before_it_started(make_local_client,
                                                                          dask_config):
    """A nanny gives its worker its process's configuration: a value set before the
    cluster starts is what a task reads; one set later is not (the worker keeps its)."""
    dask_config({"bbc_dask.chunk-bytes": "3 MiB", "bbc_dask.rank-tile": 512})
    with make_local_client(n_workers=1) as c:
        with dask.config.set({"bbc_dask.rank-tile": 1024}):
            pid, got = c.submit(_read_on_worker, ["CHUNK_BYTES", "RANK_TILE", "SLICE_BYTES"]).result()
    assert pid != os.getpid() and got == [3 * 2**20, 512, BEFORE["SLICE_BYTES"]]


def test_make_clients_workers_see_the_settings_too(dask_config):
    """make_client's workers (forked from its fork server, or spawned) preload the study's
    modules before the nanny's configuration is set: the value set is still the one read."""
    dask_config({"bbc_dask.split-cache-bytes": "5 MiB"})
    with bd.make_client("local", n_workers=1, dashboard_address=":0") as c:
        seen = list(c.run(_read_on_worker, ["SPLIT_CACHE_BYTES"]).values())
    assert [got for _, got in seen] == [[5 * 2**20]] and seen[0][0] != os.getpid()


def test_an_in_memory_estimate_does_not_load_dask():
    """The in-memory statistics read their settings from the package's file while Dask is
    not loaded (a first bd.bbc on arrays would otherwise pay for importing it)."""
    code = ("import sys, numpy as np, bbc_dask as bd\n"
            "rng = np.random.default_rng(0)\n"
            "y = rng.integers(0, 2, 200); P = rng.random((200, 5))\n"
            "bd.bbc(P, y, metric='roc_auc', n_bootstraps=50, random_state=0)\n"
            "print(sorted(m for m in ('dask', 'dask.config', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("DASK_")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "['yaml']"


def test_a_bad_setting_is_one_line_naming_the_key(dask_config):
    for key, value in (("max-resubmits", 5.5), ("chunk-bytes", "lots")):
        dask_config({f"bbc_dask.{key}": value})
        with pytest.raises(ValueError, match=rf"^The 'bbc_dask.{key}' parameter of Dask's "
                                             rf"configuration must be .* "
                                             rf"Got {re.escape(repr(value))} instead.$"):
            getattr(tuning, key.upper().replace("-", "_"))


def test_the_defaults_outlive_a_set_block_that_saw_them_first():
    """A dask.config.set block that was the first to see the namespace removes it when it
    ends; the next read adds the defaults again."""
    code = ("import dask, bbc_dask._tuning as t\n"
            "with dask.config.set({'bbc_dask.chunk-bytes': 5}): assert t.CHUNK_BYTES == 5\n"
            "assert t.CHUNK_BYTES == 16 * 2**20\n"
            "print(dask.config.get('bbc_dask.hold-bytes'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "64 MiB"
