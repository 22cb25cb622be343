"""Bad input by hand, through the API and the pages: a 4xx with a message, never a 500."""

import json
import re
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from core.models import ApiToken
from inventory.models import GPU, Node
from tenants.models import Quota, QuotaRequest, Tenant
from tenants.quota import services as quota_requests
from tests.factories import NodeFactory

BODY_LIMIT = 8 * 2**20


def _json_error(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    return response.json()["error"]


def _detail_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (path, method)
        for path, item in schema["paths"].items()
        if "{id}" in path or "{member_id}" in path
        for method in ("get", "post", "put", "patch", "delete")
        if method in item
    ]


DETAIL_OPERATIONS = _detail_operations()


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "method"), DETAIL_OPERATIONS,
                         ids=[f"{m.upper()} {p}" for p, m in DETAIL_OPERATIONS])
def test_a_non_numeric_id_in_an_api_path_is_a_json_404(
    api_client, platform_admin, tenant, tenant_owner, path, method, bad_id="abc"
):
    assert any(p.startswith("/api/v1/tokens/{id}") for p, _ in DETAIL_OPERATIONS)
    assert any(p.startswith("/api/v1/nodes/{id}/") for p, _ in DETAIL_OPERATIONS)
    NodeFactory()
    api_client.force_login(platform_admin)
    url = re.sub(r"\{(\w+)\}", lambda m: "acme" if m[1] == "slug" else bad_id, path)

    response = getattr(api_client, method)(url, {"reason": "x"}, format="json")

    assert _json_error(response, 404)["code"] == "not_found"


@pytest.mark.django_db
@pytest.mark.parametrize("bad_id", ["1.5", "1e3", "-1", "0x1", "%F0%9F%92%A5", "1%00"])
def test_no_other_spelling_of_a_number_reaches_a_lookup(api_client, tenant_member, bad_id):
    api_client.force_login(tenant_member)

    for method in ("get", "delete"):
        response = getattr(api_client, method)(f"/api/v1/tokens/{bad_id}/")
        assert _json_error(response, 404)["code"] == "not_found"


# --- NUL characters --------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/quota-requests/?tenant=ac%00me",
        "/api/v1/nodes/?q=gpu%00",
        "/api/v1/tokens/?x%00=1",
    ],
)
def test_a_nul_in_the_query_string_is_a_json_400(api_client, platform_admin, url):
    api_client.force_login(platform_admin)

    assert _json_error(api_client.get(url), 400)["code"] == "nul_character"


@pytest.mark.django_db
def test_a_nul_in_a_page_query_string_is_the_portal_400_page(login, platform_admin):
    response = login(platform_admin).get("/fleet/nodes/?q=gpu%00-a&state=avail%00")

    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert 'id="error-page"' in response.content.decode()


@pytest.mark.django_db
def test_a_nul_in_the_tenant_a_quota_request_names_is_a_json_400(api_client, tenant_owner):
    api_client.force_login(tenant_owner)
    body = {"tenant": "ac\u0000me", "lines": [{"resource": "cpu", "amount": 8}],
            "justification": "More."}

    response = api_client.post("/api/v1/quota-requests/", body, format="json")

    assert _json_error(response, 400)["fields"]["tenant"] == ["Null characters are not allowed."]
    assert not QuotaRequest.objects.exists()


@pytest.mark.django_db
def test_a_nul_in_a_form_field_is_that_field_error(login, tenant_member):
    response = login(tenant_member).post("/account/tokens/", {"name": "ci\x00"})

    assert response.status_code == 400
    assert "Null characters are not allowed." in response.content.decode()
    assert not ApiToken.objects.exists()


# --- sizes -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_json_body_over_the_limit_is_a_json_413(api_client, tenant_member):
    api_client.force_login(tenant_member)
    body = json.dumps({"name": "x" * (BODY_LIMIT + 1)})

    response = api_client.generic("POST", "/api/v1/tokens/", body,
                                  content_type="application/json")

    assert _json_error(response, 413)["code"] == "request_too_large"
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_a_form_over_the_limit_is_a_json_413_on_the_api(api_client, tenant_member):
    api_client.force_login(tenant_member)

    response = api_client.post("/api/v1/tokens/", {"name": "x" * (BODY_LIMIT + 1)})

    assert _json_error(response, 413)["code"] == "request_too_large"


@pytest.mark.django_db
def test_a_form_over_the_limit_is_the_portal_413_page(login, tenant_member):
    response = login(tenant_member).post("/account/tokens/", {"name": "x" * (BODY_LIMIT + 1)})

    assert response.status_code == 413
    assert "Too much data" in response.content.decode()


def _five_mib_of_csv() -> str:
    # One node, then rows of blank cells the import skips: 5 MiB, but cheap to check.
    head, blank = "name,serial\ngpu-new,SN-1\n", " " * 78 + ",\n"
    rows, rest = divmod(5 * 2**20 - len(head), len(blank))
    return head + blank * rows + " " * (rest - 1) + "\n"


@pytest.mark.django_db
def test_an_import_of_the_documented_5_mib_works_through_the_api(api_client, platform_admin):
    api_client.force_login(platform_admin)
    text = _five_mib_of_csv()
    assert len(text) == 5 * 2**20

    response = api_client.post(
        "/api/v1/inventory/import/",
        {"format": "csv", "objects": "nodes", "data": text, "dry_run": False},
        format="json",
    )

    assert response.status_code == 201, response.content[:300]
    assert Node.objects.get().hostname == "gpu-new"


@pytest.mark.django_db
@pytest.mark.parametrize("as_file", [False, True], ids=["pasted", "uploaded"])
def test_an_import_of_the_documented_5_mib_works_on_the_page(login, platform_admin, as_file):
    text = _five_mib_of_csv()
    data = {"format": "csv", "objects": "nodes"}
    if as_file:
        data["file"] = SimpleUploadedFile("nodes.csv", text.encode(), content_type="text/csv")
    else:
        data["data"] = text

    response = login(platform_admin).post("/fleet/import/", data)

    assert response.status_code == 200
    assert Node.objects.get().hostname == "gpu-new"


# --- nesting ---------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/tokens/", "/api/v1/quota-requests/"])
def test_json_nested_too_deeply_is_a_json_400(api_client, tenant_owner, url):
    api_client.force_login(tenant_owner)
    body = "[" * 100_000 + "]" * 100_000

    response = api_client.generic("POST", url, body, content_type="application/json")

    assert _json_error(response, 400)["code"] == "parse_error"


# --- numbers beyond a column's range ---------------------------------------------------------


@pytest.mark.django_db
def test_an_approval_that_would_overflow_the_quota_column_is_a_field_error(
    api_client, platform_admin, tenant, tenant_owner
):
    quota_requests.quota_set(actor=platform_admin, tenant=tenant, resource="cpu", limit=2**31 - 10)
    request = quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_owner, lines=[{"resource": "cpu", "amount": 100}],
        justification="More CPUs.",
    )
    api_client.force_login(platform_admin)

    response = api_client.post(f"/api/v1/quota-requests/{request.pk}/approve/", {},
                               format="json")

    assert "amounts" in _json_error(response, 400)["fields"]
    assert Quota.objects.get(tenant=tenant, resource="cpu").limit == 2**31 - 10
    request.refresh_from_db()
    assert request.status == QuotaRequest.Status.SUBMITTED


@pytest.mark.django_db
def test_an_approved_amount_beyond_the_column_is_a_field_error(
    api_client, platform_admin, tenant, tenant_owner
):
    request = quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_owner, lines=[{"resource": "cpu", "amount": 100}],
        justification="More CPUs.",
    )
    api_client.force_login(platform_admin)

    response = api_client.post(f"/api/v1/quota-requests/{request.pk}/approve/",
                               {"amounts": {"cpu": 2**63}}, format="json")

    assert "amounts" in _json_error(response, 400)["fields"]


@pytest.mark.django_db
def test_the_admin_review_form_bounds_amounts_by_the_column(login, platform_admin, tenant,
                                                             tenant_owner):
    request = quota_requests.quota_request_create(
        tenant=tenant, requested_by=tenant_owner, lines=[{"resource": "cpu", "amount": 100}],
        justification="More CPUs.",
    )
    line = request.lines.get()

    response = login(platform_admin).post(
        f"/admin/tenants/quotarequest/{request.pk}/change/",
        {f"amount_{line.pk}": str(2**40), "note": "", "_approve": "Approve"},
    )

    assert response.status_code in (200, 400)
    assert "Ensure this value is less than or equal to 2147483647" in response.content.decode()
    request.refresh_from_db()
    assert request.status == QuotaRequest.Status.SUBMITTED


# --- races for a unique name -----------------------------------------------------------------


def _hold_uncommitted(insert, *, until_blocked: threading.Event, done: threading.Event):
    """Insert a row in a transaction of its own and commit it only once another connection
    waits on it: that other connection then passed every check and loses at the index."""
    try:
        with transaction.atomic():
            insert()
            with connection.cursor() as cursor:
                for _ in range(200):
                    cursor.execute(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                    )
                    if cursor.fetchone()[0]:
                        until_blocked.set()
                        break
                    threading.Event().wait(0.05)
    finally:
        done.set()
        connection.close()


def _race(insert, request):
    blocked, done = threading.Event(), threading.Event()
    started = threading.Event()

    def holder():
        started.set()
        _hold_uncommitted(insert, until_blocked=blocked, done=done)

    # The holder inserts before the request starts (`started` + a short wait for its INSERT).
    thread = threading.Thread(target=holder)
    thread.start()
    started.wait()
    threading.Event().wait(0.3)
    response = request()
    thread.join()
    assert blocked.is_set(), "the request never waited on the uncommitted row"
    return response


@pytest.mark.django_db(transaction=True)
def test_two_tokens_racing_for_one_name_is_a_400_not_an_integrity_error(tenant_member):
    client = APIClient()
    client.force_login(tenant_member)

    response = _race(
        lambda: ApiToken.objects.create(user=tenant_member, name="ci", digest="a" * 64,
                                        hint="afp_xxxx"),
        lambda: client.post("/api/v1/tokens/", {"name": "ci"}, format="json"),
    )

    assert "name" in _json_error(response, 400)["fields"]
    assert ApiToken.objects.filter(name="ci").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_tenants_racing_for_one_slug_is_a_400_not_an_integrity_error(platform_admin):
    client = APIClient()
    client.force_login(platform_admin)

    response = _race(
        lambda: Tenant.objects.create(slug="helix", name="Helix"),
        lambda: client.post("/api/v1/tenants/",
                            {"slug": "helix", "name": "Helix 2", "isolation": "shared"},
                            format="json"),
    )

    assert "slug" in _json_error(response, 400)["fields"]
    assert Tenant.objects.get(slug="helix").name == "Helix"


# --- unknown URLs ----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [False, True])
def test_a_post_to_an_unknown_api_url_is_a_json_404_not_a_csrf_403(tenant_member, signed_in):
    client = APIClient(enforce_csrf_checks=True)
    if signed_in:
        client.force_login(tenant_member)

    response = client.post("/api/v1/no-such-thing/", {"a": 1}, format="json")

    assert _json_error(response, 404)["code"] == "not_found"


# --- invisible characters in names people read -----------------------------------------------

INVISIBLE = ["\u202e", "\u2066", "\u200b", "\x07", "\x1b[31m", "\n"]


@pytest.mark.django_db
@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c[0]):04X}")
def test_a_token_name_with_invisible_characters_is_refused(api_client, tenant_member, char):
    api_client.force_login(tenant_member)

    response = api_client.post("/api/v1/tokens/", {"name": f"ci{char}gpj.exe"}, format="json")

    assert "name" in _json_error(response, 400)["fields"]
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c[0]):04X}")
def test_a_tenant_name_with_invisible_characters_is_refused(api_client, platform_admin, char):
    api_client.force_login(platform_admin)

    response = api_client.post(
        "/api/v1/tenants/", {"slug": "helix", "name": f"He{char}lix", "isolation": "shared"},
        format="json",
    )

    assert "name" in _json_error(response, 400)["fields"]
    assert not Tenant.objects.exists()


@pytest.mark.django_db
def test_a_token_name_with_a_bidi_override_is_refused_on_the_page(login, tenant_member):
    response = login(tenant_member).post("/account/tokens/", {"name": "ci\u202efdp"})

    assert response.status_code == 400
    assert "U+202E" in response.content.decode()
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("column", ["serial", "nvlink_domain"])
def test_an_imported_serial_or_nvlink_domain_with_a_bidi_override_is_a_row_error(
    api_client, platform_admin, column
):
    NodeFactory(hostname="gpu-a", k8s_name="gpu-a")
    api_client.force_login(platform_admin)
    text = f"device,index,model,{column}\ngpu-a,0,nvidia-l40s,SN\u202e1\n"

    response = api_client.post(
        "/api/v1/inventory/import/",
        {"format": "csv", "objects": "gpus", "data": text, "dry_run": False}, format="json",
    )

    assert response.status_code == 400
    errors = [e for row in response.json()["rows"] for e in row["errors"]]
    assert any("U+202E" in e for e in errors), errors
    assert not GPU.objects.exists()


@pytest.mark.django_db
def test_a_justification_keeps_its_lines_but_not_a_bidi_override(api_client, tenant_owner):
    api_client.force_login(tenant_owner)
    body = {"tenant": "acme", "lines": [{"resource": "cpu", "amount": 8}]}

    refused = api_client.post("/api/v1/quota-requests/",
                              body | {"justification": "Training\u202e run"}, format="json")
    accepted = api_client.post("/api/v1/quota-requests/",
                               body | {"justification": "Training.\n\tSecond line."},
                               format="json")

    assert "justification" in _json_error(refused, 400)["fields"]
    assert accepted.status_code == 201, accepted.content
