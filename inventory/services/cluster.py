"""The cluster side of lifecycle moves, through the fleet gateway: cordon state and drains.

Level-triggered: each function reads the node's state now and brings the cluster to it, so it
is safe to run twice, late, or after a crash. Gateway calls happen outside any transaction;
the state change they lead to is a service call of its own.
"""

import logging

from django.utils import timezone

from core.errors import InvalidTransition
from core.fleet import FleetGateway, PermanentFleetError, TransientFleetError, get_gateway

from ..models import HealthEvent, Node, NodeState
from ..models.node import UNSCHEDULABLE_IN_STATE
from ..node_labels import parse_node, reservation_patch
from ..pods import PodPlacement, placements_by_node
from . import lifecycle

logger = logging.getLogger(__name__)


def node_pods(*, gateway: FleetGateway, k8s_name: str) -> list[PodPlacement]:
    pods = gateway.list_pods_on_node(node=k8s_name)
    return placements_by_node(pods).get(k8s_name, [])


def node_schedulability_reconcile(*, node_id: int) -> bool | None:
    """Cordon or uncordon the Kubernetes node as its inventory state says; None: left alone."""
    node = Node.objects.filter(pk=node_id).first()
    if node is None:
        return None
    desired = UNSCHEDULABLE_IN_STATE[NodeState(node.state)]
    if desired is None:
        return None
    try:
        get_gateway(node.cluster_id).patch_node(
            name=node.k8s_name, patch={"spec": {"unschedulable": desired}}
        )
    except PermanentFleetError as exc:
        if exc.status != 404:
            raise
        logger.warning("Node %s is not in the cluster; cordon state not applied", node.k8s_name)
        return None
    Node.objects.filter(pk=node_id).update(k8s_unschedulable=desired)
    return desired


def node_reservation_reconcile(*, node_id: int) -> bool | None:
    """Label and taint the Kubernetes node for the dedicated tenant it is reserved for (or
    clear both). True when it patched, False when the node already agreed, None: not in the
    cluster."""
    node = Node.objects.filter(pk=node_id).first()
    if node is None:
        return None
    gateway = get_gateway(node.cluster_id)
    obj = gateway.get(api_version="v1", kind="Node", name=node.k8s_name)
    if obj is None:
        logger.warning("Node %s is not in the cluster; reservation not applied", node.k8s_name)
        return None
    observed = parse_node(obj)
    patch = reservation_patch(
        reserved_for=node.reserved_for, observed_label=observed.reserved_for,
        taints=observed.taints,
    )
    if patch is None:
        return False
    gateway.patch_node(name=node.k8s_name, patch=patch)
    return True


def _drain_event_id(node: Node) -> int | None:
    """The open health event a drain answers (a drain re-queued by the sync lost its id)."""
    event = (
        HealthEvent.objects.filter(
            node=node, remediation=HealthEvent.Remediation.DRAIN, resolved_at__isnull=True
        )
        .order_by("-opened_at", "-id")
        .first()
    )
    return event.pk if event else None


def node_drain_execute(*, node_id: int, health_event_id: int | None = None) -> list[str] | None:
    """Cordon, evict every evictable pod, wait until they are gone, then move the node to
    maintenance. A PodDisruptionBudget refusing an eviction (429), or pods still terminating,
    leave the node draining with a note saying why, and raise TransientFleetError: the task
    retries later. Returns the namespaces evicted from, or None when the node is no longer
    draining (finished, or abandoned by an admin)."""
    node = Node.objects.filter(pk=node_id).first()
    if node is None or node.state != NodeState.DRAINING:
        return None
    gateway = get_gateway(node.cluster_id)
    try:
        gateway.patch_node(name=node.k8s_name, patch={"spec": {"unschedulable": True}})
    except PermanentFleetError as exc:
        if exc.status != 404:
            raise
        logger.warning("Node %s is not in the cluster: nothing to evict", node.k8s_name)
    else:
        Node.objects.filter(pk=node_id).update(k8s_unschedulable=True)
    pods = node_pods(gateway=gateway, k8s_name=node.k8s_name)
    refused: TransientFleetError | None = None
    for pod in pods:
        if pod.evictable:
            try:
                gateway.evict_pod(name=pod.name, namespace=pod.namespace)
            except TransientFleetError as exc:
                refused = refused or exc  # evict the others now; this one on the next try
    evicting = [pod for pod in pods if pod.evictable]
    left = (
        [p for p in node_pods(gateway=gateway, k8s_name=node.k8s_name) if p.evictable]
        if evicting
        else []
    )
    if left:
        names = ", ".join(f"{p.namespace}/{p.name}" for p in left[:3])
        names += f" and {len(left) - 3} more" if len(left) > 3 else ""
        why = f"refused ({refused.message})" if refused else "still terminating"
        note = f"{len(left)} pod{'s' if len(left) != 1 else ''} left: {names} {why}"
        Node.objects.filter(pk=node_id, state=NodeState.DRAINING).update(drain_note=note[:300])
        raise refused or TransientFleetError(note)
    # Tell the tenants whose pods the last sync saw there, and those evicted now.
    namespaces = sorted(
        ({pod.namespace for pod in evicting} | {p.get("namespace", "") for p in node.placed_pods})
        - {""}
    )
    Node.objects.filter(pk=node_id).update(
        placed_pods=[p.as_record() for p in pods if not p.evictable],
        gpus_in_use=sum(p.gpus for p in pods if not p.evictable),
        mig_in_use={},
        k8s_last_seen_at=timezone.now(),
    )
    try:
        lifecycle.node_drain_complete(
            node_id=node_id, health_event_id=health_event_id or _drain_event_id(node),
            namespaces=namespaces,
        )
    except InvalidTransition:  # another run of this drain finished it first
        return None
    return namespaces
