"""Quickstart: the winner's curse on a simulated study, and how BBC corrects it.

Simulates the out-of-sample predictions of 200 configurations on 100 samples (the BBC-F
paper's AUC simulation), selects the winner as cross-validation with tuning does, and
prints the naive CV estimate, the BBC and BBC-F estimates with their 95% intervals, and
the true AUC of the selected configuration.

Run: ``python examples/simulated_winners_curse.py [--quick]``.
"""
import argparse

import bbc_dask as bd


def main(quick=False):
    n, c, reps = (100, 200, 1000) if not quick else (60, 30, 200)
    sim = bd.simulate.auc_matrix(n, c, a=9, b=6, class_balance=0.5, random_state=7)
    kw = dict(metric="roc_auc", n_bootstraps=reps, random_state=0)
    res_bbc = bd.bbc(sim.predictions, sim.y, **kw)
    res_f = bd.bbc_f(sim.predictions, sim.y, sim.folds, **kw)
    naive = bd.naive_cvt(sim.predictions, sim.y, metric="roc_auc")
    truth = sim.true_performance[res_bbc.selected_config]
    print(f"Simulated study: N={n} samples, C={c} configurations, AUC metric")
    print(f"selected configuration: {res_bbc.selected_config}")
    print(f"{'method':<12}{'estimate':>10}{'95% CI':>20}{'lower bound':>14}")
    print(f"{'naive CVT':<12}{naive.estimate:>10.4f}{'-':>20}{'-':>14}")
    for name, r in (("BBC", res_bbc), ("BBC-F", res_f)):
        ci = r.confidence_interval
        print(f"{name:<12}{r.estimate:>10.4f}{f'[{ci.low:.4f}, {ci.high:.4f}]':>20}"
              f"{r.lower_bound:>14.4f}")
    print(f"{'true AUC':<12}{truth:>10.4f}")
    return res_bbc, res_f, truth


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (used by the tests)")
    main(quick=p.parse_args().quick)
