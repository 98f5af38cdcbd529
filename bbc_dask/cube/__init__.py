"""The prediction cube: the only code that opens, writes or locks a study store.

Schema, create/open, the fold-aligned prediction layout and its readers, the writer the
tasks use, the batched ledger, what the ledger says about selection, the store locations
(one class per storage backend, picked by the URL's scheme in :data:`BACKENDS`) and their
run locks."""
from ._create import create_cube
from ._direct import ChunkWriter
from ._layout import CubeBlock, PredictionReader, SampleTable
from ._location import (
    BACKENDS,
    FsspecLocation,
    LocalLocation,
    MemoryLocation,
    S3Location,
    StoreLocation,
    as_location,
)
from ._ledger_check import LedgerRows
from ._ledger_check import settle as settle_ledger
from ._rebuild import fill_untrained
from ._lock import LockToken, ObjectStoreLock, ProcessLock, StoreLock
from ._model import load_model, save_model
from ._schema import (
    DONE,
    DROPPED,
    FAILED,
    PENDING,
    SCHEMA,
    Cube,
    inspect_store,
    open_cube,
    to_json,
)
from ._incomplete import incomplete_bbc, winner_and_score
from ._selection import (
    candidates,
    complete,
    failure_groups,
    fitted_cells,
    float_bytes,
    incomplete_cv,
    incomplete_scores,
    incomplete_winner,
    ledger_fold_matrix,
    pooled_scores,
    positive_class,
    select_winner,
    stopped_early,
    study_seed,
    target_of,
)
from ._verify import Damage, VerifyReport, verify_store
from ._writing import writing

__all__ = [
    "BACKENDS",
    "DONE",
    "DROPPED",
    "FAILED",
    "PENDING",
    "SCHEMA",
    "ChunkWriter",
    "Cube",
    "CubeBlock",
    "Damage",
    "FsspecLocation",
    "LedgerRows",
    "LocalLocation",
    "LockToken",
    "MemoryLocation",
    "ObjectStoreLock",
    "PredictionReader",
    "ProcessLock",
    "S3Location",
    "SampleTable",
    "StoreLocation",
    "StoreLock",
    "VerifyReport",
    "as_location",
    "candidates",
    "complete",
    "create_cube",
    "failure_groups",
    "float_bytes",
    "fitted_cells",
    "incomplete_bbc",
    "incomplete_cv",
    "incomplete_scores",
    "incomplete_winner",
    "inspect_store",
    "settle_ledger",
    "fill_untrained",
    "ledger_fold_matrix",
    "load_model",
    "open_cube",
    "pooled_scores",
    "positive_class",
    "save_model",
    "select_winner",
    "stopped_early",
    "study_seed",
    "target_of",
    "to_json",
    "verify_store",
    "winner_and_score",
    "writing",
]
