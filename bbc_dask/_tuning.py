"""bbc_dask's settings: sizes and times that decide how work is cut and scheduled, never
what is computed (every estimate is the same bit for bit whatever they are).

They live in Dask's configuration, under the ``bbc_dask`` namespace, with their defaults
and the reasons for them in ``bbc_dask/bbc_dask.yaml`` (the list: docs/configuration.md;
the measurements: docs/performance.md, "Tuning constants"). Set one as any Dask setting::

    dask.config.set({"bbc_dask.in-memory-bytes": 2**32})    # or "4 GiB"

or with an environment variable (``DASK_BBC_DASK__IN_MEMORY_BYTES=4294967296``) or a YAML
file in ``~/.config/dask/``. A worker process that a nanny starts is given the
configuration the nanny's process had when the nanny was created: the tasks see what was
set before the cluster (or a scale-up) started.

The package reads them as ``tuning.NAME`` (``from .. import _tuning as tuning``;
``IN_MEMORY_BYTES`` is ``bbc_dask.in-memory-bytes``): a module ``__getattr__`` (PEP 562)
looks the key up in Dask's configuration at every read, so a value set later is taken.
Assigning ``bbc_dask._tuning.NAME`` raises: it would change nothing a worker sees.

Dask is imported, and these defaults added to its configuration, at the first read, not
at import: the in-memory statistics import this module without loading Dask (0.2 s).
Until then ``dask.config.get("bbc_dask....")`` finds only what a user set; every read
here falls back to the file's default. A process that has not loaded Dask and has no
``DASK_BBC_DASK__*`` variable reads a default written as a plain number from the file
alone (the in-memory statistics' settings are), so a first in-memory ``bbc`` does not
load Dask either.
"""
import copy
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
    from dask.utils import parse_bytes, parse_timedelta

    defaults = {NAMESPACE: copy.deepcopy(_file_defaults())}
    dask.config.update_defaults(defaults)

    def seconds(value):
        # a number is taken as it is (parse_timedelta would turn 1.0 into the int 1)
        return float(value) if isinstance(value, (int, float)) else float(parse_timedelta(value))

    read = {"bytes": parse_bytes, "seconds": seconds, "count": operator.index, "share": float}
    return dask.config, defaults[NAMESPACE], read


@functools.cache
def _file_defaults():
    """The defaults of :data:`DEFAULTS_FILE` (kebab-case keys), read without Dask."""
    import yaml

    with open(DEFAULTS_FILE) as fh:
        # safe_load's loader, in C where PyYAML has it: 1 ms against 14 ms in Python
        return yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))[NAMESPACE]


#: What each kind of value must be, for the error that names a bad one.
_EXPECTED = {"bytes": "a size in bytes (a number, or a string such as '64 MiB')",
             "seconds": "a time in seconds (a number, or a string such as '500ms')",
             "count": "an integer", "share": "a number"}


def __getattr__(name):
    """``tuning.NAME``: the setting's value in Dask's configuration now."""
    try:
        kind = _KIND[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    key = config_key(name)
    short = key[len(NAMESPACE) + 1:]
    if "dask.config" not in sys.modules and not any(k.startswith("DASK_BBC_DASK")
                                                    for k in os.environ):
        plain = _file_defaults()[short]
        if isinstance(plain, (int, float)) and not isinstance(plain, bool):
            return float(plain) if kind in ("seconds", "share") else int(plain)
    config, defaults, read = _config()
    if NAMESPACE not in config.config:
        # a dask.config.set block that was the first to see the namespace took it (and
        # the defaults added inside it) away when it ended: add them again
        config.update(config.config, {NAMESPACE: dict(defaults)}, priority="old")
    value = config.get(key, default=defaults[short])
    try:
        return read[kind](value)
    except (TypeError, ValueError):
        from ._doors import owned_by
        from .exceptions import InvalidParameterError

        with owned_by("Dask's configuration"):  # a setting, not a parameter of the call
            raise InvalidParameterError.of(key, _EXPECTED[kind], value) from None


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
