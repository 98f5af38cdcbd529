"""bbc_dask's settings: sizes and times that decide how work is cut and scheduled, never
what is computed (every estimate is the same bit for bit whatever they are).

They live in Dask's configuration, under the ``bbc_dask`` namespace, with their defaults
and the reasons for them in ``bbc_dask/bbc_dask.yaml`` (the list: docs/configuration.md;
the measurements: docs/performance.md, "Tuning constants"). Set one as any Dask setting::

    dask.config.set({"bbc_dask.in-memory-bytes": 2**32})    # or "4 GiB"

or with an environment variable (``DASK_BBC_DASK__IN_MEMORY_BYTES=4294967296``) or a YAML
file in ``~/.config/dask/``. A worker process that a nanny starts is given the
configuration of the process that started the cluster, so the tasks see it too.

The package reads them as ``tuning.NAME`` (``from .. import _tuning as tuning``;
``IN_MEMORY_BYTES`` is ``bbc_dask.in-memory-bytes``): a module ``__getattr__`` (PEP 562)
looks the key up in Dask's configuration at every read, so a value set later is taken.
Assigning ``bbc_dask._tuning.NAME`` raises: it would change nothing a worker sees.

Dask is imported, and these defaults added to its configuration, at the first read, not
at import: the in-memory statistics import this module without loading Dask (0.2 s).
Until then ``dask.config.get("bbc_dask....")`` finds only what a user set; every read
here falls back to the file's default.
"""
import functools
import operator
import os
import sys
import types

#: The namespace of the settings in Dask's configuration.
NAMESPACE = "bbc_dask"

#: The file of their defaults, shipped in the package.
DEFAULTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bbc_dask.yaml")

#: The settings' Python names by the kind of value each is read as: a size in bytes (an
#: int: ``parse_bytes`` reads "64 MiB"), a time in seconds (a float: ``parse_timedelta``
#: reads "500ms"), a count (an int), a share (a float).
_KINDS = {
    "bytes": ("IN_MEMORY_BYTES", "COUNTS_BYTES", "SUMS_BYTES", "HOLD_BYTES", "RANK_CELL_BYTES",
              "CHUNK_BYTES", "LEDGER_CACHE_BYTES", "TASK_PREDICTION_BYTES", "SPLIT_CACHE_BYTES",
              "BOOTSTRAP_BLOCK_BYTES", "RULE_BYTES", "SLICE_BYTES", "SLOT_CHUNK_BYTES",
              "SLOT_CHUNK_BYTES_REMOTE", "READ_BYTES", "VERIFY_READ_BYTES"),
    "seconds": ("LEDGER_INTERVAL", "TARGET_TASK_SECONDS", "DRIVER_TASK_SECONDS",
                "CLUSTER_POLL_SECONDS", "QUEUE_SECONDS", "RANK_SECONDS"),
    "count": ("RANK_SAMPLES", "RANK_TILE", "RANK_FOLD_TILE", "MAX_RESUBMITS",
              "TAIL_TASKS_PER_THREAD", "DRIVER_TASKS_MEASURED", "QUEUE_TASKS_PER_THREAD",
              "SLOT_CHUNK_MIN", "RESAMPLING_TASKS_PER_THREAD"),
    "share": ("DRIVER_SHARE",),
}
_KIND = {name: kind for kind, names in _KINDS.items() for name in names}

#: Every setting's Python name.
NAMES = tuple(_KIND)


def config_key(name):
    """The key in Dask's configuration of the setting ``name``: ``"CHUNK_BYTES"`` is
    ``"bbc_dask.chunk-bytes"``."""
    return f"{NAMESPACE}.{name.lower().replace('_', '-')}"


@functools.cache
def _config():
    """Dask's configuration, with the defaults of :data:`DEFAULTS_FILE` added (once; a
    value already set, by the user or a nanny, is kept), those defaults (kebab-case keys)
    and the reader of each kind of value."""
    import dask.config
    import yaml
    from dask.utils import parse_bytes, parse_timedelta

    with open(DEFAULTS_FILE) as fh:
        # safe_load's loader, in C where PyYAML has it: 1 ms against 14 ms in Python
        defaults = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    dask.config.update_defaults(defaults)

    def seconds(value):
        # a number is taken as it is (parse_timedelta would turn 1.0 into the int 1)
        return float(value) if isinstance(value, (int, float)) else float(parse_timedelta(value))

    read = {"bytes": parse_bytes, "seconds": seconds, "count": operator.index, "share": float}
    return dask.config, defaults[NAMESPACE], read


def __getattr__(name):
    """``tuning.NAME``: the setting's value in Dask's configuration now."""
    try:
        kind = _KIND[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    config, defaults, read = _config()
    key = config_key(name)
    return read[kind](config.get(key, default=defaults[key[len(NAMESPACE) + 1:]]))


def __dir__():
    """The module's names and the settings'."""
    return sorted(set(globals()) | set(NAMES))


class _Settings(types.ModuleType):
    """This module's type: its settings cannot be assigned (a worker would never see it)."""

    def __setattr__(self, name, value):
        if name in _KIND:
            raise AttributeError(f"{__name__}.{name} is a Dask setting: use "
                                 f"dask.config.set({{{config_key(name)!r}: {value!r}}})")
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Settings
