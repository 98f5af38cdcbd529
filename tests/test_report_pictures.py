"""The report's pictures say what they show: whole numbers on axes that count, labelled
repeat and fold rows, configurations named by their model and their parameters under the
names the user wrote, no offset text, honest limits, and no plot of dropping when dropping
was off. Read from the figure objects and the HTML (benchmarks/report_screenshots.py draws
every kind of study for a person to look at)."""
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import bbc_dask as bd
from bbc_dask import report
from bbc_dask.protocols import NestedCVResult

#: A study file of two pipelines and a bare estimator (the command line wraps each in its
#: one-step ``model`` pipeline, so the store's keys read ``model__svc__C``).
STUDY_FILE = {
    "name": "pictures", "data": {"sklearn": "breast_cancer"},
    "grid": [
        {"pipeline": ["sklearn.preprocessing.StandardScaler", "sklearn.svm.SVC"],
         "grid": {"svc__C": [0.1, 1.0]}},
        {"pipeline": ["sklearn.preprocessing.StandardScaler",
                      {"estimator": "sklearn.linear_model.LogisticRegression", "params": {"max_iter": 500}}],
         "grid": {"logisticregression__C": [1.0]}},
        {"estimator": "sklearn.tree.DecisionTreeClassifier", "params": {"random_state": 0},
         "grid": {"max_depth": [2]}},
    ],
    "cv": {"splits": 3, "repeats": 2}, "metric": "accuracy", "dropping": False,
    "random_state": 0,
}


@pytest.fixture(scope="module")
def file_study(tmp_path_factory, client):
    from bbc_dask.cli._commands import run_study_file
    from bbc_dask.cli._studyfile import resolve_study_file

    raw = dict(STUDY_FILE, store=str(tmp_path_factory.mktemp("pictures") / "s.zarr"))
    return run_study_file(resolve_study_file(raw), scheduler=client.scheduler.address,
                          progress=False)


@pytest.fixture(scope="module")
def one_config(tmp_path_factory, client, cancer_standardised):
    from sklearn.linear_model import LogisticRegression

    X, y = cancer_standardised
    return bd.run_study(LogisticRegression(), {"C": [1.0]}, X, y,
                        store=tmp_path_factory.mktemp("one") / "s.zarr", metric="roc_auc",
                        n_splits=3, client=client, progress=False, random_state=0, refit=False)


def _drawn(fig):
    FigureCanvasAgg(fig).draw()  # tick labels and offset texts exist once drawn
    return fig


def _ticks_in_view(axis):
    lo, hi = sorted(axis.get_view_interval())
    return [t for t in axis.get_majorticklocs() if lo - 1e-9 <= t <= hi + 1e-9]


def _whole(axis):
    ticks = _ticks_in_view(axis)
    return bool(ticks) and all(float(t).is_integer() for t in ticks)


def test_one_configuration_draws_whole_ranks_and_no_offset(one_config):
    ax = _drawn(report.plot_configurations(one_config)).axes[0]
    assert ax.yaxis.get_offset_text().get_text() == ""  # was 1e-9+9.9e-1
    assert _whole(ax.xaxis) and _ticks_in_view(ax.xaxis) == [1]
    lo, hi = ax.get_ylim()
    assert hi - lo >= 0.01 and hi <= 1.01  # a spread of zero is not blown up; AUC stays <= 1
    heat = _drawn(report.plot_fold_scores(one_config)).axes[0]
    assert _ticks_in_view(heat.xaxis) == [1]
    assert [t.get_text() for t in heat.get_yticklabels()] == ["fold 1", "fold 2", "fold 3"]


def test_configurations_are_named_with_the_study_files_keys(file_study):
    fig = _drawn(report.plot_configurations(file_study))
    ax, notes = fig.axes
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"SVC", "LogisticRegression", "DecisionTreeClassifier"} <= set(legend)
    listed = notes.texts[0].get_text()
    assert "svc__C=" in listed and "model__" not in listed and "Pipeline(" not in listed
    assert _whole(ax.xaxis) and ax.yaxis.get_offset_text().get_text() == ""
    assert "does not start at 0" in ax.get_title()


def test_repeat_and_fold_rows_are_labelled(file_study):
    ax = _drawn(report.plot_fold_scores(file_study)).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "repeat 1 · fold 1" and labels[-1] == "repeat 2 · fold 3"
    assert _whole(ax.xaxis) and ax.get_ylabel() == "repeat · fold"


def test_the_page_shows_the_users_keys_and_no_plot_of_dropping_when_it_was_off(file_study, tmp_path):
    assert report.plot_active(file_study) is None
    page = open(report.write_report(file_study, tmp_path, n_bootstraps=50)).read()
    assert not (tmp_path / "active.png").exists()
    assert "Dropping was off" in page and 'src="active.png"' not in page
    assert "\\n" not in page  # the pipeline's repr used to be shown with literal \n
    assert "svc__C=" in page and "model__svc__C" not in page
    best = file_study.best_index_
    assert f"<li>configuration {best} (BBC" in page  # named as the user wrote it (above)


def test_nested_outer_scores_have_whole_repeats_and_the_users_keys(tmp_path):
    params = [{"model": "Pipeline(steps=[('standardscaler', StandardScaler()),\n"
                        "                ('svc', SVC())])", "model__svc__C": c} for c in (0.1, 1.0)]
    scores = np.array([[0.96, 0.97, 0.95]])
    res = NestedCVResult(
        estimate=float(scores.mean()), outer_scores=scores, selected=np.array([[0, 1, 1]]),
        params=params, outer_fold=np.zeros((6, 1), int), inner_fold=np.zeros((6, 1, 3), int),
        ci=None, confidence_level=0.95, models_trained=21, fit_seconds=1.0, wall_seconds=1.0,
        metric="roc_auc", store="n.zarr", metadata={"grid": STUDY_FILE["grid"][:1]})
    ax = _drawn(report.plot_outer_scores(res)).axes[0]
    assert _ticks_in_view(ax.xaxis) == [1]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["repeat 1"]
    assert ax.yaxis.get_offset_text().get_text() == ""
    page = open(report.write_nested_report(res, tmp_path)).read()
    assert "svc__C=1" in page and "model__" not in page and "\\n" not in page and "SVC" in page


def test_a_python_studys_keys_are_kept_even_for_a_step_called_model():
    """Only a study file's store (its metadata holds the study file's grid) loses the
    command line's ``model__``; a Python pipeline may name its own step ``model``."""
    from sklearn.ensemble import RandomForestClassifier

    from bbc_dask._report_names import configuration_names, params_text

    params = [{"model__C": 0.1}, {"model": RandomForestClassifier(n_estimators=5), "model__max_depth": 2}]
    spec = {"estimator": {"steps": "[('scale', StandardScaler()), ('model', LogisticRegression())]"}}
    families, shown = configuration_names(params, metadata=None, spec=spec)
    assert families == ["LogisticRegression", "RandomForestClassifier"]
    assert params_text(shown[0]) == "model__C=0.1"
    assert params_text(shown[1]) == 'model="RandomForestClassifier", model__max_depth=2'
