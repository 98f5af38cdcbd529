"""What differs between the study a store holds and the one asked for, in words: the
keys of the two fingerprints (``spec``) that changed, and for the candidates — a hash in
the fingerprint — the grid keys and values."""
from __future__ import annotations

from .._fingerprint import canonical, readable, same_described, same_form, strip_addresses
from ._plan import STEP, is_study_file

__all__ = ["blind_parameters", "spec_differences"]


def spec_differences(stored_spec, stored, spec, configurations, metadata=None):
    """``["key (stored a, given b)", ...]`` between a store's fingerprint ``stored_spec``
    and description of its candidates ``stored`` (None in an older store) and a new
    study's ``spec`` and ``configurations`` (empty: the same study); a study file's grid
    keys (``metadata``: the resolved study file) as its user wrote them."""
    if "classes" not in stored_spec:
        # a store from before the fingerprint named the classes: compared without them
        # (the run records them, see _Run._open_or_create)
        spec = {k: v for k, v in spec.items() if k != "classes"}
    v1 = "fingerprint" not in stored_spec
    diffs = _diff(_defaults(stored_spec), _defaults(spec), v1=v1)
    at = next((i for i, d in enumerate(diffs) if d.startswith("candidates ")), None)
    if stored is not None and at is not None:
        # the fingerprint is a hash: say which values changed instead, in its place
        found = _candidates_diff(_unwrapped(stored, metadata), _unwrapped(configurations, metadata))
        if not found and not v1:
            found = ["candidates (a value whose printed form is unchanged: an array's or "
                     "an object's contents)"]
        # (an encoding-1 hash of reprs changes with an object's memory address, a column
        # selector's: with its values the same, addresses aside, nothing differs)
        diffs[at:at + 1] = found
    return diffs


def blind_parameters(stored_spec):
    """The estimator's parameters that a store of the first encoding recorded by a repr
    holding a memory address (``<make_column_selector object at 0x...>``): compared
    without the address, such a value is compared by its class alone, so a change of its
    settings is not seen. Empty for a store of the canonical encoding."""
    if "fingerprint" in stored_spec:
        return []
    return sorted(k for k, v in (stored_spec.get("estimator") or {}).items()
                  if isinstance(v, str) and strip_addresses(v) != v)


def _diff(stored, new, prefix="", v1=False):
    """The differences, most telling first: the study's own keys, then the estimator's
    plain parameters, then those holding estimators or containers (a changed step changes
    its parent's ``steps`` and the parent too: the step's own parameter says what).
    ``v1``: values as the first encoding recorded them, or a description of the
    candidates (values as they are, other objects by repr)."""
    out = []
    for key in sorted(set(stored) | set(new)):
        a, b = stored.get(key), new.get(key)
        if _plain_dict(a) and _plain_dict(b):
            out += _diff(a, b, prefix + key + ".", v1)
        elif not _same(a, b, v1):
            composite = any(_composite(v) for v in (a, b))
            rank = (prefix + key).startswith(("estimator.", "classes.")) + composite
            out.append((rank, f"{prefix}{key} (stored {_short(a, v1)}, given {_short(b, v1)})"))
    return out if prefix else [text for _, text in sorted(out, key=lambda r: r[0])]


def _plain_dict(v):
    """A dict of the spec's own keys (not a value's tagged normal form)."""
    return isinstance(v, dict) and not any(str(k).startswith("$") for k in v)


def _composite(v):
    """A value holding others (a list, an estimator, a tuple...), not a scalar's form."""
    return isinstance(v, list) or (isinstance(v, dict) and bool(
        {"$estimator", "$tuple", "$set", "$dict", "$partial"}.intersection(v)))


def _same(a, b, v1=False):
    """Equal normal forms (the canonical encoding: NaN equals NaN); a store of the first
    encoding's values as that encoding compared them, NaN equal to NaN and its reprs
    without their memory addresses."""
    return same_described(a, b) if v1 else same_form(a, b)


def _candidates_diff(stored, given):
    """What differs between two descriptions of the configurations
    (:meth:`~bbc_dask.engine.Configurations.describe`: values as they are, other objects
    by repr), by grid key and value."""
    if stored.get("kind") != given.get("kind"):
        return [f"candidates (stored a {stored.get('kind')} search, given a "
                f"{given.get('kind')} search)"]
    if given["kind"] == "random":
        a, b = stored["params"], given["params"]
        if len(a) != len(b):
            return [f"candidates (stored {len(a)} random draws, given {len(b)})"]
        i = next((i for i, (p, q) in enumerate(zip(a, b)) if not _same(p, q, True)), None)
        return [] if i is None else \
            [f"candidates: draw {i} (stored {_short(a[i], True)}, given {_short(b[i], True)})"]
    a, b = stored["grid"], given["grid"]
    if len(a) != len(b):
        return [f"candidates: the grid's dicts (stored {len(a)}, given {len(b)})"]
    out = []
    for j, (p, q) in enumerate(zip(a, b)):
        where = f"grid[{j}]." if len(a) > 1 else "grid."
        out += [text for _, text in _diff(p, q, "candidates: " + where, True)]
    return out


def _unwrapped(desc, metadata):
    """A description of the candidates with a study file's ``model__`` prefix dropped
    from its grid keys (the names its user wrote)."""
    if desc.get("kind") != "grid":
        return desc
    keys = {k for g in desc["grid"] for k in g}
    if not keys or not is_study_file(keys, metadata):
        return desc
    cut = len(STEP) + 2
    return {**desc, "grid": [{(k if k == STEP else k[cut:]): v for k, v in g.items()}
                             for g in desc["grid"]]}


def _defaults(spec):
    """``spec`` with the keys recorded only when not their default, or added later,
    filled in as a store without them behaves: ``selection`` pooled; a BBCD study did not
    test after its last wave."""
    out = {"selection": "pooled", **spec}
    if isinstance(out.get("dropping"), dict):
        out["dropping"] = {"test_last_wave": False, **out["dropping"]}
    return out


def _short(v, v1=False):
    """A value for a message: a normal form (or, in a store of the first encoding, a value
    as it was recorded) shown short."""
    return readable(canonical(v) if v1 else v)
