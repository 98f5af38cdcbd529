"""The study request: every argument of a study, checked once, typed, handed to the engine.

The three front doors (:func:`bbc_dask.run_study`, :class:`bbc_dask.BBCSearchCV` and the
command line's study file) build a :class:`StudyRequest` with :meth:`StudyRequest.build`
from the groups they were given (:class:`Search`, :class:`Scoring`, :class:`Storage`,
:class:`Resampling`, :class:`Execution`); the engine takes nothing else. Errors name the
entry point the user called and the parameter by *its* name there: the door words them
(:mod:`bbc_dask._doors`, which holds the table of each door's names).
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import sklearn

from .. import _sklearn_compat as compat
from .. import _validation as validation
from ..cluster import as_security
from ..cube import as_location
from ..exceptions import InvalidParameterError
from ..metrics import Metric, Target, get_metric, remember
from ..stats import SELECTIONS, Dropping, Selection
from . import _plan as plan
from ._nested import NestedProtocol
from ._protocol import KFoldProtocol, SplitsProtocol, as_protocol
from ._stop import Stop, check_width_rule
from .._doors import door_name, warn

__all__ = ["Execution", "Resampling", "Scoring", "Search", "Storage", "StudyData", "StudyRequest"]


@dataclasses.dataclass(frozen=True)
class Search:
    """The configurations: a grid, or ``n_iter`` random draws of ``param_distributions``
    (drawn once the seed is known). ``grid`` is the checked grid (None for a random
    search)."""

    param_grid: object = None
    param_distributions: object = None
    n_iter: int = 10
    grid: object = None


@dataclasses.dataclass(frozen=True)
class DataDigests:
    """Fingerprints of the study's data (SHA-1; None for ``groups`` not given)."""

    X: str
    y: str
    groups: str | None


@dataclasses.dataclass(frozen=True)
class StudyData:
    """The data as the tasks index them: ``X`` and ``y`` as the door gave them (rows by
    position: :func:`~._tasks.take_rows`), ``target`` y's encoding for
    the metric, ``digests`` the fingerprints (X, y, groups) recorded in the spec,
    ``fit_params`` the parameters every fit takes (sliced to its training rows as
    scikit-learn's search slices them), ``fit_routing`` whether scikit-learn's metadata
    routing was on where they were given (the fits run with the same setting: a Pipeline
    routes ``sample_weight`` only then), ``fit_digest`` their fingerprint (None without
    any), ``fit_scoring`` the fitted models' scorers and ``fit_callbacks`` scikit-learn's
    callback contexts (neither is part of the fingerprint's data)."""

    X: object
    y: object
    groups: np.ndarray | None
    target: Target
    digests: DataDigests
    fit_params: dict = dataclasses.field(default_factory=dict)
    fit_routing: bool = False
    fit_digest: str | None = None
    fit_scoring: object = None
    fit_callbacks: object = None

    def shipped(self):
        """What every fit takes beyond X and y: a :class:`~._messages.ShippedFit` (its
        scoring a :class:`~bbc_dask.engine.FitScoring` or None, its callbacks a
        :class:`~bbc_dask.engine.FitCallbacks` or None), or None without any."""
        if not self.fit_params and self.fit_scoring is None and self.fit_callbacks is None:
            return None
        from ._messages import ShippedFit

        return ShippedFit(self.fit_params, self.fit_routing, self.fit_scoring,
                          self.fit_callbacks)


@dataclasses.dataclass(frozen=True)
class Execution:
    """How the study runs, not what it computes: none of these is in the spec."""

    client: object = None
    security: object = None
    progress: bool = True
    configs_per_task: int | None = None
    overwrite: bool = False
    refit: bool = True
    #: when the run stops early (a :class:`~bbc_dask.Stop`, or None)
    stop: object = None


@dataclasses.dataclass(frozen=True)
class Resampling:
    """How the samples are split, as a door gives it (checked by :meth:`StudyRequest.build`):
    ``n_splits`` folds × ``n_repeats``, or the user's splits ``cv``, or nested CV
    ``nested=(n_outer, n_inner)`` with ``n_repeats`` outer repeats; ``groups`` kept
    together."""

    n_splits: int = 10
    n_repeats: int = 1
    cv: object = None
    groups: object = None
    nested: tuple | None = None


@dataclasses.dataclass(frozen=True)
class Scoring:
    """How configurations are scored and one is selected, as a door gives it: the
    ``metric`` (and its ``pos_label``), ``error_score``, the ``selection`` rule, and
    ``fit_scoring`` (scorers of the fitted fold models, :class:`~bbc_dask.engine.FitScoring`)."""

    metric: object
    pos_label: object = None
    error_score: object = np.nan
    selection: str = "pooled"
    fit_scoring: object = None


@dataclasses.dataclass(frozen=True)
class Storage:
    """Where the study is stored, as a door gives it: a path, a URL or a
    :class:`~bbc_dask.cube.StoreLocation`, and fsspec's options for a URL."""

    store: object
    storage_options: dict | None = None


@dataclasses.dataclass(frozen=True)
class StudyRequest:
    """One study, checked: what it computes (estimator, search, data, protocol, metric,
    dropping, selection, error_score, seed), where it is stored and how it runs.

    Build it with :meth:`build`; every field is valid once it exists.
    """

    estimator: object
    search: Search
    data: StudyData
    protocol: KFoldProtocol | SplitsProtocol | NestedProtocol
    metric: Metric
    location: object
    execution: Execution
    dropping: Dropping | None
    selection: Selection
    error_score: object
    random_state: object
    metadata: dict | None

    @classmethod
    def build(cls, estimator, X, y, *, search, scoring, storage, resampling=Resampling(),
              execution=Execution(), dropping=None, random_state=None, metadata=None,
              fit_params=None):
        """Check every argument of :func:`bbc_dask.run_study` (plus ``cv``, the user's
        splits), given by the door in its groups (:class:`Search`, :class:`Scoring`,
        :class:`Storage`, :class:`Resampling`, :class:`Execution`), and return the
        request; errors are worded by the door the user called. ``fit_params``: a dict of
        parameters of every fit (see :func:`bbc_dask.run_study`)."""
        metric, pos_label, error_score = scoring.metric, scoring.pos_label, scoring.error_score
        n_splits, n_repeats, cv = resampling.n_splits, resampling.n_repeats, resampling.cv
        groups, nested = resampling.groups, resampling.nested
        if isinstance(cv, numbers.Integral) and not isinstance(cv, bool) and n_splits in (10, cv):
            n_splits, cv = cv, None  # an int is the number of folds, as in scikit-learn
        metric = get_metric(metric)
        if metric.kind == "general":
            metric, pos_label = _general(metric, estimator, pos_label)
        X = validation.check_X(X)
        # the fits take y as given (a list, a Series), as scikit-learn's searches give it;
        # the study's checks, folds and encoded target read it as an array
        given_y = y
        y = y if y is None else np.asarray(y)
        target, n_splits, n_repeats, groups = validation.check_cv_data(
            estimator, X, y, groups, metric, n_splits, n_repeats, error_score, pos_label,
            kfold=cv is None and nested is None)
        if nested is not None:
            if dropping is not None:
                raise InvalidParameterError.of(
                    "dropping", "None in nested cross-validation (each outer "
                    "fold's inner CV runs whole)", dropping)
            protocol = NestedProtocol.checked(*nested, n_repeats, y, groups, target,
                                            metric.is_classification)
        else:
            protocol = as_protocol(cv, n_splits, n_repeats, len(y), y, groups)
        location = as_location(storage.store, storage.storage_options, directory=True)
        location.check_writable()  # before any cluster starts: a run writes the store
        location.check_client(execution.client)
        execution = dataclasses.replace(execution, security=as_security(execution.security),
                                        configs_per_task=validation.check_int(
                                            execution.configs_per_task, "configs_per_task",
                                            allow_none=True))
        dropping = Dropping.coerce(dropping)
        if dropping is not None and metric.kind == "general":
            raise InvalidParameterError.of(
                "dropping", "None with the metric "
                f"{metric.name} (the dropping test runs on the chunked path, which "
                "takes the registered metrics only)", dropping)
        validation.check_one_of(scoring.selection, "selection", SELECTIONS)
        fit_params = validation.check_fit_params(fit_params, nested)
        fit_scoring = scoring.fit_scoring
        if fit_scoring is not None and (nested is not None or not fit_scoring.width):
            raise InvalidParameterError.of(
                "fit_scoring", "scorers of a study that is not nested CV", fit_scoring.labels)
        routing = bool(fit_params) and sklearn.get_config()["enable_metadata_routing"]
        grid = plan.check_search(search.param_grid, search.param_distributions, search.n_iter)
        if grid is not None:  # random draws are checked once the seed is known
            plan.check_estimator_methods(estimator, grid, metric,
                                         data=(X, y, metric.is_classification))
        n_configs = len(grid) if grid is not None else search.n_iter
        execution = dataclasses.replace(execution, stop=Stop.coerce(execution.stop))
        check_width_rule(execution.stop, metric, len(y), n_configs, protocol.n_repeats,
                         len(target.classes) if metric.needs_class_axis else 1)
        if dropping is not None and n_configs < 2:
            warn(f"dropping has no effect in {door_name()} with a single configuration; "
                 f"running plain CVT.", UserWarning, stacklevel=3)
        return cls(
            estimator=estimator, search=dataclasses.replace(search, grid=grid),
            data=StudyData(X, y if isinstance(given_y, np.ndarray) else given_y, groups, target,
                           DataDigests(*plan.data_digest(X, np.asarray(y), groups)),
                           fit_params, routing, _fit_digest(fit_params, routing),
                           fit_scoring),
            protocol=protocol, metric=metric, location=location,
            execution=execution, dropping=dropping, selection=Selection.of(scoring.selection),
            error_score=error_score,
            random_state=random_state, metadata=metadata)


def _fit_digest(fit_params, routing):
    """The fingerprint of the fit parameters: the plan's (a hash of their pickle); for a
    value pickle cannot name (a local function, as a library's callback parameter), a hash
    of their canonical encoding (:mod:`bbc_dask._fingerprint`: by what they hold, the same
    in every process) — such parameters could not be used before, so no store holds the
    other fingerprint."""
    import pickle

    try:
        return plan.params_digest(fit_params, routing)
    except (pickle.PicklingError, AttributeError, TypeError):
        from .._fingerprint import encode

        return "canonical-" + plan.sha(encode([dict(sorted(fit_params.items())), bool(routing)]))


def _general(metric, estimator, pos_label):
    """``(metric, pos_label)`` of a scikit-learn scorer's study: its task decided by the
    estimator where the scorer's function does not say it, and the positive class its
    own ``pos_label`` where it sets one (which must then agree with ``pos_label``)."""
    from sklearn.base import is_regressor

    metric = remember(metric.resolved(is_regressor(estimator)))
    own = compat.score_kwargs(metric.scorer).get("pos_label")
    if own is not None and metric.is_classification:
        if pos_label is None:
            pos_label = own
        elif pos_label != own:
            raise InvalidParameterError.of("pos_label", f"the scorer's own pos_label={own!r}", pos_label)
    return metric, pos_label
