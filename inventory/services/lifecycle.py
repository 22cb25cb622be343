"""Lifecycle moves of a node: one conditional UPDATE each, audited with actor and reason.

The allowed moves are `models.TRANSITIONS`; the guards that depend on recorded facts live here
(a node becomes available only after passing burn-in and NCCL tests; it retires only with its
disks wiped and its BMC reset). The cluster side of a move (cordon, uncordon, drain) is queued
after commit and carried out by `services.cluster`.
"""

from typing import Any

from django.db import transaction
from django.utils import timezone

from core.audit import audit
from core.errors import InvalidTransition, RuleViolation
from core.state_machine import transition

from .. import queueing
from ..errors import ReasonRequired
from ..models import (
    GPU,
    TRANSITIONS,
    HealthEvent,
    Node,
    NodeState,
    NodeValidation,
)
from ..models.node import UNSCHEDULABLE_IN_STATE
from . import notifications

REQUIRED_VALIDATIONS = (NodeValidation.Kind.BURN_IN, NodeValidation.Kind.NCCL)


def _locked(node_id: int) -> Node:
    return Node.objects.select_for_update().get(pk=node_id)


def _guard(node: Node, target: str) -> str:
    """Why `node` may not make this allowed move yet ("" when it may)."""
    if target == NodeState.RETIRED:
        records = (("disks wiped", node.disks_wiped_at), ("BMC reset", node.bmc_reset_at))
        missing = [label for label, done in records if done is None]
        if missing:
            return f"record {' and '.join(missing)} first"
    if node.state == NodeState.VALIDATING and target == NodeState.AVAILABLE:
        for kind in REQUIRED_VALIDATIONS:
            latest = (
                node.validations.filter(kind=kind, recorded_at__gte=node.state_changed_at)
                .order_by("-recorded_at", "-id")
                .first()
            )
            if latest is None:
                return f"no {NodeValidation.Kind(kind).label} result recorded yet"
            if not latest.passed:
                return f"the last {NodeValidation.Kind(kind).label} result failed"
    return ""


def _move(
    node: Node, *, target: str, actor: Any | None, reason: str, action: str = "node.transition"
) -> Node:
    """Move a locked `node` to `target`, or raise InvalidTransition; audit and queue its effect."""
    if not reason or not reason.strip():
        raise ReasonRequired()
    source = node.state
    if target not in TRANSITIONS[NodeState(source)]:
        raise InvalidTransition(node, source, target)
    why = _guard(node, target)
    if why:
        raise InvalidTransition(node, source, target, why=why)
    # Of two concurrent moves, the second finds no row in `source`: InvalidTransition(raced).
    transition(
        node, target=target, transitions=TRANSITIONS, field="state",
        state_changed_at=timezone.now(), drain_note="",
    )
    audit(
        actor=actor,
        action=action,
        obj=node,
        changes={"from": source, "to": target, "reason": reason.strip()},
    )
    if UNSCHEDULABLE_IN_STATE[target] is not None and (
        UNSCHEDULABLE_IN_STATE[target] != UNSCHEDULABLE_IN_STATE[source]
    ):
        queueing.enqueue_on_commit(queueing.SCHEDULABILITY, node.pk, cluster=node.cluster_id)
    return node


@transaction.atomic
def node_transition(*, node_id: int, target: str, actor: Any | None, reason: str) -> Node:
    """Move a node to `target` if the lifecycle allows this one move (no shortcuts: draining an
    available node is `node_drain`, which cordons first)."""
    node = _locked(node_id)
    if target == NodeState.DRAINING and node.state == NodeState.CORDONED:
        return _drain(node, actor=actor, reason=reason)
    if target == NodeState.AVAILABLE and node.state == NodeState.MAINTENANCE:
        return _return_to_service(node, actor=actor, reason=reason)
    return _move(node, target=target, actor=actor, reason=reason)


@transaction.atomic
def node_cordon(*, node_id: int, actor: Any | None, reason: str) -> Node:
    """Stop new work landing on an available node (Kubernetes: spec.unschedulable)."""
    return _move(_locked(node_id), target=NodeState.CORDONED, actor=actor, reason=reason)


@transaction.atomic
def node_uncordon(*, node_id: int, actor: Any | None, reason: str) -> Node:
    """Let work land on a cordoned node again."""
    node = _locked(node_id)
    if node.state != NodeState.CORDONED:
        raise InvalidTransition(node, node.state, NodeState.AVAILABLE,
                                why="only a cordoned node is uncordoned")
    return _move(node, target=NodeState.AVAILABLE, actor=actor, reason=reason)


def _drain(
    node: Node, *, actor: Any | None, reason: str, health_event_id: int | None = None
) -> Node:
    if node.state == NodeState.AVAILABLE:
        _move(node, target=NodeState.CORDONED, actor=actor, reason=reason)
    _move(node, target=NodeState.DRAINING, actor=actor, reason=reason)
    queueing.enqueue_on_commit(queueing.DRAIN, node.pk, health_event_id, cluster=node.cluster_id)
    return node


@transaction.atomic
def node_drain(
    *, node_id: int, actor: Any | None, reason: str, health_event_id: int | None = None
) -> Node:
    """Cordon (if needed) and start evicting the node's pods; it ends in maintenance."""
    return _drain(_locked(node_id), actor=actor, reason=reason, health_event_id=health_event_id)


@transaction.atomic
def node_drain_complete(
    *, node_id: int, health_event_id: int | None, namespaces: list[str]
) -> Node:
    """Every pod has been evicted: the node goes to maintenance and its tenants are told."""
    node = _locked(node_id)
    _move(
        node,
        target=NodeState.MAINTENANCE,
        actor=None,
        reason="drain finished: every pod on the node was evicted",
    )
    notifications.node_tenants_notify(
        node_id=node.pk, health_event_id=health_event_id, namespaces=sorted(namespaces)
    )
    return node


def _return_to_service(node: Node, *, actor: Any | None, reason: str) -> Node:
    _move(node, target=NodeState.AVAILABLE, actor=actor, reason=reason)
    now = timezone.now()
    open_events = HealthEvent.objects.filter(node=node, resolved_at__isnull=True)
    resolved = open_events.update(resolved_at=now, resolved_by=actor if actor else None,
                                  resolution=f"returned to service: {reason.strip()}"[:300])
    GPU.objects.filter(node=node).exclude(health=GPU.Health.HEALTHY).update(
        health=GPU.Health.HEALTHY
    )
    if resolved:
        audit(actor=actor, action="node.health_events_resolve", obj=node,
              changes={"resolved": resolved, "reason": reason.strip()})
    return node


@transaction.atomic
def node_return_to_service(*, node_id: int, actor: Any | None, reason: str) -> Node:
    """A repaired (maintenance) or cordoned node takes work again; its open faults are closed."""
    node = _locked(node_id)
    if node.state not in (NodeState.MAINTENANCE, NodeState.CORDONED):
        raise InvalidTransition(node, node.state, NodeState.AVAILABLE,
                                why="only a node in maintenance or cordoned returns to service")
    return _return_to_service(node, actor=actor, reason=reason)


@transaction.atomic
def node_validation_record(
    *,
    node_id: int,
    actor: Any | None,
    kind: str,
    passed: bool,
    summary: str = "",
    metrics: dict | None = None,
) -> NodeValidation:
    """Record a burn-in or NCCL result for a validating node."""
    node = _locked(node_id)
    if node.state != NodeState.VALIDATING:
        raise RuleViolation(f"{node} is {node.state}: test results are recorded while validating.")
    result = NodeValidation.objects.create(
        node=node,
        kind=NodeValidation.Kind(kind),
        passed=passed,
        summary=summary[:500],
        metrics=metrics or {},
        recorded_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    audit(actor=actor, action="node.validation_record", obj=node,
          changes={"kind": kind, "passed": passed, "summary": summary[:200]})
    return result


@transaction.atomic
def node_retirement_record(
    *, node_id: int, actor: Any | None, disks_wiped: bool, bmc_reset: bool, note: str = ""
) -> Node:
    """Record that a node's disks were wiped and/or its BMC reset (needed before retiring)."""
    node = _locked(node_id)
    if node.state == NodeState.RETIRED:
        raise RuleViolation(f"{node} is already retired.")
    now, changed = timezone.now(), {}
    if disks_wiped and node.disks_wiped_at is None:
        node.disks_wiped_at = changed["disks_wiped_at"] = now
    if bmc_reset and node.bmc_reset_at is None:
        node.bmc_reset_at = changed["bmc_reset_at"] = now
    if changed:
        node.save(update_fields=list(changed))
        audit(actor=actor, action="node.retirement_record", obj=node,
              changes={**{k: v.isoformat() for k, v in changed.items()}, "note": note[:200]})
    return node
