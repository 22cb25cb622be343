"""The billing API: invoices scoped like the pages (finance all, tenants their issued ones,
another tenant's a 404), finance's moves (400 on bad input, 409 on an illegal move, never a
500), exports parsed back, the read-only rate card, and no way to change an issued invoice."""

import csv
import io
from decimal import Decimal

import openpyxl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pypdf import PdfReader

from billing.models import CreditNote, Invoice, InvoiceStatus, Rate
from billing.services import invoicing
from core import tokens
from core.models import AuditEvent

from .finance_data import FEB, H100, JAN, bill, tenant_with_cost_center, utc

pytestmark = pytest.mark.django_db

API = "/api/v1/billing/invoices/"


@pytest.fixture
def books(tenant, other_tenant, finance):
    """Acme: January issued (25.00), February a draft; Globex: January issued (50.00)."""
    acme_jan = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 10).pk, actor=finance)
    globex_jan = invoicing.invoice_issue(invoice_id=bill(other_tenant, JAN, 20).pk,
                                         actor=finance)
    return {"acme_jan": acme_jan, "acme_feb": bill(tenant, FEB, 4), "globex_jan": globex_jan}


def _ids(response) -> set[int]:
    return {row["id"] for row in response.json()["results"]}


def _snapshot():
    return (list(Invoice.objects.order_by("pk").values()), CreditNote.objects.count(),
            AuditEvent.objects.exclude(action__endswith="export").count())


# --- who sees what --------------------------------------------------------------------------------


def test_finance_lists_every_invoice_paginated(as_user, finance, books):
    response = as_user(finance).get(f"{API}?page_size=2")

    body = response.json()
    assert response.status_code == 200
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    row = next(r for r in as_user(finance).get(API).json()["results"]
               if r["id"] == books["acme_jan"].pk)
    assert row["number"] == "INV-2026-0001" and row["tenant"] == "acme"
    assert row["total"] == "25.00" and row["status"] == "issued"
    assert row["url"].endswith(f"{API}{books['acme_jan'].pk}/")


def test_a_tenant_member_sees_only_their_tenants_issued_invoices(as_user, tenant_member, books):
    client = as_user(tenant_member)

    assert _ids(client.get(API)) == {books["acme_jan"].pk}
    assert client.get(f"{API}{books['acme_jan'].pk}/").status_code == 200
    # Their own draft and another tenant's invoice are not there, on every path.
    for invoice in (books["acme_feb"], books["globex_jan"]):
        for path in ("", "export.csv", "export.xlsx", "export.pdf"):
            response = client.get(f"{API}{invoice.pk}/{path}")
            assert response.status_code == 404, path
            assert response.json()["error"]["code"] == "not_found"
        for action in ("issue", "pay", "void", "credit-notes"):
            assert client.post(f"{API}{invoice.pk}/{action}/", {}, format="json").status_code \
                == 404
    exported = _csv(client.get(f"{API}export.csv"))
    assert {row["invoice_number"] for row in exported} == {"INV-2026-0001"}


@pytest.mark.parametrize("role", ["tenant_owner", "tenant_member", "tenant_viewer"])
def test_a_tenant_may_read_its_invoice_but_never_move_it(request, as_user, books, role):
    client = as_user(request.getfixturevalue(role))
    invoice = books["acme_jan"]
    before = _snapshot()

    for action, body in (("issue", {}), ("pay", {"reference": "mine"}),
                         ("void", {"reason": "I'd rather not"}),
                         ("credit-notes", {"amount": "25.00", "reason": "Refund me"})):
        response = client.post(f"{API}{invoice.pk}/{action}/", body, format="json")
        assert response.status_code == 403, action
        assert response.json()["error"]["code"] == "permission_denied"

    assert _snapshot() == before


def test_the_other_tenant_cannot_see_acme_at_all(as_user, other_tenant_member, books):
    client = as_user(other_tenant_member)

    assert _ids(client.get(API)) == {books["globex_jan"].pk}
    assert client.get(f"{API}{books['acme_jan'].pk}/").status_code == 404
    assert client.get(f"{API}?tenant=acme").json()["count"] == 0


def test_signed_out_callers_are_refused(api_client, books):
    for path in (API, f"{API}{books['acme_jan'].pk}/", f"{API}export.csv",
                 f"{API}{books['acme_jan'].pk}/export.pdf", "/api/v1/billing/rates/"):
        response = api_client.get(path)
        assert response.status_code in (401, 403), path
        assert "error" in response.json()


def test_an_api_token_downloads_an_invoice(api_client, tenant_member, books):
    raw = tokens.api_token_create(user=tenant_member, name="accounting").raw

    response = api_client.get(f"{API}{books['acme_jan'].pk}/export.pdf",
                              HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert response.status_code == 200 and response.content.startswith(b"%PDF")


# --- filters -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("period=2026-01", {"acme_jan", "globex_jan"}),
        ("status=draft", {"acme_feb"}),
        ("tenant=globex", {"globex_jan"}),
        ("amount_min=20&amount_max=30", {"acme_jan"}),
        ("sort=-total", {"acme_jan", "acme_feb", "globex_jan"}),
    ],
)
def test_the_list_filters_like_the_page(as_user, finance, books, query, expected):
    response = as_user(finance).get(f"{API}?{query}")

    assert _ids(response) == {books[name].pk for name in expected}


@pytest.mark.parametrize("period", ["2026-13", "9999-12"])
def test_a_filter_that_cannot_be_read_is_a_400_with_field_errors(as_user, finance, books,
                                                                  period):
    for path in (API, f"{API}export.csv", f"{API}export.xlsx"):
        response = as_user(finance).get(f"{path}?period={period}&amount_min=NaN&status=sent")

        assert response.status_code == 400, path
        fields = response.json()["error"]["fields"]
        assert set(fields) == {"period", "amount_min", "status"}


# --- one invoice ----------------------------------------------------------------------------------


def test_the_detail_has_lines_credit_notes_and_downloads(as_user, finance, books):
    invoice = books["acme_jan"]
    invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance, amount=Decimal("5"),
                                 reason="Outage")

    body = as_user(finance).get(f"{API}{invoice.pk}/").json()

    assert body["number"] == invoice.number and body["issued_by"] == "finance"
    assert [(line["kind"], line["resource"], line["quantity_hours"], line["amount"])
            for line in body["lines"]] == [("usage", H100, "10.000000", "25.00")]
    assert [(note["number"], note["amount"]) for note in body["credit_notes"]] == [
        ("CN-2026-0001", "5.00")]
    assert body["downloads"]["pdf"].endswith(f"{API}{invoice.pk}/export.pdf")
    assert body["unpriced"] == []


# --- finance's moves ----------------------------------------------------------------------------


def test_finance_issues_pays_and_credits_through_the_api(as_user, finance, books):
    client = as_user(finance)
    draft = books["acme_feb"]

    issued = client.post(f"{API}{draft.pk}/issue/", {}, format="json")
    paid = client.post(f"{API}{draft.pk}/pay/", {"reference": "SEPA-1"}, format="json")
    credit = client.post(f"{API}{draft.pk}/credit-notes/",
                         {"amount": "2.50", "reason": "Goodwill"}, format="json")

    assert issued.status_code == 200 and issued.json()["number"] == "INV-2026-0003"
    assert paid.status_code == 200 and paid.json()["status"] == "paid"
    assert paid.json()["payment_reference"] == "SEPA-1"
    assert credit.status_code == 201 and credit.json()["number"] == "CN-2026-0001"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"invoice.issue", "invoice.pay", "credit_note.create"} <= actions


@pytest.mark.parametrize(
    ("invoice", "action", "body"),
    [
        ("acme_jan", "issue", {}),
        ("acme_feb", "pay", {}),
        ("acme_feb", "void", {"reason": "not issued yet"}),
    ],
)
def test_an_illegal_move_is_a_409_and_changes_nothing(as_user, finance, books, invoice, action,
                                                       body):
    before = _snapshot()

    response = as_user(finance).post(f"{API}{books[invoice].pk}/{action}/", body, format="json")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"
    assert _snapshot() == before


def test_a_voided_invoice_cannot_be_paid(as_user, finance, books):
    client = as_user(finance)
    invoice = books["acme_jan"]

    assert client.post(f"{API}{invoice.pk}/void/", {"reason": "Twice"},
                       format="json").status_code == 200
    assert client.post(f"{API}{invoice.pk}/pay/", {}, format="json").status_code == 409
    assert client.post(f"{API}{invoice.pk}/credit-notes/", {"amount": "1", "reason": "x"},
                       format="json").status_code == 400


@pytest.mark.parametrize(
    ("action", "body", "field"),
    [
        ("void", {}, "reason"),
        ("void", {"reason": "   "}, "reason"),
        ("void", {"reason": "x" * 501}, "reason"),
        ("pay", {"paid_at": "2999-01-01T00:00:00Z"}, "paid_at"),
        ("pay", {"paid_at": "yesterday"}, "paid_at"),
        ("pay", {"reference": "r" * 101}, "reference"),
        ("credit-notes", {"amount": "25.01", "reason": "Too much"}, "amount"),
        ("credit-notes", {"amount": "-1", "reason": "Negative"}, "amount"),
        ("credit-notes", {"amount": "1e400", "reason": "Huge"}, "amount"),
        ("credit-notes", {"amount": "NaN", "reason": "Not a number"}, "amount"),
        ("credit-notes", {"amount": "abc", "reason": "Text"}, "amount"),
        ("credit-notes", {"amount": "1.00"}, "reason"),
        ("credit-notes", {"amount": "1.00", "reason": "a\x00b"}, "reason"),
    ],
)
def test_bad_input_is_a_400_with_field_errors_and_changes_nothing(as_user, finance, books,
                                                                   action, body, field):
    before = _snapshot()

    response = as_user(finance).post(f"{API}{books['acme_jan'].pk}/{action}/", body,
                                     format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert _snapshot() == before


def test_issuing_in_the_future_or_before_the_month_ends_is_a_400(as_user, finance, books):
    draft = books["acme_feb"]
    client = as_user(finance)

    future = client.post(f"{API}{draft.pk}/issue/", {"issue_date": "2999-01-01"}, format="json")
    early = client.post(f"{API}{draft.pk}/issue/", {"issue_date": "2026-02-10"}, format="json")

    assert future.status_code == early.status_code == 400
    assert "issue_date" in future.json()["error"]["fields"]
    assert "issue_date" in early.json()["error"]["fields"]
    assert Invoice.objects.get(pk=draft.pk).status == InvoiceStatus.DRAFT


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_an_issued_invoice_cannot_change_through_the_api(as_user, finance, books, method):
    invoice = books["acme_jan"]
    before = _snapshot()

    response = getattr(as_user(finance), method)(
        f"{API}{invoice.pk}/", {"total": "0.00", "tenant_name": "Someone else"}, format="json"
    )

    assert response.status_code == 405
    assert _snapshot() == before
    assert as_user(finance).post(API, {"total": "1"}, format="json").status_code == 405


# --- exports ------------------------------------------------------------------------------------


def _csv(response) -> list[dict]:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_one_invoice_exports_as_csv_xlsx_and_pdf(as_user, tenant_member, books):
    client = as_user(tenant_member)
    invoice = books["acme_jan"]

    rows = _csv(client.get(f"{API}{invoice.pk}/export.csv"))
    xlsx = client.get(f"{API}{invoice.pk}/export.xlsx")
    pdf = client.get(f"{API}{invoice.pk}/export.pdf")

    assert [(row["invoice_number"], row["amount"], row["issue_date"]) for row in rows] == [
        (invoice.number, "25.00", invoice.issue_date.isoformat())]
    assert xlsx["Content-Type"].startswith("application/vnd.openxmlformats")
    assert xlsx["Content-Disposition"] == f'attachment; filename="{invoice.number}.xlsx"'
    summary = openpyxl.load_workbook(io.BytesIO(xlsx.content))["Summary"]
    assert summary["N2"].value == 25 and summary["N2"].data_type == "n"
    assert summary["G2"].is_date and summary["G2"].value.date() == invoice.issue_date
    assert pdf["Content-Type"] == "application/pdf"
    text = PdfReader(io.BytesIO(pdf.content)).pages[0].extract_text()
    assert invoice.number in text and "Acme Labs" in text
    assert AuditEvent.objects.filter(action="invoice.export", actor=tenant_member).count() == 3


def test_the_filtered_list_exports_as_csv_and_xlsx(as_user, finance, books):
    client = as_user(finance)

    rows = _csv(client.get(f"{API}export.csv?period=2026-01"))
    xlsx = client.get(f"{API}export.xlsx?status=draft")

    assert sorted(row["tenant_slug"] for row in rows) == ["acme", "globex"]
    workbook = openpyxl.load_workbook(io.BytesIO(b"".join(xlsx.streaming_content)))
    assert workbook.sheetnames == ["Invoices", "Lines"]
    assert workbook["Invoices"]["B2"].value == "Acme Labs"
    assert workbook["Lines"]["A2"].value == "DRAFT"


def test_a_formula_in_a_tenant_name_is_text_in_the_api_csv(as_user, finance):
    hostile = tenant_with_cost_center("evil", "=HYPERLINK(\"http://x.example\")", "")
    invoicing.invoice_issue(invoice_id=bill(hostile, JAN, 1).pk, actor=finance)

    rows = _csv(as_user(finance).get(f"{API}export.csv"))

    assert rows[0]["tenant"] == "'=HYPERLINK(\"http://x.example\")"


def test_an_export_error_is_json_even_when_a_file_was_asked_for(as_user, other_tenant_member,
                                                                books):
    response = as_user(other_tenant_member).get(
        f"{API}{books['acme_jan'].pk}/export.pdf", HTTP_ACCEPT="application/pdf"
    )

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "not_found"


# --- the rate card ------------------------------------------------------------------------------


def test_everyone_signed_in_reads_the_rate_card(as_user, tenant_member, no_role_user):
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"), valid_from=utc(2025, 1, 1),
                        valid_to=utc(2026, 1, 1))
    Rate.objects.create(resource=H100, unit_price=Decimal("3.00"), valid_from=utc(2026, 1, 1))
    Rate.objects.create(resource="cpu", unit_price=Decimal("0.04"), valid_from=utc(2025, 1, 1))

    for user in (tenant_member, no_role_user):
        body = as_user(user).get("/api/v1/billing/rates/").json()
        assert body["count"] == 3
    now = as_user(tenant_member).get(
        "/api/v1/billing/rates/?resource=gpu:nvidia-h100-80gb&at=2026-03-01T00:00:00Z"
    ).json()["results"]
    assert [(r["unit_price"], r["currency"], r["valid_to"]) for r in now] == [
        ("3.000000", "EUR", None)]


def test_the_rate_card_is_read_only(as_user, platform_admin):
    rate = Rate.objects.create(resource="cpu", unit_price=Decimal("0.04"),
                               valid_from=utc(2025, 1, 1))
    client = as_user(platform_admin)

    assert client.post("/api/v1/billing/rates/", {"resource": "cpu"}, format="json"
                       ).status_code == 405
    assert client.patch(f"/api/v1/billing/rates/{rate.pk}/", {"unit_price": "0"},
                        format="json").status_code == 405
    assert client.delete(f"/api/v1/billing/rates/{rate.pk}/").status_code == 405
    assert Rate.objects.get(pk=rate.pk).unit_price == Decimal("0.04")


# --- queries do not grow with the data ------------------------------------------------------------


def _grow(n: int, start: int, actor) -> None:
    for i in range(start, start + n):
        tenant = tenant_with_cost_center(f"qa-{i}", f"Team {i}", f"CC-{i % 3}")
        invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 1 + i % 3).pk, actor=actor)


@pytest.mark.parametrize("path", [API, "/api/v1/billing/rates/"])
def test_the_lists_make_the_same_queries_at_two_sizes(as_user, finance, path):
    client = as_user(finance)
    client.get(path)  # the caller's roles, read once and kept for the user
    counts = []
    for size, start in ((3, 0), (20, 100)):
        _grow(size, start, finance)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        counts.append(len(queries))

    assert counts[0] == counts[1], counts


def test_the_detail_makes_the_same_queries_whatever_its_lines(as_user, finance, tenant):
    from billing.models import UsageRecord

    small = bill(tenant, JAN, 1)
    for hour, resource in enumerate(["cpu", "memory-gib", "gpu:nvidia-l40s"] * 3):
        UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                                   resource=resource, hour=utc(2026, 2, 1, hour),
                                   unit_seconds=3600)
    large = bill(tenant, FEB, 30)
    client = as_user(finance)
    client.get(f"{API}{small.pk}/")  # the caller's roles, read once and kept for the user
    counts = []
    for invoice in (small, large):
        with CaptureQueriesContext(connection) as queries:
            client.get(f"{API}{invoice.pk}/")
        counts.append(len(queries))

    assert Invoice.objects.get(pk=large.pk).lines.count() > 1
    assert counts[0] == counts[1]


def test_a_rate_card_instant_with_an_offset_postgresql_refuses_is_read_in_utc(as_user,
                                                                            tenant_member):
    Rate.objects.create(resource="cpu", unit_price=Decimal("0.04"), valid_from=utc(2025, 1, 1))

    response = as_user(tenant_member).get("/api/v1/billing/rates/",
                                          {"at": "2039-03-28T11:42:50+21:58"})

    assert response.status_code == 200 and response.json()["count"] == 1


def test_an_id_past_the_database_integer_is_a_404(as_user, finance, login):
    huge = "9" * 30
    client = as_user(finance)

    for path in (f"{API}{huge}/", f"{API}{huge}/export.pdf"):
        assert client.get(path).status_code == 404, path
    assert client.post(f"{API}{huge}/void/", {"reason": "x"}, format="json").status_code == 404
    assert login(finance).get(f"/billing/invoices/{huge}/").status_code == 404
