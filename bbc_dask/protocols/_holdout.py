"""The holdout family: one train/test split, repeated splits, and the out-of-bag, .632 and
.632+ bootstrap estimates of one estimator's performance (no tuning).

The fits and their scoring are the engine's own (:func:`bbc_dask.engine.fit_predict_block`
chooses the response method and predicts, :func:`bbc_dask.engine.score_fold` and the metric
registry score), so a score here is the score a study gives the same predictions. The
formulas are :mod:`bbc_dask.stats`' (``_holdout``). Splits and bootstrap draws come from
one seed, one child per repeat or round (:mod:`bbc_dask._random`): a result does not
depend on the number of workers or on how rounds are grouped into tasks.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time

import numpy as np

from .. import _tuning as tuning
from .. import _validation as validation
from .._random import as_seed_sequence, child_generator, child_seed
from ..exceptions import InvalidParameterError, StudyError, UndefinedScoreError
from .._doors import carried, door, door_name

__all__ = ["bootstrap_estimate", "holdout", "repeated_holdout"]

#: Resamples of the test set behind holdout's percentile interval (metrics other than
#: accuracy and the binary AUC).
HOLDOUT_BOOTSTRAPS = 2000
#: Draws of one bootstrap round before giving up on a defined one (non-empty out-of-bag
#: part, the metric defined in bag and out of bag).
MAX_DRAWS = 100
METHODS = ("oob", ".632", ".632+")


# ---------------------------------------------------------------------- checks
def _common_iv(estimator, X, y, metric):
    """``(metric, X, target, scoring)`` checked: scoring, what a task needs, a
    :class:`~bbc_dask.engine.TaskScoring` (its fits raise: these protocols keep no failed
    cell)."""
    from sklearn.base import clone

    from ..engine import TaskScoring, problem_before_run
    from ..metrics import SAMPLE_BLOCK, get_metric

    m = _registered(get_metric(metric))
    X = validation.check_X(X)
    target, *_ = validation.check_cv_data(estimator, X, y, None, m, None, None, math.nan, None,
                                          kfold=False)
    # as a study checks it: a method that comes with the fit (a StackingClassifier's) is
    # looked for on a fit of a few rows
    problem = problem_before_run(clone(estimator), m, X, y, m.is_classification)
    if problem:
        raise InvalidParameterError.of("estimator", f"an estimator that can be scored "
                                       f"by {m.name!r}", shown=f"{type(estimator).__name__}, which {problem}")
    classes = target.classes if m.is_classification else None
    n_axis = len(classes) if m.needs_class_axis else 0
    return m, X, target, TaskScoring(m.name, classes, target.pos_code, n_axis, "raise",
                                     SAMPLE_BLOCK)


def _registered(m):
    """``m``, a registered metric: the protocols that keep no cube take no general one."""
    if m.kind == "general":
        from ..metrics import metric_names

        raise InvalidParameterError.of(
            "metric", f"one of {metric_names()} (the protocols that keep no "
            f"prediction cube score with the registered kernels)", m.name)
    return m


def _split_iv(target, m, test_size, stratify):
    """``test_size`` and ``stratify`` checked against the data: the class counts must allow
    a stratified split (scikit-learn's rule: two rows a class, a row of every class in
    train and test). Returns the codes to stratify on, or None."""
    test_size = validation.check_real_open(test_size, "test_size", 0.0, 1.0)
    stratify = validation.check_bool(stratify, "stratify")
    n = target.n_samples
    n_test = math.ceil(test_size * n)
    if n - n_test < 1:
        raise InvalidParameterError.of("test_size", f"small enough to leave a training "
                                       f"row of the {n} rows (at most {(n - 1) / n:.4g})", test_size)
    if not (stratify and m.is_classification):
        return test_size, None
    counts = np.bincount(target.codes, minlength=len(target.classes))
    k = len(target.classes)
    if counts.min() < 2 or n_test < k or n - n_test < k:
        small = validation.plain(target.classes[int(np.argmin(counts))])
        raise InvalidParameterError.of(
            "stratify", "False for these class counts", True,
            note=f"A stratified split needs 2 rows of every class (class {small!r} has "
                 f"{counts.min()}) and {k} rows in each part (test {n_test}, train "
                 f"{n - n_test}).")
    return test_size, target.codes


def _run_iv(client, progress):
    validation.check_bool(progress, "progress")
    if client is not None and not isinstance(client, (str, dict)):
        from distributed import Client

        validation.check_instance(client, "client", Client, "a distributed.Client, "
                                  "a scheduler address string, a dict of make_client "
                                  "arguments or None")


# ---------------------------------------------------------------------- splits
def holdout_splits(n, test_size, strata, root, n_repeats):
    """The (train, test) sorted row positions of each repeat: scikit-learn's
    ``train_test_split`` seeded by the repeat's own child of ``root``."""
    from sklearn.model_selection import train_test_split

    out = []
    for r in range(n_repeats):
        seed = int(child_seed(root, "holdout", r).generate_state(1)[0])
        train, test = train_test_split(np.arange(n), test_size=test_size, random_state=seed,
                                       stratify=strata)
        out.append((np.sort(train), np.sort(test)))
    return out


def bootstrap_indices(target, m, n_bootstraps, root):
    """(B, N) in-bag row positions: round b drawn from its own child of ``root``, drawn
    again (from the same child) while its out-of-bag part is empty or the metric is
    undefined in bag or out of bag."""
    n = target.n_samples
    rule = m.definedness(target)
    out = np.empty((n_bootstraps, n), dtype=np.int64)
    for b in range(n_bootstraps):
        gen = child_generator(root, "bootstrap_estimate", b)
        for _ in range(MAX_DRAWS):
            idx = gen.integers(0, n, size=n)
            counts = np.bincount(idx, minlength=n)[None, :]
            if (counts == 0).any() and rule.inbag(counts)[0] and rule.oob(counts)[0] and \
                    (not m.is_classification or np.unique(target.codes[idx]).size > 1):
                break
        else:
            raise UndefinedScoreError(
                f"No bootstrap of the {n} rows in {MAX_DRAWS} draws had both an out-of-bag part "
                f"and the metric {m.name!r} defined in bag and out of bag, in {door_name()}: use "
                f"more rows (or more of the rarest class).")
        out[b] = idx
    return out


# ---------------------------------------------------------------------- worker tasks
def _fit_one(estimator, X, y, train, X_test, scoring):
    """Fit on the ``train`` rows, predict ``X_test``: (values (n_test, 1[, K]), fit seconds)."""
    from ..engine import fit_predict_block, take_rows

    res = fit_predict_block(estimator, [{}], take_rows(X, train), take_rows(y, train), X_test,
                            scoring)
    if res.raised is not None:
        raise StudyError(f"The estimator raised while fitting: {res.raised.text}")
    return res.values, float(res.fit_time[0])


def _encoded(values, target, m):
    """The (n, 1, 1[, K]) predictions as the metric's kernels take them (labels as codes)."""
    block = values[:, :, None] if values.ndim == 2 else values[:, :, None, :]
    if m.prediction == "labels":
        return validation.encode_predictions(block, None, m, target)
    return block


@dataclasses.dataclass(frozen=True, eq=False)
class HoldoutOutcome:
    """A fitted split: its ``score``, ``fit_time`` (seconds) and, when asked for, the
    test rows' predictions (``values``; else None)."""

    score: float
    fit_time: float
    values: np.ndarray | None = None


def holdout_task(estimator, splits, scoring, X, y, keep=False):
    """Fit and score each ``(train, test)`` split: a :class:`HoldoutOutcome` each (with
    the test predictions if ``keep``)."""
    from ..engine import fold_target, score_fold, take_rows

    out = []
    for train, test in splits:
        values, fit = _fit_one(estimator, X, y, train, take_rows(X, test), scoring)
        score = score_fold(values, np.zeros(1, dtype=bool),
                           fold_target(take_rows(y, test), scoring.classes, scoring.pos_code),
                           scoring.metric)[0]
        out.append(HoldoutOutcome(float(score), fit, values if keep else None))
    return out


def holdout_kept_task(estimator, splits, scoring, X, y):
    """:func:`holdout_task` keeping the test predictions (holdout's interval needs them)."""
    return holdout_task(estimator, splits, scoring, X, y, keep=True)


def bootstrap_task(estimator, rounds, scoring, with_gamma, X, y):
    """Each round (in-bag positions) fitted and its model scored on all rows: the
    out-of-bag rows, the in-bag rows with their counts, and (``with_gamma``) γ.
    Returns (oob, resub, gamma, fit seconds) arrays."""
    from ..engine import fold_target
    from ..metrics import get_metric
    from ..stats import no_information_score

    name, classes, pos = scoring.metric, scoring.classes, scoring.pos_code
    m = get_metric(name)
    target = fold_target(y, classes, pos)
    n = len(target.codes if target.codes is not None else target.values)
    out = np.full((4, len(rounds)), np.nan)
    for j, idx in enumerate(rounds):
        values, out[3, j] = _fit_one(estimator, X, y, idx, X, scoring)
        enc = _encoded(values, target, m)
        bag = np.bincount(idx, minlength=n)
        counts = np.stack([(bag == 0).astype(np.int32), bag.astype(np.int32)])
        out[0, j], out[1, j] = m.prepare(target, enc).scores(counts)[:, 0, 0]
        if with_gamma:
            y_enc = target.codes if m.is_classification else target.values
            out[2, j] = no_information_score(name, y_enc, enc[:, 0, 0],
                                             len(classes) if classes is not None else 0, pos)
    return out


# ---------------------------------------------------------------------- running
def _open_client(client, progress):
    from ..cluster import resolve_client

    c, owned = resolve_client(client)
    if progress and owned and (client is None or isinstance(client, dict)):
        print(f"bbc_dask: started a local Dask cluster; dashboard: {c.dashboard_link}",
              file=sys.stderr)
    return c, owned


def _groups(items, client):
    """``items`` cut into consecutive groups, about ``bbc_dask.resampling-tasks-per-thread``
    per thread."""
    from ..cluster import threads_of

    size = max(1, math.ceil(len(items) / (tuning.RESAMPLING_TASKS_PER_THREAD * threads_of(client))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def run_tasks(c, progress, fn, groups, X, y, estimator, *args, label, unit):
    """``[fn(estimator, group, *args, X, y)]`` for each group, on the client ``c``, in
    order; X and y are shipped once, as tasks holding them (not scattered: scattered data
    is gone with the worker that held it, and every task needing it would be cancelled;
    a task's result is computed again on another worker). ``label``: the progress bar's,
    the protocol's name; it counts the groups' items (``unit``: "split", "round"), not
    the tasks, so that it says how far the protocol is in its own terms. Each task speaks
    in the user's door (:class:`carried`)."""
    from distributed import as_completed

    from ..chunked import held

    X_f, y_f = (c.submit(held, a, pure=False) for a in (X, y))
    futures = [c.submit(carried(fn), estimator, g, *args, X_f, y_f, pure=False, retries=3)
               for g in groups]
    size = {f.key: len(g) for f, g in zip(futures, groups)}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(size.values()), unit=unit, desc=label, file=sys.stderr,
                   dynamic_ncols=True, mininterval=0.5)
    try:
        for fut in as_completed(futures):
            fut.result()  # the first error is raised here
            if bar is not None:
                bar.update(size[fut.key])
    except BaseException:
        c.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.close()
    return c.gather(futures)


# ---------------------------------------------------------------------- public functions
@door("holdout")
def holdout(estimator, X, y, *, metric, test_size, confidence=0.95, random_state,
            stratify=True, ci_method=None, client=None, progress=True):
    """Performance of ``estimator`` fitted once on a training part and scored on the
    held-out rest, with a confidence interval.

    Parameters
    ----------
    estimator : scikit-learn estimator
    X : array-like or DataFrame of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    metric : str
        A registered metric name (``bbc_dask.metrics.metric_names()``).
    test_size : float
        Share of the rows held out, in (0, 1): ``ceil(test_size * n)`` rows, as
        scikit-learn's ``train_test_split``.
    confidence : float, default=0.95
    random_state : int, SeedSequence, Generator, RandomState or None
        Seeds the split (the same split as the first of :func:`repeated_holdout`'s).
    stratify : bool, default=True
        Keep the class proportions in both parts (classification metrics only).
    ci_method : {"wilson", "normal", "delong", "bootstrap"} or None, default=None
        The interval (see Notes); None: the metric's default. ``"wilson"`` and
        ``"normal"`` are accuracy's, ``"delong"`` binary ROC AUC's; ``"bootstrap"`` any
        metric's.
    client : distributed.Client, str, dict or None, default=None
        None: the fit runs in this process, with its libraries' threads as they are
        (OpenMP and BLAS at a thread per core by default). Else as
        :func:`repeated_holdout`'s: the fit is one Dask task on that cluster, with a
        worker's thread limits (distributed's nannies start their workers with
        ``OMP_NUM_THREADS=1``, the other protocols' fits run so).
    progress : bool, default=True
        With a client: a progress bar of the task on stderr.

    Returns
    -------
    HoldoutResult
        ``estimate``, ``ci`` (low, high), ``ci_method``, ``ci_clipped``, ``train_idx``,
        ``test_idx``, ``models_trained`` (1), ``fit_seconds``, ``wall_seconds``.

    Notes
    -----
    The interval depends on the metric: accuracy, Wilson's score interval by default
    (inside [0, 1], near its nominal coverage close to 1: at 171 test rows and a true
    accuracy of 0.99 its exact coverage is 0.97) or, with ``ci_method="normal"``, the
    normal approximation of Eq. 14 (``acc ± z·sqrt(acc(1 - acc)/n_test)``, a Wald
    interval: 0.82 there; clipped to [0, 1], ``ci_clipped`` then True); binary ROC AUC,
    DeLong's (Sun & Xu's placements, clipped to [0, 1]); any other metric, the
    percentile interval of 2000 bootstrap resamples of the test set (the fitted model
    fixed; resamples where the metric is undefined are left out). Each ignores the
    variance from the training set. The fit runs in this process unless ``client`` is
    given.

    Examples
    --------
    >>> import bbc_dask as bd
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = make_classification(200, random_state=0)
    >>> res = bd.holdout(LogisticRegression(), X, y, metric="accuracy", test_size=0.3,
    ...                  random_state=0)
    >>> len(res.test_idx), res.ci_method
    (60, 'wilson')
    """
    t0 = time.perf_counter()
    m, X, target, scoring = _common_iv(estimator, X, y, metric)
    test_size, strata = _split_iv(target, m, test_size, stratify)
    confidence = validation.check_real_open(confidence, "confidence", 0.0, 1.0)
    if ci_method is not None:
        validation.check_one_of(ci_method, "ci_method", _HOLDOUT_CI.get(m.name, ()) + ("bootstrap",))
    root = as_seed_sequence(random_state)
    _run_iv(client, progress)
    train, test = holdout_splits(target.n_samples, test_size, strata, root, 1)[0]
    if client is None:
        outcome = holdout_kept_task(estimator, [(train, test)], scoring, X, y)[0]
    else:
        outcome = _run_grouped(client, progress, holdout_kept_task, lambda c: [[(train, test)]],
                               X, y, estimator, scoring, label="holdout", unit="split")[0][0]
    score, fit, values = outcome.score, outcome.fit_time, outcome.values
    if not np.isfinite(score):
        raise UndefinedScoreError(
            f"The metric {m.name!r} is undefined on the {len(test)} test rows of {door_name()} "
            f"(e.g. one class only): use a larger test_size or stratify=True.")
    ci, how = _holdout_ci(m, values, target, test, scoring, score, confidence, root, ci_method)
    ci, clipped = _stats().clip_interval(ci, m.bounds)
    return _stats().HoldoutResult(score, ci, how, m.name, confidence, train, test, 1, fit,
                                  time.perf_counter() - t0, clipped)


def _stats():
    from .. import stats

    return stats


#: The interval methods of holdout, by metric (the first is the default); "bootstrap"
#: serves any metric.
_HOLDOUT_CI = {"accuracy": ("wilson", "normal"), "roc_auc": ("delong",)}


def _holdout_ci(m, values, target, test, scoring, score, confidence, root, method=None):
    from ..engine import fold_target

    stats = _stats()
    classes, pos = scoring.classes, scoring.pos_code
    codes = target.codes[test] if m.is_classification else None
    own = _HOLDOUT_CI.get(m.name, ())
    method = method or (own[0] if own else "bootstrap")
    if method == "wilson":
        return stats.wilson_interval(score, len(test), confidence), "wilson"
    if method == "normal":
        return stats.normal_interval(score, len(test), confidence), "normal"
    if method == "delong":
        return stats.delong_interval(values[:, 0], codes == pos, confidence), "delong"
    y_test = classes[codes] if m.is_classification else target.values[test]
    t = fold_target(y_test, classes, pos)
    enc = _encoded(values, t, m)
    gen = child_generator(root, "holdout_ci")
    counts = gen.multinomial(len(test), np.full(len(test), 1.0 / len(test)),
                             size=HOLDOUT_BOOTSTRAPS)
    rule = m.definedness(t)
    ok = rule.inbag(counts)
    draws = np.full(HOLDOUT_BOOTSTRAPS, np.nan)
    if ok.any():
        draws[ok] = m.prepare(t, enc).scores(counts[ok])[:, 0, 0]
    return stats.percentile_interval(draws, confidence), "bootstrap"


@door("repeated_holdout")
def repeated_holdout(estimator, X, y, *, metric, n_repeats, test_size, confidence=0.95,
                     random_state, stratify=True, client=None, progress=True):
    """Performance of ``estimator`` over ``n_repeats`` random train/test splits, fitted as
    Dask tasks, with a t interval of the mean.

    Parameters
    ----------
    estimator, X, y, metric, test_size, stratify
        As :func:`holdout`.
    n_repeats : int
        Number of splits, at least 2.
    confidence : float, default=0.95
    random_state : int, SeedSequence, Generator, RandomState or None
        Split r is scikit-learn's ``train_test_split`` seeded by the r-th child of this
        seed: the same whatever the number of workers, and its first split is
        :func:`holdout`'s.
    client : distributed.Client, str, dict or None, default=None
        As :func:`bbc_dask.run_study`: None starts a local cluster (closed at the end), a
        string is a scheduler's address, a dict :func:`bbc_dask.make_client`'s arguments.
    progress : bool, default=True
        A progress bar of the tasks on stderr.

    Returns
    -------
    RepeatedHoldoutResult
        ``estimate`` (the mean of the scores), ``ci``, ``scores``, ``splits`` (a list of
        (train, test) row positions), ``models_trained``, ``fit_seconds``,
        ``wall_seconds``.

    Notes
    -----
    The interval is ``mean ± t(1 - α/2, n - 1)·s/√n`` with s the standard deviation of
    the scores. It treats the scores as independent: it ignores that the training sets
    (and test sets) of the splits overlap, so it is too narrow as an interval for the
    performance of the learning method (Nadeau & Bengio, 2003); read it as the
    uncertainty of the mean over these splits. A split whose score is undefined (NaN) is
    left out of the estimate and the interval.

    Examples
    --------
    >>> res = bd.repeated_holdout(LogisticRegression(), X, y, metric="accuracy",
    ...                           n_repeats=5, test_size=0.3, random_state=0,
    ...                           client=client, progress=False)  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    m, X, target, scoring = _common_iv(estimator, X, y, metric)
    n_repeats = validation.check_int(n_repeats, "n_repeats", low=2)
    test_size, strata = _split_iv(target, m, test_size, stratify)
    confidence = validation.check_real_open(confidence, "confidence", 0.0, 1.0)
    root = as_seed_sequence(random_state)
    _run_iv(client, progress)
    splits = holdout_splits(target.n_samples, test_size, strata, root, n_repeats)

    def run(c):
        return _groups(splits, c)

    parts = _run_grouped(client, progress, holdout_task, run, X, y, estimator, scoring,
                         label="repeated_holdout", unit="split")
    flat = [item for part in parts for item in part]
    scores = np.array([o.score for o in flat])
    stats = _stats()
    ci, clipped = stats.clip_interval(stats.t_interval(scores, confidence), m.bounds)
    return stats.RepeatedHoldoutResult(
        float(np.nanmean(scores)) if np.isfinite(scores).any() else math.nan,
        ci, scores, splits, m.name, confidence, n_repeats,
        float(sum(o.fit_time for o in flat)), time.perf_counter() - t0, clipped)


def _run_grouped(client, progress, fn, make_groups, X, y, estimator, *args, label, unit):
    """``run_tasks`` whose groups are cut once the client (and its thread count) is known."""
    from ..cluster import close_client

    c, owned = _open_client(client, progress)
    try:
        return run_tasks(c, progress, fn, make_groups(c), X, y, estimator, *args, label=label,
                         unit=unit)
    finally:
        if owned:
            close_client(c, close_cluster=client is None or isinstance(client, dict))


@door("bootstrap_estimate")
def bootstrap_estimate(estimator, X, y, *, metric, n_bootstraps, method, random_state,
                       client=None, progress=True):
    """The out-of-bag, .632 or .632+ bootstrap estimate of ``estimator``'s performance,
    its rounds fitted as Dask tasks.

    Parameters
    ----------
    estimator, X, y, metric
        As :func:`holdout`.
    n_bootstraps : int
        Rounds (one fit each), at least 1.
    method : {"oob", ".632", ".632+"}
    random_state : int, SeedSequence, Generator, RandomState or None
        Round b's in-bag rows are drawn from the b-th child of this seed (drawn again from
        it while the out-of-bag part is empty or the metric undefined in it, or the bag
        holds one class): the same whatever the number of workers and of rounds per task.
    client, progress
        As :func:`repeated_holdout`.

    Returns
    -------
    BootstrapEstimate
        ``estimate``, ``indices`` (rounds × N in-bag row positions), ``oob_scores``,
        ``resub_scores``, ``gamma`` and ``relative_overfitting`` (.632+ only),
        ``models_trained``, ``fit_seconds``, ``wall_seconds``.

    Notes
    -----
    Every quantity is per round, and the estimate is their mean over the rounds
    (Raschka's Eqs. 31-32, as mlxtend's ``bootstrap_point632_score``), where Efron &
    Tibshirani average each part first:

    - out-of-bag score: round b's model on the rows not drawn;
    - resubstitution score: round b's model on its own training sample, each row counted
      as often as drawn (mlxtend scores the round's model on all rows instead);
    - ``"oob"``: the mean out-of-bag score; ``".632"``: Eq. 31, ``.368·resub + .632·oob``;
    - ``".632+"``: Eqs. 32-36 for scores (larger is better): γ is the round's model's
      no-information score, the metric over all n² pairs (y_i, ŷ_j) of the data set's
      targets and the model's predictions on all rows (Eq. 35; Eq. 36 for accuracy,
      closed forms for every pointwise metric but the squared correlation, for which it
      is 0; 0.5 for the AUCs). With ``oob' = max(oob, γ)``, ``R = (resub - oob')/(resub -
      γ)`` if ``oob < resub`` and ``γ < resub``, else 0 (Efron & Tibshirani's clipping,
      so R is in [0, 1]), and the round's estimate is ``.632 + (oob' - resub)·.368·.632·R
      /(1 - .368·R)`` (with R = 0, the round's .632 estimate).

    Examples
    --------
    >>> res = bd.bootstrap_estimate(LogisticRegression(), X, y, metric="accuracy",
    ...                             n_bootstraps=50, method=".632+", random_state=0,
    ...                             client=client, progress=False)  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    from ..metrics import get_metric

    validation.check_one_of(method, "method", METHODS)
    stats = _stats()
    name = get_metric(metric).name
    if method == ".632+" and name not in stats.NO_INFORMATION:
        raise InvalidParameterError.of("method", f"'oob' or '.632' for the metric "
                                       f"{name!r}, which has no no-information rate", method)
    m, X, target, scoring = _common_iv(estimator, X, y, metric)
    n_bootstraps = validation.check_int(n_bootstraps, "n_bootstraps", low=1)
    root = as_seed_sequence(random_state)
    _run_iv(client, progress)
    indices = bootstrap_indices(target, m, n_bootstraps, root)

    def make_groups(c):
        return _groups(list(indices), c)

    parts = _run_grouped(client, progress, bootstrap_task, make_groups, X, y,
                         estimator, scoring, method == ".632+", label="bootstrap_estimate",
                         unit="round")
    oob, resub, gamma, fit = np.concatenate(parts, axis=1)
    per_round, rate = stats.point632(oob, resub, method, gamma)
    plus = method == ".632+"
    return stats.BootstrapEstimate(
        float(np.nanmean(per_round)), method, m.name, indices, oob, resub,
        gamma if plus else None, rate if plus else None, n_bootstraps, float(fit.sum()),
        time.perf_counter() - t0)
