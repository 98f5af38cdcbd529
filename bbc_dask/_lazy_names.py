"""A package's public names imported on first use (PEP 562).

A Dask worker unpickling its first task imports the package that task lives in; it need
not load the driver's modules with it. ``import bbc_dask`` stays light for the same reason.
"""
import importlib
import sys

__all__ = ["lazy_names"]


def lazy_names(package, where):
    """``(__all__, __getattr__, __dir__)`` for the package named ``package`` whose public
    names ``where`` maps to ``(module relative to the package, its name there)``; a name is
    imported when first read, then kept in the package's namespace."""

    def __getattr__(name):
        if name in where:
            module, attr = where[name]
            value = getattr(importlib.import_module(module, package), attr)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(where))

    return sorted(where), __getattr__, __dir__
