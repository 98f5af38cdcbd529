"""Shared by the examples: a local cluster sized for the machine (or --scheduler)."""
import argparse


def parser(doc):
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="A small version (used by the tests).")
    ap.add_argument("--scheduler", default=None, help="Address of an existing Dask scheduler.")
    return ap


def client(args, n_workers=2):
    import bbc_dask as bd

    if args.scheduler:
        return bd.make_client("address", address=args.scheduler)
    return bd.make_client("local", n_workers=n_workers, dashboard_address=":0")


def show(name, res):
    lo, hi = res.confidence_interval
    print(f"{name:<8}{res.estimate:>10.4f}   [{lo:.4f}, {hi:.4f}]   lower bound {res.lower_bound:.4f}   "
          f"naive CV {res.naive_estimate:.4f}")
