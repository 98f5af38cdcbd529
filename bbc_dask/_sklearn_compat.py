"""scikit-learn's private names, in one place.

The package reads a few things scikit-learn keeps private: a scorer's function, keyword
arguments, sign and response method (a ``make_scorer`` object has no public accessor for
them), the scorer classes, the scorer of several metrics, how fit parameters are sliced to
a split's rows, the parameter constraints of its estimators and whether metadata routing
is on. Every such name is taken here and nowhere else, so that a scikit-learn release that
moves one breaks this module alone — and CI runs the suite against the lowest supported
scikit-learn (``pyproject.toml``'s minimum) as well as the newest (``make test-sklearn-min``).
"""
from __future__ import annotations

import importlib

#: Each private name: (module, name). Imported on first use (module ``__getattr__``), so
#: that importing the package's metrics loads no scikit-learn (``bbc-dask status`` starts
#: in a fraction of a second).
_NAMES = {
    "BaseScorer": ("sklearn.metrics._scorer", "_BaseScorer"),
    "Scorer": ("sklearn.metrics._scorer", "_Scorer"),
    "MultimetricScorer": ("sklearn.metrics._scorer", "_MultimetricScorer"),
    "HasMethods": ("sklearn.utils._param_validation", "HasMethods"),
    "Interval": ("sklearn.utils._param_validation", "Interval"),
    "StrOptions": ("sklearn.utils._param_validation", "StrOptions"),
    "SklearnInvalidParameterError": ("sklearn.utils._param_validation", "InvalidParameterError"),
    "validate_parameter_constraints": ("sklearn.utils._param_validation",
                                       "validate_parameter_constraints"),
    "routing_enabled": ("sklearn.utils.metadata_routing", "_routing_enabled"),
    "check_method_params": ("sklearn.utils.validation", "_check_method_params"),
    "safe_indexing": ("sklearn.utils", "_safe_indexing"),
    "safe_split": ("sklearn.utils.metaestimators", "_safe_split"),
    "raise_for_params": ("sklearn.utils.metadata_routing", "_raise_for_params"),
    "search_estimator_has": ("sklearn.model_selection._search", "_search_estimator_has"),
}


def __getattr__(name):
    try:
        module, attr = _NAMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


__all__ = ["REGRESSION_METRIC_MODULES", "accepts_sample_weight", "callback_support_mixin",
           "inconsistent_splits", "init_callback_context", "param_columns", "visual_block", "supports_callbacks", "with_callbacks",
           "search_scores_with_sample_weight", "BaseScorer", "HasMethods", "Interval", "MultimetricScorer", "Scorer",
           "SklearnInvalidParameterError", "StrOptions", "check_method_params", "is_function_scorer",
           "parameter_constraints", "raise_for_params", "safe_indexing", "safe_split",
           "search_estimator_has",
           "response_methods", "routing_enabled", "score_func", "score_kwargs", "score_sign",
           "validate_parameter_constraints"]


#: The modules of scikit-learn's regression metrics (a scorer's function from one of them
#: scores a regressor).
REGRESSION_METRIC_MODULES = ("sklearn.metrics._regression",)


def parameter_constraints(cls):
    """The constraints an estimator class checks its parameters against when it fits
    (scikit-learn's ``_parameter_constraints``), or None for a class without them."""
    constraints = getattr(cls, "_parameter_constraints", None)
    return constraints if isinstance(constraints, dict) else None


def is_function_scorer(obj):
    """Whether ``obj`` is a scorer of one metric function (``make_scorer``/``get_scorer``)."""
    return hasattr(obj, "_score_func")


def score_func(scorer):
    """The metric function of a ``make_scorer`` object."""
    return scorer._score_func


def score_kwargs(scorer):
    """The keyword arguments ``make_scorer`` was given for the function (a dict)."""
    return scorer._kwargs


def score_sign(scorer):
    """1 for a score, -1 for a loss (``greater_is_better=False``)."""
    return scorer._sign


def response_methods(scorer):
    """The estimator methods the scorer asks for, in order of preference (a tuple)."""
    rm = scorer._response_method
    return (rm,) if isinstance(rm, str) else tuple(rm)


def accepts_sample_weight(scorer):
    """Whether a scikit-learn scorer takes ``sample_weight`` (its own answer)."""
    return scorer._accept_sample_weight()


def search_scores_with_sample_weight():
    """Whether this scikit-learn's searches give a fit's ``sample_weight`` to the scorers
    that take it when metadata routing is off (1.7 on; 1.6 gives it to ``fit`` alone)."""
    from sklearn.model_selection._search import BaseSearchCV

    return hasattr(BaseSearchCV, "_check_scorers_accept_sample_weight")


def param_columns(params):
    """``[("param_<name>", masked array), ...]`` of a search's candidates, as
    ``GridSearchCV.cv_results_`` holds them: scikit-learn's own
    ``_yield_masked_array_for_each_param`` (a column per parameter, in order of first
    appearance, masked where a candidate has no such parameter, typed as NumPy infers the
    values — float64, int64, bool — and object for strings, sequences, estimators or
    mixed values)."""
    from sklearn.model_selection import _search

    made = getattr(_search, "_yield_masked_array_for_each_param", None)
    if made is not None:
        return list(made(list(params)))
    import numpy as np  # a scikit-learn without it (none supported): object columns

    keys = list(dict.fromkeys(k for p in params for k in p))
    return [(f"param_{k}", np.ma.masked_array([p.get(k) for p in params],
                                              mask=[k not in p for p in params], dtype=object))
            for k in keys]


def _callback_module():
    try:
        import sklearn.callback as module
    except ImportError:  # scikit-learn before 1.9: no callbacks
        return None
    return module


class _NoCallbacks:
    """The base a search has where scikit-learn has no callbacks (before 1.9)."""


def callback_support_mixin():
    """scikit-learn's ``CallbackSupportMixin`` (``set_callbacks``), or an empty base
    where this scikit-learn has none."""
    module = _callback_module()
    return _NoCallbacks if module is None else module.CallbackSupportMixin


def supports_callbacks(estimator):
    """Whether this scikit-learn has callbacks and ``estimator`` takes them."""
    module = _callback_module()
    return module is not None and isinstance(estimator, module.CallbackSupportMixin)


def with_callbacks(method):
    """scikit-learn's ``with_callbacks`` decorator (every callback set up by the method
    torn down after it), or ``method`` itself before 1.9."""
    module = _callback_module()
    return method if module is None else module.with_callbacks(method)


def init_callback_context(estimator, **kwargs):
    """The root callback context of a fit of ``estimator`` (its callbacks set up):
    ``CallbackSupportMixin._init_callback_context``."""
    return estimator._init_callback_context(**kwargs)


def visual_block(search):
    """The HTML diagram's block of a search, as scikit-learn draws its own searches':
    ``best_estimator_`` once refit, else ``estimator`` (``BaseSearchCV._sk_visual_block_``)."""
    from sklearn.model_selection._search import BaseSearchCV

    return BaseSearchCV._sk_visual_block_(search)


def inconsistent_splits(expected, got):
    """``GridSearchCV``'s words for a splitter whose ``split`` disagrees with its
    ``get_n_splits`` (1.7 changed "returned" to "return")."""
    import sklearn

    major, minor = (int(p) for p in sklearn.__version__.split(".")[:2])
    verb = "returned" if (major, minor) < (1, 7) else "return"
    return (f"cv.split and cv.get_n_splits {verb} inconsistent results. Expected {expected} "
            f"splits, got {got}")
