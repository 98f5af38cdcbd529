"""What differs between the study a store holds and the one asked for, in words: the
keys of the two fingerprints (``spec``) that changed, and for the candidates — a hash in
the fingerprint — the grid keys and values."""
from __future__ import annotations

__all__ = ["spec_differences"]


def spec_differences(stored_spec, stored, spec, configurations):
    """``["key (stored a, given b)", ...]`` between a store's fingerprint ``stored_spec``
    and description of its candidates ``stored`` (None in an older store) and a new
    study's ``spec`` and ``configurations`` (empty: the same study)."""
    if "classes" not in stored_spec:
        # a store from before the fingerprint named the classes: compared without them
        # (the run records them, see _Run._open_or_create)
        spec = {k: v for k, v in spec.items() if k != "classes"}
    diffs = _diff(_defaults(stored_spec), _defaults(spec))
    if stored is not None and any(d.startswith("candidates ") for d in diffs):
        # the fingerprint is a hash: say which values changed instead
        diffs = [d for d in diffs if not d.startswith("candidates ")] + \
            _candidates_diff(stored, configurations)
    return diffs


def _diff(stored, new, prefix=""):
    out = []
    for key in sorted(set(stored) | set(new)):
        a, b = stored.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _diff(a, b, prefix + key + ".")
        elif a != b:
            out.append(f"{prefix}{key} (stored {_short(a)}, given {_short(b)})")
    return out


def _candidates_diff(stored, given):
    """What differs between two descriptions of the configurations
    (:meth:`~bbc_dask.engine.Configurations.describe`), by grid key and value."""
    if stored.get("kind") != given.get("kind"):
        return [f"candidates (stored a {stored.get('kind')} search, given a "
                f"{given.get('kind')} search)"]
    if given["kind"] == "random":
        a, b = stored["params"], given["params"]
        if len(a) != len(b):
            return [f"candidates (stored {len(a)} random draws, given {len(b)})"]
        i = next(i for i, (p, q) in enumerate(zip(a, b)) if p != q)
        return [f"candidates: draw {i} (stored {_short(a[i])}, given {_short(b[i])})"]
    a, b = stored["grid"], given["grid"]
    if len(a) != len(b):
        return [f"candidates: the grid's dicts (stored {len(a)}, given {len(b)})"]
    out = []
    for j, (p, q) in enumerate(zip(a, b)):
        where = f"grid[{j}]." if len(a) > 1 else "grid."
        out += _diff(p, q, "candidates: " + where)
    return out or ["candidates (the same values, in another order)"]


def _defaults(spec):
    """``spec`` with the keys recorded only when not their default, or added later,
    filled in as a store without them behaves: ``selection`` pooled; a BBCD study did not
    test after its last wave."""
    out = {"selection": "pooled", **spec}
    if isinstance(out.get("dropping"), dict):
        out["dropping"] = {"test_last_wave": False, **out["dropping"]}
    return out


def _short(v):
    s = repr(v)
    return s if len(s) < 80 else s[:77] + "..."
