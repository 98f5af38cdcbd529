"""A renderer of the kustomize features our deploy/ overlays use, for machines without
`kubectl kustomize` (where kubectl is installed, the tests check that both agree).

Supported: ``resources`` (files and directories), ``namespace``, ``labels`` (``pairs``,
metadata only), ``configMapGenerator`` (``files``, with ``disableNameSuffixHash``), ``images``
(any ``containers``/``initContainers`` list, as kustomize does for custom resources) and
inline JSON6902 ``patches`` with a ``target``. Anything else is an error, so a manifest never
renders silently differently from kustomize.
"""
import copy
import json
import os

import jsonpatch
import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "namespace", "labels", "configMapGenerator",
             "images", "patches"}
CLUSTER_SCOPED = {"Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding",
                  "CustomResourceDefinition", "StorageClass"}


def render(directory):
    """The resources ``kustomize build directory`` would print, as a list of dicts."""
    path = os.path.join(directory, "kustomization.yaml")
    with open(path) as f:
        k = yaml.safe_load(f)
    unknown = set(k) - SUPPORTED
    if unknown:
        raise NotImplementedError(f"{path}: kustomization keys {sorted(unknown)}")
    out = []
    for res in k.get("resources", []):
        full = os.path.normpath(os.path.join(directory, res))
        if os.path.isdir(full):
            out += render(full)
        else:
            with open(full) as f:
                # YAML aliases load as shared objects; kustomize expands them into copies
                # (a patch of one must not change the other): a JSON round trip does that.
                out += [json.loads(json.dumps(d)) for d in yaml.safe_load_all(f) if d]
    for gen in k.get("configMapGenerator", []):
        if set(gen) - {"name", "files", "options"} or not gen.get("options", {}).get("disableNameSuffixHash"):
            raise NotImplementedError(f"{path}: configMapGenerator {gen}")
        data = {}
        for name in gen["files"]:
            with open(os.path.join(directory, name)) as f:
                data[os.path.basename(name)] = f.read()
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": gen["name"]},
                    "data": data})
    for p in k.get("patches", []):
        if set(p) != {"target", "patch"}:
            raise NotImplementedError(f"{path}: patch {p}")
        ops = jsonpatch.JsonPatch(yaml.safe_load(p["patch"]))
        hits = [i for i, d in enumerate(out) if _matches(d, p["target"])]
        if not hits:
            raise ValueError(f"{path}: patch target {p['target']} matches nothing")
        for i in hits:
            out[i] = ops.apply(out[i])
    for img in k.get("images", []):
        for d in out:
            _set_images(d, img)
    for d in out:
        meta = d.setdefault("metadata", {})
        if "namespace" in k and d["kind"] not in CLUSTER_SCOPED:
            meta["namespace"] = k["namespace"]
        for lab in k.get("labels", []):
            if set(lab) != {"pairs"}:
                raise NotImplementedError(f"{path}: labels {lab}")
            meta.setdefault("labels", {}).update(lab["pairs"])
    return copy.deepcopy(out)


def _matches(doc, target):
    group, _, version = doc["apiVersion"].rpartition("/")
    want = {"group": group, "version": version, "kind": doc["kind"], "name": doc["metadata"]["name"]}
    return all(want[key] == value for key, value in target.items())


def _set_images(node, img):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for c in value:
                    name, _, tag = c.get("image", "").partition(":")
                    if name == img["name"]:
                        c["image"] = f"{img.get('newName', name)}:{img.get('newTag', tag)}".rstrip(":")
            else:
                _set_images(value, img)
    elif isinstance(node, list):
        for v in node:
            _set_images(v, img)
