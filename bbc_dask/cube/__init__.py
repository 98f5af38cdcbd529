"""The prediction cube: the only code that opens, writes or locks a study store.

Schema, create/open, the fold-aligned prediction layout and its readers, the writer the
tasks use, the batched ledger, the store locations (one class per storage backend, picked
by the URL's scheme in :data:`BACKENDS`) and their run locks."""
from ._layout import ChunkWriter, CubeBlock, PredictionReader, SampleTable
from ._location import (
    BACKENDS,
    FsspecLocation,
    LocalLocation,
    MemoryLocation,
    S3Location,
    StoreLocation,
    as_location,
)
from ._lock import LockToken, ObjectStoreLock, ProcessLock, StoreLock
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
    "create_cube",
    "inspect_store",
    "load_model",
    "open_cube",
    "save_model",
    "to_json",
    "verify_store",
    "writing",
]
