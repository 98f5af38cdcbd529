"""What the report says of its numbers: the 2024 paper's comparators' rows, which select
by two rules at two levels."""
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd


def test_the_reports_comparators_say_why_rows_differ(tmp_path, client):
    """The comparators' table names two selection rules' configurations and levels (a
    row's 0.02532 is Šidák's level for k = 2): the note under it says which and why,
    from the methods' own results."""
    from bbc_dask.report import comparators_html

    Xs, ys = make_classification(150, 5, n_informative=3, flip_y=0.1, random_state=1)
    store = tmp_path / "c.zarr"
    study = bd.run_study(LogisticRegression(max_iter=300), {"C": list(np.geomspace(1e-3, 10, 20))},
                         Xs, ys, store=store, metric="roc_auc", n_splits=3, random_state=0,
                         client=client, progress=False, refit=False)
    page = comparators_html(study, n_bootstraps=50)
    first = study.selection_ci("delong", alpha=0.05, n_bootstraps=50)
    ten = study.selection_ci("mabt", alpha=0.05, n_bootstraps=50)
    sidak = 1 - 0.95 ** (1 / ten.k)
    assert ten.k >= 2 and study.selection_ci("delong_10p", alpha=0.05).alpha == sidak
    assert (f"DL, HM and BT bound the best configuration on the learning part "
            f"({first.selected})") in page
    assert f"(here {ten.k} configurations) and bound the best of them on the evaluation part " \
           f"({ten.selected})" in page
    assert f"1 − (1 − 0.05)<sup>1/{ten.k}</sup> = {sidak:.4g}" in page
    assert page.count(f"<td>{sidak:.4g}</td>") == 2  # the rows of DL10p and BT10p
