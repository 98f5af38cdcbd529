import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import bbc_dask as bd


def test_auc_matrix_has_the_stated_aucs():
    sim = bd.simulate.auc_matrix(20000, 5, a=9, b=6, class_balance=0.3, random_state=0)
    emp = [roc_auc_score(sim.y, sim.predictions[:, j]) for j in range(5)]
    np.testing.assert_allclose(emp, sim.true_performance, atol=0.015)
    assert sim.y.mean() == pytest.approx(0.3, abs=0.02)
    assert sorted(np.unique(sim.folds)) == list(range(10))
    # stratified: every fold has the class balance
    for k in range(10):
        assert sim.y[sim.folds == k].mean() == pytest.approx(0.3, abs=0.01)


def test_auc_matrix_folds_follow_the_minority_class():
    sim = bd.simulate.auc_matrix(50, 3, class_balance=0.1, random_state=3)
    assert len(np.unique(sim.folds)) == min(10, int(min(sim.y.sum(), 50 - sim.y.sum())))


def test_accuracy_matrix_has_the_stated_accuracies():
    sim = bd.simulate.accuracy_matrix(20000, 4, a=24, b=6, random_state=1)
    emp = (sim.predictions == sim.y[:, None]).mean(axis=0)
    np.testing.assert_allclose(emp, sim.true_performance, atol=0.01)
    assert set(np.unique(sim.predictions)) <= {0, 1}


def test_simulators_are_reproducible_and_validate():
    a = bd.simulate.auc_matrix(100, 10, random_state=5)
    b = bd.simulate.auc_matrix(100, 10, random_state=5)
    np.testing.assert_array_equal(a.predictions, b.predictions)
    np.testing.assert_array_equal(a.folds, b.folds)
    with pytest.raises(ValueError, match=r"The 'class_balance' parameter of auc_matrix must be a float in the range \(0\.0, 1\.0\)"):
        bd.simulate.auc_matrix(100, 10, class_balance=1.5)
    with pytest.raises(ValueError, match=r"The 'n_configs' parameter of accuracy_matrix must be an int"):
        bd.simulate.accuracy_matrix(100, 0)


def test_auc_matrix_with_repeats():
    """Repeats: one stratified partition each; rho = 1 repeats the first repeat's scores
    (which are those of the same seed without repeats), rho < 1 mixes in noise of their
    own, the AUCs unchanged."""
    one = bd.simulate.auc_matrix(300, 4, random_state=2)
    same = bd.simulate.auc_matrix(300, 4, n_repeats=3, random_state=2)
    assert same.predictions.shape == (300, 4, 3) and same.folds.shape == (300, 3)
    for r in range(3):
        np.testing.assert_array_equal(same.predictions[:, :, r], one.predictions)
    np.testing.assert_array_equal(same.folds[:, 0], one.folds)
    assert (same.folds[:, 1] != same.folds[:, 0]).mean() > 0.5
    mixed = bd.simulate.auc_matrix(20000, 2, n_repeats=2, repeat_correlation=0.5, random_state=2)
    for r in range(2):
        emp = [roc_auc_score(mixed.y, mixed.predictions[:, j, r]) for j in range(2)]
        np.testing.assert_allclose(emp, mixed.true_performance, atol=0.015)
    noise = mixed.predictions - mixed.y[:, None, None] * (mixed.predictions[mixed.y == 1].mean(0)
                                                          - mixed.predictions[mixed.y == 0].mean(0))
    assert np.corrcoef(noise[:, 0, 0], noise[:, 0, 1])[0, 1] == pytest.approx(0.5, abs=0.03)
    with pytest.raises(ValueError, match=r"'repeat_correlation' parameter of auc_matrix must be a "
                                         r"float in the range \[0.0, 1.0\]. Got 1.5"):
        bd.simulate.auc_matrix(100, 2, n_repeats=2, repeat_correlation=1.5)
