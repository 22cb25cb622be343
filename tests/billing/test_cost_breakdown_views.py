"""Issue 35, part 4 over the API and on the pages: a tenant's cost by workload, person or
label as JSON and CSV (formula-safe, audited), the spend page's and the usage explorer's card;
another tenant's is a 404, bad input a 400; queries do not grow with the data."""

import csv
import io
from datetime import date
from decimal import Decimal

import pytest

from billing.models import Rate, UsageRecord
from billing.services import invoicing
from core.models import AuditEvent
from inventory.models import HealthEvent, Severity
from tests.factories import NodeFactory

from .cost_data import H100, L40S, allocated, cost_month, cost_rates, people, utc, workload

JAN = date(2026, 1, 1)


@pytest.fixture
def january(tenant):
    cost_rates()
    ada, bob = people()
    return cost_month(tenant, ada=ada, bob=bob)


def _csv(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.django_db
@pytest.mark.parametrize("by", ["workload", "person", "label"])
def test_the_api_breaks_a_month_down_to_the_invoice_total(as_user, tenant, tenant_viewer,
                                                          january, by):
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    response = as_user(tenant_viewer).get("/api/v1/billing/spend/breakdown/", {
        "tenant": "acme", "by": by, "month": "2026-01"})

    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert Decimal(body["total"]) == invoice.total
    assert sum(Decimal(row["total"]) for row in body["rows"]) == invoice.total
    assert body["by"] == by and body["invoiced_months"] == ["2026-01"]
    assert {"unattributed", "credit"} <= {row["kind"] for row in body["rows"]}


@pytest.mark.django_db
def test_the_csv_adds_up_neutralises_formulas_and_is_audited(as_user, tenant, tenant_member,
                                                             january):
    evil = workload(tenant, "evil", by=None, label="-2+3 cmd")
    allocated(tenant, evil, utc(2026, 1, 7, 7), 3600)
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    response = as_user(tenant_member).get("/api/v1/billing/spend/breakdown.csv", {
        "tenant": "acme", "by": "label", "start": "2026-01", "end": "2026-01"})

    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = _csv(response)
    assert sum(Decimal(row["total"]) for row in rows) == invoice.total
    assert "'-2+3 cmd" in {row["key"] for row in rows}
    assert AuditEvent.objects.filter(action="billing.cost_breakdown_export",
                                     tenant_slug="acme").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("query, field", [
    ({"tenant": "acme", "by": "cluster"}, "by"),
    ({"tenant": "acme", "month": "2026-13"}, "month"),
    ({"tenant": "acme", "month": "2026-01", "start": "2026-01"}, "month"),
    ({"tenant": "acme", "start": "2026-05", "end": "2026-01"}, "end"),
    ({"tenant": "acme", "start": "2024-01", "end": "2026-01"}, "end"),
    ({"by": "label"}, "tenant"),
])
def test_bad_parameters_are_field_errors(as_user, tenant_member, query, field):
    for path in ("/api/v1/billing/spend/breakdown/", "/api/v1/billing/spend/breakdown.csv"):
        response = as_user(tenant_member).get(path, query)
        assert response.status_code == 400, response.content[:300]
        assert field in response.json()["error"]["fields"]


@pytest.mark.django_db
def test_another_tenants_breakdown_is_not_found(as_user, client, login, other_tenant_member,
                                                january):
    for path in ("/api/v1/billing/spend/breakdown/", "/api/v1/billing/spend/breakdown.csv"):
        response = as_user(other_tenant_member).get(path, {"tenant": "acme"})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    page = login(other_tenant_member).get("/billing/t/acme/cost.csv")
    assert page.status_code == 404
    assert not AuditEvent.objects.filter(action="billing.cost_breakdown_export").exists()


@pytest.mark.django_db
def test_finance_reads_any_tenants_breakdown(as_user, finance, tenant, january):
    response = as_user(finance).get("/api/v1/billing/spend/breakdown/", {
        "tenant": "acme", "month": "2026-01", "by": "person"})
    assert response.status_code == 200
    assert {row["name"] for row in response.json()["rows"]} >= {"Ada L", "bob"}


@pytest.mark.django_db
def test_queries_do_not_grow_with_the_data(as_user, tenant, other_tenant, tenant_member,
                                           django_assert_max_num_queries):
    cost_rates()
    ada, bob = people()
    cost_month(tenant, ada=ada, bob=bob)
    cost_month(other_tenant, ada=ada, bob=bob, copies=6, days=range(1, 29))
    invoicing.invoice_compute(tenant=tenant, month=JAN)
    query = {"tenant": "acme", "month": "2026-01"}
    client = as_user(tenant_member)
    with django_assert_max_num_queries(30) as small:
        client.get("/api/v1/billing/spend/breakdown/", query)
    # Ten times the workloads and every day of the month, and a second month without invoice.
    cost_month(tenant, ada=ada, bob=bob, copies=6, days=range(1, 29), prefix="more")
    allocated(tenant, None, utc(2026, 2, 2, 2), 3600)
    for by in ("workload", "person", "label"):
        with django_assert_max_num_queries(len(small.captured_queries)):
            client.get("/api/v1/billing/spend/breakdown/", {**query, "by": by})
    with django_assert_max_num_queries(len(small.captured_queries) + 8):
        response = client.get("/api/v1/billing/spend/breakdown/", {
            "tenant": "acme", "start": "2026-01", "end": "2026-02"})
    assert response.json()["computed_months"] == ["2026-02"]


@pytest.mark.django_db
def test_the_spend_page_shows_the_card_with_its_chart_and_csv(login, tenant, tenant_member,
                                                              january):
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)
    client = login(tenant_member)

    html = client.get("/billing/t/acme/", {"by": "label", "month": "2026-01"}).content.decode()

    assert 'id="cost-breakdown"' in html and 'id="cost-breakdown-chart"' in html
    assert "support-bot" in html and "Unattributed" in html and "Downtime credit" in html
    assert f'id="breakdown-total">{invoice.total:,.2f}' in html
    assert "/billing/t/acme/cost.csv?by=label&amp;start=2026-01&amp;end=2026-01" in html
    rows = _csv(client.get("/billing/t/acme/cost.csv", {"by": "label", "month": "2026-01"}))
    assert sum(Decimal(row["total"]) for row in rows) == invoice.total
    bad = client.get("/billing/t/acme/", {"month": "January"}).content.decode()
    assert 'id="breakdown-error"' in bad


@pytest.mark.django_db
def test_the_explorer_shows_the_card_for_the_tenant_it_is_filtered_on(login, finance, tenant,
                                                                      january):
    client = login(finance)
    everyone = client.get("/billing/usage/", {"start": "2026-01-01", "end": "2026-01-31"})
    assert 'id="breakdown-hint"' in everyone.content.decode()

    html = client.get("/billing/usage/", {"start": "2026-01-01", "end": "2026-01-31",
                                          "tenant": "acme", "by": "person"}).content.decode()

    assert 'id="cost-breakdown"' in html and "Ada L" in html
    assert "by=workload#cost-breakdown" in html and "tenant=acme" in html


@pytest.mark.django_db
@pytest.mark.parametrize("query, field", [
    ({"month": "9999-12"}, "month"),
    ({"start": "9999-12", "end": "9999-12"}, "start"),
    ({"start": "9999-01", "end": "9999-12"}, "end"),
])
def test_a_month_past_the_last_one_the_code_handles_is_a_field_error(
        as_user, login, tenant_member, query, field):
    for path in ("/api/v1/billing/spend/breakdown/", "/api/v1/billing/spend/breakdown.csv"):
        response = as_user(tenant_member).get(path, {"tenant": "acme", **query})
        assert response.status_code == 400, response.content[:300]
        assert field in response.json()["error"]["fields"]
    client = login(tenant_member)
    page = client.get("/billing/t/acme/", query)
    assert page.status_code == 200 and 'id="breakdown-error"' in page.content.decode()
    assert client.get("/billing/t/acme/cost.csv", query).status_code == 400


@pytest.mark.django_db
def test_the_explorer_refuses_days_past_the_last_month_it_can_price(login, finance, tenant):
    client = login(finance)
    for query in ({"start": "9999-12-01", "end": "9999-12-30"},
                  {"start": "9999-01-01", "end": "9999-12-31"}, {"start": "9999-12-31"}):
        response = client.get("/billing/usage/", {**query, "tenant": "acme"})
        assert response.status_code == 400
        assert "Pick a date up to 9998-12-31." in response.content.decode()
    # The last month it can price still shows its card (whose range ends in 9999).
    last = client.get("/billing/usage/", {"start": "9998-12-01", "end": "9998-12-31",
                                          "tenant": "acme"})
    assert last.status_code == 200 and 'id="cost-breakdown"' in last.content.decode()


@pytest.mark.django_db
def test_a_credit_bringing_the_total_near_zero_keeps_shares_within_a_hundred_per_cent(
        as_user, tenant, tenant_viewer):
    Rate.objects.create(resource=H100, unit_price=Decimal("100.00"), valid_from=utc(2025, 1, 1))
    Rate.objects.create(resource=L40S, unit_price=Decimal("1.07"), valid_from=utc(2025, 1, 1))
    allocated(tenant, workload(tenant, "chat", by=None), utc(2026, 1, 10, 8), 3600)
    allocated(tenant, workload(tenant, "tiny", by=None), utc(2026, 1, 10, 8), 36, resource=L40S)
    # The chat's whole hour on a host under a critical event: credited back, 100.00.
    node = NodeFactory(hostname="gpu-down")
    HealthEvent.objects.create(node=node, kind=HealthEvent.Kind.XID, severity=Severity.CRITICAL,
                               opened_at=utc(2026, 1, 10, 8), resolved_at=utc(2026, 1, 10, 9))
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.MEASURED, resource=H100,
                               hour=utc(2026, 1, 10, 8), hostname=node.hostname,
                               unit_seconds=3600)
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)
    assert invoice.total == Decimal("0.01")

    response = as_user(tenant_viewer).get("/api/v1/billing/spend/breakdown/", {
        "tenant": "acme", "month": "2026-01"})

    assert response.status_code == 200, response.content[:300]
    shares = {row["name"]: Decimal(row["share_percent"]) for row in response.json()["rows"]}
    assert shares == {"chat": Decimal("100.0"), "tiny": Decimal("0.0"),
                      "Downtime credit": Decimal("-100.0")}
