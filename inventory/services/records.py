"""The inventory's own records as platform admins edit them (Django admin): sites, racks and
nodes' details. Each save is one transaction with an audit event naming what changed; a node
whose reservation changed has its label and taint put right on the cluster at once (after
commit), not at the next cluster sync.

Lifecycle state never changes here: it moves only through `lifecycle`.
"""

from typing import Any

from django.db import models, transaction

from core.audit import audit

from .. import queueing
from ..models import Node, Rack, Site


def _diff(before: models.Model | None, after: models.Model, fields: list[str]) -> dict:
    return {
        name: [None if before is None else str(getattr(before, name)), str(getattr(after, name))]
        for name in fields
        if before is None or getattr(before, name) != getattr(after, name)
    }


@transaction.atomic
def record_save(*, actor: Any | None, obj: Site | Rack, changed: list[str]) -> Site | Rack:
    """Save a site or rack filled in by an admin form (already validated)."""
    before = type(obj).objects.filter(pk=obj.pk).first() if obj.pk else None
    obj.full_clean()
    obj.save()
    label = obj._meta.model_name
    audit(
        actor=actor,
        action=f"{label}.{'update' if before else 'create'}",
        obj=obj,
        changes=_diff(before, obj, changed),
    )
    return obj


@transaction.atomic
def record_delete(*, actor: Any | None, obj: Site | Rack) -> None:
    """Delete an empty site or rack (the database refuses one that still holds racks or nodes)."""
    audit(actor=actor, action=f"{obj._meta.model_name}.delete", obj=obj,
          changes={"name": str(obj)})
    obj.delete()


@transaction.atomic
def node_details_save(*, actor: Any | None, node: Node, changed: list[str]) -> Node:
    """Save a node's details (not its lifecycle state) filled in by an admin form."""
    before = Node.objects.select_for_update().filter(pk=node.pk).first() if node.pk else None
    if before is not None:
        node.state = before.state  # the lifecycle services own it
    node.full_clean()
    node.save()
    audit(
        actor=actor,
        action="node.update" if before else "node.create",
        obj=node,
        changes=_diff(before, node, changed),
    )
    if before is not None and before.reserved_for != node.reserved_for:
        queueing.enqueue_on_commit(queueing.RESERVATION, node.pk, cluster=node.cluster_id)
    return node
