"""Validate the manifests the portal builds: Kubernetes' own schemas and Kueue's CRDs.

Built-in kinds go through `kubernetes-validate` (strict: unknown fields fail) at one pinned
Kubernetes minor; Kueue custom resources through jsonschema's Draft 7 over the CRD's
openAPIV3Schema (copied into tests/data/kueue/). Neither evaluates CEL rules nor name formats:
`assert_kueue_rules` and `assert_names` check the ones that matter here, and
`quota_key_errors` the ResourceQuota keys (the OpenAPI schema types `spec.hard` as a map of
quantities; the API server's validation decides which keys may be in it).
"""

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from kubernetes.utils.quantity import parse_quantity

from tests.support.manifest_schemas import schema_errors as manifest_schema_errors

KUEUE_DIR = Path(__file__).resolve().parents[1] / "data" / "kueue"
KUEUE_GROUP = "kueue.x-k8s.io"
PLURALS = {
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors",
    "Cohort": "cohorts",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "Workload": "workloads",
}
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
# Kubernetes' helper.IsStandardQuotaResourceName (pkg/apis/core/helper), v1.35.
STANDARD_QUOTA_NAMES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
})
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@cache
def kueue_schema(kind: str, version: str = "v1beta2") -> dict[str, Any]:
    crd = yaml.safe_load((KUEUE_DIR / f"{KUEUE_GROUP}_{PLURALS[kind]}.yaml").read_text())
    assert crd["spec"]["names"]["kind"] == kind
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return served["schema"]["openAPIV3Schema"]


def schema_errors(manifest: dict[str, Any]) -> list[str]:
    """Every schema violation of `manifest` (empty when it validates)."""
    group, _, version = manifest["apiVersion"].rpartition("/")
    if group == KUEUE_GROUP:
        return manifest_schema_errors(manifest, kueue_schema(manifest["kind"], version))
    return manifest_schema_errors(manifest)


def quota_key_errors(hard: dict[str, str]) -> list[str]:
    """What the API server's ValidateResourceQuotaResourceName and ValidateResourceQuantityValue
    (pkg/apis/core/validation) refuse in `spec.hard`: a name that is no qualified name; one
    without a `/` that is no standard quota resource; a negative quantity; a fractional one for
    an extended resource (`requests.` or `limits.` of a `<domain>/<name>`, or `count/…`)."""
    errors = []
    for key, value in hard.items():
        prefix, slash, name = key.rpartition("/")
        if slash:
            if not (DNS1123_SUBDOMAIN.match(prefix) and len(prefix) <= 253):
                errors.append(f"{key}: prefix is not a DNS-1123 subdomain")
            if not (QUALIFIED_NAME.match(name) and len(name) <= 63):
                errors.append(f"{key}: name part is not a qualified name")
        elif key not in STANDARD_QUOTA_NAMES and not key.startswith(
            ("hugepages-", "requests.hugepages-")
        ):
            errors.append(f"{key}: not a standard quota resource")
        number = value
        for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E"):
            if number.endswith(suffix):
                number = number[: -len(suffix)]
                break
        if not re.fullmatch(r"\d+(\.\d+)?", number):
            errors.append(f"{key}: {value!r} is not a non-negative quantity")
        elif slash and "kubernetes.io/" not in key and "." in number:
            errors.append(f"{key}: an extended resource's quota must be a whole number")
    return errors


def assert_valid(manifests: list[dict[str, Any]]) -> None:
    problems = {
        f"{m['kind']}/{m['metadata']['name']}": errors
        for m in manifests
        if (errors := schema_errors(m))
    }
    problems |= {
        f"ResourceQuota/{m['metadata']['name']} keys": errors
        for m in manifests
        if m["kind"] == "ResourceQuota" and (errors := quota_key_errors(m["spec"]["hard"]))
    }
    assert not problems, problems
    assert_names(manifests)
    assert_kueue_rules(manifests)


def assert_names(manifests: list[dict[str, Any]]) -> None:
    for m in manifests:
        name = m["metadata"]["name"]
        pattern = DNS1123_LABEL if m["kind"] == "Namespace" else DNS1123_SUBDOMAIN
        assert pattern.match(name) and len(name) <= (63 if m["kind"] == "Namespace" else 253), name
        if "namespace" in m["metadata"]:
            assert DNS1123_LABEL.match(m["metadata"]["namespace"])


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False  # Kueue: a null namespaceSelector admits no namespace
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        value, present = labels.get(expr["key"]), expr["key"] in labels
        ok = {
            "In": present and value in expr.get("values", []),
            "NotIn": not present or value not in expr.get("values", []),
            "Exists": present,
            "DoesNotExist": not present,
        }[expr["operator"]]
        if not ok:
            return False
    return True


def assert_kueue_rules(manifests: list[dict[str, Any]]) -> None:
    """The CEL rules and cross-object references a real API server and Kueue would enforce."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for m in manifests:
        by_kind.setdefault(m["kind"], []).append(m)
    flavors = {f["metadata"]["name"]: f for f in by_kind.get("ResourceFlavor", [])}
    namespaces = {n["metadata"]["name"]: n for n in by_kind.get("Namespace", [])}
    queues = {q["metadata"]["name"]: q for q in by_kind.get("ClusterQueue", [])}
    for flavor in flavors.values():
        spec = flavor.get("spec") or {}
        assert len(spec.get("nodeLabels") or {}) <= 8
        for taint in spec.get("nodeTaints") or []:
            assert taint["effect"] in {"NoSchedule", "PreferNoSchedule", "NoExecute"}
        for toleration in spec.get("tolerations") or []:
            assert toleration.get("operator", "Equal") in {"Equal", "Exists"}
            if "key" not in toleration:
                assert toleration["operator"] == "Exists"
    for queue in queues.values():
        spec = queue["spec"]
        seen_resources: set[str] = set()
        seen_flavors: set[str] = set()
        for group in spec.get("resourceGroups") or []:
            covered = group["coveredResources"]
            assert not seen_resources & set(covered), "a resource in two resource groups"
            seen_resources |= set(covered)
            for flavor in group["flavors"]:
                # CEL: every flavor lists exactly the covered resources (Kueue: in that order).
                assert [r["name"] for r in flavor["resources"]] == covered, flavor
                assert flavor["name"] not in seen_flavors, "a flavor in two resource groups"
                seen_flavors.add(flavor["name"])
                assert flavor["name"] in flavors, f"ClusterQueue names missing {flavor['name']}"
                for cell in flavor["resources"]:
                    if "lendingLimit" in cell:  # Kueue's webhook (ValidateClusterQueue)
                        assert parse_quantity(cell["lendingLimit"]) <= parse_quantity(
                            cell["nominalQuota"]), "lendingLimit beyond nominalQuota"
                    if not spec.get("cohortName"):
                        # CEL: borrowingLimit must be nil when cohort is empty (lending too).
                        assert "borrowingLimit" not in cell and "lendingLimit" not in cell
        admitted = [
            name
            for name, ns in namespaces.items()
            if _selects(spec.get("namespaceSelector"), ns["metadata"].get("labels") or {})
        ]
        assert admitted, "the ClusterQueue admits none of the tenant's namespaces"
        if spec.get("cohortName"):
            assert any(c["metadata"]["name"] == spec["cohortName"] for c in by_kind["Cohort"])
    for local in by_kind.get("LocalQueue", []):
        target = local["spec"]["clusterQueue"]
        assert target in queues, f"LocalQueue points at a missing ClusterQueue {target}"
        assert _selects(
            queues[target]["spec"].get("namespaceSelector"),
            namespaces[local["metadata"]["namespace"]]["metadata"]["labels"],
        ), "the LocalQueue's namespace is not admitted by its ClusterQueue"
