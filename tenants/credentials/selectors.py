"""Reads about model credentials, for a tenant already scoped to what the user may see."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from ..access.models import Membership, Tenant
from ..access.rules import access_for
from ..workloads.models import Workload, WorkloadStatus
from .models import ModelCredential

OPERATING_ROLES = frozenset({Membership.Role.OWNER, Membership.Role.MEMBER})

def tenant_credentials(*, tenant: Tenant) -> QuerySet[ModelCredential]:
    """The tenant's credentials by name, without their sealed values; one query."""
    return (
        ModelCredential.objects.filter(tenant=tenant)
        .select_related("created_by", "replaced_by")
        .defer("sealed_values", "applied_manifests")
        .order_by("name")
    )


def credential_get(*, tenant: Tenant, name: str) -> ModelCredential:
    """The tenant's credential `name`; another tenant's, or none, is a 404."""
    return get_object_or_404(tenant_credentials(tenant=tenant), name=name)


def credential_users(*, tenant: Tenant, names) -> dict[str, list[tuple[int, str]]]:
    """The tenant's endpoints, not deleted, that use each of `names`: name → [(id, name)].
    One query, whatever the number of credentials."""
    names = list(names)
    used: dict[str, list[tuple[int, str]]] = {name: [] for name in names}
    if not names:
        return used
    rows = (
        Workload.objects.filter(tenant=tenant, spec__credential__in=names)
        .exclude(status=WorkloadStatus.DELETED)
        .order_by("name")
        .values_list("spec__credential", "pk", "name")
    )
    for credential, pk, name in rows:
        used.setdefault(credential, []).append((pk, name))
    return used


def credentials_for_page(*, tenant: Tenant) -> list[ModelCredential]:
    """The tenant's credentials, each with `used_by` (its endpoints); two queries."""
    credentials = list(tenant_credentials(tenant=tenant))
    users = credential_users(tenant=tenant, names=[c.name for c in credentials])
    for credential in credentials:
        credential.used_by = users.get(credential.name, [])
    return credentials


def may_manage_credentials(user, tenant: Tenant) -> bool:
    """Owners and members (who launch workloads) add, replace and delete credentials; viewers
    and finance see their names and kinds only."""
    access = access_for(user)
    return access.platform_admin or access.tenant_roles.get(tenant.pk) in OPERATING_ROLES
