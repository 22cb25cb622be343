"""Reads about tenants and their members, already scoped to what the user may see."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Case, Prefetch, Q, QuerySet, Value, When
from django.shortcuts import get_object_or_404

from core.models import ApiToken

from .models import Membership, ServiceAccount, Tenant
from .rules import MemberTenant, access_for, tenants_visible_to


def tenant_members(*, tenant: Tenant) -> QuerySet[Membership]:
    """The tenant's people (its service accounts are listed on their own)."""
    return (tenant.memberships.filter(user__service_account__isnull=True)
            .select_related("user").order_by("role", "user__username"))


def tenant_service_accounts(*, tenant: Tenant) -> QuerySet[ServiceAccount]:
    """The tenant's service accounts, each with its tokens (newest first) in `tokens`."""
    return tenant.service_accounts.select_related("user", "created_by").prefetch_related(
        Prefetch("user__api_tokens", queryset=ApiToken.objects.order_by("-created_at"),
                 to_attr="tokens")
    )


def service_account_get(*, tenant: Tenant, pk) -> ServiceAccount:
    """One of the tenant's service accounts (another tenant's is a 404)."""
    return get_object_or_404(tenant.service_accounts.select_related("tenant", "user"), pk=pk)


def tenant_members_summary(*, tenant: Tenant) -> list[Membership]:
    """`tenant_members(tenant)` with what the dashboard's card shows of each (role, source,
    and the user's username, names and e-mail; not the password hash nor the dates). One
    query."""
    User = get_user_model()
    rows = tenant.memberships.filter(user__service_account__isnull=True).order_by(
        "role", "user__username").values_list(
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


def service_account_for_client(*, client_id: str) -> ServiceAccount | None:
    """The service account a Keycloak client's client-credentials tokens act as, if any."""
    if not client_id:
        return None
    return (ServiceAccount.objects.select_related("user", "tenant")
            .filter(keycloak_client_id=client_id).first())
