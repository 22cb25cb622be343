"""Every operation in the OpenAPI schema answers errors in the one JSON format, never HTML.

The operations are read from the schema drf-spectacular serves, so a new endpoint is covered
the day it is added: 401 for anonymous callers, 404 for missing (or another tenant's) objects,
400 for malformed JSON, 405 for a method the path does not have.
"""

import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from core.models import ApiToken
from inventory.models import HealthEvent
from tenants.access.service_accounts import service_account_create, service_account_token_create
from tenants.credentials.services import credential_create
from tenants.models import Membership, RoleAssignment, Webhook
from tenants.quota import services as quota_requests
from tenants.workloads.endpoint_keys import EndpointKey
from tenants.workloads.models import Workload
from tests.factories import (
    GPUFactory,
    MembershipFactory,
    NodeFactory,
    RoleAssignmentFactory,
    TenantFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")
BODY_METHODS = ("post", "put", "patch")


def _operations() -> list[tuple[str, str, bool]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                content = (item[method].get("requestBody") or {}).get("content", {})
                operations.append((path, method, "application/json" in content))
    return operations


OPERATIONS = _operations()
OPERATION_IDS = [f"{method.upper()} {path}" for path, method, _ in OPERATIONS]
PATHS = sorted({path for path, _, _ in OPERATIONS})


def test_the_schema_covers_the_api():
    assert len(PATHS) >= 20
    assert "/api/v1/me/" in PATHS and "/api/v1/tokens/" in PATHS


@pytest.fixture
def world():
    """One of each object an API path names, in tenant `acme`, and an admin who owns acme."""
    admin = RoleAssignmentFactory(
        user=UserFactory(username="root"), role=RoleAssignment.Role.PLATFORM_ADMIN
    ).user
    acme = TenantFactory(slug="acme")
    member = MembershipFactory(tenant=acme, role=Membership.Role.OWNER).user
    MembershipFactory(tenant=acme, user=admin, role=Membership.Role.OWNER)
    membership = Membership.objects.get(tenant=acme, user=member)
    gpu = GPUFactory(node=NodeFactory())
    node = gpu.node
    event = HealthEvent.objects.create(node=node, kind="xid", subject="gpu:0", severity="warning")
    request = quota_requests.quota_request_create(
        tenant=acme,
        requested_by=member,
        lines=[{"resource": "cpu", "amount": 8}],
        justification="More CPUs.",
    )
    token = ApiToken.objects.create(user=admin, name="ci", digest="x" * 64, hint="afp_xxxx")
    workload = Workload.objects.create(tenant=acme, kind="vcluster", name="dev", launched_by=member)
    credential_create(actor=member, tenant=acme, name="hf-token", kind="huggingface",
                      values={"token": "hf_" + "x" * 30})
    endpoint = Workload.objects.create(tenant=acme, kind="inference", name="chat",
                                       launched_by=member)
    key = EndpointKey.objects.create(workload=endpoint, name="ci", digest="y" * 64,
                                     hint="key_yyyy")
    robot = service_account_create(actor=member, tenant=acme, name="ci-robot")
    robot_token = service_account_token_create(actor=member, account=robot, name="ci",
                                               scopes=["read"]).token
    ids = {
        "tokens": token.pk,
        "nodes": node.pk,
        "gpus": gpu.pk,
        "racks": node.rack_id,
        "sites": node.rack.site_id,
        "health-events": event.pk,
        "quota-requests": request.pk,
        "workloads": workload.pk,
        "billing": _issued_invoice(acme, admin).pk,
        "endpoint": endpoint.pk,
        "key": key.pk,
        "webhooks": Webhook.objects.create(tenant=acme, name="ci", url="https://a.example/",
                                           event_types=["budget.alert"], sealed_secret="x").pk,
    }
    return {"admin": admin, "ids": ids, "member_id": membership.pk,
            "service_account": robot.pk, "service_account_token": robot_token.pk}


def _issued_invoice(tenant, actor):
    """Acme's January, issued: the billing API's invoice paths name it."""
    from datetime import UTC, date, datetime
    from decimal import Decimal

    from billing.models import Rate, UsageRecord
    from billing.services import invoicing

    Rate.objects.create(resource="cpu", unit_price=Decimal("0.04"),
                        valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                               resource="cpu", unit_seconds=3600,
                               hour=datetime(2026, 1, 5, 10, tzinfo=UTC))
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    return invoicing.invoice_issue(invoice_id=draft.pk, actor=actor)


def _url(path: str, world: dict | None) -> str:
    """The path with real ids (`world`) or ids that exist nowhere (None)."""
    collection = path.split("/")[3]
    values = {
        "slug": "acme" if world else "no-such-tenant",
        "tenant_slug": "acme" if world else "no-such-tenant",
        "name": "hf-token" if world else "no-such-credential",
        "member_id": world["member_id"] if world else 987654,
        "workload_pk": world["ids"]["endpoint"] if world else 987654,
        "id": world["ids"].get(collection, 0) if world else 987654,
    }
    if "{workload_pk}" in path:  # an endpoint's key
        values["id"] = world["ids"]["key"] if world else 987654
    if "/service-accounts/" in path:  # a tenant's service account, and its token
        values["id"] = world["service_account"] if world else 987654
        values["token_id"] = world["service_account_token"] if world else 987654
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m[1]]), path)


def _assert_json_error(response, status: int) -> None:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["status"] == status
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]


def _call(client, method: str, url: str, body: str | None = None):
    if body is None:
        return getattr(client, method)(url, format="json")
    return client.generic(method.upper(), url, body, content_type="application/json")


@pytest.mark.parametrize(("path", "method", "_json"), OPERATIONS, ids=OPERATION_IDS)
def test_anonymous_callers_get_a_json_401(api_client, world, path, method, _json):
    response = _call(api_client, method, _url(path, world))
    _assert_json_error(response, 401)


@pytest.mark.parametrize(
    ("path", "method", "_json"),
    [op for op in OPERATIONS if "{" in op[0]],
    ids=[i for i, op in zip(OPERATION_IDS, OPERATIONS, strict=True) if "{" in op[0]],
)
def test_a_missing_object_is_a_json_404(api_client, world, path, method, _json):
    api_client.force_login(world["admin"])
    response = _call(api_client, method, _url(path, None))
    _assert_json_error(response, 404)


@pytest.mark.parametrize(
    ("path", "method", "_json"),
    [op for op in OPERATIONS if op[2]],
    ids=[i for i, op in zip(OPERATION_IDS, OPERATIONS, strict=True) if op[2]],
)
def test_malformed_json_is_a_json_400(api_client, world, path, method, _json):
    api_client.force_login(world["admin"])
    response = _call(api_client, method, _url(path, world), body='{"name": "x",')
    _assert_json_error(response, 400)
    assert response.json()["error"]["code"] == "parse_error"


@pytest.mark.parametrize("path", PATHS)
def test_a_method_the_path_does_not_have_is_a_json_405(api_client, world, path):
    allowed = {method for p, method, _ in OPERATIONS if p == path}
    method = next(m for m in ("put", "patch", "delete", "post") if m not in allowed)
    api_client.force_login(world["admin"])
    response = _call(api_client, method, _url(path, world))
    _assert_json_error(response, 405)


@pytest.mark.parametrize(("path", "method", "_json"), OPERATIONS, ids=OPERATION_IDS)
def test_an_outsider_is_refused_in_json_and_never_sees_acme(api_client, world, path, method, _json):
    """A member of another tenant: acme's objects are 404; admin-only endpoints are 403."""
    outsider = MembershipFactory(tenant=TenantFactory(slug="globex")).user
    api_client.force_login(outsider)
    response = _call(api_client, method, _url(path, world))
    if response.status_code >= 400:
        _assert_json_error(response, response.status_code)
    if "{slug}" in path or path.startswith(("/api/v1/quota-requests/{id}",
                                            "/api/v1/workloads/{id}",
                                            "/api/v1/billing/invoices/{id}")):
        assert response.status_code == 404
    if path.startswith("/api/v1/tokens/{id}"):  # the admin's token
        assert response.status_code == 404
    assert response.status_code != 500
