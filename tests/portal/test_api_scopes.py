"""Every operation of the API enforces the token scope its schema names (`x-required-scope`):
read from the schema, so an endpoint added later is covered without this file changing.

For each operation, a token of a platform admin who owns the tenant, holding only a scope that
does not cover the operation, gets 403 `missing_scope` naming the scope; a token holding
exactly that scope is not refused for its scope (it may still get 400, 404 or 409: the body and
ids are placeholders). Requests go through the test client; nothing leaves the process.
"""

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from core.api.scopes import Scope, scopes_granted
from core.api.tags import TAGS
from core.tokens import api_token_create
from tests.factories import MembershipFactory

METHODS = ("get", "post", "put", "patch", "delete")
# Placeholders for path parameters: the tenant exists, the ids need not.
PLACEHOLDERS = {"slug": "acme", "tenant_slug": "acme", "name": "nothing-here"}


def _schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


SCHEMA = _schema()
OPERATIONS = [
    (method, path, operation["x-required-scope"])
    for path, item in SCHEMA["paths"].items()
    for method, operation in item.items()
    if method in METHODS
]


def _url(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: PLACEHOLDERS.get(m.group(1), "1"), path)


def _lacking(scope: str) -> str:
    """A scope that does not cover `scope`."""
    return next(s for s in Scope.values if scope not in scopes_granted([s]))


@pytest.fixture
def call(db, tenant, platform_admin):
    MembershipFactory(tenant=tenant, user=platform_admin, role="owner")
    client = APIClient()
    tokens = {}

    def _call(method: str, path: str, *, scope: str):
        if scope not in tokens:
            tokens[scope] = api_token_create(user=platform_admin, name=f"only-{scope}",
                                             scopes=[scope]).raw
        body = {} if method in ("post", "put", "patch") else None
        return getattr(client, method)(_url(path), body, format="json",
                                       HTTP_AUTHORIZATION=f"Bearer {tokens[scope]}")

    return _call


def test_every_operation_names_a_known_scope():
    assert len(OPERATIONS) > 50
    unknown = [(m, p, s) for m, p, s in OPERATIONS if s not in Scope.values]
    assert not unknown


def test_billing_reads_need_billing_read_and_workload_writes_need_workloads():
    scopes = {(m, p): s for m, p, s in OPERATIONS}
    assert scopes[("get", "/api/v1/billing/invoices/")] == Scope.BILLING_READ
    assert scopes[("get", "/api/v1/workloads/")] == Scope.READ
    assert scopes[("post", "/api/v1/workloads/{id}/scale/")] == Scope.WORKLOADS
    assert scopes[("post", "/api/v1/tokens/")] == Scope.ADMIN
    # A vCluster's kubeconfig is its admin credential: a GET, yet not a read.
    assert scopes[("get", "/api/v1/workloads/{id}/kubeconfig/")] == Scope.WORKLOADS


def test_every_billing_read_needs_billing_read():
    loose = [(m, p, s) for m, p, s in OPERATIONS
             if p.startswith("/api/v1/billing/") and m == "get" and s != Scope.BILLING_READ]
    assert not loose, "billing views set read_scope = Scope.BILLING_READ"


@pytest.mark.parametrize(("method", "path", "scope"), OPERATIONS,
                         ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_a_token_without_the_scope_is_refused_and_one_with_it_is_not(call, method, path, scope):
    refused = call(method, path, scope=_lacking(scope))

    assert refused.status_code == 403, refused.content
    assert refused.json()["error"] == {
        "status": 403, "code": "missing_scope",
        "message": f'This token lacks the "{scope}" scope.',
    }

    allowed = call(method, path, scope=scope)

    assert allowed.status_code != 401
    if allowed.status_code == 403:
        assert allowed.json()["error"]["code"] != "missing_scope", allowed.content


# --- tags ------------------------------------------------------------------------------------


def test_every_operation_has_one_domain_tag_and_none_is_v1():
    names = {name for name, _, _ in TAGS}
    for path, item in SCHEMA["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                assert len(operation["tags"]) == 1 and operation["tags"][0] in names, (
                    method, path, operation["tags"])
    assert "v1" not in {tag for item in SCHEMA["paths"].values() for op in item.values()
                        for tag in op.get("tags", [])}


def test_each_tag_in_use_is_described():
    described = {tag["name"]: tag["description"] for tag in SCHEMA["tags"]}
    used = {op["tags"][0] for item in SCHEMA["paths"].values() for op in item.values()}
    assert used <= set(described)
    assert all(described[name].strip() for name in used)
    assert {"workloads", "billing", "inventory", "tenants", "quota", "tokens",
            "service-accounts", "index"} <= used
    assert len(SCHEMA["tags"]) == len(TAGS)
