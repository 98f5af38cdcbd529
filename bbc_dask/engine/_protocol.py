"""Protocols: the plan of splits a study runs.

The engine runs whatever partitions a protocol gives: fold ids of shape (N, R), one
column per repeat, each sample in exactly one test set of every repeat, trained on the
other folds. The cube is laid out by those ids and the ledger is indexed by (config,
repeat, fold), so a new protocol is one new class — a :class:`Protocol` with its
:meth:`~Protocol.folds` and :meth:`~Protocol.describe`, overriding the hooks the run calls
where it differs (what it checks before the run takes the store's lock, the default block,
how the run is announced, what a failure everywhere means, what happens after the waves)
— and one line registering it (:func:`register_protocol`), not edits across the engine.
A protocol object may be given as ``cv`` to :func:`~bbc_dask.run_study`.

Three protocols are registered here and in ``_nested.py``:

- :class:`KFoldProtocol` — the papers' CVT: stratified (classification) or grouped K-fold,
  ``n_repeats`` partitions from the study's seed (2018 paper, §3; the default).
- :class:`SplitsProtocol` — the user's own partitions: any scikit-learn splitter
  (``GroupKFold``, ``PredefinedSplit``, ``RepeatedStratifiedKFold``, ...) or a list of
  ``(train, test)`` index pairs. BBC and BBC-F resample whole samples and whole folds, so
  they are defined where the test sets partition the samples and every model is trained
  on the rest; splitters that train on a part of the rest (``TimeSeriesSplit``) or whose
  test sets overlap (``ShuffleSplit``) are refused with a one-line error.
"""
from __future__ import annotations

import abc
import hashlib
import warnings

import numpy as np

from .._doors import door, spelled
from ..exceptions import AllConfigurationsFailedError, InvalidParameterError

__all__ = ["PROTOCOLS", "KFoldProtocol", "Protocol", "SplitsProtocol", "as_protocol",
           "register_protocol"]

#: kind -> protocol class, for what reads a store's protocol back
#: (:func:`~._registry.protocol_class`)
PROTOCOLS = {}


@door("register_protocol")
def register_protocol(cls):
    """Register a :class:`Protocol` class by its ``kind`` (a class decorator); a kind is
    one class's (registering the same class again is allowed)."""
    kind = getattr(cls, "kind", None)
    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise InvalidParameterError.of("cls", "a subclass of bbc_dask.Protocol", cls)
    if not isinstance(kind, str) or not kind:
        raise InvalidParameterError.of("cls", "a Protocol class whose kind is a "
                                       "non-empty string", shown=f"{cls.__name__}.kind = {kind!r}")
    known = PROTOCOLS.get(kind)
    if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise InvalidParameterError.of("cls", "a Protocol class with a kind of "
                                       f"its own ({kind!r} is {known.__qualname__}'s)", cls)
    PROTOCOLS[kind] = cls
    return cls


class Protocol(abc.ABC):
    """What every protocol gives the run: the partitions (:meth:`folds`, fold ids ``(N,
    n_repeats)``, -1 for a sample in no fold of a repeat; abstract: a subclass without it
    cannot be made), its record in the spec (:meth:`describe`), and the hooks below, whose
    defaults are K-fold's: a subclass overrides those where it differs. ``n_splits`` and
    ``n_repeats`` are the cube's."""

    kind = None
    #: whether :func:`~bbc_dask.open_study` reads its stores (BBC is defined on them)
    opens_as_study = True
    n_splits = n_repeats = None

    @abc.abstractmethod
    def folds(self, y, groups, classification, root):
        """Fold ids ``(N, n_repeats)`` of the data, from the study's seed ``root``."""

    def describe(self):
        """What the study's spec records of the protocol (``{"protocol": {...}}``)."""
        return {"protocol": {"kind": self.kind}}

    def before_lock(self, run, planned):
        """Checks that need the study's seed, made before the run takes the store's lock
        (``planned``: the run has planned its seed and configurations)."""

    def default_block(self, n_configs):
        """Configurations per block (and chunk) when not given: see ``configs_per_task``
        of :func:`~bbc_dask.run_study`."""
        return max(1, min(10, n_configs // 64))

    def shape_text(self, state):
        """How the run announces the cells of ``state`` (config, repeat, fold)."""
        _, n_rep, n_spl = state.shape
        return f"{n_spl} folds x {n_rep} repeat{'s' if n_rep > 1 else ''} = {state.size:,} fits"

    #: whether the waves stop as soon as every active configuration has a failed cell
    stops_when_all_failed = True

    def needs_pooled(self, selection):
        """Whether the ledger's pooled scores are computed (the winner and ``cv_results_``
        read them)."""
        return True

    def check_failures(self, cube):
        """Raise :class:`~bbc_dask.exceptions.AllConfigurationsFailedError` where no
        configuration can be selected after the waves."""
        from ..cube import FAILED, failure_groups

        st = cube.state()
        if not np.all(np.any(st == FAILED, axis=(1, 2))):
            return
        groups = failure_groups(cube)
        shown = "; ".join(f"{g['error'].splitlines()[0] if g['error'] else '?'} ({g['count']} "
                          f"configuration{'s' if g['count'] > 1 else ''}, e.g. configuration "
                          f"{g['configs'][0]})" for g in groups[:3])
        more = f"; and {len(groups) - 3} other errors" if len(groups) > 3 else ""
        raise AllConfigurationsFailedError(
            f"Every configuration failed ({st.shape[0]} of {st.shape[0]}): no model can be "
            f"selected. {shown}{more}. The errors are kept in the store ({cube.path}).",
            groups)

    def after_waves(self, run, client):
        """What the run does once the waves are recorded: the winner refit on all data
        (when asked), returned; None without one."""
        return run.refit_winner(client) if run.request.execution.refit else None


@register_protocol
class KFoldProtocol(Protocol):
    """K-fold cross-validation, ``n_repeats`` times: stratified for classification,
    grouped (and stratified where possible) with groups; each repeat's partition from its
    own child of the study's seed."""

    kind = "kfold"

    def __init__(self, n_splits, n_repeats):
        self.n_splits = n_splits
        self.n_repeats = n_repeats

    def folds(self, y, groups, classification, root):
        """Fold ids ``(N, R)``."""
        from ._plan import make_folds

        return make_folds(np.asarray(y), groups, self.n_splits, self.n_repeats, classification,
                          root)

    def describe(self):
        """What the study's spec records beside ``n_splits`` and ``n_repeats``: nothing
        (the partitions follow from the seed), so stores made before protocols existed
        compare equal."""
        return {}


@register_protocol
class SplitsProtocol(Protocol):
    """The partitions of a user's splitter or list of ``(train, test)`` pairs, grouped
    into repeats: consecutive test sets that together cover every sample once form one
    repeat (so ``RepeatedKFold`` gives its repeats).

    The partitions are computed once, when the request is built (a shuffling splitter
    without a fixed ``random_state`` would give others on every call); the spec records
    their digest, so a resume with other partitions is refused.
    """

    kind = "splits"

    def __init__(self, folds, source):
        self._folds = folds
        self.source = source
        self.n_repeats = folds.shape[1]
        self.n_splits = int(folds.max()) + 1

    def folds(self, y=None, groups=None, classification=None, root=None):
        return self._folds.copy()

    def describe(self):
        return {"protocol": {"kind": self.kind, "source": self.source,
                             "folds": hashlib.sha1(np.ascontiguousarray(self._folds)).hexdigest()}}

    @classmethod
    def from_cv(cls, cv, n, y, groups, name):
        """The protocol of ``cv`` (a splitter or an iterable of pairs) over ``n`` samples;
        an InvalidParameterError naming ``name`` (and the door) if its test sets do not
        partition the samples into repeats with the same number of folds."""
        if isinstance(cv, (str, bytes)) or not (hasattr(cv, "split") or hasattr(cv, "__iter__")):
            raise InvalidParameterError.of(
                name, "an int, a scikit-learn splitter or an iterable of (train, test) "
                "index pairs", cv)
        if hasattr(cv, "split") and hasattr(cv, "get_n_splits"):
            source = type(cv).__name__
            try:
                with warnings.catch_warnings():  # groups go to every splitter; some ignore them
                    warnings.filterwarnings("ignore", "The groups parameter is ignored")
                    splits = list(cv.split(np.zeros((n, 1)), y, groups))
            except (ValueError, TypeError) as exc:
                raise InvalidParameterError.of(name, "a splitter that can split these data",
                                               shown=f"{source}", note=f"({exc})") from None
        else:
            source = "list of (train, test) pairs"
            splits = list(cv)
        return cls(_partitions(splits, n, name, source), source)


def _partitions(splits, n, name, source):
    """Fold ids ``(N, R)`` from ``(train, test)`` pairs, each repeat a partition."""
    def bad(why):
        return InvalidParameterError.of(
            name, "splits whose test sets partition the samples (each sample in one "
                          "test set per repeat, trained on all the others)",
            shown=f"{source} ({why})",
            note="BBC and BBC-F resample whole samples and folds, so they are defined on "
                 "such splits only.")

    repeats, current, seen = [], np.full(n, -1, dtype=np.int64), 0
    for i, pair in enumerate(splits):
        try:
            train, test = (np.asarray(a) for a in pair)
        except (TypeError, ValueError):
            raise bad(f"split {i} is not a (train, test) pair") from None
        test, train = _indices(test, n, i, bad), _indices(train, n, i, bad)
        if np.unique(test).size != test.size or np.any(current[test] >= 0):
            raise bad(f"the test set of split {i} repeats samples of an earlier one")
        if train.size + test.size != n or np.intersect1d(train, test).size:
            raise bad(f"the training set of split {i} is not all the samples outside its test set")
        k = int(current.max()) + 1 if seen else 0
        current[test] = k
        seen += test.size
        if seen == n:
            repeats.append(current)
            current, seen = np.full(n, -1, dtype=np.int64), 0
    if seen or not repeats:
        raise bad(f"its {len(splits)} split(s) leave samples in no test set"
                  if splits else "no split")
    sizes = {int(r.max()) + 1 for r in repeats}
    if len(sizes) > 1:
        raise bad(f"its repeats have {sorted(sizes)} folds (every repeat needs the same number)")
    if sizes == {1}:
        raise bad("a single test set holds every sample")
    return np.stack(repeats, axis=1)


def _indices(a, n, i, bad):
    if a.dtype == bool:
        if a.shape != (n,):
            raise bad(f"split {i} has a boolean mask of shape {a.shape} for {n} samples")
        return np.flatnonzero(a)
    if a.ndim != 1 or (a.size and (not np.issubdtype(a.dtype, np.integer) or a.min() < 0
                                   or a.max() >= n)):
        raise bad(f"the indices of split {i} are not positions 0..{n - 1}")
    return a.astype(np.int64)


def as_protocol(cv, n_splits, n_repeats, n, y, groups):
    """The request's protocol: K-fold × repeats when ``cv`` is None or an int (the number
    of folds), ``cv`` itself when a :class:`Protocol`, else the partitions of a splitter or
    list of pairs."""
    if cv is None:
        return KFoldProtocol(n_splits, n_repeats)
    changed = [spelled(k) for k, v, default in (("n_splits", n_splits, 10),
                                                      ("n_repeats", n_repeats, 1)) if v != default]
    if changed:
        raise InvalidParameterError.of(
            "cv", f"None when {' and '.join(map(repr, changed))} {'is' if len(changed) == 1 else 'are'} "
            f"given (it sets the splits)", cv)
    if isinstance(cv, Protocol):
        return cv
    return SplitsProtocol.from_cv(cv, n, y, groups, "cv")
