"""portalctl is typed against the OpenAPI schema: every operation it declares (path, method,
query parameters, body fields, the fields it reads, the media type) must be in the schema the
portal generates now. A change of the API under the CLI fails here, naming what it broke."""

import copy

import pytest
from drf_spectacular.generators import SchemaGenerator

from portalctl.operations import OPERATIONS, WORKLOAD_KINDS, WORKLOAD_STATUSES, Operation

SUCCESS = ("200", "201", "202", "204")


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict, node: dict) -> dict:
    """The object schema `node` stands for: $refs followed, allOf merged, oneOf's first."""
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    for key in ("allOf", "oneOf"):
        if key in node:
            merged: dict = {"properties": {}}
            for part in node[key] if key == "allOf" else node[key][:1]:
                merged["properties"].update(_resolve(schema, part).get("properties", {}))
            return merged
    return node


def problems_of(schema: dict, name: str, op: Operation) -> list[str]:
    item = schema["paths"].get(op.path)
    if item is None:
        return [f"{name}: no path {op.path}"]
    operation = item.get(op.method.lower())
    if operation is None:
        return [f"{name}: {op.path} has no {op.method}"]
    found = []
    query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    found += [f"{name}: no query parameter {q}" for q in op.query if q not in query]
    if op.body:
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        sent = _resolve(schema, content["schema"]).get("properties", {}) if content else {}
        found += [f"{name}: the body has no field {f}" for f in op.body if f not in sent]
    answers = [operation["responses"][s] for s in SUCCESS if s in operation["responses"]]
    media = [a["content"][op.media] for a in answers if op.media in a.get("content", {})]
    if not media:
        return [*found, f"{name}: no success answer in {op.media}"]
    read = _resolve(schema, media[0]["schema"])
    if op.paginated:
        results = read.get("properties", {}).get("results")
        if results is None:
            return [*found, f"{name}: the answer is not a page"]
        read = _resolve(schema, results["items"])
    properties = read.get("properties", {})
    found += [f"{name}: the answer has no field {f}" for f in op.fields if f not in properties]
    return found


def test_every_operation_portalctl_calls_is_in_the_schema_as_it_uses_it(schema):
    problems = [p for name, op in OPERATIONS.items() for p in problems_of(schema, name, op)]

    assert problems == []


def test_the_kinds_and_statuses_it_knows_are_the_apis(schema):
    enums = schema["components"]["schemas"]
    assert tuple(enums["WorkloadKindEnum"]["enum"]) == WORKLOAD_KINDS
    assert tuple(enums["WorkloadStatusEnum"]["enum"]) == WORKLOAD_STATUSES


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s["components"]["schemas"]["Workload"]["properties"].pop("status_label"),
         "workloads.get: the answer has no field status_label"),
        (lambda s: s["paths"].pop("/api/v1/workloads/{id}/scale/"),
         "workloads.scale: no path /api/v1/workloads/{id}/scale/"),
        (lambda s: s["components"]["schemas"]["WorkloadLaunchRequest"]["properties"].pop("spec"),
         "workloads.launch: the body has no field spec"),
        (lambda s: s["paths"]["/api/v1/workloads/{id}/kubeconfig/"]["get"]["responses"]["200"]
         ["content"].pop("application/yaml"),
         "workloads.kubeconfig: no success answer in application/yaml"),
    ],
    ids=["field-removed", "path-removed", "body-field-removed", "media-changed"],
)
def test_a_schema_change_under_the_cli_is_caught(schema, change, expected):
    changed = copy.deepcopy(schema)
    change(changed)

    problems = [p for name, op in OPERATIONS.items() for p in problems_of(changed, name, op)]

    assert expected in problems
