"""Writes about tenants: each in one transaction, each leaving an audit event."""

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from inventory import resource_classes
from portal.audit import audit

from .access import forget_access
from .models import Membership, Quota, RoleAssignment, Source, Tenant

User = get_user_model()


@transaction.atomic
def tenant_create(
    *,
    actor: Any | None,
    slug: str,
    name: str,
    isolation: str = Tenant.Isolation.SHARED,
    cost_center: str = "",
    monthly_budget=None,
) -> Tenant:
    tenant = Tenant(slug=slug, name=name, isolation=isolation, cost_center=cost_center)
    if monthly_budget is not None:
        tenant.monthly_budget = monthly_budget
    tenant.full_clean()
    tenant.save()
    audit(
        actor=actor,
        action="tenant.create",
        obj=tenant,
        tenant=tenant,
        changes={"slug": slug, "name": name, "isolation": isolation},
    )
    return tenant


@transaction.atomic
def membership_set(
    *, actor: Any | None, tenant: Tenant, user, role: str, source: str = Source.LOCAL
) -> Membership:
    """Give `user` `role` in `tenant` (creating or changing the membership)."""
    membership, created = Membership.objects.select_for_update().get_or_create(
        tenant=tenant, user=user, defaults={"role": role, "source": source}
    )
    before = None if created else membership.role
    if not created and (membership.role != role or membership.source != source):
        membership.role, membership.source = role, source
        membership.save(update_fields=["role", "source"])
    if created or before != role:
        audit(
            actor=actor,
            action="membership.set",
            obj=membership,
            tenant=tenant,
            changes={"user": user.get_username(), "role": [before, role], "source": source},
        )
    forget_access(user)
    return membership


@transaction.atomic
def membership_remove(*, actor: Any | None, membership: Membership) -> None:
    audit(
        actor=actor,
        action="membership.remove",
        obj=membership,
        tenant=membership.tenant,
        changes={"user": membership.user.get_username(), "role": membership.role},
    )
    membership.delete()
    forget_access(membership.user)


@transaction.atomic
def role_grant(*, actor: Any | None, user, role: str, source: str = Source.LOCAL) -> RoleAssignment:
    assignment, created = RoleAssignment.objects.get_or_create(
        user=user, role=role, defaults={"source": source}
    )
    if created:
        audit(
            actor=actor,
            action="role.grant",
            obj=assignment,
            changes={"user": user.get_username(), "role": role, "source": source},
        )
    forget_access(user)
    return assignment


@transaction.atomic
def role_revoke(*, actor: Any | None, assignment: RoleAssignment) -> None:
    audit(
        actor=actor,
        action="role.revoke",
        obj=assignment,
        changes={"user": assignment.user.get_username(), "role": assignment.role},
    )
    assignment.delete()
    forget_access(assignment.user)


@transaction.atomic
def quota_set(*, actor: Any | None, tenant: Tenant, resource: str, limit: int) -> Quota:
    """Set the granted amount of `resource` for `tenant` (the resource class must exist)."""
    resource_classes.parse(resource)
    quota = Quota.objects.select_for_update().filter(tenant=tenant, resource=resource).first()
    before = quota.limit if quota else 0
    if quota is None:
        quota = Quota(tenant=tenant, resource=resource, limit=limit)
    quota.limit, quota.updated_at = limit, timezone.now()
    quota.full_clean()
    quota.save()
    if before != limit:
        audit(
            actor=actor,
            action="quota.set",
            obj=quota,
            tenant=tenant,
            changes={"resource": resource, "limit": [before, limit]},
        )
    return quota
