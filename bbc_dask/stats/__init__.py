"""Bootstrap statistics on prediction matrices: pure NumPy/numba, no Dask.

Every name is loaded on first access (PEP 562), so that a process which only unpickles
a result (:mod:`._result`, NumPy alone) does not import the estimators and their
kernels. The other layers import these names from here, never from the private modules.
"""
import importlib

#: The 2024 paper's comparators (bbc_dask.selection_ci's methods) with the paper's names.
#: Here, not in the module that computes them, so that the command line builds its
#: options without loading the statistics.
CI_METHODS = {"delong": "DL", "hanley_mcneil": "HM", "tilting": "BT", "delong_10p": "DL10p",
              "hanley_mcneil_10p": "HM10p", "tilting_10p": "BT10p", "mabt": "MABT"}


def alpha_of(confidence_level):
    """``1 - confidence_level`` as the decimal a user means: 1 - 0.95 is
    0.050000000000000044 in floating point, which would move the methods' brackets."""
    return round(1.0 - confidence_level, 12)


#: Every name the other layers use, by module.
_MODULES = {
    "._result": ("ArrayEquality", "BBCResult", "ConfidenceInterval", "metric_text", "summarise"),
    "._bbc": ("bbc", "bbc_f", "fold_score_matrix", "naive_bootstrap", "naive_cvt",
              "tibshirani_tibshirani", "SELECTIONS", "bbc_f_of_matrix", "bbc_incomplete",
              "check_fold_matrix", "check_selection", "fold_centers", "fold_matrix",
              "fold_means", "fold_rows", "fold_scores", "full_scores", "with_fold_mean_winner"),
    "._bootstrap": ("SEED_BLOCK", "block_counts", "defined_parts", "fill_counts", "first_plan",
                    "plan_counts", "plan_seed_block"),
    "._dropping": ("Dropping", "DroppingScorer", "available_mask", "decide", "dropping_rule",
                   "dropping_test",
                   "fill_unavailable", "frame_of", "mean_over_repeats"),
    "._holdout": ("BootstrapEstimate", "HoldoutResult", "NO_INFORMATION",
                   "RepeatedHoldoutResult", "delong_interval", "no_information_score",
                   "normal_interval", "percentile_interval", "point632", "t_interval",
                   "clip_interval", "wilson_interval"),
    "._incomplete": ("BothBags", "IncompleteScorers", "availability_groups", "reference_group"),
    "._inputs": ("prepare_inputs",),
    "._nested": ("OuterEstimate", "ncv_of_matrix", "repeated_holdout_of_matrix"),
    "._selection_ci": ("SelectionCI", "selection_ci"),
    "._winner": ("Selection", "grid_ranks", "ranking", "select", "split_means"),
}
#: Public names of helpers whose name in their module is private (the chunked path and
#: the study share them with the statistics).
_RENAMED = {"bbc_f_of_matrix": "_bbc_f_matrix", "bbc_incomplete": "_bbc_incomplete",
            "fold_matrix": "_fold_matrix", "full_scores": "_full_scores",
            "available_mask": "_available"}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_WHERE) + ["CI_METHODS", "alpha_of"]


def __getattr__(name):
    if name in _WHERE:
        module = importlib.import_module(_WHERE[name], __name__)
        return getattr(module, _RENAMED.get(name, name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
