"""Study plan: candidates, folds, response method, fingerprint. No fitting here."""
from __future__ import annotations

import hashlib
import numbers

import numpy as np
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    ParameterGrid,
    ParameterSampler,
    StratifiedGroupKFold,
    StratifiedKFold,
)

from .. import _validation as validation
from .._fingerprint import canonical, encode
from .._random import child_generator
from ..exceptions import InvalidParameterError
from ._tasks import configured, method_problem, response_method

__all__ = [
    "Configurations",
    "candidates",
    "check_search",
    "data_digest",
    "describe_params",
    "make_folds",
    "method_problem",
    "response_method",
]


#: The step a study file's search sets per configuration: each grid entry is wrapped in
#: the one-step pipeline ``model`` (``cli.build_search``), its keys ``model__<key>``.
STEP = "model"


def is_study_file(keys, metadata):
    """Whether the parameter ``keys`` are a study file's wrapped ones (``model``,
    ``model__svc__C``), as ``metadata`` (the resolved study file given to
    :func:`bbc_dask.run_study`) tells: their user's names drop ``model__``."""
    return (isinstance(metadata, dict) and isinstance(metadata.get("grid"), list)
            and all(k == STEP or k.startswith(STEP + "__") for k in keys))


class Configurations:
    """The study's configurations, materialised one at a time from their index.

    A grid is kept as scikit-learn's ``ParameterGrid`` (``grid[i]`` decodes the index, the
    product is never built), so a study of a million configurations plans in
    milliseconds and each task receives only its own parameter dicts. Random search keeps
    its ``n_iter`` draws. Index order is ``ParameterGrid``'s (and ``GridSearchCV``'s).
    """

    def __init__(self, kind, source):
        self.kind = kind  # "grid" or "random"
        self._source = source  # a ParameterGrid or a list of dicts

    def __len__(self):
        return len(self._source)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        i = int(i)
        if not -n <= i < n:
            raise IndexError(f"configuration {i} out of range ({n} configurations)")
        p = self._source[i % n]
        # keys in sorted order, as ParameterGrid's iteration (GridSearchCV's params) has
        # them: its indexing gives another order
        return dict(sorted(p.items())) if self.kind == "grid" else p

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def take(self, idx):
        return [self[int(i)] for i in idx]

    def describe(self):
        """A JSON description (values by :func:`describe_params`' rules) from which
        :meth:`from_description` rebuilds the same index order."""
        if self.kind == "grid":
            return {"kind": "grid", "grid": [
                {k: [_describe_value(v) for v in vals] for k, vals in sorted(g.items())}
                for g in self._source.param_grid]}
        return {"kind": "random", "params": [describe_params(p) for p in self._source]}

    @classmethod
    def from_description(cls, desc):
        if desc["kind"] == "grid":
            return cls("grid", ParameterGrid(desc["grid"]))
        return cls("random", list(desc["params"]))

    def columns(self, metadata=None):
        """The parameters as columns over the configurations, for the store's
        coordinates on ``config``: ``{name: (parameter, choices, codes)}`` — the values
        the parameter takes as :meth:`describe` records them (JSON-safe; other objects by
        repr) and, per configuration, the position of its value in ``choices`` (int32;
        -1 where it has no such parameter: a grid of several dicts).

        ``name`` is the parameter as the user wrote it: a study file's search wraps each
        entry in the one-step pipeline ``model`` (``cli.build_search``), so there the
        prefix ``model__`` is dropped (``svc__C``, not ``model__svc__C``), as ``metadata``
        (the resolved study file given to :func:`bbc_dask.run_study`) tells.

        A grid's codes are computed per key (ParameterGrid's order: the last key in sorted
        order varies fastest), never by materialising each configuration: a million
        configurations cost a few integer arrays."""
        desc = self.describe()
        n = len(self)
        if desc["kind"] == "grid":
            keys = sorted({k for g in desc["grid"] for k in g})
            choices = {k: [] for k in keys}
            codes = {k: np.full(n, -1, dtype=np.int32) for k in keys}
            base = 0
            for g in desc["grid"]:
                items = sorted(g.items())
                size = int(np.prod([len(v) for _, v in items])) if items else 1
                stride = 1
                for k, vals in reversed(items):
                    pos = (np.arange(size, dtype=np.int32) // stride) % len(vals)
                    codes[k][base:base + size] = pos + len(choices[k])
                    choices[k] += list(vals)
                    stride *= len(vals)
                base += size
        else:
            keys = sorted({k for p in desc["params"] for k in p})
            choices = {k: [p[k] for p in desc["params"] if k in p] for k in keys}
            codes = {}
            for k in keys:
                have = np.array([k in p for p in desc["params"]], dtype=bool)
                codes[k] = np.full(n, -1, dtype=np.int32)
                codes[k][have] = np.arange(int(have.sum()), dtype=np.int32)
        wrapped = bool(keys) and is_study_file(keys, metadata)
        return {(k[len(STEP) + 2:] if wrapped and k != STEP else k): (k, choices[k], codes[k])
                for k in keys}

    def representatives(self):
        """Indices that, between them, take every value of every parameter (for a grid:
        per sub-grid, each value of each key with the other keys at their first value):
        checked up front, so a typo or a missing response method fails fast; the other
        configurations are checked by the tasks that fit them."""
        if self.kind == "random":
            return list(range(min(len(self), 100)))
        out, base = set(), 0
        for g in self._source.param_grid:
            if not g:
                out.add(base)
                base += 1
                continue
            keys = [k for k, _ in sorted(g.items())][::-1]  # ParameterGrid's digit order
            sizes = [len(g[k]) for k in keys]
            stride = np.cumprod([1] + sizes[:-1])
            for j, n in enumerate(sizes):
                out.update(base + int(v * stride[j]) for v in range(n))
            base += int(np.prod(sizes))
        return sorted(out)


_GRID = "a dict, or a list of dicts, of parameter value lists (a scikit-learn ParameterGrid)"
_DISTRIBUTIONS = ("a dict, or a list of dicts, of lists or scipy.stats distributions (a "
                  "scikit-learn ParameterSampler)")


def check_search(param_grid, param_distributions, n_iter):
    """Validate the search arguments (no random draw yet: the seed may come from the store)."""
    validation.check_exactly_one({"param_grid": param_grid, "param_distributions": param_distributions},
                        note="'param_grid' runs a grid search; 'param_distributions' "
                                     "with 'n_iter' a random search.")
    if param_grid is not None:
        try:
            grid = ParameterGrid(param_grid)
            n = len(grid)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError.of("param_grid", _GRID, param_grid,
                                           note=f"({exc})") from None
        if n == 0:  # ({} is one configuration: the estimator as given, as GridSearchCV takes it)
            raise InvalidParameterError.of("param_grid", "a grid that defines at least one configuration",
                                           param_grid)
        return Configurations("grid", grid)
    n_iter = validation.check_int(n_iter, "n_iter")
    try:
        ParameterSampler(param_distributions, n_iter, random_state=0)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError.of("param_distributions", _DISTRIBUTIONS,
                                       param_distributions, note=f"({exc})") from None
    return None


def candidates(param_grid, param_distributions, n_iter, root):
    """The configurations: a grid (dict or list of dicts, lazy) or ``n_iter`` random
    draws seeded by ``root``'s ``search`` child. Returns ``(Configurations, kind)``."""
    grid = check_search(param_grid, param_distributions, n_iter)
    if grid is not None:
        return grid, "grid"
    seed = int(child_generator(root, "search", 0).integers(2**31))
    try:
        params = list(ParameterSampler(param_distributions, n_iter, random_state=seed))
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError.of("param_distributions", _DISTRIBUTIONS,
                                       param_distributions, note=f"({exc})") from None
    return Configurations("random", params), "random"


def make_folds(y, groups, n_splits, n_repeats, classification, root):
    """Fold ids ``(N, R)``: repeat ``r`` is split with a seed from its own child."""
    n = y.shape[0]
    folds = np.empty((n, n_repeats), dtype=np.int64)
    dummy = np.zeros((n, 1))
    for r in range(n_repeats):
        seed = int(child_generator(root, "folds", r).integers(2**31))
        if groups is not None:
            cls = StratifiedGroupKFold if classification else GroupKFold
            splitter = cls(n_splits, shuffle=True, random_state=seed)
        elif classification:
            splitter = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        else:
            splitter = KFold(n_splits, shuffle=True, random_state=seed)
        for k, (_, test) in enumerate(splitter.split(dummy, y, groups)):
            folds[test, r] = k
    return folds


#: Fits of a few rows, at most, that look for a method that may come with the fit.
MAX_FITS_TRIED = 8


def check_estimator_methods(estimator, configs, metric, indices=None, data=None):
    """Raise a ValueError naming the first configuration (of ``indices``, default
    ``configs.representatives()``) that cannot serve ``metric``. A method that may come
    with the fit (:func:`~._tasks.may_gain_method`) is looked for on a fit of a few rows
    of ``data`` (``(X, y, classification)``); without data, or where that fit fails, the
    study's fits decide."""
    from ._tasks import may_gain_method
    from ._xcheck import problem_before_run

    tried = 0
    for i in configs.representatives() if indices is None else indices:
        p = configs[i]
        try:
            est = configured(estimator, p)
        except (ValueError, TypeError) as exc:
            hint = validation.parameter_hint(estimator, p)
            raise InvalidParameterError.of(
                "param_grid" if configs.kind == "grid" else "param_distributions", "parameters the estimator takes",
                shown=f"configuration {i} ({p!r})", note=f"({exc})" + (f" {hint}" if hint else "")) from None
        fit = data is not None and tried < MAX_FITS_TRIED and may_gain_method(est, metric)
        tried += fit
        problem = problem_before_run(est, metric, *(data or (None, None, None)), fit=fit)
        if problem:
            raise InvalidParameterError.of(
                "estimator", f"able to serve the metric {metric.name!r}",
                shown=f"one that, with configuration {i} ({p!r}), {problem}")


def data_digest(*arrays):
    """Stable SHA-1 of the data (arrays or DataFrames), for the study fingerprint."""
    from joblib import hash as jhash

    return [None if a is None else jhash(a, hash_name="sha1") for a in arrays]


def params_digest(params, routing=False):
    """Stable SHA-1 of a dict of fit parameters and whether metadata routing routes them
    (None without parameters), for the fingerprint."""
    from joblib import hash as jhash

    if not params:
        return None
    return jhash((dict(sorted(params.items())), bool(routing)), hash_name="sha1")


def _describe_value(v):
    if isinstance(v, (str, bool)) or v is None:
        return v
    if isinstance(v, numbers.Number):
        return v.item() if isinstance(v, np.generic) else v
    return repr(v)


def describe_params(params):
    """JSON-safe description of a parameter dict (values by repr)."""
    return {k: _describe_value(v) for k, v in params.items()}


def _class_name(obj):
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def _estimator_classes(obj):
    """Class names of ``obj`` and of every estimator among its deep parameters."""
    names = {_class_name(obj)}
    if hasattr(obj, "get_params") and not isinstance(obj, type):
        for v in obj.get_params(deep=True).values():
            if hasattr(v, "get_params") and not isinstance(v, type):
                names.add(_class_name(v))
    return names


def describe_classes(estimator, configs):
    """The classes of the study's estimators, for the fingerprint: ``estimator`` the
    estimator's own (module and qualified name), each estimator among its deep
    parameters by its parameter name (a pipeline's steps), and ``grid:<key>`` the sorted
    classes a configuration's value of ``key`` brings (with the estimators inside it).
    The parameters alone (:func:`describe_estimator`) do not tell a subclass that keeps
    them — one that reverses its scores — from its base."""
    out = {"estimator": _class_name(estimator)}
    for k, v in sorted(estimator.get_params(deep=True).items()):
        if hasattr(v, "get_params") and not isinstance(v, type):
            out[k] = _class_name(v)
    values = {}
    if configs.kind == "grid":
        for g in configs._source.param_grid:
            for k, vals in g.items():
                values.setdefault(k, []).extend(vals)
    else:
        for p in configs._source:
            for k, v in p.items():
                values.setdefault(k, []).append(v)
    for k, vals in sorted(values.items()):
        names = set().union(*(_estimator_classes(v) for v in vals
                              if hasattr(v, "get_params") and not isinstance(v, type)))
        if names:
            out[f"grid:{k}"] = sorted(names)
    return out


#: The fingerprint's encoding of values (``spec["fingerprint"]``): 2 is the canonical
#: normal form of :mod:`bbc_dask._fingerprint`; a store without the key was written with 1
#: (simple values as they are, other values by repr, candidates hashed by repr), which a
#: resume of such a store reproduces.
FINGERPRINT = 2


def describe_estimator(estimator, version=FINGERPRINT):
    """The estimator's deep parameters as the fingerprint records them (``version`` 1:
    as a store without ``spec["fingerprint"]`` recorded them)."""
    params = sorted(estimator.get_params(deep=True).items())
    if version >= 2:
        return {k: canonical(v) for k, v in params}
    return {k: (v if isinstance(v, (str, bool, int, float)) or v is None else repr(v))
            for k, v in params}


def candidates_digest(configs, version=FINGERPRINT, listed=False):
    """The fingerprint's digest of the candidates: of their canonical encoding (the grid's
    dicts of value lists, or the random draws), or as a ``version`` 1 store hashed them
    (by repr; ``listed``: of every configuration's dict, before lazy planning)."""
    if listed:
        return sha(repr([describe_params(p) for p in configs]))
    if version < 2:
        return sha(repr(configs.describe()))
    # a key's values as a list, given as a tuple or a list (they are the same candidates)
    source = ([{k: list(v) for k, v in sorted(g.items())} for g in configs._source.param_grid]
              if configs.kind == "grid" else list(configs._source))
    return sha(encode({"kind": configs.kind, "source": source}))


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]
