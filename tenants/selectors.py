"""Reads about tenants, already scoped to what the user may see and already prefetched."""

from dataclasses import dataclass

from django.db.models import QuerySet

from inventory import resource_classes

from .access import tenants_visible_to
from .models import Membership, Quota, Tenant


@dataclass(frozen=True)
class QuotaLine:
    resource: str
    label: str
    limit: int
    used: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit else 0


def tenant_members(*, tenant: Tenant) -> QuerySet[Membership]:
    return tenant.memberships.select_related("user").order_by("role", "user__username")


def tenant_quota_lines(*, tenant: Tenant) -> list[QuotaLine]:
    """Granted quota per resource class with what is in use (nothing runs yet: 0)."""
    quotas = Quota.objects.filter(tenant=tenant).order_by("resource")
    order = {key: i for i, key in enumerate(resource_classes.all_keys())}
    lines = [
        QuotaLine(
            resource=q.resource,
            label=q.resource_label,
            limit=q.limit,
            used=0,
        )
        for q in quotas
    ]
    return sorted(lines, key=lambda line: order.get(line.resource, len(order)))


def tenant_for_dashboard(*, user, slug: str | None) -> Tenant | None:
    """The tenant to show `user`: `slug` if visible, else their first tenant (or None)."""
    visible = tenants_visible_to(user)
    if slug:
        tenant = visible.filter(slug=slug).first()
        if tenant is not None:
            return tenant
    return (
        visible.filter(memberships__user=user).order_by("name").first()
        or visible.order_by("name").first()
    )


def tenants_of_member(*, user) -> QuerySet[Tenant]:
    return tenants_visible_to(user).filter(memberships__user=user).order_by("name")
