"""The OpenAPI schema says what the API does: list shapes, action answers, errors, messages."""

import pytest
from drf_spectacular.generators import SchemaGenerator

from inventory.models import NodeState
from tenants.quota import services as quota_requests
from tests.factories import NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def _json_schema(operation: dict, status: str) -> dict:
    return operation["responses"][status]["content"]["application/json"]["schema"]


NODE_ACTIONS = ["cordon", "uncordon", "drain", "return-to-service", "transition", "retirement"]


@pytest.mark.parametrize("action", NODE_ACTIONS)
def test_a_node_action_documents_the_node_as_its_answer(schema, action):
    operation = schema["paths"][f"/api/v1/nodes/{{id}}/{action}/"]["post"]

    assert _json_schema(operation, "200") == {"$ref": "#/components/schemas/NodeDetail"}


def test_recording_a_validation_documents_the_validation_it_created(schema):
    operation = schema["paths"]["/api/v1/nodes/{id}/validations/"]["post"]

    assert set(operation["responses"]) & {"200", "201"} == {"201"}
    assert _json_schema(operation, "201") == {"$ref": "#/components/schemas/NodeValidation"}


def test_every_operation_documents_its_errors_in_the_one_error_format(schema):
    error = {"$ref": "#/components/schemas/Error"}
    assert set(schema["components"]["schemas"]["Error"]["properties"]) == {"error"}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            expected = {"400", "401", "403", "404"} | ({"409"} if method != "get" else set())
            for status in expected:
                documented = _json_schema(operation, status)
                assert documented == error or error in documented["oneOf"], (method, path, status)


@pytest.mark.parametrize("collection", ["members", "quota"])
def test_tenant_lists_are_paginated_as_documented(
    schema, api_client, tenant_owner, tenant, collection
):
    operation = schema["paths"][f"/api/v1/tenants/{{slug}}/{collection}/"]["get"]
    documented = _json_schema(operation, "200")["$ref"].rsplit("/", 1)[1]
    assert set(schema["components"]["schemas"][documented]["properties"]) >= {
        "count", "next", "previous", "results"
    }
    api_client.force_login(tenant_owner)

    body = api_client.get(f"/api/v1/tenants/acme/{collection}/?page_size=1").json()

    assert set(body) == {"count", "next", "previous", "results"}
    assert isinstance(body["results"], list)


def test_the_quota_preview_is_documented_and_answered_as_a_plain_list(
    schema, api_client, tenant_owner, tenant
):
    operation = schema["paths"]["/api/v1/quota-requests/preview/"]["post"]
    assert _json_schema(operation, "200")["type"] == "array"
    api_client.force_login(tenant_owner)

    body = api_client.post(
        "/api/v1/quota-requests/preview/",
        {"tenant": "acme", "lines": [{"resource": "cpu", "amount": 8}]},
        format="json",
    ).json()

    assert isinstance(body, list) and body[0]["resource"] == "cpu"


def test_a_refused_move_names_states_by_their_value_not_the_enum(
    api_client, platform_admin, tenant, tenant_owner
):
    request = quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_owner, lines=[{"resource": "cpu", "amount": 8}],
        justification="More CPUs.",
    )
    quota_requests.quota_request_withdraw(request_id=request.pk, actor=tenant_owner)
    api_client.force_login(platform_admin)

    response = api_client.post(f"/api/v1/quota-requests/{request.pk}/approve/", {},
                               format="json")

    assert response.status_code == 409
    message = response.json()["error"]["message"]
    assert "from withdrawn to approved" in message
    assert "QuotaRequestStatus" not in message


def test_a_node_action_answers_the_node(api_client, platform_admin):
    node = NodeFactory(state=NodeState.AVAILABLE)
    api_client.force_login(platform_admin)

    body = api_client.post(f"/api/v1/nodes/{node.pk}/cordon/", {"reason": "flaky"},
                           format="json").json()

    assert body["id"] == node.pk and body["state"] == NodeState.CORDONED
    assert "allowed_moves" in body
