"""Reads about tenants and their members, already scoped to what the user may see."""

from __future__ import annotations

from django.db.models import Case, QuerySet, Value, When

from .models import Membership, Tenant
from .rules import tenants_visible_to


def tenant_members(*, tenant: Tenant) -> QuerySet[Membership]:
    return tenant.memberships.select_related("user").order_by("role", "user__username")


def tenant_for_dashboard(*, user, slug: str | None) -> Tenant | None:
    """The tenant to show `user`: `slug` if visible, else their first tenant (or None)."""
    visible = tenants_visible_to(user)
    if slug:
        tenant = visible.filter(slug=slug).first()
        if tenant is not None:
            return tenant
    # Where the user works (owner, then member) comes before tenants they only watch.
    rank = Case(
        When(role=Membership.Role.OWNER, then=Value(0)),
        When(role=Membership.Role.MEMBER, then=Value(1)),
        default=Value(2),
    )
    membership = (
        Membership.objects.filter(user=user, tenant__in=visible)
        .select_related("tenant")
        .order_by(rank, "tenant__name")
        .first()
    )
    return membership.tenant if membership else visible.order_by("name").first()


def tenants_for_list(*, user) -> QuerySet[Tenant]:
    """Every tenant `user` may open (all of them for finance and platform admins), by name."""
    # The budget is billing's (a reverse one-to-one, named by its accessor: no import).
    return tenants_visible_to(user).select_related("billing_account").order_by("name")


def tenants_of_member(*, user) -> QuerySet[Tenant]:
    return tenants_visible_to(user).filter(memberships__user=user).order_by("name")
