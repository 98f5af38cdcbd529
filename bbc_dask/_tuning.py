"""The tuning constants: sizes and times that decide how work is cut and scheduled, never
what is computed (every estimate is the same bit for bit whatever they are). In one
place, read at call time (``tuning.NAME``), so that a test or a user may set one
(``bbc_dask._tuning.IN_MEMORY_BYTES = 2**32``) and see it taken. The measurements behind
them: docs/performance.md, "Tuning constants"."""

#: Predictions (float64 bytes) an estimate of a study reads into memory when not told
#: which path to take; beyond, it goes by the chunked path (bbc_dask.chunked.use_chunked).
IN_MEMORY_BYTES = 2**30
