"""What draining nodes would interrupt: the tenants whose pods run there, and those pods, as
the last cluster sync saw them (the drain confirmations list them)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..models import Node
from ..tenancy import tenant_directory


@dataclass(frozen=True)
class PodOnNode:
    name: str
    gpus: int


@dataclass
class TenantOnNode:
    """A tenant a drain interrupts: its pods on the node (none when it only reserved it)."""

    slug: str
    name: str
    pods: list[PodOnNode] = field(default_factory=list)
    reserved: bool = False

    @property
    def summary(self) -> str:
        """One line for a confirmation page: the tenant, then its workloads' pods."""
        if not self.pods:
            return f"{self.name}: nothing running (the node is reserved for it)."
        pods = ", ".join(f"{pod.name} ({pod.gpus:,} GPU{'s' if pod.gpus != 1 else ''})"
                         if pod.gpus else pod.name for pod in self.pods)
        return f"{self.name}: {pods}."


@dataclass
class DrainImpact:
    """Per node: the tenants interrupted, and the pods of no tenant (system pods)."""

    node: Node
    tenants: list[TenantOnNode]
    other_pods: list[str]

    @property
    def tenant_names(self) -> list[str]:
        return [tenant.name for tenant in self.tenants]


def nodes_drain_impact(*, nodes: Iterable[Node]) -> list[DrainImpact]:
    """What draining each of `nodes` interrupts (one query for every node's tenants)."""
    nodes = list(nodes)
    namespaces = {p.get("namespace", "") for node in nodes for p in node.placed_pods or []}
    reserved = {node.reserved_for for node in nodes if node.reserved_for}
    tenants_seen = tenant_directory().tenant_names_for_namespaces(namespaces, slugs=reserved)
    owners = {namespace: owner for namespace, owner in tenants_seen.items()
              if namespace in namespaces}
    by_slug = dict(tenants_seen.values())
    impacts = []
    for node in nodes:
        tenants: dict[str, TenantOnNode] = {}
        other = []
        for pod in node.placed_pods or []:
            owner = owners.get(pod.get("namespace", ""))
            if owner is None:
                other.append(f"{pod.get('namespace', '')}/{pod.get('name', '')}")
                continue
            slug, name = owner
            tenant = tenants.setdefault(slug, TenantOnNode(slug, name))
            tenant.pods.append(PodOnNode(str(pod.get("name", "")), int(pod.get("gpus") or 0)))
        if node.reserved_for:
            tenant = tenants.setdefault(
                node.reserved_for,
                TenantOnNode(node.reserved_for, by_slug.get(node.reserved_for, node.reserved_for)),
            )
            tenant.reserved = True
        impacts.append(DrainImpact(node, sorted(tenants.values(), key=lambda t: t.name), other))
    return impacts

