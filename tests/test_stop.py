"""Stopping a study early (``run_study(stop=bd.Stop(...))``): the rule holds, the run stops
submitting, its tasks in flight are recorded, the store says why, and a rerun without the
rule resumes and finishes the study as if it had never stopped."""
import json

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
from bbc_dask.cube import PENDING
from bbc_dask.exceptions import InvalidParameterError, StudyNotReadyError, UnfinishedStudyWarning

GRID = {"C": [0.01, 0.1, 1.0, 10.0]}


def _data():
    return make_classification(120, 5, random_state=0)


def _run(store, client, **kw):
    X, y = _data()
    opts = dict(metric="roc_auc", n_splits=4, n_repeats=2, random_state=0, client=client,
                progress=False)
    return bd.run_study(LogisticRegression(), GRID, X, y, store=store, **(opts | kw))


@pytest.mark.parametrize("kwargs, name, words", [
    ({"ci_width": 0}, "ci_width", "a float in the range (0.0, inf)"),
    ({"max_seconds": -1.0}, "max_seconds", "a float in the range (0.0, inf)"),
    ({"max_fits": 0}, "max_fits", "an int in the range [1, inf)"),
    ({"max_fits": 2.5}, "max_fits", "an int"),
    ({"confidence_level": 1.0}, "confidence_level", "(0.0, 1.0)"),
    ({"n_bootstraps": 1}, "n_bootstraps", "[2, inf)"),
])
def test_a_bad_rule_is_refused_naming_its_argument(kwargs, name, words):
    with pytest.raises(InvalidParameterError) as e:
        bd.Stop(**kwargs)
    msg = str(e.value)
    assert f"'{name}' parameter of Stop" in msg and words in msg and "\n" not in msg


@pytest.mark.parametrize("stop, words", [
    ("fast", "None, a bbc_dask.Stop or a dict of its arguments"),
    ({"max_fit": 3}, "the unknown key(s) ['max_fit']"),
])
def test_run_study_refuses_a_bad_stop_before_touching_the_store(tmp_path, stop, words):
    with pytest.raises(InvalidParameterError) as e:
        _run(tmp_path / "s.zarr", None, stop=stop)
    assert "'stop' parameter of run_study" in str(e.value) and words in str(e.value)
    assert not (tmp_path / "s.zarr").exists()


@pytest.mark.parametrize("metric, n_repeats, n_classes, fits, shared", [
    ("roc_auc", 2, 2, 4 * 6 * 2 + 6 + 2, True),  # configurations 0 and 1 complete
    ("accuracy", 1, 3, 8, False),  # none complete; counts drawn again by each block's task
    ("neg_log_loss", 2, 3, 2 * 6 * 2 + 3, True),
])
def test_bbc_on_the_incomplete_cv_by_chunks_equals_it_in_memory(
        tmp_path, client, dask_config, monkeypatch, metric, n_repeats, n_classes, fits, shared):
    """``Study.bbc(include_incomplete=True, chunked=True)``: by configuration blocks of two
    on the cluster, the same result bit for bit as in memory — distribution, winners,
    redraws, the final winner — with and without complete configurations, for a ranking,
    a pointwise and a class-probability metric, with and without repeats; counts drawn
    in sample blocks of 64 (three) where each block's task draws them again."""
    import bbc_dask.metrics as M

    X, y = make_classification(150, 5, n_informative=3, n_classes=n_classes, flip_y=0.2,
                               random_state=0)
    grid = {"C": list(np.geomspace(1e-3, 10, 6))}
    study = bd.run_study(LogisticRegression(), grid, X, y, store=tmp_path / "s.zarr",
                         metric=metric, n_splits=5, n_repeats=n_repeats, random_state=0,
                         client=client, progress=False, stop=bd.Stop(max_fits=fits))
    assert 0 < study.status()["pending"] and study.candidates().size == (2 if fits > 40 else 0)
    dask_config({"bbc_dask.chunk-bytes": 150 * n_repeats * 8 * 2} |
                ({} if shared else {"bbc_dask.counts-bytes": 1}))
    if not shared:  # the plans' multi-block draws and redraws
        monkeypatch.setattr(M, "SAMPLE_BLOCK", 64)
    study = bd.open_study(tmp_path / "s.zarr")
    study.said_unfinished = True
    mem = study.bbc(include_incomplete=True, n_bootstraps=200, chunked=False)
    lazy = study.bbc(include_incomplete=True, n_bootstraps=200, chunked=True)
    assert lazy == mem
    assert np.array_equal(lazy.winners, mem.winners) and lazy.n_redrawn == mem.n_redrawn
    assert lazy.selected_config == mem.selected_config == study.best_index_
    assert lazy.naive_estimate == mem.naive_estimate == study.best_score_


def test_a_width_rule_beyond_memory_checks_by_chunks(tmp_path, client, dask_config):
    """A cube beyond ``bbc_dask.in-memory-bytes``: the width rule's check goes by the
    chunked path on the run's cluster, and the run stops by it."""
    dask_config({"bbc_dask.in-memory-bytes": 1000})
    X, y = make_classification(120, 5, flip_y=0.3, random_state=0)
    study = bd.run_study(LogisticRegression(), GRID, X, y, store=tmp_path / "w.zarr",
                         metric="roc_auc", n_splits=10, random_state=0, client=client,
                         progress=False, stop=bd.Stop(ci_width=1.0, n_bootstraps=200))
    rec = study.stopped_
    assert rec.reason == "ci_width" and 0 <= rec.interval[1] - rec.interval[0] <= 1.0
    assert (study.state == PENDING).any()


def test_a_width_rule_is_refused_where_a_scorers_check_could_not_run(tmp_path, dask_config):
    """Beyond ``bbc_dask.in-memory-bytes`` the check goes by the chunked path, which takes
    the registered metrics only: a scikit-learn scorer's own function is refused the width
    rule up front (not its budgets)."""
    from sklearn.metrics import make_scorer, matthews_corrcoef

    dask_config({"bbc_dask.in-memory-bytes": 1000})
    with pytest.raises(InvalidParameterError) as e:
        _run(tmp_path / "s.zarr", None, stop=bd.Stop(ci_width=0.1),
             metric=make_scorer(matthews_corrcoef))
    assert "'stop' parameter of run_study" in str(e.value)
    assert "bbc_dask.in-memory-bytes (1,000)" in str(e.value)
    assert not (tmp_path / "s.zarr").exists()


def test_max_fits_stops_the_study_and_a_rerun_finishes_it_unchanged(tmp_path, client):
    """``max_fits`` counts the study's fitted cells: the run stops at exactly that many,
    with no model refit and the rule recorded; the same rule again fits nothing; a rerun
    without it fits only the pending cells, and the study equals one never stopped."""
    store = tmp_path / "s.zarr"
    study = _run(store, client, stop=bd.Stop(max_fits=7))
    st = study.state
    assert study.n_fits_ == 7 and int((st != PENDING).sum()) == 7
    rec = study.stopped_
    assert rec.reason == "max_fits" and rec.fits == 7 and rec.rule == bd.Stop(max_fits=7)
    assert rec.interval is None and rec.seconds >= 0
    assert bd.open_study(store).stopped_ == rec  # read back from the store
    est = study.bbc(include_incomplete=True, n_bootstraps=100)
    assert np.isfinite(est.estimate)

    again = _run(store, client, stop={"max_fits": 7})
    assert again.n_fits_ == 0 and again.stopped_.reason == "max_fits"
    assert np.array_equal(again.state, st)

    done = _run(store, client)
    assert done.n_fits_ == st.size - 7 and done.stopped_ is None
    assert (done.state != PENDING).all()
    assert done.final_model_record["config"] == done.best_index_
    whole = _run(tmp_path / "whole.zarr", client)
    assert np.array_equal(done.cube["prediction"].values, whole.cube["prediction"].values,
                          equal_nan=True)
    assert done.bbc(n_bootstraps=100).estimate == whole.bbc(n_bootstraps=100).estimate
    assert done.best_index_ == whole.best_index_


def _scores_on_what_was_predicted(study, selection):
    """Each configuration's score on the cells it predicted, computed here with
    scikit-learn: pooled, the AUC on each repeat's predicted samples, mean over repeats;
    fold_mean, the mean AUC of its predicted folds."""
    from sklearn.metrics import roc_auc_score

    _, y = _data()
    pred = study.cube["prediction"].transpose("sample", "config", "repeat").values
    folds = study.cube["fold"].transpose("sample", "repeat").values
    out = np.full(pred.shape[1], np.nan)
    for c in range(pred.shape[1]):
        scores = []
        for r in range(pred.shape[2]):
            seen = ~np.isnan(pred[:, c, r])
            if selection == "pooled" and seen.any():
                scores.append(roc_auc_score(y[seen], pred[seen, c, r]))
            for k in np.unique(folds[seen, r]) if selection == "fold_mean" else ():
                part = seen & (folds[:, r] == k)
                scores.append(roc_auc_score(y[part], pred[part, c, r]))
        if len(scores) >= (pred.shape[2] if selection == "pooled" else 1):
            out[c] = np.mean(scores)
    return out


@pytest.mark.parametrize("selection", ["pooled", "fold_mean"])
def test_a_study_stopped_before_any_configuration_completed_refits_its_incomplete_winner(
        tmp_path, client, selection):
    """Stopped after 12 of 32 cells (the first fold wave and part of the second): no
    configuration is complete, and the study's winner, its score, its rank and its refit
    are the incomplete CV's, the best on the cells each predicted; a rerun that completes
    it selects as a study never stopped and refits only a changed winner."""
    store = tmp_path / "s.zarr"
    study = _run(store, client, stop=bd.Stop(max_fits=12), selection=selection)
    assert study.candidates().size == 0 and study.stopped_.reason == "max_fits"
    want = _scores_on_what_was_predicted(study, selection)
    assert np.isfinite(want).sum() >= 2
    best = int(np.nanargmax(want))
    with pytest.warns(UnfinishedStudyWarning):
        assert study.best_index_ == best
    with pytest.warns(UnfinishedStudyWarning):
        assert study.best_score_ == pytest.approx(want[best], abs=1e-12)
    with pytest.warns(UnfinishedStudyWarning):
        assert study.cv_results_["rank_test_score"][best] == 1
    res = study.bbc(include_incomplete=True, n_bootstraps=100)
    assert res.selected_config == best and res.selection == selection
    assert res.naive_estimate == pytest.approx(want[best], abs=1e-12)
    assert study.final_model_record["config"] == best
    X, y = _data()
    alone = LogisticRegression(**study.params[best]).fit(X, y)
    np.testing.assert_allclose(study.final_model.coef_, alone.coef_)
    if selection == "pooled":  # the report says it, with the incomplete CV's estimate
        from bbc_dask.report import write_report

        page = open(write_report(bd.open_study(store), tmp_path / "r", n_bootstraps=100)).read()
        assert "Stopped early by its rule (max_fits) after 12 fits" in page
        assert f"<td>{res.estimate:.4f}</td>" in page and "bootstrap_bbc_f.png" not in page

    # completed without a refit: the model saved is the stopped winner's, which (with
    # this data) the full CV's pooled winner is not; it is refused, not given silently
    unrefit = _run(store, client, selection=selection, refit=False)
    assert (unrefit.best_index_ != best) is (selection == "pooled")
    if selection == "pooled":
        with pytest.raises(StudyNotReadyError, match="its winner when its rule stopped it"):
            bd.open_study(store).final_model
    done = _run(store, client, selection=selection)
    whole = _run(tmp_path / "whole.zarr", client, selection=selection)
    assert done.best_index_ == whole.best_index_
    assert done.final_model_record["config"] == done.best_index_
    refit_again = done.best_index_ != best
    assert (done.final_model_record["refit_time"] == study.final_model_record["refit_time"]) \
        is not refit_again


def test_max_seconds_stops_submitting_once_spent(tmp_path, client):
    study = _run(tmp_path / "s.zarr", client, stop=bd.Stop(max_seconds=1e-6))
    rec = study.stopped_
    assert rec.reason == "max_seconds" and rec.seconds >= 1e-6
    assert study.n_fits_ == rec.fits == int((study.state != PENDING).sum())
    assert (study.state == PENDING).any()


def test_the_width_rule_stops_at_the_first_complete_wave_it_holds(tmp_path, client, dask_config):
    """A width every interval meets stops the run as soon as a fold wave is complete: the
    interval recorded is BBC on the incomplete CV of the cells then recorded (the study's
    seed), the tasks in flight are recorded, and cells are left pending."""
    # a shallow queue of one block per task: few cells are in flight when the rule holds
    dask_config({"bbc_dask.queue-seconds": 0.001, "bbc_dask.target-task-seconds": 0,
                 "bbc_dask.driver-task-seconds": 0, "bbc_dask.driver-tasks-measured": 10**9})
    # labels with noise: no configuration ranks a fold's samples perfectly (an interval
    # of one point, which never meets the rule)
    X, y = make_classification(120, 5, flip_y=0.3, random_state=0)
    study = bd.run_study(LogisticRegression(), GRID, X, y, store=tmp_path / "w.zarr",
                         metric="roc_auc", n_splits=10, random_state=0, client=client,
                         progress=False, stop=bd.Stop(ci_width=1.0, n_bootstraps=200))
    rec = study.stopped_
    assert rec.reason == "ci_width" and rec.rule.ci_width == 1.0
    lo, hi = rec.interval
    assert 0 <= hi - lo <= 1.0
    st = study.state
    assert (st == PENDING).any() and rec.fits == int((st != PENDING).sum())
    assert (st[:, :, 0] != PENDING).all()  # the wave that held it
    res = study.bbc(include_incomplete=True, n_bootstraps=200)
    assert res.confidence_interval[0] <= res.estimate <= res.confidence_interval[1]
    # never met: the run goes on to the end, and says nothing of a stop
    done = bd.run_study(LogisticRegression(), GRID, X, y, store=tmp_path / "w.zarr",
                        metric="roc_auc", n_splits=10, random_state=0, client=client,
                        progress=False, stop=bd.Stop(ci_width=1e-9, n_bootstraps=200))
    assert done.stopped_ is None and (done.state != PENDING).all()
    assert done.n_fits_ == int((st == PENDING).sum()) and done.final_model_record is not None


def test_the_command_line_stops_by_the_study_files_rule_and_resumes(tmp_path, client):
    """A study file's ``stop:`` (and ``--max-fits``, which overrides it): ``run`` says the
    run stopped and prints the estimate of the incomplete CV; ``status`` says why it
    stopped; the file without its rule resumes the study to the end."""
    import yaml
    from click.testing import CliRunner

    from bbc_dask.cli import main

    spec = {"name": "s", "data": {"sklearn": "breast_cancer"}, "cv": {"splits": 3},
            "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier",
                      "params": {"random_state": 0}, "grid": {"max_depth": [1, 2, 3]}}],
            "metric": "roc_auc", "random_state": 0, "store": "s.zarr", "bootstraps": 50,
            "stop": {"max_fits": 2}}
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    run = ["run", str(f), "--scheduler", client.scheduler.address, "--no-progress"]
    res = CliRunner().invoke(main, run + ["--max-fits", "4"])
    assert res.exit_code == 0, res.output
    assert "stopped early (max_fits): 4 of 9 cells settled" in res.output, res.output
    assert "on the incomplete CV" in res.output, res.output
    res = CliRunner().invoke(main, ["status", str(tmp_path / "s.zarr"), "--no-estimate"])
    assert res.exit_code == 0 and "stopped early by its rule (max_fits)" in res.output, res.output
    # a stopped study's numbers are its incomplete CV's, without --partial: said so
    res = CliRunner().invoke(main, ["estimate", str(tmp_path / "s.zarr"), "--json", "--bootstraps", "50"])
    assert res.exit_code == 0, res.output
    assert "stopped early by its rule, max_fits); BBC on the incomplete CV" in res.stderr
    want = bd.open_study(tmp_path / "s.zarr").bbc(include_incomplete=True, n_bootstraps=50)
    assert json.loads(res.stdout)["bbc"]["estimate"] == want.estimate
    del spec["stop"]
    f.write_text(yaml.safe_dump(spec))
    res = CliRunner().invoke(main, run)
    assert res.exit_code == 0, res.output
    assert "finished: 9 cells done" in res.output, res.output
    st = bd.open_study(tmp_path / "s.zarr")
    assert st.stopped_ is None and st.status()["stopped"] is None


def test_dropping_and_stopping_compose(tmp_path, client):
    """A BBCD study stopped mid-way keeps the decisions made before the stop; the rerun
    makes the others as a run never stopped makes them: the same drops, predictions and
    estimate."""
    X, y = make_classification(300, 8, random_state=1)
    grid = {"C": list(np.geomspace(1e-4, 10, 6))}
    kw = dict(metric="roc_auc", n_splits=5, random_state=0, client=client, progress=False,
              dropping=bd.Dropping(min_predictions=50, n_bootstraps=100))
    store = tmp_path / "s.zarr"
    stopped = bd.run_study(LogisticRegression(), grid, X, y, store=store,
                           stop=bd.Stop(max_fits=9), **kw)
    assert stopped.stopped_.reason == "max_fits" and int((stopped.state != PENDING).sum()) == 9
    assert [e["wave"] for e in stopped.dropping_log] == [0]  # wave 0's decision, before the stop
    done = bd.run_study(LogisticRegression(), grid, X, y, store=store, **kw)
    whole = bd.run_study(LogisticRegression(), grid, X, y, store=tmp_path / "w.zarr", **kw)
    assert done.n_fits_ == int((whole.state != 0).sum()) - 9
    assert done.dropped and done.dropped == whole.dropped
    assert np.array_equal(done.state, whole.state)
    assert np.array_equal(done.cube["prediction"].values, whole.cube["prediction"].values,
                          equal_nan=True)
    assert done.bbc(n_bootstraps=200).estimate == whole.bbc(n_bootstraps=200).estimate


def test_the_width_rule_holds_on_a_narrow_interval_never_on_one_point():
    """An interval of one point (every bootstrap scored alike — early, a configuration
    with a few lucky predictions wins each) says nothing of precision: it never stops a
    run; a narrow one does, and is recorded."""
    import dataclasses

    from bbc_dask.engine import StopRecord
    from bbc_dask.engine._stop import Budget

    @dataclasses.dataclass
    class Interval:
        confidence_interval: tuple

    answers = iter([None, Interval((1.0, 1.0)), Interval((0.9, 0.99)), Interval((0.9, 0.95))])
    budget = Budget(bd.Stop(ci_width=0.05), 0, 0.0, lambda: next(answers))
    for reason in (None, None, None, "ci_width"):
        budget.wave_complete()
        assert budget.reason == reason
    assert budget.interval == (0.9, 0.95)
    rec = budget.record(12)
    assert rec.reason == "ci_width" and rec.fits == 12 and rec.interval == (0.9, 0.95)
    assert StopRecord.from_json(rec.to_json()) == rec


def test_a_task_cut_by_max_fits_stops_the_run_at_once():
    """``max_fits`` cutting a task (a fold's blocks grouped in one) leaves blocks out: the
    run is stopped right then, not only when a later task finds no fit left — else, the
    cut blocks being its stage's last, the stage ended as if complete and BBCD tested a
    wave whose cut cells were never fitted (their predictions NaN)."""
    from bbc_dask.engine._messages import PlannedBlock
    from bbc_dask.engine._stop import Budget

    group = [PlannedBlock(1, 0, np.array([c])) for c in range(6)]
    cut = Budget(bd.Stop(max_fits=9), 6, 0.0, None)
    kept = cut.cut(group, 0, 0)
    assert [int(b.configs[0]) for b in kept] == [0, 1, 2] and cut.reason == "max_fits"
    whole = Budget(bd.Stop(max_fits=12), 6, 0.0, None)  # exactly what is left: no stop
    assert len(whole.cut(group, 0, 0)) == 6 and whole.reason is None
    # a block is one stored chunk's configurations, written whole by its task: never cut
    part = Budget(bd.Stop(max_fits=8), 0, 0.0, None)
    assert part.cut([PlannedBlock(0, 0, np.arange(10))], 0, 0) is None and part.reason == "max_fits"


def test_max_fits_never_splits_a_stored_chunk_and_the_rerun_keeps_every_prediction(
        tmp_path, client):
    """Chunks of 4 configurations: ``max_fits=5`` fits the first chunk's 4 and stops
    before the next chunk's 2 (a task writes its chunk whole: half a chunk fitted now
    would be blanked by the task of its other half in the rerun, its cells still saying
    done). The rerun completes the study equal to one never stopped."""
    kw = dict(configs_per_task=4, n_splits=3, n_repeats=1)
    grid = {"C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}
    X, y = _data()
    opts = dict(metric="roc_auc", random_state=0, client=client, progress=False) | kw
    study = bd.run_study(LogisticRegression(), grid, X, y, store=tmp_path / "s.zarr",
                         stop=bd.Stop(max_fits=5), **opts)
    assert study.n_fits_ == 4 and study.stopped_.reason == "max_fits"
    assert (study.state[:4, 0, 0] == 1).all() and (study.state[4:, 0, 0] == PENDING).all()
    done = bd.run_study(LogisticRegression(), grid, X, y, store=tmp_path / "s.zarr", **opts)
    whole = bd.run_study(LogisticRegression(), grid, X, y, store=tmp_path / "w.zarr", **opts)
    assert not np.isnan(done.cube["prediction"].values).any()
    assert np.array_equal(done.cube["prediction"].values, whole.cube["prediction"].values)
