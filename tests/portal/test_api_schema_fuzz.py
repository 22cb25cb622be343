"""The API does what its OpenAPI schema says, under data generated from that schema.

Schemathesis reads the schema the portal serves and sends every operation a bounded number of
generated requests, in-process through the WSGI app, with the personal API token of a tenant
member and of a platform admin. A 5xx, a status code the schema does not list, or a body or
content type that does not match it fails the test.

Each operation and role runs in its own rolled-back transaction (a fresh database), against
the simulated fleet with eager tasks: random data never reaches a cluster.
"""

import re

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core import signals
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.transport import response_content_type

from billing.models import UsageRecord
from core import tokens
from inventory.models import HealthEvent
from portal.wsgi import application
from tenants.access import service_accounts
from tenants.credentials import services as credentials
from tenants.models import Membership, RoleAssignment
from tenants.quota import services as quota_requests
from tenants.workloads import services as workloads
from tenants.workloads.models import NotebookImage, VmImage, WorkloadStatus
from tenants.workloads.services import endpoint_keys
from tests.factories import (
    GPUFactory,
    MembershipFactory,
    NodeFactory,
    QuotaFactory,
    RoleAssignmentFactory,
    TenantFactory,
    UserFactory,
)


def _documented_as_a_file(case, response) -> bool:
    documented = case.operation.definition.raw.get("responses", {}).get(
        str(response.status_code), {}
    )
    media_type = (response_content_type(response) or "").split(";")[0].strip()
    schema = documented.get("content", {}).get(media_type, {}).get("schema", {})
    return schema.get("format") == "binary"


def body_conformance(ctx, response, case):
    """The response schema check, except for a body the schema documents as a file
    (`format: binary`, e.g. a vCluster's kubeconfig): Schemathesis would parse its YAML and
    compare the document with the string the schema says it is."""
    if _documented_as_a_file(case, response):
        return None
    return response_schema_conformance(ctx, response, case)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    body_conformance,
]
EXAMPLES_PER_OPERATION = 6


# The schema as the portal serves it (no database needed to build it).
SCHEMA = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]


@pytest.fixture
def _connections_kept():
    """Like Django's test client: a request's end must not close the test's connection (its
    transaction holds the test data, rolled back afterwards)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def world(db, settings, _connections_kept):
    # Random data must never reach a cluster: the simulated fleet, tasks run in-process.
    settings.FLEET_BACKEND = "simulated"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    acme = TenantFactory(slug="acme")
    member = MembershipFactory(tenant=acme, role=Membership.Role.MEMBER,
                               user=UserFactory(username="member")).user
    admin = RoleAssignmentFactory(
        user=UserFactory(username="root"), role=RoleAssignment.Role.PLATFORM_ADMIN
    ).user
    MembershipFactory(tenant=acme, user=admin, role=Membership.Role.OWNER)
    # Billing (branch `usage`): an hour of usage this month, allocated and measured, so that
    # the usage and utilization lists answer with rows.
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    for source, busy in (("allocated", 0), ("measured", 1800)):
        UsageRecord.objects.create(tenant=acme, source=source, resource="gpu:nvidia-h100-80gb",
                                   hour=hour, unit_seconds=3600, busy_seconds=busy,
                                   hostname="gpu-node-1" * (busy > 0))
    gpu = GPUFactory(node=NodeFactory())
    event = HealthEvent.objects.create(
        node=gpu.node, kind="xid", subject="gpu:0", severity="warning"
    )
    request = quota_requests.quota_request_create(
        tenant=acme, requested_by=member, lines=[{"resource": "cpu", "amount": 8}],
        justification="More CPUs.",
    )
    # Quota, a pool, a boot image and a notebook image: the schema's launch examples are
    # admitted (202); and a vCluster up on the simulated fleet, so that its kubeconfig is there
    # to download.
    for resource, limit in {"gpu:nvidia-h100-80gb": 8, "cpu": 64, "memory-gib": 512,
                            "storage-gib": 500, "count:vcluster": 4, "count:inference": 4,
                            "count:vm": 4, "count:slurm": 4, "count:notebook": 4}.items():
        QuotaFactory(tenant=acme, resource=resource, limit=limit)
    VmImage.objects.create(key="ubuntu-24.04", label="Ubuntu 24.04",
                           container_disk="quay.io/containerdisks/ubuntu:24.04")
    NotebookImage.objects.create(key="pytorch", label="PyTorch",
                                 image="quay.io/jupyter/pytorch-notebook:cuda12-2025-11-10")
    settings.FLEET_SIMULATED_READY_SECONDS = 0
    workload = workloads.workload_launch(tenant=acme, actor=member, kind="vcluster", name="dev",
                                         spec={})
    workloads.workload_reconcile(workload_id=workload.pk)
    # A first apply is judged from the apply's answers; the chart's objects (Flux's, made by
    # the simulated controllers when the fleet is read) are seen by the next look.
    workloads.workload_observe(workload_id=workload.pk)
    workload.refresh_from_db()
    assert workload.status == WorkloadStatus.READY, workload.status_message
    # An inference endpoint with an API key (its keys' list, one key, revoke and rotate).
    endpoint = workloads.workload_launch(
        tenant=acme, actor=member, kind="inference", name="keyed",
        spec={"model_uri": "hf://org/model", "gpu": "gpu:nvidia-h100-80gb",
              "gpus_per_replica": 1, "min_replicas": 1, "max_replicas": 1})
    key = endpoint_keys.endpoint_key_create(workload_id=endpoint.pk, actor=member,
                                            name="fuzz").key
    # A model credential, for its detail, replace and delete operations.
    credentials.credential_create(actor=member, tenant=acme, name="hf-token", kind="huggingface",
                                  values={"token": "hf_" + "x" * 30})
    # Billing: an issued invoice of acme's January (finance's actions, the tenant's downloads).
    invoice = _issued_invoice(acme, admin)
    # A service account with a token (its detail, actions and the token's revocation).
    account = service_accounts.service_account_create(actor=admin, tenant=acme, name="ci")
    account_token = service_accounts.service_account_token_create(
        actor=admin, account=account, name="ci", scopes=["read"]).token
    spare = {
        "member": tokens.api_token_create(user=member, name="spare").token.pk,
        "admin": tokens.api_token_create(user=admin, name="spare").token.pk,
    }
    ids = {
        "nodes": gpu.node_id, "gpus": gpu.pk, "racks": gpu.node.rack_id,
        "sites": gpu.node.rack.site_id, "health-events": event.pk, "quota-requests": request.pk,
        "workloads": workload.pk, "billing": invoice.pk, "endpoints": endpoint.pk,
        "keys": key.pk, "service-accounts": account.pk, "service-account-tokens": account_token.pk,
    }
    return {
        role: {
            "token": tokens.api_token_create(user=user, name="fuzz").raw,
            "ids": ids | {"tokens": spare[role]},
            "member_id": Membership.objects.get(tenant=acme, user=member).pk,
        }
        for role, user in (("member", member), ("admin", admin))
    }


def _issued_invoice(tenant, actor):
    from datetime import UTC, date, datetime
    from decimal import Decimal

    from billing.models import Rate, UsageRecord
    from billing.services import invoicing

    Rate.objects.create(resource="gpu:nvidia-h100-80gb", unit_price=Decimal("2.50"),
                        valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                               resource="gpu:nvidia-h100-80gb", unit_seconds=7200,
                               hour=datetime(2026, 1, 5, 10, tzinfo=UTC))
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    return invoicing.invoice_issue(invoice_id=draft.pk, actor=actor)


def _real_path_parameters(case, world: dict) -> dict:
    """Ids of objects that exist, so that successful answers are checked too."""
    collection = case.path.split("/")[3]
    values = {"slug": "acme", "member_id": world["member_id"],
              "id": world["ids"].get(collection, 1), "tenant_slug": "acme", "name": "hf-token",
              "workload_pk": world["ids"]["endpoints"]}
    if "/keys/{id}" in case.path:
        values["id"] = world["ids"]["keys"]
    if "/service-accounts/{id}" in case.path:
        values["id"] = world["ids"]["service-accounts"]
        values["token_id"] = world["ids"]["service-account-tokens"]
    return {name: values[name] for name in case.path_parameters or {}}


@pytest.mark.parametrize("role", ["member", "admin"])
@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_every_operation_answers_as_its_schema_says(operation, role, world):
    assert django_settings.FLEET_BACKEND == "simulated"
    assert django_settings.CELERY_TASK_ALWAYS_EAGER
    headers = {"Authorization": f"Bearer {world[role]['token']}"}

    @given(case=operation.as_strategy(), real_objects=st.booleans())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def answers_as_documented(case, real_objects):
        if real_objects and case.path_parameters:
            case.path_parameters = _real_path_parameters(case, world[role])
        case.call_and_validate(headers=headers, checks=CHECKS)

    answers_as_documented()


def _request_examples(operation) -> dict:
    content = (operation.definition.raw.get("requestBody") or {}).get("content", {})
    return content.get("application/json", {}).get("examples") or {}


EXAMPLES = [
    (operation, name, example["value"])
    for operation in OPERATIONS
    for name, example in _request_examples(operation).items()
]


@pytest.mark.parametrize("role", ["member", "admin"])
@pytest.mark.parametrize(
    ("operation", "body"),
    [(operation, body) for operation, _, body in EXAMPLES],
    ids=[f"{operation.label} {name}" for operation, name, _ in EXAMPLES],
)
def test_the_documented_examples_answer_as_documented(operation, body, role, world):
    """The schema's request examples are sent as they are: answered as documented and, where
    they name no object by id (e.g. a launch of each workload kind), successful."""
    names = re.findall(r"\{(\w+)\}", operation.path)
    case = operation.Case(body=body, media_type="application/json",
                          path_parameters=dict.fromkeys(names, "0") or None)
    if names:
        case.path_parameters = _real_path_parameters(case, world[role])

    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {world[role]['token']}"}, checks=CHECKS
    )

    if "{" not in operation.path:
        assert response.status_code < 300, response.text[:500]
