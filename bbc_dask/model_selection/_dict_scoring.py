"""A callable ``scoring`` that returns a dict of scores (``GridSearchCV``'s multimetric
by callable): the names are known only once it is called, and a study declares its scorers
before its first fit — so the search calls it once first, on one fit of one split
(:func:`probe_keys`), and then scores each name by its own scorer (:class:`DictScore`),
called on each fold's fitted model as the other fold-level scorers are."""
from __future__ import annotations

import numpy as np

from .. import _sklearn_compat as compat

__all__ = ["DictScore", "is_plain_callable", "probe_keys"]

#: configurations tried for the probe's one fit (the first that fits answers)
PROBE_CONFIGS = 3


def is_plain_callable(scoring):
    """A callable ``scorer(estimator, X, y)`` that is not a scikit-learn scorer object."""
    return scoring is not None and not isinstance(scoring, str) and \
        not compat.is_function_scorer(scoring)


class DictScore:
    """The score ``key`` of the dict that ``scoring(estimator, X, y)`` returns. Named as
    the callable and its key (the study records its scorers by name)."""

    def __init__(self, scoring, key):
        self.scoring, self.key = scoring, key
        self.__module__ = getattr(scoring, "__module__", None) or type(scoring).__module__
        self.__qualname__ = f"{getattr(scoring, '__qualname__', type(scoring).__qualname__)}[{key!r}]"

    def __call__(self, estimator, X, y, **params):
        return self.scoring(estimator, X, y, **params)[self.key]

    def __repr__(self):
        return f"{self.__qualname__}"


def probe_keys(search, X, y, fit_params):
    """The names of the scores a plain callable ``scoring`` returns as a dict, or None
    (it returns a number, or it is not a plain callable, or ``refit=True`` says it is
    one score). Called once on one configuration (of the first few that fit) fit on the
    first of three folds, as ``GridSearchCV`` learns it from its first fit."""
    from sklearn.base import is_classifier
    from sklearn.model_selection import KFold, ParameterGrid, ParameterSampler, StratifiedKFold

    from ..engine import configured, take_rows

    scoring = search.scoring
    if search.refit is True or not callable(scoring) or not is_plain_callable(scoring):
        return None
    split = StratifiedKFold(3) if is_classifier(search.estimator) else KFold(3)
    try:
        train, test = next(split.split(np.zeros((len(y), 1)), np.asarray(y)))
    except ValueError:  # too few samples per class: the study says what is wrong
        return None
    grid = getattr(search, "param_grid", None)
    configs = ParameterGrid(grid) if grid is not None else ParameterSampler(
        search.param_distributions, PROBE_CONFIGS, random_state=0)
    params = compat.check_method_params(X, fit_params, train) if fit_params else {}
    for i, config in enumerate(configs):
        if i == PROBE_CONFIGS:
            break
        try:
            est = configured(search.estimator, config).fit(
                take_rows(X, train), take_rows(y, train), **params)
            got = scoring(est, take_rows(X, test), take_rows(y, test))
        except Exception:  # noqa: BLE001 - the study's fits and scorers say it
            continue
        return list(got) if isinstance(got, dict) else None
    return None
