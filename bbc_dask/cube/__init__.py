"""The prediction cube: the only code that opens, writes or locks a study store.

Schema, create/open, the fold-aligned prediction layout and its readers, the writer the
tasks use, the batched ledger, the run lock, and what the ledger says about selection."""
from ._layout import ChunkWriter, CubeBlock, PredictionReader, SampleTable
from ._location import StoreLocation, as_location, writing
from ._lock import LockToken, ObjectStoreLock, StoreLock
from ._model import load_model, save_model
from ._schema import (
    DONE,
    DROPPED,
    FAILED,
    PENDING,
    SCHEMA,
    Cube,
    create_cube,
    inspect_store,
    open_cube,
    to_json,
)
from ._selection import (
    candidates,
    complete,
    failure_groups,
    ledger_fold_matrix,
    pooled_scores,
    select_winner,
    target_of,
)
from ._verify import Damage, VerifyReport, verify_store

__all__ = [
    "DONE",
    "DROPPED",
    "FAILED",
    "PENDING",
    "SCHEMA",
    "ChunkWriter",
    "Cube",
    "CubeBlock",
    "Damage",
    "LockToken",
    "ObjectStoreLock",
    "PredictionReader",
    "SampleTable",
    "StoreLocation",
    "StoreLock",
    "VerifyReport",
    "as_location",
    "candidates",
    "complete",
    "create_cube",
    "failure_groups",
    "inspect_store",
    "ledger_fold_matrix",
    "load_model",
    "open_cube",
    "pooled_scores",
    "save_model",
    "select_winner",
    "target_of",
    "to_json",
    "verify_store",
    "writing",
]
