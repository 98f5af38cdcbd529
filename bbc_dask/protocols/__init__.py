"""The protocols beside CVT: what the papers compare BBC with, and how well each covers.

Each is a door of its own (a public function) over the engine and the statistics below:

- nested cross-validation (:func:`nested_cv`, :func:`open_nested`): the inner CVT of each
  outer fold runs as one study in the engine (``engine/_nested.py``, its protocol), the
  outer estimate and interval are statistics (``stats/_nested.py``);
- the holdout family (:func:`holdout`, :func:`repeated_holdout`,
  :func:`bootstrap_estimate`): no prediction cube, scored by the registered kernels;
- :func:`compare`: every protocol of the papers on one data set, one table;
- :func:`coverage`: simulated coverage of the intervals (the 2024 paper's Table 3 and the
  2018 paper's Figure 1 protocol).

Names are imported on first use (PEP 562), as the engine's are: ``import bbc_dask`` stays
light.
"""
from .._lazy_names import lazy_names

#: public name -> (module, its name there)
_WHERE = {
    "Comparison": ("._compare", "Comparison"),
    "compare": ("._compare", "compare"),
    "BOOTSTRAP_METHODS": ("._coverage", "BOOTSTRAP_METHODS"),
    "METHODS": ("._coverage", "METHODS"),
    "coverage": ("._coverage", "coverage"),
    "coverage_table": ("._coverage", "coverage_table"),
    "bootstrap_estimate": ("._holdout", "bootstrap_estimate"),
    "holdout": ("._holdout", "holdout"),
    "repeated_holdout": ("._holdout", "repeated_holdout"),
    "NestedCVResult": ("._nested_cv", "NestedCVResult"),
    "nested_cv": ("._nested_cv", "nested_cv"),
    "nested_of_cube": ("._nested_cv", "nested_of_cube"),
    "nested_result": ("._nested_cv", "nested_result"),
    "open_nested": ("._nested_cv", "open_nested"),
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _WHERE)
