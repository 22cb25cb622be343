"""Reads about tenants and their members, already scoped to what the user may see."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Case, Q, QuerySet, Value, When

from .models import Membership, Tenant
from .rules import MemberTenant, access_for, tenants_visible_to


def tenant_members(*, tenant: Tenant) -> QuerySet[Membership]:
    return tenant.memberships.select_related("user").order_by("role", "user__username")


def tenant_members_summary(*, tenant: Tenant) -> list[Membership]:
    """`tenant_members(tenant)` with what the dashboard's card shows of each (role, source,
    and the user's username, names and e-mail; not the password hash nor the dates). One
    query."""
    User = get_user_model()
    rows = tenant.memberships.order_by("role", "user__username").values_list(
        "id", "user_id", "role", "source", "user__username", "user__first_name",
        "user__last_name", "user__email",
    )
    return [
        Membership(
            id=pk, tenant_id=tenant.pk, user_id=user_id, role=role, source=source,
            user=User(id=user_id, username=username, first_name=first_name,
                      last_name=last_name, email=email),
        )
        for pk, user_id, role, source, username, first_name, last_name, email in rows
    ]


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


def tenants_for_list(*, user, search: str = "", status: str = "") -> QuerySet:
    """Every tenant `user` may open (all of them for finance and platform admins), by name,
    as rows of what the list shows; `search` finds a tenant by its name, slug or cost center.

    Plain values, not tenants: a row needs seven columns, not the tenant's applied manifests."""
    tenants = tenants_visible_to(user)
    if search:
        tenants = tenants.filter(
            Q(name__icontains=search) | Q(slug__icontains=search) | Q(cost_center__icontains=search)
        )
    if status:
        tenants = tenants.filter(status=status)
    # The budget is billing's (a reverse one-to-one, named by its accessor: no import).
    return tenants.order_by("name", "id").values(
        "slug", "name", "isolation", "status", "cost_center", "billing_account__monthly_budget"
    )


def tenants_of_member(*, user) -> list[MemberTenant]:
    """The tenant switcher's links, by name: the tenants `user` is a member of and may see
    (finance and platform admins see inactive ones too). No query: read with the user's roles
    (`access_for`)."""
    access = access_for(user)
    return [t for t in access.member_of if t.active or access.sees_all_tenants]
