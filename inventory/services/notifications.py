"""Tell tenants that a node their workloads ran on was taken out of service.

The inventory knows tenants by slug only, and asks the tenant directory (inventory.tenancy). The
tenants affected by a node are: the tenant it is reserved for, and the tenants whose namespaces
had pods on it (seen by the last sync, or by the drain that evicted them).
"""

from collections.abc import Iterable

from django.db import transaction

from core.audit import audit
from core.outbox import email_enqueue

from ..models import HealthEvent, Node, NodeState
from ..tenancy import tenant_directory


def node_affected_tenants(*, node: Node, namespaces: Iterable[str] = ()) -> list[str]:
    seen = {p.get("namespace", "") for p in node.placed_pods or []} | set(namespaces)
    slugs = tenant_directory().tenant_slugs_for_namespaces(seen)
    if node.reserved_for:
        slugs.add(node.reserved_for)
    return sorted(slugs)


def _message(node: Node, event: HealthEvent | None) -> tuple[str, str]:
    drained = node.state in (NodeState.MAINTENANCE, NodeState.DRAINING)
    what = "drained and moved to maintenance" if drained else "cordoned"
    subject = f"[AI Factory] Node {node.hostname} was {what}"
    lines = [
        f"Node {node.hostname} (Kubernetes node {node.k8s_name}) was {what}.",
        "",
    ]
    if event is not None:
        lines.append(f"Cause: {event.get_kind_display()} ({event.severity}) on {event.subject}.")
        if event.detail:
            lines.append(event.detail)
        lines.append("")
    if drained:
        lines.append(
            "Workloads that ran there were evicted, honouring their PodDisruptionBudgets; "
            "controllers reschedule them on healthy nodes."
        )
    else:
        lines.append("Running workloads keep running; no new work is placed on the node.")
    return subject, "\n".join(lines)


@transaction.atomic
def node_tenants_notify(
    *, node_id: int, health_event_id: int | None, namespaces: Iterable[str] = ()
) -> list[str]:
    """Mail the owners of each affected tenant once per health event (kept in the outbox with
    the event's record, sent after commit); returns the tenants told."""
    node = Node.objects.get(pk=node_id)
    event = (
        HealthEvent.objects.select_for_update().filter(pk=health_event_id).first()
        if health_event_id
        else None
    )
    already = set(event.notified_tenants) if event is not None else set()
    affected = node_affected_tenants(node=node, namespaces=namespaces)
    to_tell = [t for t in affected if t not in already]
    if not to_tell:
        return []
    owners = tenant_directory().tenant_owner_emails(to_tell)
    subject, body = _message(node, event)
    for _slug, emails in sorted(owners.items()):
        email_enqueue(to=emails, subject=subject, body=body, topic="node.tenants_notify")
    if event is not None:
        event.notified_tenants = sorted(already | set(to_tell))
        event.save(update_fields=["notified_tenants"])
    audit(actor=None, action="node.tenants_notify", obj=node,
          changes={"tenants": to_tell, "emailed": sorted(owners), "event": health_event_id})
    return to_tell
