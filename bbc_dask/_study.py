"""Study: the results of a CVT run, read from its Zarr store."""
from __future__ import annotations

import dataclasses

import numpy as np

from . import _validation as V
from .cube import DONE, DROPPED, FAILED, PENDING, open_cube
from .stats import _bbc as S

__all__ = ["Study", "failure_groups", "open_study", "select_winner"]


def _complete(state):
    return np.all(state == DONE, axis=(1, 2))


#: Above this (complete configurations' predictions as float64), Study.bbc()/bbc_f() map
#: the bootstraps over chunks read from the store instead of loading the cube.
IN_MEMORY_BYTES = 2**30


def _y_and_pos(cube):
    spec = cube.meta["spec"]
    y = cube.y()
    classes = cube.meta.get("classes")
    pos = None
    if classes is not None and spec.get("pos_label") is not None:
        pos = classes.index(spec["pos_label"])
    return y, pos


def failure_groups(cube):
    """Failed configurations' first errors grouped by text (see :meth:`Study.failures`)."""
    err = cube.errors()
    failed = np.flatnonzero(np.any(cube.state() == FAILED, axis=(1, 2)))
    groups = {}
    for c in failed:
        text = str(err[c]) or "no error text recorded"
        groups.setdefault(text, []).append(int(c))
    out = [{"error": t, "count": len(cs), "configs": cs} for t, cs in groups.items()]
    return sorted(out, key=lambda g: (-g["count"], g["configs"][0]))


def pooled_scores(cube, idx):
    """Pooled scores (len(idx), R) of complete configurations ``idx``, from the ledger;
    those not recorded yet (a run stopped before its last step) are computed here from
    their predictions, with the same function the engine's tasks use."""
    from .stats._blocks import chunk_pooled

    pooled = cube.pooled()[idx]
    missing = np.flatnonzero(np.isnan(pooled).any(axis=1))
    if missing.size:
        y, pos = _y_and_pos(cube)
        pooled[missing] = chunk_pooled(cube.predictions(idx[missing]), y, cube.meta["spec"]["metric"], pos)
    return pooled


def select_winner(cube):
    """The configuration CVT selects: best pooled CV score (mean over repeats) among
    complete configurations, ties to the lowest index — :func:`bbc_dask.naive_cvt`'s rule
    on the ledger's pooled scores — or None if none is complete."""
    idx = np.flatnonzero(_complete(cube.state()))
    if idx.size == 0:
        return None
    full = pooled_scores(cube, idx).mean(axis=1)
    return int(idx[int(S._select(full[None, :])[0])])


class Study:
    """A cross-validation-with-tuning study backed by its Zarr store.

    Returned by :func:`bbc_dask.run_study` and :func:`open_study`. Everything is read from
    the store, so a study opened later (or elsewhere) gives the same answers.

    Attributes
    ----------
    store : str
        The store's absolute path or URL.
    location : bbc_dask.cube.StoreLocation
    cube : xarray.Dataset
        The prediction cube, lazily backed by the store.
    metric : str
    n_fits_ : int
        Fits performed by the call that returned this object (0 for :func:`open_study`).
    """

    def __init__(self, store, final_model=None, storage_options=None):
        self._cube = open_cube(store, storage_options=storage_options)
        self.location = self._cube.location
        self.store = self.location.url
        self.meta = self._cube.meta
        self.spec = self.meta["spec"]
        self.metric = self.spec["metric"]
        self._final_model = final_model
        self._param_objects = None  # the real parameter values when run in this process
        self.n_fits_ = 0

    def __repr__(self):
        st = self._cube.state()
        return (f"Study(store={self.store!r}, metric={self.metric!r}, configs={st.shape[0]}, "
                f"repeats={st.shape[1]}, folds={st.shape[2]}, cells done "
                f"{int((st == DONE).sum())}/{st.size})")

    # ----------------------------------------------------------------- contents
    @property
    def cube(self):
        return self._cube.dataset()

    @property
    def _configs(self):
        if self._param_objects is None:
            from .engine._plan import Configurations

            desc = self.meta.get("configurations")
            self._param_objects = (Configurations.from_description(desc) if desc is not None
                                   else list(self.meta["params"]))
        return self._param_objects

    @property
    def params(self):
        """Parameters of every configuration: the real values when the study was run by
        this process, else as stored (values that are not JSON are their repr)."""
        return list(self._configs)

    @property
    def seed(self):
        """The study's own seed (a ``numpy.random.SeedSequence``): the default
        ``random_state`` of its estimates, so every way of asking (``Study.bbc()``,
        ``bbc-dask estimate``, the report, ``BBCSearchCV``) gives the same numbers. For
        ``run_study(random_state=0)`` it equals ``random_state=0``."""
        ent = self.spec["seed"]
        return np.random.SeedSequence(int(ent["entropy"]), spawn_key=tuple(ent["spawn_key"]))

    def failures(self):
        """The first errors of failed configurations, grouped by message, most frequent
        first: a list of ``{"error", "count", "configs"}``."""
        return failure_groups(self._cube)

    @property
    def state(self):
        """Cell states ``(config, repeat, fold)``: 0 pending, 1 done, 2 failed, 3 dropped."""
        return self._cube.state()

    @property
    def errors(self):
        """``{config: error text}`` of the configurations that raised."""
        err = self._cube.errors()
        return {int(i): str(err[i]) for i in np.flatnonzero(err != "")}

    def complete_configs(self):
        """Indices of configurations with every (repeat, fold) cell done."""
        return np.flatnonzero(_complete(self._cube.state()))

    @property
    def metadata(self):
        """The ``metadata`` given to :func:`run_study` (the command line's study file)."""
        return self.meta.get("metadata")

    def status(self):
        """Progress: cells done/failed/dropped/pending, fold waves done, active
        configurations, whether a run holds the store, elapsed and estimated remaining
        seconds of the latest run (remaining from its rate so far; None when unknown)."""
        import time

        st = self._cube.state()
        waves = 0
        for k in range(st.shape[2]):  # a wave is done when no cell of fold k is pending
            if (st[:, :, k] == PENDING).any():
                break
            waves += 1
        pending = int((st == PENDING).sum())
        active = (self._cube.dropped_waves()[0] < 0) & ~np.any(st == FAILED, axis=(1, 2))
        running = self.location.lock().is_held()
        runs = self.meta.get("runs") or []
        elapsed = remaining = None
        if runs and "t0" in runs[-1]:
            last = runs[-1]
            end = last.get("t1") if not running else None
            elapsed = (end or time.time()) - last["t0"]
            done_now = int((st != PENDING).sum())
            rate = (done_now - last.get("done_before", 0)) / elapsed if elapsed > 0 else 0
            remaining = 0.0 if pending == 0 else (pending / rate if running and rate > 0 else None)
        return {
            "cells": int(st.size), "done": int((st == DONE).sum()),
            "models_trained": int(((st == DONE) | (st == FAILED)).sum()), "models_full": int(st.size),
            "failed": int((st == FAILED).sum()), "dropped": int((st == DROPPED).sum()),
            "pending": pending, "waves_done": waves, "waves": int(st.shape[2]),
            "active_configs": int(active.sum()),
            "complete_configs": int(_complete(st).sum()), "configs": int(st.shape[0]),
            "running": running, "elapsed_s": elapsed, "remaining_s": remaining,
        }

    # -------------------------------------------------------------- estimates
    def _inputs(self):
        idx = self.complete_configs()
        if idx.size == 0:
            raise ValueError(self._none_complete())
        y, pos = _y_and_pos(self._cube)
        return idx, self._cube.predictions(idx), y, self._cube.folds(), pos

    def _none_complete(self):
        groups = self.failures()
        msg = f"The study at {self.store!r} has no complete configuration yet"
        if groups:
            n = sum(g["count"] for g in groups)
            msg += f"; {n} configurations failed, most with: {groups[0]['error'].splitlines()[0]}"
        return msg + "."

    @staticmethod
    def _remap(res, idx):
        w = np.where(res.winners >= 0, idx[np.maximum(res.winners, 0)], -1)
        return dataclasses.replace(res, winners=w, selected_config=int(idx[res.selected_config]))

    @property
    def is_bbcd(self):
        """True when the study ran with BBCD-CV dropping."""
        return self.spec.get("dropping") is not None

    def _chunked(self, idx, chunked):
        if chunked is None:  # the result is the same bit for bit; only resources differ
            shape = self._cube.reader().shape
            per_config = int(np.prod(shape)) // max(shape[1], 1) * 8
            return per_config * idx.size > IN_MEMORY_BYTES
        if not isinstance(chunked, (bool, np.bool_)):
            raise TypeError(f"The 'chunked' parameter of Study must be None, True or False. "
                            f"Got {chunked!r} instead.")
        return bool(chunked)

    _CHUNKED_KW = ("n_bootstraps", "confidence_level", "random_state", "pos_label", "block_size")

    def _chunked_opts(self, fn, kwargs, caller):
        """``(y, options)``: ``fn``'s defaults for the chunked path, updated by ``kwargs``."""
        import inspect

        V.reject_unknown(kwargs, self._CHUNKED_KW, caller)
        y, pos = _y_and_pos(self._cube)
        params = inspect.signature(fn).parameters
        opts = {k: params[k].default for k in self._CHUNKED_KW} | {"pos_label": pos}
        return y, opts | kwargs

    def _blocks(self, idx):
        return self._cube.blocks(idx)

    def bbc(self, *, chunked=None, **kwargs):
        """:func:`bbc_dask.bbc` on the cube's complete configurations (indices in the
        result refer to the study's configurations).

        For a BBCD study this is the BBCD-CV estimate: BBC over the configurations that
        survived to the end (complete columns), as in the 2018 paper; the result says
        ``method="bbcd"``.

        Parameters
        ----------
        chunked : bool or None, default=None
            Map the bootstraps over configuration chunks read from the store by Dask tasks
            (on the active ``distributed.Client``, else Dask's local scheduler) instead of
            loading the cube. None: chunked when the complete configurations exceed
            ``IN_MEMORY_BYTES`` (1 GiB as float64). The result is identical either way.
        **kwargs
            Passed to :func:`bbc_dask.bbc` (``n_bootstraps``, ``confidence_level``,
            ``random_state``, ...). ``random_state`` defaults to :attr:`seed`, the
            study's own: the same numbers however the study is opened or asked.
        """
        kwargs.setdefault("random_state", self.seed)
        idx = self.complete_configs()
        if idx.size and self._chunked(idx, chunked):
            from ._lazy import bbc_over_blocks

            y, opts = self._chunked_opts(S.bbc, kwargs, "Study.bbc(chunked=True)")
            opts.pop("block_size")  # per-task blocks are the seed blocks
            blocks, offsets = self._blocks(idx)
            res = self._remap(bbc_over_blocks(blocks, offsets, y, metric=self.metric, **opts), idx)
        else:
            idx, pred, y, folds, pos = self._inputs()
            kwargs.setdefault("pos_label", pos)
            res = self._remap(S.bbc(pred, y, metric=self.metric, folds=folds, **kwargs), idx)
        return dataclasses.replace(res, method="bbcd") if self.is_bbcd else res

    @property
    def dropped(self):
        """Dropped configurations: a list of ``{"config", "wave", "p_hat"}`` by wave."""
        dw, dp = self._cube.dropped_waves()
        out = [{"config": int(c), "wave": int(dw[c]), "p_hat": float(dp[c])}
               for c in np.flatnonzero(dw >= 0)]
        return sorted(out, key=lambda d: (d["wave"], d["config"]))

    @property
    def dropping_log(self):
        """Per tested wave: active configurations before/after, what was dropped."""
        return self._cube.decisions()

    @property
    def models_trained(self):
        """``(trained, full)``: fits run (done or failed cells) versus the full CVT count."""
        st = self._cube.state()
        return int(((st == DONE) | (st == FAILED)).sum()), int(st.size)

    def bbc_f(self, *, chunked=None, **kwargs):
        """:func:`bbc_dask.bbc_f` on the cube's complete configurations; ``chunked`` as in
        :meth:`bbc` (the fold × configuration matrix is built per chunk)."""
        kwargs.setdefault("random_state", self.seed)
        idx = self.complete_configs()
        if idx.size == 0:
            raise ValueError(self._none_complete())
        if chunked is not None and not isinstance(chunked, (bool, np.bool_)):
            raise TypeError(f"The 'chunked' parameter of Study must be None, True or False. "
                            f"Got {chunked!r} instead.")
        _, opts = self._chunked_opts(S.bbc_f, kwargs, "Study.bbc_f")
        opts.pop("pos_label")
        # The fold x configuration matrix is in the ledger: each task scored its fold with
        # the function fold_score_matrix uses, so this equals bbc_f on the loaded cube.
        fs = self._cube.fold_scores()[idx]  # (c, R, K)
        F = np.ascontiguousarray(fs.reshape(idx.size, -1).T)  # (R*K, c), repeat-major
        bad = np.isnan(F).any(axis=1)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(S.fold_undefined(self.metric, row % fs.shape[2], row // fs.shape[2], "bbc_f"))
        res = S._bbc_f_matrix(F, self.metric, opts["n_bootstraps"], opts["confidence_level"],
                              opts["random_state"], None, opts["block_size"], "Study.bbc_f")
        return self._remap(res, idx)

    def fold_scores(self):
        """Per-(repeat, fold) scores, (R*K, C) repeat-major, NaN for cells not trained
        (pending, failed, dropped): complete configurations and the folds that dropped
        ones trained before BBCD dropped them."""
        st = self._cube.state()
        n_cfg, n_rep, n_spl = st.shape
        F = np.full((n_rep * n_spl, n_cfg), np.nan)
        done = (st == DONE).reshape(n_cfg, -1).T  # (R*K, C) repeat-major
        got = self._cube.fold_scores().reshape(n_cfg, -1).T
        F[done] = got[done]
        return F

    # ------------------------------------------------------ scikit-learn view
    @property
    def cv_results_(self):
        """scikit-learn-shaped results. ``split{i}_test_score`` are per (repeat, fold) in
        repeat-major order; ``mean_test_score``/``std_test_score`` over them;
        ``pooled_test_score`` is the metric on all pooled out-of-sample predictions (mean
        over repeats), the selection criterion; ``rank_test_score`` ranks it."""
        st = self._cube.state()
        n_cfg = st.shape[0]
        idx = self.complete_configs()
        n_rows = st.shape[1] * st.shape[2]
        splits = np.full((n_rows, n_cfg), np.nan)
        pooled = np.full(n_cfg, np.nan)
        if idx.size:
            splits[:, idx] = self._cube.fold_scores()[idx].reshape(idx.size, -1).T
            pooled[idx] = pooled_scores(self._cube, idx).mean(axis=1)
        order = np.argsort(np.where(np.isnan(pooled), np.inf, -pooled), kind="stable")
        rank = np.empty(n_cfg, dtype=np.int64)
        rank[order] = np.arange(1, n_cfg + 1)
        ft = self._cube.fit_times().reshape(n_cfg, -1)
        out = {"params": self.params}
        keys = sorted({k for p in self.params for k in p})
        for k in keys:
            out[f"param_{k}"] = np.ma.masked_array(
                [p.get(k) for p in self.params], mask=[k not in p for p in self.params], dtype=object)
        for i in range(n_rows):
            out[f"split{i}_test_score"] = splits[i]
        with np.errstate(invalid="ignore"):
            out["mean_test_score"] = splits.mean(axis=0)
            out["std_test_score"] = splits.std(axis=0)
            out["pooled_test_score"] = pooled
            out["rank_test_score"] = rank
            out["mean_fit_time"] = np.nanmean(np.where(np.isnan(ft), np.nan, ft), axis=1) if ft.size else ft
        return out

    @property
    def best_index_(self):
        best = select_winner(self._cube)
        if best is None:
            raise ValueError(self._none_complete())
        return best

    @property
    def best_params_(self):
        return self._configs[self.best_index_]

    @property
    def best_score_(self):
        """The winner's pooled CV score (the naive, optimistic CVT estimate)."""
        return float(self.cv_results_["pooled_test_score"][self.best_index_])

    @property
    def final_model(self):
        """The winner refit on all data (loaded with skops from the store if needed)."""
        if self._final_model is None:
            self._final_model = self.load_final_model()
        return self._final_model

    def load_final_model(self, trusted=None):
        """Load the saved final model with skops (never pickle).

        Trusted: skops' default types, the classes the study recorded when it saved the
        model (with the file's SHA-256: a changed file is refused), and the names in
        ``trusted``. Functions (e.g. a ``FunctionTransformer``'s ``func``) are trusted
        only when named here: a chain of library functions can run arbitrary code.

        Parameters
        ----------
        trusted : list of str, default=None
            Extra type or function names to trust (as skops lists them).
        """
        from .cube._model import load_model

        info = self.meta.get("final_model")
        if not info:
            raise ValueError(f"The study at {self.store!r} has no final model (refit=False or not finished).")
        return load_model(self.location, info, trusted)


def open_study(store, storage_options=None):
    """Open a finished or interrupted study read-only (everything but refitting).

    Parameters
    ----------
    store : str or path
        The study's directory or fsspec URL (``s3://bucket/study.zarr``).
    storage_options : dict, default=None
        fsspec options of a URL store (credentials, endpoint).
    """
    return Study(store, storage_options=storage_options)
