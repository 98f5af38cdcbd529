"""The study file's JSON Schema (``study_file.schema.json``, shipped in this package): its
text for editors (``bbc-dask schema``), its defaults, and validation through jsonschema
with the command line's one-line errors that name the key.

The schema says what every key may hold; the code of :mod:`._studyfile` keeps only what a
schema cannot say (paths and files, the data's columns, estimator classes and their
safety rules, the metric registry). Three keywords of the schema are bbc_dask's own;
editors ignore them (VS Code and yaml-language-server show ``errorMessage``):

``errorMessage``
    what a value is expected to be (``an integer >= 2``): a value that fails any keyword
    of that subschema reads ``KEY: expected an integer >= 2, got 1``, a missing key
    ``KEY: missing (expected ...)``;
``x-rule`` (and ``x-key``)
    a rule between keys (``give exactly one of ...``), said as written; ``x-key`` names
    the key it is about, below the place where the rule applies;
``x-unknown``
    how an unknown key of that mapping is named (``unknown option for a local cluster``).

jsonschema is imported on the first validation only: ``import bbc_dask`` and the reading
commands (``bbc-dask status``) never load it.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources

from .._validation import did_you_mean
from ..exceptions import StudyFileError

__all__ = ["default", "schema", "schema_text", "validate"]

#: The file's name inside this package.
SCHEMA_FILE = "study_file.schema.json"


def schema_text():
    """The schema as shipped (JSON text)."""
    return resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def schema():
    """The schema as a dict (read once; callers must not change it)."""
    return json.loads(schema_text())


def default(*keys):
    """The schema's default of the key at ``keys`` (``default("cv", "splits")``), a copy:
    the resolved study file holds it, and the schema stays as read."""
    node = schema()
    for key in keys:
        node = node["properties"][key]
    return copy.deepcopy(node["default"])


@lru_cache(maxsize=None)
def _validator():
    from jsonschema import Draft202012Validator, validators

    # an integer is a Python int, never a bool or a float such as YAML's 5.0 (JSON
    # Schema's integer takes 5.0, which scikit-learn's splitters refuse)
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
    return validators.extend(Draft202012Validator, type_checker=checker)(schema())


def validate(raw, at=()):
    """Check ``raw`` against the schema; the first problem, in the schema's order, is an error.

    Parameters
    ----------
    raw : object
        The parsed study file, or its section at ``at``.
    at : tuple of str
        The keys of the section ``raw`` is (``("cluster",)``: a ``cluster:`` section with
        the command line's overrides); empty for the whole file.

    Raises
    ------
    StudyFileError
        One line naming the key: ``study file: cv.splits: expected an integer >= 2, got 1``.
    """
    validator = _validator()
    if at:
        sub = schema()
        for key in at:
            sub = sub["properties"][key]
        validator = validator.evolve(schema=sub)  # its $refs still resolve in the whole file
    error = next(iter(validator.iter_errors(raw)), None)
    if error is not None:
        raise StudyFileError(one_line(error, at))


def one_line(error, at=()):
    """The one-line message of a jsonschema ``ValidationError``.

    Parameters
    ----------
    error : jsonschema.ValidationError
        A failure of the schema (its ``absolute_path``, ``validator``, ``validator_value``
        and ``schema`` say where and what).
    at : tuple of str
        The keys above the validated instance.

    Returns
    -------
    str
        ``study file: KEY: problem``, the key as ``cv.splits`` or ``grid[0].estimator``.
    """
    from jsonschema.exceptions import best_match

    path = [*at, *error.absolute_path]
    node = error.schema if isinstance(error.schema, dict) else {}
    if "x-rule" in node:
        path += [node["x-key"]] if node.get("x-key") else []
        msg = node["x-rule"]
    elif error.validator == "additionalProperties" and error.validator_value is False:
        known = node.get("properties", {})
        path.append(str(min(set(error.instance) - set(known), key=str)))
        hint = did_you_mean(path[-1], known)
        msg = (f"{node.get('x-unknown', 'unknown key')} (allowed: {', '.join(known)})"
               f"{f'. {hint}' if hint else ''}")
    elif error.validator == "required":
        missing = next(k for k in error.validator_value if k not in error.instance)
        path.append(missing)
        expected = _expected(node.get("properties", {}).get(missing, {}))
        msg = f"missing (expected {expected})" if expected else "missing"
    elif "errorMessage" in node:
        msg = f"expected {node['errorMessage']}, got {_shown(error.instance)}"
    elif error.validator == "enum":
        msg = f"expected one of {', '.join(map(str, error.validator_value))}, got {_shown(error.instance)}"
    elif error.context:  # alternatives without a message of their own: the likeliest branch
        return one_line(best_match(error.context), at)
    else:
        msg = error.message
    return f"study file: {_key(path)}: {msg}" if path else f"study file: {msg}"


def _expected(node):
    """The ``errorMessage`` of a subschema, following local ``$ref``s."""
    while "errorMessage" not in node and node.get("$ref", "").startswith("#/$defs/"):
        node = schema()["$defs"][node["$ref"][len("#/$defs/"):]]
    return node.get("errorMessage")


def _key(path):
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _shown(value, limit=200):
    """``repr(value)``, cut short: a one-line error must not carry a whole grid."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
