"""Kubernetes: the deploy/ manifests rendered and validated against Kubernetes' schemas and
the dask-kubernetes CRDs; make_client(kind="kubernetes") up to the API call (no API server
runs here); the Dockerfile's promises."""
import copy
import os
import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml

kv = pytest.importorskip("kubernetes_validate")
op = pytest.importorskip("dask_kubernetes.operator")

import bbc_dask as bd  # noqa: E402
from bbc_dask.cluster import KUBERNETES_DEFAULTS, WORKER_ENV, kubernetes_cluster_spec  # noqa: E402
from _kustomize import render  # noqa: E402

pytestmark = pytest.mark.kubernetes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
OVERLAYS = ["interactive", "job-s3", "job-pvc"]
K8S_VERSION = "1.33"
CRDS = os.path.join(os.path.dirname(op.__file__), "deployment", "helm", "dask-kubernetes-operator", "crds")


def _strict(schema):
    """The API server prunes (or, with strict field validation, rejects) unknown fields:
    make every object schema that lists its properties closed, so a typo fails here."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


def _crd_schemas():
    out = {}
    for name in os.listdir(CRDS):
        with open(os.path.join(CRDS, name)) as f:
            crd = yaml.safe_load(f)
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            out[key] = _strict(version["schema"]["openAPIV3Schema"]["properties"]["spec"])
    return out


CRD = _crd_schemas()


def validate(doc):
    """Validate one rendered resource: built-in kinds with Kubernetes' own schemas (strict),
    Dask custom resources with the operator's CRD schema (strict) plus ObjectMeta."""
    key = (doc["apiVersion"], doc["kind"])
    if key in CRD:
        jsonschema.validate(doc["spec"], CRD[key])
        assert set(doc) <= {"apiVersion", "kind", "metadata", "spec"}, set(doc)
        kv.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc["metadata"]},
                    K8S_VERSION, strict=True)
    else:
        assert doc["apiVersion"].split("/")[0] != "kubernetes.dask.org", key
        kv.validate(doc, K8S_VERSION, strict=True)


def pod_specs(doc):
    """(role, PodSpec) of every pod a resource creates."""
    if doc["kind"] == "DaskCluster":
        return [("scheduler", doc["spec"]["scheduler"]["spec"]), ("worker", doc["spec"]["worker"]["spec"])]
    if doc["kind"] == "DaskJob":
        c = doc["spec"]["cluster"]["spec"]
        return [("job", doc["spec"]["job"]["spec"]), ("scheduler", c["scheduler"]["spec"]),
                ("worker", c["worker"]["spec"])]
    return []


def check_hardened(doc):
    for role, pod in pod_specs(doc):
        psc = pod["securityContext"]
        assert psc["runAsNonRoot"] is True and psc["runAsUser"] != 0, role
        assert psc["seccompProfile"]["type"] == "RuntimeDefault", role
        assert pod.get("automountServiceAccountToken") is False, role
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        for c in pod["containers"] + pod.get("initContainers", []):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc.get("privileged") is not True, role
            assert sc["runAsNonRoot"] is True and sc["capabilities"]["drop"] == ["ALL"], role
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"][kind]), (role, kind)


def check_tls(doc):
    """Scheduler on TLS only, workers and the job runner dial tls:// with certificates,
    encryption required everywhere."""
    name = doc["metadata"]["name"]
    for role, pod in pod_specs(doc):
        c = pod["containers"][0]
        env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
        assert env["DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION"] == "True", role
        assert env["DASK_DISTRIBUTED__COMM__TLS__CA_FILE"].startswith("/etc/bbc-dask/tls/")
        tls_name = {"job": "CLIENT"}.get(role, role.upper())
        assert f"DASK_DISTRIBUTED__COMM__TLS__{tls_name}__CERT" in env, role
        assert f"DASK_DISTRIBUTED__COMM__TLS__{tls_name}__KEY" in env, role
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        assert mounts["tls"]["readOnly"] is True
        vols = {v["name"]: v for v in pod["volumes"]}
        assert vols["tls"]["secret"]["secretName"] == "bbc-dask-tls"
        args = c["args"]
        if role == "scheduler":
            assert args[:2] == ["dask", "scheduler"] and args[args.index("--protocol") + 1] == "tls"
        else:
            assert f"tls://{name}-scheduler:8786" in args, (role, args)
        if role == "worker":
            assert args[args.index("--protocol") + 1] == "tls"
            assert args[args.index("--preload") + 1] == "bbc_dask.preload"  # ready as it joins


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request):
    return request.param, render(os.path.join(DEPLOY, "kubernetes", "overlays", request.param))


def test_every_rendered_manifest_is_valid(overlay):
    name, docs = overlay
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == {"interactive": ["DaskAutoscaler", "DaskCluster", "Namespace"],
                     "job-s3": ["ConfigMap", "DaskJob", "Namespace"],
                     "job-pvc": ["ConfigMap", "DaskJob", "Namespace", "PersistentVolumeClaim"]}[name]
    for doc in docs:
        validate(doc)
        check_hardened(doc)
        if doc["kind"] in ("DaskCluster", "DaskJob"):
            check_tls(doc)
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "bbc-dask"
    ns = next(d for d in docs if d["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_validation_catches_mistakes(overlay):
    """The checks above can fail: a typo, a root pod and a missing limit are caught."""
    _, docs = overlay
    dask = next(d for d in docs if d["kind"] in ("DaskCluster", "DaskJob"))
    bad = copy.deepcopy(dask)
    pod = pod_specs(bad)[-1][1]
    pod["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(jsonschema.ValidationError, match="imagePullPolcy"):
        validate(bad)
    bad = copy.deepcopy(dask)
    pod_specs(bad)[0][1]["securityContext"]["runAsNonRoot"] = False
    with pytest.raises(AssertionError):
        check_hardened(bad)
    bad = copy.deepcopy(dask)
    del pod_specs(bad)[-1][1]["containers"][0]["resources"]["limits"]
    with pytest.raises(KeyError):
        check_hardened(bad)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dat": {}}
    with pytest.raises(kv.ValidationError):
        validate(cm)


@pytest.mark.parametrize("name", ["job-s3", "job-pvc"])
def test_job_overlays_choose_their_store(name):
    docs = render(os.path.join(DEPLOY, "kubernetes", "overlays", name))
    job = next(d for d in docs if d["kind"] == "DaskJob")
    runner = job["spec"]["job"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in runner["env"]}
    assert runner["args"][:3] == ["bbc-dask", "run", "/etc/bbc-dask/study/study.yaml"]
    assert "$(BBC_DASK_STORE)" in runner["args"]
    worker = job["spec"]["cluster"]["spec"]["worker"]["spec"]["containers"][0]
    if name == "job-s3":
        assert env["BBC_DASK_STORE"].startswith("s3://")
        for c in (runner, worker):  # the workers read the cube for the dropping test
            assert c["envFrom"] == [{"secretRef": {"name": "bbc-dask-s3"}}]
    else:
        assert env["BBC_DASK_STORE"].startswith("/data/")
        pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
        for pod, c in ((job["spec"]["job"]["spec"], runner),
                       (job["spec"]["cluster"]["spec"]["worker"]["spec"], worker)):
            vols = {v["name"]: v for v in pod["volumes"]}
            assert vols["store"]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
            assert any(m["mountPath"] == "/data" for m in c["volumeMounts"])
    # The study file in the ConfigMap is a valid study for our CLI.
    from bbc_dask.cli._studyfile import resolve_study_file

    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    spec = resolve_study_file(yaml.safe_load(cm["data"]["study.yaml"]), base="/tmp")
    assert spec["metric"] == "roc_auc" and spec["dropping"]
    mounted = {v["name"]: v for v in job["spec"]["job"]["spec"]["volumes"]}["study"]
    assert mounted["configMap"]["name"] == cm["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with kustomize) not installed")
@pytest.mark.parametrize("name", OVERLAYS)
def test_renderer_agrees_with_kubectl_kustomize(name):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, "kubernetes", "overlays", name)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    theirs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out) if d}
    ours = {(d["kind"], d["metadata"]["name"]): d for d in render(
        os.path.join(DEPLOY, "kubernetes", "overlays", name))}
    assert ours == theirs


# ------------------------------------------------------------------------- make_client
def test_cluster_spec_from_defaults_and_overrides():
    spec = kubernetes_cluster_spec(name="study-1", namespace="ml", image="reg.example/bbc:1",
                                   n_workers=5, env={"OMP_NUM_THREADS": 1},
                                   resources={"requests": {"cpu": "2", "memory": "8Gi"},
                                              "limits": {"cpu": "2", "memory": "8Gi"}})
    validate(spec)
    check_hardened(spec)
    assert spec["metadata"] == {"name": "study-1", "namespace": "ml", "labels": {
        "app.kubernetes.io/name": "bbc-dask", "app.kubernetes.io/component": "dask-cluster"}}
    w = spec["spec"]["worker"]
    assert w["replicas"] == 5
    wc, sc = w["spec"]["containers"][0], spec["spec"]["scheduler"]["spec"]["containers"][0]
    assert wc["image"] == sc["image"] == "reg.example/bbc:1"
    assert wc["args"][:6] == ["dask", "worker", "--nthreads", "1", "--preload", "bbc_dask.preload"]
    assert sc["args"][:2] == ["dask", "scheduler"]
    assert wc["env"] == [{"name": "OMP_NUM_THREADS", "value": "1"}] + [
        {"name": k, "value": v} for k, v in WORKER_ENV.items()]
    assert sc["env"] == [{"name": "OMP_NUM_THREADS", "value": "1"}]
    # the user's value wins; the scheduler gets no worker settings
    own = kubernetes_cluster_spec(env={"MALLOC_TRIM_THRESHOLD_": 0})
    validate(own)
    own_wc = own["spec"]["worker"]["spec"]["containers"][0]
    assert {e["name"]: e["value"] for e in own_wc["env"]} == {
        "MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_MMAP_THRESHOLD_": WORKER_ENV["MALLOC_MMAP_THRESHOLD_"]}
    assert "env" not in kubernetes_cluster_spec()["spec"]["scheduler"]["spec"]["containers"][0]
    assert wc["resources"]["limits"] == {"cpu": "2", "memory": "8Gi"}
    d = kubernetes_cluster_spec()
    validate(d)
    from bbc_dask import __version__

    assert d["metadata"]["namespace"] == KUBERNETES_DEFAULTS["namespace"]
    assert d["spec"]["worker"]["replicas"] == KUBERNETES_DEFAULTS["n_workers"]
    assert d["spec"]["worker"]["spec"]["containers"][0]["image"] == f"bbc-dask:{__version__}"
    assert d["spec"]["worker"]["spec"]["containers"][0]["resources"] == KUBERNETES_DEFAULTS["resources"]
    assert re.fullmatch(r"bbc-dask-[0-9a-f]{8}", d["metadata"]["name"])


@pytest.mark.parametrize("options, error, message", [
    ({"workers": 3}, TypeError, "unexpected option"),
    ({"n_workers": 0}, ValueError, "n_workers"),
    ({"adapt_minimum": 1}, ValueError, "must be given together with 'adapt_minimum'"),
    ({"adapt_minimum": 5, "adapt_maximum": 2}, ValueError, "'adapt_maximum' parameter of .* must be at least 'adapt_minimum'"),
    ({"resources": {"cpu": "1"}}, ValueError, "'resources' parameter"),
])
def test_bad_kubernetes_options(options, error, message):
    with pytest.raises(error, match=message):
        bd.make_client("kubernetes", **options)


def test_kubernetes_with_security_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="plain TCP"):
        bd.make_client("kubernetes", security=True)


class _Stop(Exception):
    pass


def test_make_client_kubernetes_reaches_the_api_call(monkeypatch):
    """The real KubeCluster runs up to creating the DaskCluster resource; the resource it
    would send is ours."""
    import dask_kubernetes.operator.kubecluster.kubecluster as kc

    sent = []

    class FakeDaskCluster:  # kr8s' resource object: the API boundary
        def __init__(self, resource, namespace=None):
            self.resource, self.namespace = resource, namespace

        def __await__(self):
            async def ready():
                return self
            return ready().__await__()

        async def exists(self):
            return False

        async def create(self):
            sent.append((self.resource, self.namespace))
            raise _Stop("API call reached")

        async def delete(self):
            pass

    monkeypatch.setattr(kc, "DaskCluster", FakeDaskCluster)
    monkeypatch.setattr(kc.KubeCluster, "_watch_component_status", _noop)
    with pytest.raises(_Stop):
        bd.make_client("kubernetes", name="bbc-test", namespace="studies", n_workers=3,
                       image="reg.example/bbc:2")
    (resource, namespace), = sent
    assert namespace == "studies"
    assert resource == kubernetes_cluster_spec(name="bbc-test", namespace="studies", n_workers=3,
                                               image="reg.example/bbc:2")
    validate(resource)


async def _noop(self):
    return None


def test_make_client_kubernetes_adapts_and_builds_the_client(monkeypatch):
    import dask_kubernetes.operator as dko

    calls = {}

    class Recorder:
        def __init__(self, **kwargs):
            calls["init"] = kwargs

        def adapt(self, minimum, maximum):
            calls["adapt"] = (minimum, maximum)
            raise _Stop  # what follows is distributed.Client(cluster)

        def close(self):
            calls["closed"] = True

    monkeypatch.setattr(dko, "KubeCluster", Recorder)
    with pytest.raises(_Stop):
        bd.make_client("kubernetes", name="adaptive", adapt_minimum=1, adapt_maximum=20,
                       resource_timeout=60)
    init = calls["init"]
    assert init["namespace"] == "default" and init["shutdown_on_close"] is True
    assert init["resource_timeout"] == 60
    assert init["custom_cluster_spec"] == kubernetes_cluster_spec(name="adaptive")
    assert calls["adapt"] == (1, 20) and calls["closed"]  # a failed start deletes the cluster


def test_study_file_and_cli_reach_kubernetes(tmp_path, monkeypatch):
    """cluster.kind: kubernetes in a study file, overridden by --cluster-option, reaches
    make_client with the merged options."""
    import bbc_dask.cli as cli_mod
    import bbc_dask.cluster as cl
    from click.testing import CliRunner

    seen = {}

    def fake_make_client(kind, *, security=None, **options):
        seen.update(kind=kind, security=security, **options)
        raise RuntimeError("stop before the API")

    monkeypatch.setattr(cl, "make_client", fake_make_client)
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({
        "data": {"sklearn": "breast_cancer"},
        "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "grid": {"max_depth": [1]}}],
        "cluster": {"kind": "kubernetes", "n_workers": 4, "image": "reg/bbc:1"}}))
    res = CliRunner().invoke(cli_mod.main, ["run", str(f), "--cluster-option", "n_workers=16",
                                            "--cluster-option", "resources.limits.memory=8Gi"])
    assert res.exit_code == 1 and "stop before the API" in res.output, res.output
    assert seen == {"kind": "kubernetes", "security": None, "n_workers": 16, "image": "reg/bbc:1",
                    "resources": {"limits": {"memory": "8Gi"}}}


def test_missing_kubernetes_extra_names_it(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_dask_kubernetes(name, *a, **k):
        if name.startswith("dask_kubernetes"):
            raise ImportError("No module named 'dask_kubernetes'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_dask_kubernetes)
    with pytest.raises(ImportError, match=r"bbc-dask\[kubernetes\]"):
        bd.make_client("kubernetes")


# ------------------------------------------------------------------------- Dockerfile
def test_dockerfile_installs_the_extras_and_runs_non_root():
    text = open(os.path.join(DEPLOY, "Dockerfile")).read()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    users = [ln.split()[1] for ln in lines if ln.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert any(re.search(r'pip install "\.\[s3,kubernetes\]"', ln) for ln in lines)
    for k, v in WORKER_ENV.items():  # the image's workers get the cluster module's settings
        assert f"{k}={v}" in text
    for ln in lines:  # everything it copies is in the repository
        if ln.startswith("COPY "):
            for src in ln.split()[1:-1]:
                assert os.path.exists(os.path.join(ROOT, src)), src
    import tomllib

    extras = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["project"]["optional-dependencies"]
    assert {"s3", "kubernetes"} <= set(extras)
    # The manifests run as the user the image creates.
    uid = re.search(r"useradd --uid (\d+)", text).group(1)
    job = yaml.safe_load(open(os.path.join(DEPLOY, "kubernetes", "job", "daskjob.yaml")))
    assert str(job["spec"]["job"]["spec"]["securityContext"]["runAsUser"]) == uid == users[-1].split(":")[0]


def test_study_file_kubernetes_with_tls_is_a_one_line_error(tmp_path):
    from click.testing import CliRunner

    import bbc_dask.cli as cli_mod

    for name in ("ca.pem", "me.pem", "me-key.pem"):
        (tmp_path / name).write_text("-")
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({
        "data": {"sklearn": "breast_cancer"},
        "grid": [{"estimator": "sklearn.tree.DecisionTreeClassifier", "grid": {"max_depth": [1]}}],
        "cluster": {"kind": "kubernetes", "security": {
            "tls_ca_file": "ca.pem", "tls_client_cert": "me.pem", "tls_client_key": "me-key.pem"}}}))
    res = CliRunner().invoke(cli_mod.main, ["run", str(f)])
    assert res.exit_code == 2 and "plain TCP" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "runs").exists()
