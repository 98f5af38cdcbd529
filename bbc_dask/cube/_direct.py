"""The tasks' chunk writes without Zarr's asynchronous machinery: each chunk encoded in the
task's own thread, then written whole (atomically on a local disk).

Why: a Zarr ``array[...] = values`` from a worker thread hands the work to Zarr's event
loop thread, which hands the encoding to yet another thread and the file write to a
third. On a 2-core machine whose cores are busy with other tasks, every hand-over waits
for a core: measured, 1.6 ms per 8 kB chunk (N = 1,000) and 4.2 ms per 1.6 MB chunk
(N = 200,000) through Zarr, against 0.05 ms and 2.7 ms encoded and written here
(``benchmarks/bench_engine.py``; docs/performance.md). The tasks write one chunk per
block and fold, so this is most of the engine's own cost per config-fold.

The bytes are the ones Zarr writes (its codecs, in its order: ``bytes`` little-endian,
Blosc, CRC-32C; tests/test_cube_layout.py compares the files byte for byte), and only for the
prediction codecs the cube creates (:func:`~._create._PREDICTION_CODECS`): an array with
any other codecs (a store made by an older version) is written through Zarr.
"""
from __future__ import annotations

import os
import uuid

import numpy as np
import zlib

__all__ = ["ChunkWriter", "DirectChunks", "chunk_crc"]

#: The codecs of the arrays written here, as ``zarr.json`` records them.
_EXPECTED = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "blosc", "configuration": {"typesize": 8, "cname": "lz4", "clevel": 1,
                                        "shuffle": "noshuffle", "blocksize": 0}},
    {"name": "crc32c"},
]


def _codecs(array):
    try:
        return [c.to_dict() for c in array.metadata.codecs]
    except AttributeError:  # Zarr format 2, or codecs without a description
        return None


def _local_root(store):
    """The directory of a Zarr ``LocalStore``, else None."""
    if type(store).__name__ == "LocalStore" and type(store).__module__.startswith("zarr."):
        return str(store.root)
    return None


class DirectChunks:
    """Whole chunks of one float64 array in a local directory, encoded and stored, or read
    and decoded, from the calling thread.

    ``DirectChunks.of(array)`` is None when the array's codecs are not the ones this
    handles, when the installed numcodecs cannot make Zarr's Blosc bytes, or when the
    store is not a local directory (an object store's chunks are fetched and stored by
    Zarr, concurrently: one at a time from here would wait on each request): the caller
    then goes through Zarr."""

    def __init__(self, array, root):
        from numcodecs import Blosc

        self.array, self.root = array, root
        self.blosc = Blosc(cname="lz4", clevel=1, shuffle=Blosc.NOSHUFFLE, blocksize=0,
                           typesize=8)

    @classmethod
    def of(cls, array):
        root = _local_root(array.store)
        if root is None or array.dtype != np.float64 or _codecs(array) != _EXPECTED:
            return None
        try:
            return cls(array, root)
        except TypeError:  # numcodecs < 0.16 takes no typesize: Zarr writes
            return None

    def path(self, coords):
        """The file of the chunk at chunk coordinates ``coords``."""
        key = self.array.metadata.encode_chunk_key(tuple(coords))
        return os.path.join(self.root, self.array.path, key)

    def put(self, coords, chunk):
        """Store ``chunk`` (float64, the chunk's full shape) as the chunk at ``coords``:
        Zarr's bytes, written as Zarr's LocalStore writes them (a partial file renamed
        into place, so that a kill mid-write leaves the old chunk or none, never a
        truncated one)."""
        import google_crc32c

        data = self.blosc.encode(np.ascontiguousarray(chunk, dtype="<f8"))
        crc = np.uint32(google_crc32c.value(data)).tobytes()  # as Zarr's crc32c codec
        path = self.path(coords)
        tmp = f"{path}.{uuid.uuid4().hex}.partial"
        try:
            f = open(tmp, "wb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(tmp, "wb")
        try:
            with f:
                f.write(data)
                f.write(crc)
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise

    def get(self, coords):
        """The chunk at ``coords`` (its full shape), the fill value where none is stored;
        a chunk whose checksum or encoding is wrong raises, and the reader reports it as
        damage naming the file."""
        import google_crc32c

        try:
            with open(self.path(coords), "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        data, crc = raw[:-4], raw[-4:]
        if len(raw) < 4 or np.uint32(google_crc32c.value(data)).tobytes() != crc:
            from ..exceptions import StoreDamagedError

            raise StoreDamagedError("Stored and computed checksum do not match.")
        out = np.empty(self.array.chunks, dtype="<f8")
        self.blosc.decode(data, out=out)
        return out

    def _regions(self, index):
        """Per chunk the index touches: ``(chunk coords, slices of the chunk, slices of
        the region)``."""
        shape, chunks = self.array.shape, self.array.chunks
        starts = [s.start or 0 for s in index]
        stops = [min(s.stop if s.stop is not None else n, n) for s, n in zip(index, shape)]
        ranges = [range(a // c, -(-b // c)) for a, b, c in zip(starts, stops, chunks)]
        for at in np.ndindex(*[len(r) for r in ranges]):
            cc = [r[i] for r, i in zip(ranges, at)]
            lo = [max(i * c, a) for i, c, a in zip(cc, chunks, starts)]
            hi = [min((i + 1) * c, b) for i, c, b in zip(cc, chunks, stops)]
            yield (cc, tuple(slice(a - i * c, b - i * c) for a, b, i, c in zip(lo, hi, cc, chunks)),
                   tuple(slice(a - s, b - s) for a, b, s in zip(lo, hi, starts)))

    def read(self, index):
        """``array[index]`` for an ``index`` of slices (steps of 1), one chunk at a time."""
        shape = self.array.shape
        out = np.empty(tuple(len(range(*s.indices(n))) for s, n in zip(index, shape)))
        for cc, inner, outer in self._regions(index):
            chunk = self.get(cc)
            out[outer] = self.array.fill_value if chunk is None else chunk[inner]
        return out

    def write(self, index, values):
        """``array[index] = values`` for an ``index`` of slices that covers whole chunks
        (the array's edge chunks padded with its fill value, as Zarr stores them)."""
        chunks, shape = self.array.chunks, self.array.shape
        for cc, inner, outer in self._regions(index):
            full = [min(c, n - i * c) for c, n, i in zip(chunks, shape, cc)]
            if any(s.start != 0 or s.stop != f for s, f in zip(inner, full)):
                raise RuntimeError("a direct write covers whole chunks")  # the caller's bug
            part = values[outer]
            if part.shape != tuple(chunks):  # an edge chunk: stored whole, padded
                whole = np.full(chunks, self.array.fill_value, dtype=np.float64)
                whole[inner] = part
                part = whole
            self.put(cc, part)


class ChunkWriter:
    """Writes one task's predictions — its block's chunks, whole — from a worker, after the
    run lock's check (picklable: it travels with the task).

    Parameters
    ----------
    array : zarr.Array
        ``prediction``, opened with ``write_empty_chunks`` so that every written chunk
        exists (a missing chunk the ledger counts is then damage, not a fill value).
    check : callable
        The lock's token check (:class:`bbc_dask.cube._lock.LockToken`): raises when this
        run no longer holds the store.
    """

    def __init__(self, array, check, url):
        self.array, self.check, self.url = array, check, url
        self._direct = False  # built on the worker, at the first write

    def __getstate__(self):
        return {**self.__dict__, "_direct": False}

    def write(self, r, k, c0, cols, values):
        """Store ``values`` (n_k, len(cols)(, n_classes)) — the test samples of fold ``k``
        in slot order — as columns ``cols`` (offsets from ``c0``) of the block starting at
        configuration ``c0``; the block's other columns are NaN (not trained here).

        Returns the CRC-32 of the block's values (:func:`chunk_crc`, every slot): the
        ledger keeps it, so ``verify`` tells an edited or swapped chunk from the ones the
        task wrote."""
        return self.write_many(r, k, [(c0, cols, values)])[0]

    def write_many(self, r, k, blocks):
        """:meth:`write` for several blocks of one (repeat, fold): ``blocks`` a list of
        ``(c0, cols, values)``. Blocks that follow each other are one region, written
        chunk by chunk from this thread (:class:`DirectChunks`), or — for an array this
        cannot write — in one Zarr call (one hop to Zarr's I/O thread per run of blocks,
        not per chunk: under CPU contention each hop costs milliseconds).
        Returns the CRC-32 of every block, in order."""
        from ._writing import writing

        w = self.array.chunks[3]
        n_cfg = self.array.shape[3]
        order = sorted(range(len(blocks)), key=lambda i: blocks[i][0])
        runs, crcs = [], [None] * len(blocks)
        for i in order:  # runs of consecutive chunks
            if runs and blocks[i][0] == runs[-1][-1][1] + w:
                runs[-1].append((i, blocks[i][0]))
            else:
                runs.append([(i, blocks[i][0])])
        self.check()
        for run in runs:
            a, b = run[0][1], min(run[-1][1] + w, n_cfg)
            buf = np.full((self.array.shape[2], b - a) + tuple(self.array.shape[4:]), np.nan)
            for i, c0 in run:
                _, cols, values = blocks[i]
                at = c0 - a + np.asarray(cols, dtype=np.int64)
                # consecutive and increasing (the engine's sorted blocks): a slice copy
                if at.size and (np.diff(at) == 1).all():
                    at = slice(int(at[0]), int(at[-1]) + 1)
                buf[: values.shape[0], at] = values
                crcs[i] = chunk_crc(buf[:, c0 - a:min(c0 + w, n_cfg) - a])
            with writing(self.url):
                self._put((r, k, slice(None), slice(a, b)), buf)
        return crcs

    def _put(self, index, buf):
        """``array[index] = buf`` (whole chunks): encoded and stored from this thread
        when the array's codecs allow (:mod:`._direct`), else through Zarr."""
        if self._direct is False:
            self._direct = DirectChunks.of(self.array)
        if self._direct is None:
            self.array[index] = buf
            return
        r, k, slots, cfg = index
        self._direct.write((slice(r, r + 1), slice(k, k + 1), slots, cfg)
                           + (slice(None),) * (buf.ndim - 2), buf[None, None])


def chunk_crc(values):
    """CRC-32 of a chunk's float64 values (C order), as the ledger records it."""
    return zlib.crc32(memoryview(np.ascontiguousarray(values, dtype=np.float64)).cast("B"))


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass
