"""How a search runs its study: ``cv``, the client and ``n_jobs`` read as scikit-learn's
searches read them, the refit of a winner chosen outside the study, and ``cv_results_``
with a number as ``error_score`` (:class:`bbc_dask.BBCSearchCV`'s parts that are not its
interface)."""
from __future__ import annotations

import os
from numbers import Integral

import numpy as np
from sklearn.base import clone, is_classifier

from .. import _sklearn_compat as compat
from .. import _validation as validation
from ..cluster import current_client
from ..exceptions import InvalidParameterError
from .._doors import warn

__all__ = ["check_parameters", "checked_data", "chosen_index", "cv_results", "given_client",
           "local_workers", "refit_best", "run_raising", "say_fits", "say_fitting",
           "search_cv", "warn_as_gridsearchcv"]


def search_cv(search, X, y, groups):
    """``cv`` as ``GridSearchCV`` reads it: None is 5 folds, an int is scikit-learn's
    unshuffled ``check_cv`` splitter — unless the folds are grouped or repeated,
    which the study's own folds do (an int below 2 is the study's to refuse). A splitter
    or an iterable of pairs is split here as ``GridSearchCV`` splits it, so that its own
    errors (a group splitter without ``groups``) and ``GridSearchCV``'s (no split; a
    splitter whose ``get_n_splits`` disagrees with its ``split``) are said as it says
    them; an iterable is read once (a generator is consumed), its pairs passed on."""
    from sklearn.model_selection import check_cv

    cv = 5 if search.cv is None else search.cv
    classifier = is_classifier(search.estimator)
    if isinstance(cv, Integral) and not isinstance(cv, bool):
        if cv >= 2 and groups is None and search.n_repeats == 1:
            return check_cv(cv, y, classifier=classifier)
        return cv
    if isinstance(cv, str) or not (hasattr(cv, "split") or hasattr(cv, "__iter__")):
        return cv  # the study says what it takes
    splitter = hasattr(cv, "split") and hasattr(cv, "get_n_splits")
    if splitter:  # split a copy: the study splits the splitter itself (once: a splitter
        import copy  # may split only once), and records its name

        try:
            probe = copy.deepcopy(cv)
        except Exception:  # noqa: BLE001 - a splitter that cannot be copied: the study's checks
            return cv
    checked = check_cv(probe if splitter else cv, y, classifier=classifier)
    n_splits = checked.get_n_splits(X, y, groups)
    splits = list(checked.split(X, y, groups))
    if len(splits) != n_splits:
        raise InvalidParameterError.of(
            "cv", "a splitter whose split gives get_n_splits splits", cv,
            note=f"({compat.inconsistent_splits(n_splits, len(splits))})")
    if not splits:
        raise InvalidParameterError.of(
            "cv", "a splitter or an iterable that gives at least one split", cv,
            note="(No fits were performed. Was the CV iterator empty? Were there no "
                 "candidates?)")
    return cv if splitter else splits


def given_client(search):
    """``client``, else the current default one, else None: this process's warm local
    cluster of ``n_jobs`` workers (see ``n_jobs``), once the request is checked."""
    local_workers(search)  # n_jobs checked before anything runs, whatever the client
    given = search.client if search.client is not None else current_client()
    if given is None:
        return None
    if search.n_jobs is not None:
        warn(f"{type(search).__name__}: n_jobs={search.n_jobs} is ignored: the study "
             "runs on the Dask client's workers.", UserWarning, stacklevel=3)
    return given


def local_workers(search):
    """Local worker processes for ``n_jobs``, counted as joblib counts them."""
    n = search.n_jobs
    if n is None:
        return None
    if n == 0:
        raise InvalidParameterError.of(
            "n_jobs", "a non-zero integer (-1: one worker per core) "
            "or None", n)
    return n if n > 0 else max(1, (os.cpu_count() or 1) + 1 + n)


def refit_best(search, study, request, X, y):
    """``(model, seconds)``: ``best_index_``'s configuration fit on all data, by a task
    on the study's workers while its client runs (the data are there), else in this
    process as ``GridSearchCV`` refits."""
    from distributed import Client

    from ..engine import refit, submit_with_data

    estimator, params = clone(search.estimator), study.params[search.best_index_]
    shipped = request.data.shipped()
    client = request.execution.client
    if isinstance(client, Client) and client.status == "running":
        return submit_with_data(client, refit, estimator, params, X=X, y=y, shipped=shipped)
    return refit(estimator, params, X, y, shipped)


def cv_results(search, study):
    """The study's ``cv_results_`` (``GridSearchCV``'s keys; with ``selection="pooled"``,
    the criterion ``rank_test_score`` ranks, ``pooled_test_score``, too); with a number as
    ``error_score``, the failed
    fits' split scores are that number (and their configurations' mean and std count
    it), as in ``GridSearchCV``. The ranks stay the study's: failed last."""
    from ..cube import FAILED
    from ..stats import split_means

    out = dict(study.cv_results_)
    if search.selection != "pooled":  # GridSearchCV's keys: the pooled score ranks nothing
        del out["pooled_test_score"]
    es = search.error_score
    st = study.state
    failed = np.flatnonzero(np.any(st == FAILED, axis=(1, 2)))
    if isinstance(es, str) or np.isnan(es) or not failed.size:
        return out
    splits = study.fold_scores()[:, failed]  # (R*K, failed configs): their done folds
    splits[(st[failed] == FAILED).reshape(failed.size, -1).T] = es
    for i, row in enumerate(splits):
        out[f"split{i}_test_score"] = col = out[f"split{i}_test_score"].copy()
        col[failed] = row
    mean, std = split_means(splits)  # GridSearchCV's arithmetic
    for key, values in (("mean_test_score", mean), ("std_test_score", std)):
        out[key] = out[key].copy()
        out[key][failed] = values
    return out


def estimate(search, study, plan, opts):
    """``bbc_`` and ``bbc_f_`` of a fitted ``search``: BBC (on the incomplete CV of a
    study stopped early) and BBC-F, or BBC-F alone of fold-level scores; one that cannot
    be made is not set (BBC-F of a stopped study with no configuration complete; BBC-F of
    fold-level scores some of which are not finite, as GridSearchCV ranks them last:
    returned is then the sentence that says so, else None)."""
    from ..exceptions import UndefinedScoreError

    for name in ("bbc_", "bbc_f_"):
        if hasattr(search, name):
            delattr(search, name)
    stopped = search.stopped_ is not None
    any_complete = not stopped or study.candidates().size > 0
    if plan.primary_fitted:  # fold-level scores only: BBC-F on them, no sample BBC
        if any_complete:
            try:
                search.bbc_f_ = study.bbc_f(fit_scorer=f"test_{plan.primary}", **opts)
            except UndefinedScoreError as exc:
                return f"bbc_f_ is not set: {exc}"
        return None
    search.bbc_ = study.bbc(include_incomplete=stopped, **opts)
    if any_complete:
        search.bbc_f_ = study.bbc_f(**opts)
    return None


def check_stop(search, plan, study=None):
    """Refuse ``stop`` with a refit scorer scored by the fitted fold models (a stopped
    study's winner is chosen on its predictions); with the fitted ``study``, a rule that
    ended it before every configuration had a prediction in each repeat (nothing to
    select or estimate on)."""
    if search.stop is not None and plan.primary_fitted:
        raise InvalidParameterError.of(
            "stop", "None with a refit scorer scored by the fitted fold models (a stopped "
            "study's winner is chosen on its predictions)", search.stop)
    if study is not None and search.stopped_ is not None and not study.candidates().size \
            and not study.incomplete_estimable():
        from ..exceptions import StudyNotReadyError

        raise StudyNotReadyError(
            f"stop={search.stopped_.rule!r} ended the search before every configuration had a "
            f"prediction in each repeat: there is nothing to select or estimate yet; give "
            f"it a laxer rule.")


def stopped_text(search, study):
    """The warning of a search its rule stopped."""
    again = ("Fit again with stop=None to finish it" if search.store is not None else
             "With a store given, a fit again with stop=None would finish it")
    return (f"{type(search).__name__} stopped early by its rule ({search.stopped_.reason}) "
            f"with {study.status()['pending']:,} cells pending: it is fitted on its "
            f"incomplete CV. {again}.")


def run_raising(search, run_cvt, request):
    """``run_cvt(request)``; with ``error_score="raise"``, the estimator's own error
    raised (``GridSearchCV``'s), its configuration, split and worker traceback in its
    note, where it reached this process whole."""
    from ..exceptions import StudyError

    try:
        return run_cvt(request)
    except StudyError as exc:
        cause = exc.__cause__
        if cause is None or not isinstance(search.error_score, str):
            raise
        cause.add_note(f"{type(search).__name__}: {exc}")
        raise cause from None


def checked_data(search, X, y):
    """``(X, y)`` as ``GridSearchCV`` takes them (``indexable``: same length, kept as
    given — an array of any shape, a list, a DataFrame, a sparse matrix as CSR; NaN is
    the estimator's business), y one target: a column ``(n, 1)`` is used as 1-d with
    scikit-learn's DataConversionWarning; classification targets checked."""
    import scipy.sparse as sp
    from sklearn.utils import get_tags
    from sklearn.utils.validation import check_array, column_or_1d, indexable

    validation.require_y(y)
    if not (hasattr(X, "iloc") or isinstance(X, (list, tuple)) or sp.issparse(X)):
        # an array (or what becomes one): numeric unless the estimator takes strings,
        # as scikit-learn's estimators check it (an object array of dicts is refused
        # here, not by every fit); any shape, any value (NaN is the estimator's business)
        X = check_array(X, dtype=None if get_tags(search.estimator).input_tags.string
                        else "numeric", ensure_all_finite=False, ensure_2d=False,
                        allow_nd=True, ensure_min_samples=2, input_name="X")
    shape = np.asarray(y).shape
    if len(shape) == 2 and shape[1] == 1:
        y = column_or_1d(y, warn=True)
    elif len(shape) != 1:
        raise InvalidParameterError.of(
            "y", "one target of shape (n_samples,)", shown=f"an array of shape {shape}",
            note="A study scores one target's predictions per sample (multi-output "
                 "targets: one search per output, or MultiOutputClassifier/Regressor "
                 "inside one).")
    X, y = indexable(X, y)
    if is_classifier(search.estimator):
        from sklearn.utils.multiclass import check_classification_targets

        check_classification_targets(np.asarray(y))
    return X, y


def chosen_index(search, index):
    """The index a callable ``refit`` returned, checked as ``GridSearchCV`` does (a
    TypeError if not an integer, an IndexError if out of range; its words said too)."""
    from ..exceptions import InvalidIndexError

    n = len(search.cv_results_["params"])
    expected = f"a callable that returns an integer index of cv_results_['params'] (0 to {n - 1})"
    if isinstance(index, bool) or not isinstance(index, Integral):
        raise InvalidParameterError.of("refit", expected, shown=f"one that returned {index!r}",
                                       note="(best_index_ returned is not an integer)")
    if not 0 <= index < n:
        raise InvalidIndexError.of("refit", expected, shown=f"one that returned {index!r}",
                                   note="(best_index_ index out of range)")
    return int(index)


def warn_as_gridsearchcv(search, study, stacklevel, note=None):
    """The warnings ``GridSearchCV`` gives after its fits, in its words: the fits' own
    warnings (each once, counted), a ``FitFailedWarning`` when some fits failed (how many
    of the fits run, the score they get, their errors grouped: each configuration's first
    error, counted by its failed fits), and a UserWarning per side whose mean scores are
    not all finite (the test side's with ``note``, what the search could not estimate)."""
    from collections import Counter

    from sklearn.exceptions import FitFailedWarning

    from .._run_warnings import warn_fit_warnings
    from ..cube import DONE, FAILED

    warn_fit_warnings(study.fit_warnings_, stacklevel + 1)
    state = study.state
    failed = state == FAILED
    n_failed, n_fits = int(failed.sum()), int((failed | (state == DONE)).sum())
    if n_failed:
        by_error = Counter()
        for c, text in study.errors.items():
            by_error[text] += int(failed[c].sum())
        delimiter = "-" * 80 + "\n"
        summary = "\n".join(f"{delimiter}{n} fits failed with the following error:\n{error}"
                            for error, n in by_error.most_common())
        warn(f"\n{n_failed} fits failed out of a total of {n_fits}.\n"
             "The score on these train-test partitions for these parameters will be set to "
             f"{search.error_score}.\nIf these failures are not expected, you can try to debug "
             f"them by setting error_score='raise'.\n{type(search).__name__}: a configuration "
             "with a failed fit is never selected and takes no part in bbc_ and bbc_f_.\n\n"
             f"Below are more details about the failures:\n{summary}", FitFailedWarning,
             stacklevel=stacklevel + 1)
    # a search stopped by its rule has NaN means where cells are pending: its own warning
    # says so (UnfinishedStudyWarning)
    stopped = getattr(search, "stopped_", None) is not None
    for key, means in search.cv_results_.items():
        if key.startswith(("mean_test_", "mean_train_")) and not stopped and \
                not np.all(np.isfinite(means)):
            side = key.split("_")[1]
            warn(f"One or more of the {side} scores are non-finite: {means}" + (
                f" {type(search).__name__}: {note}" if note and side == "test" else ""),
                 UserWarning, stacklevel=stacklevel + 1)
            note = None if side == "test" else note
    if note:  # no mean said it: said alone
        warn(f"{type(search).__name__}: {note}", UserWarning, stacklevel=stacklevel + 1)


def say_fitting(search, request):
    """``GridSearchCV``'s first line at ``verbose > 0``: folds, candidates, fits."""
    if search.verbose > 0:
        n_splits = request.protocol.n_splits * request.protocol.n_repeats
        search_ = request.search
        n_configs = len(search_.grid) if search_.grid is not None else search_.n_iter
        print(f"Fitting {n_splits} folds for each of {n_configs} candidates, totalling "
              f"{n_splits * n_configs} fits")


def say_fits(search, study):
    """``GridSearchCV``'s line per fit at ``verbose > 1`` (the configuration; above 2 the
    split and its scores; above 9 the candidate too), for the fits the study ran, in the
    grid's order once they are all done (the workers print nothing)."""
    from joblib import logger

    from ..cube import DONE, FAILED

    v, res = search.verbose, search.cv_results_
    if v <= 1:
        return
    n_cfg, n = len(res["params"]), search.n_splits_
    state = study.state.reshape(n_cfg, -1)
    times = np.asarray(study.cube["fit_time"].values, dtype=float).reshape(n_cfg, -1)
    names = sorted(search.scorer_) if search.multimetric_ else None
    train = search.return_train_score
    for c, params in enumerate(res["params"]):
        shown = ", ".join(f"{k}={params[k]}" for k in sorted(params))
        for i in range(n):
            if state[c, i] not in (DONE, FAILED):
                continue
            progress = (f" {i + 1}/{n}" if v > 2 else "") + (f"; {c + 1}/{n_cfg}" if v > 9 else "")
            result = shown + (";" if shown else "")
            if v > 2:
                if names:
                    for name in names:
                        result += f" {name}: (" + (
                            f"train={res[f'split{i}_train_{name}'][c]:.3f}, " if train else "") + \
                            f"test={res[f'split{i}_test_{name}'][c]:.3f})"
                elif train:
                    result += (f", score=(train={res[f'split{i}_train_score'][c]:.3f}, "
                               f"test={res[f'split{i}_test_score'][c]:.3f})")
                else:
                    result += f", score={res[f'split{i}_test_score'][c]:.3f}"
            result += f" total time={logger.short_format_time(times[c, i])}"
            end = f"[CV{progress}] END "
            print(end + "." * (80 - len(end) - len(result)) + result)


def check_parameters(search):
    """Every constructor parameter against :attr:`_parameter_constraints`, as an
    :class:`~bbc_dask.exceptions.InvalidParameterError` in scikit-learn's wording."""
    try:
        compat.validate_parameter_constraints(search._parameter_constraints,
                                              search.get_params(deep=False),
                                              caller_name=type(search).__name__)
    except compat.SklearnInvalidParameterError as exc:
        raise validation.worded_elsewhere(str(exc)) from None
