"""docs/api.md's examples of the API's one error format are real: each is what the API answers
here (400, 401, 403, 404, 409, 429), and the page shows it as the API writes it."""

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.billing.spend_data import issued_invoice

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _shown(body: dict) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False)


def _answers(tenant, tenant_owner, finance) -> dict[int, dict]:
    client = APIClient()
    answers = {401: client.get("/api/v1/me/",
                               HTTP_AUTHORIZATION="Bearer afp_not-a-real-token")}
    client.force_authenticate(tenant_owner)
    answers[400] = client.get("/api/v1/billing/spend/breakdown/",
                              {"tenant": "acme", "month": "2026-13"})
    answers[403] = client.get("/api/v1/billing/invoices/focus.csv")
    answers[404] = client.get("/api/v1/workloads/999999/")
    invoice = issued_invoice(tenant, number="INV-2026-0001",
                             month=datetime(2026, 1, 1, tzinfo=UTC))
    client.force_authenticate(finance)
    answers[409] = client.post(f"/api/v1/billing/invoices/{invoice.pk}/issue/", {},
                               format="json")
    from django.conf import settings

    rates = settings.REST_FRAMEWORK | {"DEFAULT_THROTTLE_RATES": {"user": "1/hour",
                                                                 "anon": "1/hour"}}
    with override_settings(REST_FRAMEWORK=rates):
        client.get("/api/v1/me/")
        answers[429] = client.get("/api/v1/me/")
    return answers


@pytest.mark.django_db
def test_the_error_examples_in_the_api_docs_are_what_the_api_answers(tenant, tenant_owner,
                                                                     finance):
    page, missing = DOCS.read_text(), []
    for status, response in sorted(_answers(tenant, tenant_owner, finance).items()):
        assert response.status_code == status, (status, response.content[:300])
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert body["error"]["status"] == status
        if status == 429:  # the wait counts down: the page shows one moment of it
            if re.sub(r"\d+ seconds", "N seconds", _shown(body)) not in re.sub(
                    r"\d+ seconds", "N seconds", page):
                missing.append(_shown(body))
        elif _shown(body) not in page:
            missing.append(_shown(body))
    assert missing == [], "\n".join(missing)
    # The page's other claims: no credential at all is a 401 of its own code.
    anonymous = APIClient().get("/api/v1/me/").json()["error"]
    assert (anonymous["status"], anonymous["code"]) == (401, "not_authenticated")
    assert "401\n`not_authenticated`" in page or "401 `not_authenticated`" in page
