"""The graph pieces BBC, BBC-F and the dropping test share: seeds, plans, the counts
kept on the cluster, the chains that add sample blocks in order, and the gathering."""
from __future__ import annotations

import contextlib

import numpy as np

from .. import _tuning as tuning
from .. import _validation
from .._random import as_seed_sequence
from .._signals import deferred_interrupts, wait_done
from ..stats import SEED_BLOCK
from . import _sample_sums, _task_base
from .._doors import carried


def _tree(items, fn):
    from dask import delayed

    while len(items) > 1:
        items = [delayed(fn, pure=True)(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def _seed(root):
    return int(root.entropy), [int(k) for k in root.spawn_key]


def _seed_groups(n_boot, n, keep, n_blocks=1, client=None):
    """Seed blocks in groups: with ``keep`` (their counts are held) at most
    ``bbc_dask.counts-bytes`` of uint8 counts per group, and in enough groups
    (at least two, at most one seed block each) that the ``n_blocks`` configuration blocks
    scored against each make about two tasks per thread of the cluster (``client``'s, or
    the default one's): each group's counts are drawn by one task and scored by one task
    per block, so that many workers draw and score at once — with two groups, 16 workers
    of a 50,000 x 200 cube in 8 blocks had 16 tasks to share. More groups than that would
    only copy each prepared block to more workers. A bootstrap's counts come from its own
    seed block whatever the groups: the same numbers."""
    n_seed = -(-n_boot // SEED_BLOCK)
    if not keep:  # plans alone: a task per seed block (they run in parallel)
        return [[k] for k in range(n_seed)]
    wanted = max(2, -(-2 * _threads(client) // max(1, n_blocks)))
    per = min(max(1, tuning.COUNTS_BYTES // (SEED_BLOCK * n)), -(-n_seed // wanted))
    return [list(range(a, min(a + per, n_seed))) for a in range(0, n_seed, per)]


def _threads(client=None):
    """Threads of the cluster the graph will run on (``client``'s, else the default
    client's); 2 without a distributed client, or while it cannot say."""
    from ..cluster import current_client, threads_of

    client = client if client is not None else current_client()
    if client is None:
        return 2
    try:
        with deferred_interrupts():
            return threads_of(client)
    except Exception:  # noqa: BLE001 - a client closing: the grouping is only a speed matter
        return 2


def _bbc_args(n_bootstraps, confidence_level, random_state):
    conf = _validation.check_confidence_level(confidence_level)
    n_boot = _validation.check_int(n_bootstraps, "n_bootstraps")
    return conf, n_boot, _seed(as_seed_sequence(random_state))


def _plans(seed, stream, n_boot, n, sb, rule, keep, frame=None, n_blocks=1):
    """Delayed :func:`._blocks.plan_group` of every group of seed blocks (scored against
    ``n_blocks`` configuration blocks: see :func:`_seed_groups`)."""
    from dask import delayed

    return [delayed(_task_base.plan_group, pure=True)(seed, stream, ks, n, sb, rule, keep, frame)
            for ks in _seed_groups(n_boot, n, keep, n_blocks)]


def _attempts(group):
    return np.concatenate([plan.attempts for plan, _ in group])


def _keeps_counts(n_boot, n):
    """Whether every count of ``n_boot`` bootstraps of ``n`` samples (uint8, whole seed
    blocks) fits in ``bbc_dask.counts-bytes``: then they are drawn once and shared."""
    return -(-n_boot // SEED_BLOCK) * SEED_BLOCK * n <= tuning.COUNTS_BYTES


def _shared_counts(keep, seed, stream, plans, n_blocks, n_boot, client=None):
    """While every block's counts fit in ``bbc_dask.counts-bytes`` (``keep``; B x N bytes, B
    rounded up to whole seed blocks) each block's are drawn once, kept on the cluster and
    shared by the block's task of every group (and by the out-of-bag pass) — as the
    in-memory kernel draws them once; beyond (None), each task draws its block's again, so
    that no worker holds B x N. A worker that runs a task of a block whose counts it lacks
    fetches them as it fetches any dependency. They are not copied to every worker
    beforehand: ``Client.replicate`` is incompatible with the Active Memory Manager's
    default policy (which drops the copies) and waits for ever for a worker lost while it
    copies (an elastic cluster's scale-down), and on 2 workers it saved nothing measurable
    (50,000 x 400 accuracy, B = 200: median 3.27 s with it, 3.12 s without)."""
    if not keep:
        return None
    import dask
    from dask import delayed

    items = [delayed(_task_base.block_batches, pure=True)(seed, stream, plans, j, n_boot)
             for j in range(n_blocks)]
    return dask.persist(*items) if client is None else tuple(client.persist(items))


def _nbytes(x):
    """Bytes of the arrays in ``x`` (arrays, tuples, lists, dataclasses of them)."""
    if isinstance(x, np.ndarray):
        return x.nbytes
    if isinstance(x, (tuple, list)):
        return sum(_nbytes(v) for v in x)
    return sum(_nbytes(v) for v in vars(x).values()) if hasattr(x, "__dataclass_fields__") else 0


@contextlib.contextmanager
def _carrying(blocks_in):
    """Dask's warning of a large graph, raised by the bytes of ``blocks_in``: each sample
    block's target travels with its tasks by design (see :func:`_chain`) — ~10 bytes per
    sample, 10 MB at a million samples, in which the warning would otherwise print its
    advice to load the data with Dask, which does not apply."""
    import dask
    from dask.utils import parse_bytes

    key = "distributed.admin.large-graph-warning-threshold"
    limit = parse_bytes(dask.config.get(key, "10MB")) + _nbytes(blocks_in)
    with dask.config.set({key: limit}):
        yield


def _chain(task_runs, one, many, blocks_in, common, *args, counts=None):
    """The sums of ``task_runs`` added in block order: a task per run (``one`` for a
    block alone, ``many`` for a run, which gives a list of its blocks' sums). Each task
    gets its blocks' ``blocks_in`` (their target: ~10 bytes per sample) and the plans
    (8 × B × J bytes of totals for J sample blocks) as arguments, not as a shared
    dependency, which would draw every task to the worker that holds it."""
    from dask import delayed

    acc = None
    for blocks, parts in task_runs:
        if len(blocks) == 1:
            (j, lo, hi), = blocks
            kw = {} if counts is None else {"counts": counts[j]}
            s = delayed(carried(one), pure=True)(parts, blocks_in[j], *common, j, hi - lo, *args, **kw)
            acc = s if acc is None else delayed(_sample_sums.add_sums, pure=True)(acc, s)
        else:
            kw = {} if counts is None else {"counts": [counts[j] for j, _, _ in blocks]}
            s = delayed(carried(many), pure=True)(parts, [blocks_in[j] for j, _, _ in blocks], *common,
                                         blocks, *args, **kw)
            acc = delayed(_sample_sums.add_run, pure=True)(acc, s)
    return acc


def _gathered(client, graph):
    """``graph`` (a list of delayed) computed on ``client`` — a task that raises (a read
    from object storage that failed, say) is run again up to 3 times; a lost worker's
    tasks the scheduler reschedules — waited for outside the client (a Ctrl-C then
    leaves the client usable) and gathered."""
    futures = client.compute(graph, retries=3)
    wait_done(futures)
    with deferred_interrupts():
        return client.gather(futures)
