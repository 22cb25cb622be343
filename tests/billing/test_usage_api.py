"""The usage and utilization API: hand-computed aggregates, tenant isolation, bad input as 400
with field errors, pinned query counts, and the OpenAPI schema."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from drf_spectacular.generators import SchemaGenerator

from tests.billing.timeline import utc
from tests.billing.usage_data import (
    H100,
    H200,
    HAMI_CORES,
    HAMI_MEMORY,
    MIG_3G,
    NOVEMBER,
    grow,
    measured,
    measured_done,
    november_usage,
)
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db

USAGE = "/api/v1/billing/usage/"
UTILIZATION = "/api/v1/billing/utilization/"


@pytest.fixture
def usage(tenant, other_tenant):
    november_usage(tenant, other_tenant)
    measured(tenant, H100, utc(2026, 11, 3, 10), 7200, 3600)
    measured(tenant, H100, utc(2026, 11, 3, 11), 7200, 7200)
    measured_done(utc(2026, 11, 3, 12))  # measured, and nothing seen busy: all idle
    measured_done(utc(2026, 11, 4, 9))
    return tenant, other_tenant


def _results(api_client, user, url, query=None) -> list[dict]:
    api_client.force_login(user)
    response = api_client.get(url, NOVEMBER | (query or {}))
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_usage_is_summed_per_day_tenant_and_class(api_client, finance, usage):
    rows = {(r["day"], r["tenant"], r["resource"]): r for r in _results(api_client, finance, USAGE)}

    assert set(rows) == {
        ("2026-11-03", "acme", H100), ("2026-11-04", "acme", H100),
        ("2026-11-03", "acme", MIG_3G), ("2026-11-03", "acme", HAMI_CORES),
        ("2026-11-03", "acme", HAMI_MEMORY), ("2026-11-03", "globex", H200),
    }
    assert rows["2026-11-03", "acme", H100] == {
        "day": "2026-11-03", "tenant": "acme", "resource": H100, "unit": "GPU-hours",
        "unit_seconds": 14400, "unit_hours": "4.00", "gpu_hours": "4.00",
    }
    assert rows["2026-11-03", "acme", MIG_3G]["gpu_hours"] == "0.43"
    assert rows["2026-11-03", "acme", HAMI_CORES]["unit_hours"] == "50.00"
    assert rows["2026-11-03", "acme", HAMI_CORES]["gpu_hours"] == "0.50"
    assert rows["2026-11-03", "acme", HAMI_MEMORY]["gpu_hours"] is None
    assert rows["2026-11-03", "globex", H200]["gpu_hours"] == "4.00"


def test_measured_usage_is_there_too(api_client, finance, usage):
    rows = _results(api_client, finance, USAGE, {"source": "measured"})
    assert [(r["tenant"], r["resource"], r["unit_seconds"]) for r in rows] == [
        ("acme", H100, 14400)
    ]


def test_utilization_per_tenant_with_idle_gpu_hours(api_client, finance, usage):
    rows = {r["tenant"]: r for r in _results(api_client, finance, UTILIZATION)}

    # Acme allocated 4 + 1 H100-hours, 3/7 (MIG) and 0.5 (HAMi): 5.93 GPU-hours; busy 1 at
    # 10:00 (of 2 + 3/7 allocated) and 2 at 11:00 (of 2): idle 1.43 + 0 + 0.5 + 1 (4 Nov).
    assert rows["acme"] == {
        "tenant": "acme", "tenant_name": "Acme Labs", "cost_center": "",
        "allocated_gpu_hours": "5.93", "measured_gpu_hours": "4.00", "busy_gpu_hours": "3.00",
        "idle_gpu_hours": "2.93", "utilization": "0.5060",
    }
    assert rows["globex"]["idle_gpu_hours"] == "4.00"
    assert rows["globex"]["utilization"] == "0.0000"
    # In use: 3 of 5.93 GPU-hours (10 800 of 21 343 GPU-seconds).
    assert Decimal(rows["acme"]["utilization"]) == (Decimal(10800) / 21343).quantize(
        Decimal("0.0001")
    )


def test_a_tenant_member_sees_only_its_own_tenants_usage(api_client, tenant_member, usage):
    assert {r["tenant"] for r in _results(api_client, tenant_member, USAGE)} == {"acme"}
    assert {r["tenant"] for r in _results(api_client, tenant_member, UTILIZATION)} == {"acme"}


@pytest.mark.parametrize("url", [USAGE, UTILIZATION])
def test_another_tenants_slug_selects_nothing(api_client, other_tenant_member, usage, url):
    api_client.force_login(other_tenant_member)

    body = api_client.get(url, NOVEMBER | {"tenant": "acme"}).json()

    assert body["count"] == 0 and body["results"] == []
    assert {r["tenant"] for r in _results(api_client, other_tenant_member, url)} == {"globex"}


@pytest.mark.parametrize("url", [USAGE, UTILIZATION])
def test_finance_and_admins_see_every_tenant(api_client, finance, platform_admin, usage, url):
    for user in (finance, platform_admin):
        assert {r["tenant"] for r in _results(api_client, user, url)} == {"acme", "globex"}


@pytest.mark.parametrize("url", [USAGE, UTILIZATION])
def test_no_role_is_403_and_no_credentials_401(api_client, no_role_user, url):
    assert api_client.get(url).status_code == 401
    api_client.force_login(no_role_user)
    assert api_client.get(url).status_code == 403


@pytest.mark.parametrize("url", [USAGE, UTILIZATION])
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"start": "2026-11-30", "end": "2026-11-01"}, "end"),
        ({"start": "2025-01-01", "end": "2026-11-30"}, "end"),
        ({"start": "not-a-date"}, "start"),
        ({"end": "2026-13-01"}, "end"),
        ({"resource": "gpu:imaginary"}, "resource"),
        ({"tenant": "x" * 64}, "tenant"),
    ],
)
def test_bad_filters_are_400_with_field_errors(api_client, finance, url, query, field):
    api_client.force_login(finance)

    response = api_client.get(url, query)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["fields"]


def test_an_unknown_source_is_400(api_client, finance):
    api_client.force_login(finance)
    response = api_client.get(USAGE, {"source": "guessed"})
    assert response.status_code == 400
    assert "source" in response.json()["error"]["fields"]


def test_a_page_past_the_end_is_404(api_client, finance, usage):
    api_client.force_login(finance)
    assert api_client.get(USAGE, NOVEMBER | {"page": 99}).status_code == 404


def test_usage_is_paginated(api_client, finance, usage):
    api_client.force_login(finance)
    body = api_client.get(USAGE, NOVEMBER | {"page_size": 2}).json()
    assert body["count"] == 6 and len(body["results"]) == 2 and body["next"]


@pytest.mark.parametrize("url", [USAGE, UTILIZATION])
@pytest.mark.parametrize("role", ["finance", "tenant_member"])
def test_queries_do_not_grow_with_the_data(request, api_client, tenant, url, role):
    api_client.force_login(request.getfixturevalue(role))
    tenants = [tenant, TenantFactory()]
    grow(tenants, hours=2)

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert api_client.get(url, NOVEMBER).status_code == 200
        return len(captured)

    small = count()
    grow(tenants + [TenantFactory() for _ in range(10)], hours=12, start=utc(2026, 11, 10))
    assert count() == small


def test_the_schema_documents_both_endpoints_with_filters_and_examples():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path in (USAGE, UTILIZATION):
        operation = schema["paths"][path]["get"]
        names = {parameter["name"] for parameter in operation["parameters"]}
        assert {"start", "end", "tenant", "resource", "cost_center", "page", "page_size"} <= names
        response = operation["responses"]["200"]["content"]["application/json"]
        assert response["examples"]
        documented = response["schema"]["$ref"].rsplit("/", 1)[1]
        assert {"count", "next", "previous", "results"} <= set(
            schema["components"]["schemas"][documented]["properties"]
        )
    usage = schema["paths"][USAGE]["get"]
    assert "source" in {parameter["name"] for parameter in usage["parameters"]}
