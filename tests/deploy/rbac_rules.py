"""Kubernetes RBAC, as the API server evaluates it, for the RBAC test: a request's attributes
from its method and path (the API server's RequestInfo), and whether a role's rules allow them.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.kube_emulator import SeenCall

ROOT = Path(__file__).resolve().parents[2]
RBAC_DIR = ROOT / "deploy" / "base" / "rbac"
# Non-resource paths every authenticated user may GET (the `system:discovery` and
# `system:public-info-viewer` ClusterRoles the API server bootstraps): discovery needs no rule.
NAMESPACE_SUBRESOURCES = {"status", "finalize"}


@dataclass(frozen=True)
class Attributes:
    """What the authorizer is asked: verb on group/resource[/subresource], in a namespace."""

    verb: str
    group: str
    resource: str  # "pods/eviction" for a subresource
    namespace: str
    name: str

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.group, self.resource, self.verb)


def render() -> list[dict[str, Any]]:
    """deploy/base/rbac as kustomize renders it."""
    out = subprocess.run(["kubectl", "kustomize", str(RBAC_DIR)], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def is_discovery(path: str) -> bool:
    """Whether a path is a discovery document (/api, /api/v1, /apis, /apis/g[/v], /version)."""
    parts = path.strip("/").split("/")
    return (parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3) or (
        parts == ["version"]
    )


def attributes(call: SeenCall) -> list[Attributes]:
    """The authorization checks one request makes, as the API server's RequestInfoFactory and
    handlers derive them: server-side apply is `patch`, and also `create` when it created."""
    parts = call.path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    method = call.method.upper()
    if method == "GET":
        verb = "get" if name else ("watch" if call.params.get("watch") in {"true", "1"}
                                   else "list")
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        raise AssertionError(f"unexpected method {method} {call.path}")
    checks = [Attributes(verb, group, resource, namespace, name)]
    if method == "PATCH" and call.created:
        checks.append(Attributes("create", group, resource, namespace, name))
    if resource == "rolebindings" and method in {"POST", "PUT", "PATCH"}:
        # Binding a role needs `bind` on it (or holding every right it grants).
        ref = (call.data or {}).get("roleRef") or {}
        kind = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
        checks.append(Attributes("bind", "rbac.authorization.k8s.io", kind, namespace,
                                 ref.get("name", "")))
    return checks


def allows(rules: list[dict[str, Any]], check: Attributes) -> bool:
    """Whether any rule grants `check` (RBAC's rule matching, wildcards included)."""
    for rule in rules:
        groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
        verbs, names = rule.get("verbs") or [], rule.get("resourceNames") or []
        if not ({check.group, "*"} & set(groups)):
            continue
        if not ({check.resource, "*"} & set(resources)):
            continue
        if not ({check.verb, "*"} & set(verbs)):
            continue
        if names and check.name not in names:
            continue
        return True
    return False


def granted_triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }


# Tests of the gateway's own generic behaviour (any kind, any namespace), not the portal's
# operations: their calls are not what the portal's RBAC is for.
GENERIC_GATEWAY_TESTS = (
    "tests/portal/test_fleet_kubernetes.py",
    "tests/inventory/test_paged_reads.py",
)


def refused_in_logs(directory: Path) -> list[str]:
    """Every logged call of the suite (KUBE_CALL_LOG_DIR) the rendered roles do not grant; in
    a `tenant-*` namespace the Secrets role counts too (each tenant's namespace binds it)."""
    roles = {doc["metadata"]["name"]: doc.get("rules") or [] for doc in render()
             if doc["kind"] == "ClusterRole"}
    portal_rules = roles.pop("ai-factory-portal")
    secrets_rules = [rule for rules in roles.values() for rule in rules]
    refused = set()
    for log in sorted(directory.glob("*.jsonl")):
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            if entry["test"].startswith(GENERIC_GATEWAY_TESTS) or is_discovery(entry["path"]):
                continue
            call = SeenCall(method=entry["method"], path=entry["path"], params=entry["params"],
                            created=entry["created"], data=entry["data"])
            for check in attributes(call):
                tenant = check.namespace.startswith("tenant-")
                if not (allows(portal_rules, check)
                        or (tenant and allows(secrets_rules, check))):
                    refused.add(f"{check.verb} {check.group}/{check.resource} in "
                                f"{check.namespace or 'the cluster'} ({entry['test']})")
    return sorted(refused)
