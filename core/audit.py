"""The one call every decision makes to leave an audit event."""

from typing import Any

from django.db import models

from .models import AuditEvent
from .request_context import current_request_id, note_tenant


def audit(
    *,
    actor: Any | None,
    action: str,
    obj: models.Model | None = None,
    tenant: Any | None = None,
    changes: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record `actor` doing `action` to `obj` (within `tenant`, by slug) with `changes`."""
    is_user = actor is not None and getattr(actor, "is_authenticated", False)
    tenant_slug = getattr(tenant, "slug", tenant) or ""
    note_tenant(str(tenant_slug))
    return AuditEvent.objects.create(
        actor=actor if is_user else None,
        actor_repr=actor.get_username() if is_user else "system",
        action=action,
        object_type=obj._meta.label_lower if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        object_repr=str(obj)[:200] if obj is not None else "",
        tenant_slug=str(tenant_slug),
        changes=changes or {},
        request_id=current_request_id.get(),
    )
