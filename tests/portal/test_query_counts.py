"""No N+1 anywhere: every list page and list API makes the same queries at two data sizes.

Each case grows its data from a small to a larger size and compares the queries one request
makes at each. (The node list, capacity, members, quota-request history, request queue,
dashboard, tenant list, quota-request list and token page have their own pinned counts in
their apps' tests.)
"""

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.models import ApiToken, AuditEvent
from inventory.models import Rack, Site
from tenants.models import Membership, Quota, RoleAssignment, ServiceAccount
from tenants.quota import services as quota_requests
from tests.factories import (
    MembershipFactory,
    RoleAssignmentFactory,
    TenantFactory,
    UserFactory,
)
from tests.inventory.fleets import build_fleet

pytestmark = pytest.mark.django_db

SMALL, LARGE = 3, 30
# Quota rows are bounded by the resource vocabulary, so that list grows less.
RESOURCES = [
    "cpu",
    "memory-gib",
    "storage-gib",
    "gpu:nvidia-h100-80gb",
    "gpu:nvidia-h200",
    "gpu:nvidia-a100-80gb",
    "gpu:nvidia-l40s",
    "mig:nvidia-a100-80gb:1g.10gb",
]
_serial = itertools.count(1)


@pytest.fixture
def people(db):
    admin = RoleAssignmentFactory(
        user=UserFactory(username="qc-admin"), role=RoleAssignment.Role.PLATFORM_ADMIN
    ).user
    acme = TenantFactory(slug="acme", name="Acme Labs")
    owner = MembershipFactory(
        tenant=acme, user=UserFactory(username="qc-owner"), role=Membership.Role.OWNER
    ).user
    return {"admin": admin, "owner": owner, "acme": acme}


# --- growers: add `n` more rows of what a list shows --------------------------------------


def grow_fleet(people, n: int) -> None:
    build_fleet(n, prefix=f"q{next(_serial)}x")


def grow_sites(people, n: int) -> None:
    for _ in range(n):
        i = next(_serial)
        site = Site.objects.create(slug=f"qc-s{i}", name=f"Site {i}")
        Rack.objects.create(site=site, name=f"qc-r{i}")


def grow_requests(people, n: int) -> None:
    """`n` quota requests, each from a new tenant with its own member."""
    for _ in range(n):
        i = next(_serial)
        tenant = TenantFactory(slug=f"qc-t{i}")
        member = MembershipFactory(tenant=tenant, user=UserFactory(username=f"qc-m{i}")).user
        quota_requests.quota_request_create(
            tenant=tenant,
            requested_by=member,
            lines=[{"resource": "cpu", "amount": 8}, {"resource": "gpu:nvidia-h200", "amount": 2}],
            justification="Evaluation runs.",
        )


def grow_acme_requests(people, n: int) -> None:
    for _ in range(n):
        quota_requests.quota_request_create(
            tenant=people["acme"],
            requested_by=people["owner"],
            lines=[{"resource": "cpu", "amount": 8}],
            justification="More CPUs.",
        )


def grow_audit(people, n: int) -> None:
    users = [UserFactory(username=f"qc-a{next(_serial)}") for _ in range(min(n, 5))]
    AuditEvent.objects.bulk_create(
        AuditEvent(
            actor=users[i % len(users)],
            actor_repr=users[i % len(users)].username,
            action=f"thing.do{i % 4}",
            object_type="tenants.tenant",
            object_id=str(i),
            object_repr=f"thing {i}",
            tenant_slug=f"t{i % 7}",
            request_id=f"req-{i}",
        )
        for i in range(n)
    )


def grow_tenants(people, n: int) -> None:
    for _ in range(n):
        i = next(_serial)
        tenant = TenantFactory(slug=f"qc-g{i}")
        MembershipFactory(tenant=tenant, user=UserFactory(username=f"qc-u{i}"))
        Quota.objects.create(tenant=tenant, resource="cpu", limit=64)


def grow_acme_members(people, n: int) -> None:
    for _ in range(n):
        MembershipFactory(tenant=people["acme"], user=UserFactory(username=f"qc-p{next(_serial)}"))


def grow_acme_quotas(people, n: int) -> None:
    have = set(people["acme"].quotas.values_list("resource", flat=True))
    for resource in [r for r in RESOURCES if r not in have][:n]:
        Quota.objects.create(tenant=people["acme"], resource=resource, limit=16)


def grow_owner_tenants(people, n: int) -> None:
    for _ in range(n):
        tenant = TenantFactory(slug=f"qc-o{next(_serial)}")
        MembershipFactory(tenant=tenant, user=people["owner"], role=Membership.Role.MEMBER)


def grow_owner_tokens(people, n: int) -> None:
    for _ in range(n):
        i = next(_serial)
        ApiToken.objects.create(
            user=people["owner"], name=f"ci-{i}", digest=f"{i:064d}", hint=f"afp_{i:04d}"
        )


def grow_service_accounts(people, n: int) -> None:
    for _ in range(n):
        i = next(_serial)
        tenant = TenantFactory(slug=f"qc-sa{i}")
        ServiceAccount.objects.create(tenant=tenant, name="ci", keycloak_client_id=f"qc-ci-{i}",
                                      user=UserFactory(username=f"sa.qc-sa{i}.ci"))


@dataclass(frozen=True)
class Case:
    url: str
    who: str
    grow: Callable
    small: int = SMALL
    large: int = LARGE
    api: bool = False


CASES = {
    # pages
    "fleet-overview": Case("/fleet/", "admin", grow_fleet),
    "rack-list": Case("/fleet/racks/", "admin", grow_fleet, small=50, large=400),
    "requests-queue": Case("/requests/", "admin", grow_requests),
    "tenant-quota": Case("/t/acme/quota/", "owner", grow_acme_requests),
    "admin-audit-events": Case("/admin/portal/auditevent/", "admin", grow_audit, large=80),
    "admin-audit-filtered": Case(
        "/admin/portal/auditevent/?action=thing.do1&tenant_slug=t1", "admin", grow_audit, large=80
    ),
    "admin-tenants": Case("/admin/tenants/tenant/", "admin", grow_tenants),
    "admin-memberships": Case("/admin/tenants/membership/", "admin", grow_tenants),
    "admin-service-accounts": Case("/admin/tenants/serviceaccount/", "admin",
                                   grow_service_accounts),
    "admin-quota-requests": Case("/admin/tenants/quotarequest/", "admin", grow_requests),
    "admin-quota-requests-all": Case(
        "/admin/tenants/quotarequest/?status__exact=submitted&all=", "admin", grow_requests
    ),
    "admin-quota-requests-by-tenant": Case(
        "/admin/tenants/quotarequest/?tenant=acme", "admin", grow_requests
    ),
    "admin-api-tokens": Case("/admin/portal/apitoken/", "admin", grow_owner_tokens),
    "admin-nodes": Case("/admin/inventory/node/", "admin", grow_fleet),
    "admin-gpus": Case("/admin/inventory/gpu/", "admin", grow_fleet),
    "admin-racks": Case("/admin/inventory/rack/", "admin", grow_fleet, small=50, large=400),
    "admin-health-events": Case("/admin/inventory/healthevent/", "admin", grow_fleet, 20, 120),
    # APIs
    "api-me": Case("/api/v1/me/", "owner", grow_owner_tenants, api=True),
    "api-tokens": Case("/api/v1/tokens/", "owner", grow_owner_tokens, api=True),
    "api-sites": Case("/api/v1/sites/", "admin", grow_sites, api=True),
    "admin-sites": Case("/admin/inventory/site/", "admin", grow_sites),
    "api-racks": Case("/api/v1/racks/", "admin", grow_fleet, small=50, large=400, api=True),
    "api-gpus": Case("/api/v1/gpus/", "admin", grow_fleet, api=True),
    "api-health-events": Case("/api/v1/health-events/", "admin", grow_fleet, 20, 120, api=True),
    "api-fleet-summary": Case("/api/v1/fleet/summary/", "admin", grow_fleet, api=True),
    "api-export-json": Case("/api/v1/inventory/export/?as=json", "admin", grow_fleet, api=True),
    "api-export-csv": Case(
        "/api/v1/inventory/export/?as=csv&objects=gpus", "admin", grow_fleet, api=True
    ),
    "api-tenants-as-owner": Case("/api/v1/tenants/", "owner", grow_owner_tenants, api=True),
    "api-tenant-members": Case(
        "/api/v1/tenants/acme/members/", "owner", grow_acme_members, api=True
    ),
    "api-tenant-quota": Case(
        "/api/v1/tenants/acme/quota/", "owner", grow_acme_quotas, small=2, large=8, api=True
    ),
    "api-quota-requests-as-owner": Case(
        "/api/v1/quota-requests/", "owner", grow_acme_requests, api=True
    ),
}


# Billing's usage explorer and usage API (branch `usage`): tenants with an hour of usage now.
def grow_usage(people, n: int) -> None:
    from django.utils import timezone

    from billing.models import UsageRecord

    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    for tenant in [people["acme"]] + [TenantFactory(slug=f"qc-u{next(_serial)}") for _ in range(n)]:
        UsageRecord.objects.create(tenant=tenant, source="measured", resource="gpu:nvidia-h200",
                                   hour=hour, unit_seconds=3600, busy_seconds=1800,
                                   hostname=f"h{next(_serial)}")
        UsageRecord.objects.create(tenant=tenant, source="allocated", hour=hour,
                                   resource="mig:nvidia-a100-80gb:1g.10gb", unit_seconds=3600,
                                   workload=None)


CASES |= {
    "usage-explorer": Case("/billing/usage/", "admin", grow_usage),
    "api-billing-usage-as-owner": Case("/api/v1/billing/usage/", "owner", grow_usage, api=True),
    "api-billing-utilization": Case("/api/v1/billing/utilization/", "admin", grow_usage,
                                    api=True),
}


def _queries(client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    return [q["sql"] for q in captured.captured_queries]


@pytest.mark.parametrize("name", list(CASES))
def test_a_list_makes_the_same_queries_at_two_sizes(name, people, client, api_client):
    case = CASES[name]
    user = people[case.who]
    http = api_client if case.api else client
    http.force_login(user, backend="django.contrib.auth.backends.ModelBackend")

    case.grow(people, case.small)
    http.get(case.url)  # warm the session and content types
    # Pages that keep a summary in the cache (the usage explorer, the fleet's pages) are counted
    # both ways: computed afresh, and served again from the cache.
    cache.clear()
    few = _queries(http, case.url)
    few_again = _queries(http, case.url)
    case.grow(people, case.large - case.small)
    cache.clear()
    many = _queries(http, case.url)
    many_again = _queries(http, case.url)

    assert len(many) == len(few), "\n".join(many)
    assert len(many_again) == len(few_again), "\n".join(many_again)
