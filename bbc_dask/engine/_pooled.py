"""The pooled scores of a study's complete configurations: the metric on every sample's
out-of-sample prediction, per repeat, computed by tasks that read the stored chunks (the
driver never loads predictions) — along the waves as configurations complete
(:class:`PooledAlong`), and by a pass at the end for whatever is still missing
(:func:`pooled_pass`)."""
from __future__ import annotations

import uuid

import numpy as np

from .._signals import deferred_interrupts, wait_done
from ..cube import DONE, FAILED, PENDING
from .._doors import carried

__all__ = ["PooledAlong", "pooled_pass"]


def pooled_pass(cube, client, m, target):
    """Pooled scores of complete configurations that have none yet, as tasks reading
    their chunks (the driver never loads predictions)."""
    state = cube.state()
    folds = cube.folds()
    # repeats that leave samples out (nested CV): scored per repeat once its cells are done
    present = None if (folds >= 0).all() else folds >= 0
    if present is None:
        complete = np.all(state == DONE, axis=(1, 2))
        need = np.flatnonzero(complete & np.isnan(cube.pooled()).any(axis=1))
    else:
        need = np.flatnonzero((np.all(state == DONE, axis=2) & np.isnan(cube.pooled())).any(axis=1))
    if not need.size:
        return
    blocks, _ = cube.blocks(need)
    y = cube.y()
    # a task holding y, not scattered data: computed again if its worker is lost
    y_f = _held(client, y, "y") if len(blocks) > 1 else y
    if present is not None and len(blocks) > 1:  # (N, R) bools: shipped once, as y
        present = _held(client, present, "present")
    futures = [_submit_pooled(client, b, y_f, m, target, present) for b in blocks]
    wait_done(futures)
    with deferred_interrupts():
        values = client.gather(futures)
    for b, v in zip(blocks, values):
        cube.record_pooled(b.configs, v)


def _held(client, value, name):
    from ..chunked import held

    return client.submit(held, value, pure=False, key=f"bbc-pooled-{name}-{uuid.uuid4().hex[:8]}")


def _submit_pooled(client, block, y_f, m, target, present=None):
    from ..chunked import chunk_pooled

    return client.submit(carried(chunk_pooled), block, y_f, m.ref, target.pos_code, None, present,
                         pure=False, key=f"bbc-pooled-{block.configs[0]}-{uuid.uuid4().hex[:8]}")


class PooledAlong:
    """The pooled scores of a study without dropping, computed while the waves run: as
    soon as the last pending cell of a window of configurations is recorded, the
    window's complete configurations are scored by a task among the fit tasks, so that
    the run does not end on a pass of its own (a barrier, then a pass over every
    prediction while the last wave's tail leaves workers idle). The windows are the
    blocks of :func:`pooled_pass` (:meth:`Cube.blocks` over every configuration), and
    so are the tasks and their function: the same bits, in as many tasks (a small cube
    is one window, scored once its last cell is in). The values are written with the
    ledger batch that follows them, after the states of the cells they score. A block
    whose task is lost is left to the pass at the end, which scores whatever is still
    missing (a lost block's configurations are marked unscored again: the pass, or a
    window completed later that holds them, scores them)."""

    def __init__(self, cube, client, m, target, state):
        self.cube, self.client, self.m, self.target = cube, client, m, target
        # nested CV's repeats leave samples out: scored by the pass, per repeat
        self.on = bool((cube.folds() >= 0).all())
        self.state = state.copy()
        n_cfg = state.shape[0]
        _, offsets = cube.blocks(np.arange(n_cfg))
        self.starts = np.asarray(offsets, dtype=np.int64)
        self.window = np.searchsorted(self.starts, np.arange(n_cfg), side="right") - 1
        pending = (state == PENDING).reshape(n_cfg, -1).sum(axis=1)
        self.left = np.bincount(self.window, weights=pending,
                                minlength=self.starts.size).astype(np.int64)
        self.unscored = np.isnan(cube.pooled()).any(axis=1)
        self.y_f = None
        self.batch = []  # (configs, values) to write with the next ledger batch

    def recorded(self, r, k, cfgs, failed):
        """Cells (repeat ``r``, fold ``k``) of ``cfgs`` recorded, ``failed`` per
        configuration: the :class:`CubeBlock`s to score now (none until a window has no
        pending cell left)."""
        cfgs = np.asarray(cfgs, dtype=np.int64)
        self.state[cfgs, r, k] = np.where(np.asarray(failed, bool), FAILED, DONE)
        if not self.on:
            return []
        out = []
        for w, n in zip(*np.unique(self.window[cfgs], return_counts=True)):
            self.left[w] -= n
            if self.left[w] > 0:
                continue
            lo = self.starts[w]
            hi = self.starts[w + 1] if w + 1 < self.starts.size else self.state.shape[0]
            done = np.all(self.state[lo:hi] == DONE, axis=(1, 2)) & self.unscored[lo:hi]
            need = lo + np.flatnonzero(done)
            if need.size:
                self.unscored[need] = False
                out += self.cube.blocks(need)[0]
        return out

    def submit(self, block):
        if self.y_f is None:
            self.y_f = _held(self.client, self.cube.y(), "y")
        return _submit_pooled(self.client, block, self.y_f, self.m, self.target)

    def lost(self, block):
        self.unscored[block.configs] = True  # the pass at the end scores it

    def take(self):
        """The scores computed since the last ledger batch, to write after its states."""
        batch, self.batch = self.batch, []
        return batch
