"""A TLS-secured `dask scheduler` and `dask worker` processes (conftest's tls_cluster:
certificates made there, on 127.0.0.1) run a study; clients without the certificates are
refused."""
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

pytest.importorskip("cryptography")

import bbc_dask as bd  # noqa: E402
from _certs import make_certs  # noqa: E402

CLI = [os.path.join(os.path.dirname(sys.executable), "bbc-dask")]


def test_study_runs_on_the_tls_cluster(tls_cluster, tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.tree import DecisionTreeClassifier

    address, security, _ = tls_cluster
    X, y = load_breast_cancer(return_X_y=True)
    grid = {"max_depth": [1, 2, 3, 4], "min_samples_leaf": [1, 5]}
    study = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y,
                         store=tmp_path / "tls.zarr", metric="roc_auc", n_splits=4,
                         random_state=1, client=address, security=security, progress=False)
    assert study.n_fits_ == 8 * 4 and study.status()["pending"] == 0
    # The same study on an unsecured local cluster stores the same predictions.
    ref = bd.run_study(DecisionTreeClassifier(random_state=0), grid, X, y,
                       store=tmp_path / "plain.zarr", metric="roc_auc", n_splits=4,
                       random_state=1, progress=False)
    np.testing.assert_array_equal(study.cube["prediction"].values, ref.cube["prediction"].values)
    # The tasks really ran on the TLS workers.
    with bd.make_client("address", address=address, security=security) as c:
        assert set(c.scheduler_info()["workers"]) and all(
            w.startswith("tls://") for w in c.scheduler_info()["workers"])


# slow (8 s, command-line runs): CI runs it every time; the default suite runs a study on
# the TLS cluster above
@pytest.mark.slow
def test_cli_runs_with_tls_flags_and_study_file_security(tls_cluster, tmp_path):
    address, security, d = tls_cluster
    spec = {"name": "tls", "data": {"sklearn": "breast_cancer"},
            "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier",
                      "params": {"random_state": 0}, "grid": {"max_depth": [1, 3]}}],
            "cv": {"splits": 3}, "metric": "accuracy", "bootstraps": 50, "store": "tls.zarr"}
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(spec))
    out = subprocess.run(CLI + ["run", str(f), "--no-progress", "--scheduler", address,
                                "--tls-ca-file", security["tls_ca_file"],
                                "--tls-cert", security["tls_client_cert"],
                                "--tls-key", security["tls_client_key"]],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "finished: 6 cells done" in out.stdout
    # The same through the study file: cluster.address + cluster.security (relative paths).
    for name in ("ca.pem", "node.pem", "node-key.pem"):
        (tmp_path / name).write_bytes((d / name).read_bytes())
    spec2 = dict(spec, store="tls2.zarr", cluster={
        "kind": "address", "address": address,
        "security": {"tls_ca_file": "ca.pem", "tls_client_cert": "node.pem",
                     "tls_client_key": "node-key.pem"}})
    f2 = tmp_path / "study2.yaml"
    f2.write_text(yaml.safe_dump(spec2))
    out = subprocess.run(CLI + ["run", str(f2), "--no-progress"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    # Without the certificates: one-line error, exit 2, no store written.
    out = subprocess.run(CLI + ["run", str(f), "--no-progress", "--scheduler", address,
                                "--store", str(tmp_path / "refused.zarr")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("bbc-dask: error:") and len(out.stderr.splitlines()) == 1
    assert not (tmp_path / "refused.zarr" / "zarr.json").exists()


def test_clients_without_the_certificates_are_refused(tls_cluster, tmp_path):
    from distributed import Client

    import gc

    address, security, _ = tls_cluster
    # A Client that failed to connect sits in a reference cycle; if the cyclic collector
    # happens to free it inside the thread that the next Client starts, distributed's
    # Client.__del__ deadlocks with that start (seen on a loaded machine). Each refused
    # Client is therefore collected here, in the main thread, before the next one.
    # No certificates at all: the client cannot even speak TLS.
    with pytest.raises(Exception, match="(?i)tls|ssl|security|context"):
        Client(address, timeout="5s")
    gc.collect()
    # Certificates from another CA: the scheduler refuses the handshake.
    other = make_certs(tmp_path, prefix="other-")
    with pytest.raises((OSError, TimeoutError)):
        bd.make_client("address", address=address, timeout="5s",
                       security={"tls_ca_file": str(other[0]), "tls_client_cert": str(other[1]),
                                 "tls_client_key": str(other[2])})
    gc.collect()
    # Our CA but no client certificate: the scheduler requires one and refuses the
    # connection (checked with a bare TLS comm, since Security will not build it at all).
    import asyncio
    import ssl

    from distributed.comm import connect

    async def identity(ctx):
        comm = await connect(address, timeout="5s", ssl_context=ctx, require_encryption=True)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            await comm.close()

    ctx = ssl.create_default_context(cafile=security["tls_ca_file"])
    with pytest.raises((OSError, TimeoutError)):
        asyncio.run(identity(ctx))
    ctx.load_cert_chain(security["tls_client_cert"], security["tls_client_key"])
    assert asyncio.run(identity(ctx))["type"] == "Scheduler"  # the same with the certificate
    # Plain TCP to the TLS port: refused.
    with pytest.raises((OSError, TimeoutError)):
        Client(address.replace("tls://", "tcp://"), timeout="5s")
    gc.collect()
    # run_study with a missing certificate file names the key.
    from sklearn.tree import DecisionTreeClassifier

    with pytest.raises(FileNotFoundError, match="tls_client_cert"):
        bd.run_study(DecisionTreeClassifier(), {}, np.arange(8.0)[:, None], [0, 1] * 4,
                     store=tmp_path / "s.zarr", metric="accuracy", n_splits=2, client=address,
                     security=dict(security, tls_client_cert=str(tmp_path / "nope.pem")))
    assert not (tmp_path / "s.zarr").exists()


def test_local_cluster_over_tls(tmp_path):
    """security=True: a local cluster with temporary self-signed certificates."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(int)
    with bd.make_client("local", n_workers=1, dashboard_address=":0", security=True) as c:
        assert c.scheduler.address.startswith("tls://")
        study = bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=tmp_path / "l.zarr",
                             metric="accuracy", n_splits=3, random_state=0, client=c, progress=False)
    assert study.status()["done"] == 6
