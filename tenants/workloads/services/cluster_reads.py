"""Reading workloads' objects back from the cluster: by their owner labels, one list per kind
for many workloads at once (`owned_objects`), and the objects a chart or operator makes
without those labels, by name (`unowned_objects`, `unowned_in_bulk`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from core.fleet import FleetGateway

from ..kinds.base import (
    LABEL_MANAGED_BY,
    LABEL_WORKLOAD_ID,
    MANAGED_BY,
    BuildContext,
    Manifest,
    ObjectKey,
)
from ..models import Workload
from ..selectors import build_context


def object_key(obj: Manifest) -> ObjectKey:
    return (obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


MAX_SELECTED_IDS = 100
# Read only inside tenants' namespaces (no cluster-wide Secrets in the portal's RBAC).
NAMESPACE_READ_KINDS = frozenset({("v1", "Secret")})


def _selector(workload_ids: Iterable[int]) -> str:
    ids = sorted(set(workload_ids))
    if len(ids) > MAX_SELECTED_IDS:
        return f"{LABEL_MANAGED_BY}={MANAGED_BY}"
    return f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_WORKLOAD_ID} in ({','.join(map(str, ids))})"


def owned_objects(gateway: FleetGateway, workloads: list[Workload]) -> dict[int, dict]:
    """Every object carrying the owner labels of these workloads, by workload id: one list per
    kind any of them owns (in their namespace when they share one, else cluster-wide)."""
    found: dict[int, dict[ObjectKey, Manifest]] = defaultdict(dict)
    if not workloads:
        return found
    kinds = {k for w in workloads for k in w.kind_entry.module.OWNED_KINDS}
    namespaces = {w.tenant.namespace for w in workloads}
    namespace = namespaces.pop() if len(namespaces) == 1 else None
    selector = _selector(w.pk for w in workloads)
    lists = [(*k, ns) for k in sorted(kinds) for ns in (
        sorted({w.tenant.namespace for w in workloads if k in w.kind_entry.module.OWNED_KINDS})
        if namespace is None and k in NAMESPACE_READ_KINDS else [namespace])]
    for api_version, kind, scope in lists:
        for obj in gateway.list(api_version=api_version, kind=kind, namespace=scope,
                                label_selector=selector):
            labels = (obj.get("metadata") or {}).get("labels") or {}
            try:
                found[int(labels.get(LABEL_WORKLOAD_ID, ""))][object_key(obj)] = obj
            except ValueError:
                continue
    return found


def _unowned_names(workload: Workload, ctx: BuildContext) -> tuple[ObjectKey, ...]:
    names = getattr(workload.kind_entry.module, "unowned_objects", None)
    return tuple(names(workload.spec, ctx)) if names else ()


def unowned_objects(workload: Workload, ctx: BuildContext, gateway: FleetGateway) -> dict:
    """Objects a chart or operator makes without the owner labels that the kind reads by name."""
    found = {}
    for api_version, kind, name in _unowned_names(workload, ctx):
        obj = gateway.get(api_version=api_version, kind=kind, name=name, namespace=ctx.namespace)
        if obj is not None:
            found[(api_version, kind, name)] = obj
    return found


def unowned_in_bulk(gateway: FleetGateway, workloads: list[Workload]) -> dict[int, dict]:
    """`unowned_objects` of many workloads at once: one list per kind and namespace where several
    objects of that kind are wanted there (a get where only one is), not a get per object."""
    wanted: dict[tuple[str, str, str], list[tuple[int, str]]] = defaultdict(list)
    for workload in workloads:
        ctx = build_context(workload=workload)
        for api_version, kind, name in _unowned_names(workload, ctx):
            wanted[(api_version, kind, ctx.namespace)].append((workload.pk, name))
    found: dict[int, dict[ObjectKey, Manifest]] = defaultdict(dict)
    for (api_version, kind, namespace), names in wanted.items():
        if len(names) == 1:
            obj = gateway.get(api_version=api_version, kind=kind, name=names[0][1],
                              namespace=namespace)
            stored = {names[0][1]: obj} if obj is not None else {}
        else:
            stored = {obj["metadata"]["name"]: obj for obj in gateway.list(
                api_version=api_version, kind=kind, namespace=namespace)}
        for workload_id, name in names:
            if name in stored:
                found[workload_id][(api_version, kind, name)] = stored[name]
    return found
