"""Admin changelists not pinned elsewhere make no more queries for more rows (the review queue,
tenants, nodes, GPUs, racks, sites, audit events and billing lists are pinned in
test_query_counts.py, tests/tenants and tests/billing)."""

import itertools

import pytest
from django.urls import reverse

from inventory.models import NodeValidation
from tenants.models import RoleAssignment, Workload
from tenants.quota import services as quota_requests
from tests.factories import MembershipFactory, RoleAssignmentFactory, TenantFactory, UserFactory
from tests.inventory.fleets import build_fleet

pytestmark = pytest.mark.django_db

_serial = itertools.count(1)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def grow_workloads(n: int) -> None:
    for _ in range(n):
        i = next(_serial)
        tenant = TenantFactory(slug=f"aq-w{i}")
        user = MembershipFactory(tenant=tenant, user=UserFactory(username=f"aq-w{i}")).user
        Workload.objects.create(tenant=tenant, kind="vm", name=f"box-{i}", launched_by=user,
                                demand={"cpu": 4}, status_reason="Running")


def grow_nodes(n: int) -> None:
    for node in build_fleet(n, prefix=f"aq{next(_serial)}x"):
        NodeValidation.objects.create(node=node, kind="burn-in", passed=True, summary="ok",
                                      recorded_by=UserFactory(username=f"aq-v{next(_serial)}"))


def grow_roles(n: int) -> None:
    for _ in range(n):
        RoleAssignmentFactory(user=UserFactory(username=f"aq-r{next(_serial)}"),
                              role=RoleAssignment.Role.FINANCE)


def grow_requests(n: int) -> None:
    for _ in range(n):
        i = next(_serial)
        tenant = TenantFactory(slug=f"aq-q{i}", cohort=f"cohort-{i % 3}")
        member = MembershipFactory(tenant=tenant, user=UserFactory(username=f"aq-q{i}")).user
        quota_requests.quota_request_create(
            tenant=tenant, requested_by=member, justification="Evaluation runs.",
            lines=[{"resource": "cpu", "amount": 8}, {"resource": "gpu:nvidia-h200", "amount": 2}],
        )


CASES = {
    "workloads": ("admin:tenants_workload_changelist", "", grow_workloads),
    "workloads-by-kind": ("admin:tenants_workload_changelist", "?kind__exact=vm", grow_workloads),
    "nics": ("admin:inventory_nic_changelist", "", grow_nodes),
    "node-validations": ("admin:inventory_nodevalidation_changelist", "", grow_nodes),
    "role-assignments": ("admin:tenants_roleassignment_changelist", "", grow_roles),
    "queue-two-statuses": (
        "admin:tenants_quotarequest_changelist",
        "?status__exact=submitted&status__exact=approved&resource=cpu",
        grow_requests,
    ),
    "queue-search-all": ("admin:tenants_quotarequest_changelist", "?q=aq&all=", grow_requests),
    "tenants-by-cohort": ("admin:tenants_tenant_changelist", "?cohort=cohort-1", grow_requests),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_admin_list_makes_no_more_queries_for_more_rows(
    name, login, platform_admin, django_assert_max_num_queries
):
    url_name, query, grow = CASES[name]
    url = reverse(url_name) + query
    client = login(platform_admin)
    grow(2)
    client.get(url)  # the session and content types, read once
    with django_assert_max_num_queries(20) as few:
        response = client.get(url)
    assert response.status_code == 200
    shown = len(response.context["cl"].result_list)
    grow(12)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(url)
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) > shown > 0
