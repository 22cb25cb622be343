"""Finance's pages: the invoice list (filters, totals, sorting, bulk issue, draft a month), one
invoice (its lines, credits, trail and moves), the roll-up by cost center, and the exports
parsed back. Only finance and platform admins get in; a tenant's people get 403, and nothing
changes when they try."""

import csv
import io
import re
from datetime import UTC, date, datetime
from decimal import Decimal

import openpyxl
import pytest
from django.contrib.messages import get_messages
from django.test import Client
from pypdf import PdfReader

from billing import exports
from billing.models import CreditNote, Invoice, InvoiceStatus, UsageRecord
from billing.selectors.invoices import invoice_document, invoice_documents
from billing.services import invoicing
from core.models import AuditEvent
from inventory.models import HealthEvent, Severity
from tests.factories import NodeFactory

from .finance_data import FEB, H100, JAN, L40S, bill, tenant_with_cost_center, utc

pytestmark = pytest.mark.django_db

LIST = "/billing/invoices/"


@pytest.fixture
def books(tenant, other_tenant, finance):
    """Acme (CC-100): January issued (25.00), February a draft (10.00); Globex (CC-200):
    January a draft (50.00)."""
    type(tenant).objects.filter(pk=tenant.pk).update(cost_center="CC-100")
    type(other_tenant).objects.filter(pk=other_tenant.pk).update(cost_center="CC-200")
    tenant.refresh_from_db()
    other_tenant.refresh_from_db()
    acme_jan = bill(tenant, JAN, 10)
    acme_jan = invoicing.invoice_issue(invoice_id=acme_jan.pk, actor=finance)
    return {
        "acme_jan": acme_jan,
        "acme_feb": bill(tenant, FEB, 4),
        "globex_jan": bill(other_tenant, JAN, 20),
    }


def _rows(response) -> list[int]:
    return [row.id for row in response.context["page"].object_list]


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def _confirmed(client, path: str, data: dict | None = None):
    """POST an issue, read the confirmation it answers (nothing issued yet), confirm it."""
    asked = client.post(path, data or {})
    assert asked.status_code == 200 and asked.templates[0].name == "portal/confirm.html"
    return client.post(path, {**(data or {}), "confirm": asked.context["name"]})


# --- who gets in -------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["finance", "platform_admin"])
def test_finance_and_platform_admins_open_every_finance_page(request, login, books, role):
    client = login(request.getfixturevalue(role))
    invoice = books["acme_jan"]

    for path in (LIST, f"{LIST}{invoice.pk}/", "/billing/cost-centers/",
                 f"{LIST}{invoice.pk}/invoice.csv", f"{LIST}{invoice.pk}/invoice.xlsx",
                 f"{LIST}{invoice.pk}/invoice.pdf", f"{LIST}export.csv", f"{LIST}export.xlsx",
                 "/billing/cost-centers/?format=csv"):
        assert client.get(path).status_code == 200, path


@pytest.mark.parametrize("role", ["tenant_owner", "tenant_member", "tenant_viewer",
                                  "other_tenant_member", "no_role_user"])
def test_tenants_get_403_on_every_finance_page_and_nothing_changes(request, login, books, role):
    client = login(request.getfixturevalue(role))
    issued, draft = books["acme_jan"], books["acme_feb"]
    before = list(Invoice.objects.order_by("pk").values())
    trail = AuditEvent.objects.count()

    for path in (LIST, f"{LIST}{issued.pk}/", f"{LIST}{draft.pk}/", "/billing/cost-centers/",
                 f"{LIST}{issued.pk}/invoice.pdf", f"{LIST}{issued.pk}/invoice.csv",
                 f"{LIST}export.csv", f"{LIST}export.xlsx", "/billing/cost-centers/?format=csv"):
        assert client.get(path).status_code == 403, path
    for path, data in (
        (f"{LIST}issue/", {"invoice": [draft.pk]}),
        (f"{LIST}draft-month/", {"month": "2026-01"}),
        (f"{LIST}{draft.pk}/issue/", {}),
        (f"{LIST}{draft.pk}/recompute/", {}),
        (f"{LIST}{issued.pk}/pay/", {"reference": "x"}),
        (f"{LIST}{issued.pk}/void/", {"reason": "x"}),
        (f"{LIST}{issued.pk}/credit-notes/", {"amount": "1.00", "reason": "x"}),
    ):
        assert client.post(path, data).status_code == 403, path

    assert list(Invoice.objects.order_by("pk").values()) == before
    assert CreditNote.objects.count() == 0
    assert AuditEvent.objects.count() == trail


def test_signed_out_visitors_are_sent_to_sign_in(client, books):
    response = client.get(LIST)

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_missing_invoice_is_404(login, finance, books):
    assert login(finance).get(f"{LIST}999999/").status_code == 404


# --- the list: filters, totals, sorting ---------------------------------------------------------


def test_the_list_shows_every_invoice_with_totals_over_the_whole_filtered_set(
    login, finance, books, monkeypatch
):
    monkeypatch.setattr("billing.views.finance.PAGE_SIZE", 2)

    response = login(finance).get(LIST)

    assert response.status_code == 200
    assert len(_rows(response)) == 2  # one page of two …
    totals = response.context["totals"]  # … totals over all three
    assert (totals.count, totals.drafts) == (3, 2)
    assert totals.subtotal == totals.total == Decimal("85.00")
    body = response.content.decode()
    assert 'id="totals-total">EUR 85.00' in body
    assert 'data-status="issued"' in body and books["acme_jan"].number in body
    assert "Page 1 of 2" in body


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("period=2026-01", {"acme_jan", "globex_jan"}),
        ("period=2026-02", {"acme_feb"}),
        ("tenant=globex", {"globex_jan"}),
        ("cost_center=cc-100", {"acme_jan", "acme_feb"}),
        ("status=draft", {"acme_feb", "globex_jan"}),
        ("status=issued&status=paid", {"acme_jan"}),
        ("amount_min=20", {"acme_jan", "globex_jan"}),
        ("amount_min=10&amount_max=25", {"acme_jan", "acme_feb"}),
        ("q=globex", {"globex_jan"}),
        ("q=INV-2026", {"acme_jan"}),
        ("period_from=2026-02", {"acme_feb"}),
        ("period_to=2026-01", {"acme_jan", "globex_jan"}),
        ("tenant=nobody", set()),
    ],
)
def test_filters_select_invoices_and_the_totals_follow(login, finance, books, query, expected):
    response = login(finance).get(f"{LIST}?{query}")

    assert response.status_code == 200
    assert set(_rows(response)) == {books[name].pk for name in expected}
    totals = response.context["totals"]
    assert totals.count == len(expected)
    assert totals.total == sum((books[name].total for name in expected), Decimal("0"))


def test_a_filter_that_cannot_be_read_lists_nothing_and_says_why(login, finance, books):
    response = login(finance).get(f"{LIST}?period=2026-13&amount_min=lots&colour=red")

    assert response.status_code == 400
    assert _rows(response) == []
    errors = " ".join(response.context["filter_errors"])
    assert "YYYY-MM" in errors and "Enter a number" in errors and "“colour”" in errors


def test_an_empty_list_says_what_to_do(login, finance):
    response = login(finance).get(LIST)

    assert response.status_code == 200
    assert 'id="invoices-empty"' in response.content.decode()
    assert "Draft last month" in response.content.decode()


def test_columns_sort_both_ways(login, finance, books):
    client = login(finance)

    ascending = _rows(client.get(f"{LIST}?sort=total"))
    descending = _rows(client.get(f"{LIST}?sort=-total"))

    assert ascending == [books[n].pk for n in ("acme_feb", "acme_jan", "globex_jan")]
    assert descending == list(reversed(ascending))
    columns = {c["key"]: c for c in client.get(f"{LIST}?sort=total").context["columns"]}
    assert columns["total"]["current"] == "asc" and columns["total"]["url"].endswith("sort=-total")


def test_htmx_filtering_swaps_only_the_table(login, finance, books):
    response = login(finance).get(f"{LIST}?status=draft", headers={"HX-Request": "true"})

    body = response.content.decode()
    assert body.lstrip().startswith('<div class="card" id="invoice-table">')
    assert "<html" not in body


def test_htmx_filtering_with_a_filter_that_cannot_be_read_swaps_in_the_errors(
    login, finance, books
):
    response = login(finance).get(f"{LIST}?amount_min=lots", headers={"HX-Request": "true"})

    assert response.status_code == 200  # htmx swaps only a 2xx answer
    body = response.content.decode()
    assert 'id="filter-errors"' in body and "Enter a number" in body
    assert "data-invoice=" not in body


# --- bulk issue, drafting a month --------------------------------------------------------------


def test_selected_drafts_are_issued_in_bulk_and_refusals_are_shown_per_invoice(
    login, finance, books
):
    drafts = [books["acme_feb"].pk, books["globex_jan"].pk]

    response = _confirmed(
        login(finance), f"{LIST}issue/",
        {"invoice": [*drafts, books["acme_jan"].pk], "next": "/billing/invoices/?status=draft"},
    )

    assert response.status_code == 302 and response["Location"] == "/billing/invoices/?status=draft"
    issued = Invoice.objects.filter(pk__in=drafts)
    assert {invoice.status for invoice in issued} == {InvoiceStatus.ISSUED}
    assert sorted(invoice.number for invoice in issued) == ["INV-2026-0002", "INV-2026-0003"]
    shown = _messages(response)
    assert any(m.startswith("Issued 2 invoice(s)") for m in shown)
    assert any(m.startswith("Not issued, Acme Labs") and "issued" in m for m in shown)
    assert AuditEvent.objects.filter(action="invoice.issue").count() == 3


def test_bulk_issue_with_nothing_selected_says_so(login, finance, books):
    response = login(finance).post(f"{LIST}issue/", {})

    assert response.status_code == 302
    assert _messages(response) == ["Select the drafts to issue."]
    assert Invoice.objects.filter(status=InvoiceStatus.DRAFT).count() == 2


def test_bulk_issue_needs_the_csrf_token(finance, books):
    client = Client(enforce_csrf_checks=True)
    client.force_login(finance)

    response = client.post(f"{LIST}issue/", {"invoice": [books["acme_feb"].pk]})

    assert response.status_code == 403
    assert Invoice.objects.get(pk=books["acme_feb"].pk).status == InvoiceStatus.DRAFT


def test_the_bulk_issue_form_never_redirects_off_site(login, finance, books):
    response = _confirmed(login(finance), f"{LIST}issue/",
                          {"invoice": [books["acme_feb"].pk], "next": "https://evil.example/"})

    assert response["Location"] == LIST


def test_drafting_a_month_computes_every_tenants_draft(login, finance, tenant, other_tenant):
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                               resource=H100, hour=utc(2026, 3, 2, 10), unit_seconds=3600)
    bill(other_tenant, date(2026, 3, 1), 2)

    response = login(finance).post(f"{LIST}draft-month/", {"month": "2026-03"})

    assert response.status_code == 302
    assert response["Location"] == f"{LIST}?period=2026-03&status=draft"
    drafts = Invoice.objects.filter(period_start=utc(2026, 3, 1), status=InvoiceStatus.DRAFT)
    assert {invoice.tenant_id for invoice in drafts} == {tenant.pk, other_tenant.pk}
    assert "2 draft invoice(s) for March 2026 computed" in _messages(response)[0]


def test_drafting_a_month_not_yet_ended_is_refused_with_the_reason(login, finance, tenant):
    response = login(finance).post(f"{LIST}draft-month/", {"month": "2099-01"},
                                   headers={"Referer": "http://testserver/billing/invoices/"})

    assert response.status_code == 302 and response["Location"].endswith(LIST)
    assert "in the future" in " ".join(_messages(response))
    assert not Invoice.objects.exists()


@pytest.mark.parametrize(("month", "says"), [("March", "YYYY-MM"), ("9999-12", "2999-12"),
                                             ("0001-01", "between 2000-01")])
def test_drafting_a_month_that_cannot_be_read_is_refused(login, finance, tenant, month, says):
    response = login(finance).post(f"{LIST}draft-month/", {"month": month})

    assert response.status_code == 302
    assert says in " ".join(_messages(response))
    assert not Invoice.objects.exists()


@pytest.mark.parametrize("query", ["period=9999-12", "period_to=9999-12", "period_from=0001-01"])
def test_a_month_out_of_range_is_a_filter_error_not_a_crash(login, finance, books, query):
    response = login(finance).get(f"{LIST}?{query}")

    assert response.status_code == 400
    assert "between 2000-01 and 2999-12" in " ".join(response.context["filter_errors"])


# --- one invoice -------------------------------------------------------------------------------


@pytest.fixture
def credited(tenant, finance):
    """Acme's January with a downtime credit (a critical event on gpu-a) and unpriced H200 time."""
    node = NodeFactory(hostname="gpu-a")
    HealthEvent.objects.create(
        node=node, kind=HealthEvent.Kind.XID, subject="gpu:0", severity=Severity.CRITICAL,
        detail="XID 79: GPU fell off the bus",
        opened_at=utc(2026, 1, 15, 10), resolved_at=utc(2026, 1, 15, 11),
    )
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.MEASURED, resource=H100,
                               hostname="gpu-a", hour=utc(2026, 1, 15, 10), unit_seconds=3600,
                               busy_seconds=1800)
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED, resource=H100,
                               hour=utc(2026, 1, 15, 10), unit_seconds=3600)
    UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                               resource="gpu:nvidia-h200", hour=utc(2026, 1, 3, 1),
                               unit_seconds=3600)
    return bill(tenant, JAN, 10)


def test_the_detail_shows_lines_credits_unpriced_usage_totals_and_trail(
    login, finance, credited
):
    client = login(finance)
    client.post(f"{LIST}{credited.pk}/recompute/")

    response = client.get(f"{LIST}{credited.pk}/")

    body = response.content.decode()
    assert response.status_code == 200
    assert 'data-line="usage"' in body and "gpu:nvidia-h100-80gb" in body
    assert 'data-line="credit"' in body and "XID 79: GPU fell off the bus" in body
    assert "gpu-a" in body
    assert 'id="unpriced-warning"' in body and "gpu:nvidia-h200" in body
    assert 'id="total-total">EUR 25.00' in body  # 11 h at 2.50, less 1 h of downtime credit
    assert 'id="action-recompute"' in body and 'id="action-issue"' in body
    assert 'id="action-void"' not in body
    trail = re.findall(r'data-action="([^"]+)"', body)
    assert trail.count("invoice.compute") == 2  # drafted, then recomputed from the page


def test_issuing_from_the_detail_page_with_unpriced_usage_is_refused(login, finance, credited):
    response = _confirmed(login(finance), f"{LIST}{credited.pk}/issue/")

    assert response.status_code == 302
    assert "no rate prices" in " ".join(_messages(response))
    assert Invoice.objects.get(pk=credited.pk).status == InvoiceStatus.DRAFT


def test_a_draft_is_issued_then_paid_from_its_page(login, finance, books):
    client = login(finance)
    draft = books["globex_jan"]

    _confirmed(client, f"{LIST}{draft.pk}/issue/")
    response = client.post(f"{LIST}{draft.pk}/pay/", {"reference": "SEPA-77", "paid_on": ""})

    assert response.status_code == 302
    invoice = Invoice.objects.get(pk=draft.pk)
    assert invoice.status == InvoiceStatus.PAID and invoice.payment_reference == "SEPA-77"
    page = client.get(f"{LIST}{draft.pk}/").content.decode()
    assert "SEPA-77" in page and 'data-action="invoice.pay"' in page
    assert 'id="action-credit"' in page and 'id="action-pay"' not in page


def test_a_payment_in_the_future_is_a_form_error(login, finance, books):
    invoice = books["acme_jan"]

    response = login(finance).post(f"{LIST}{invoice.pk}/pay/", {"paid_on": "2999-01-01"})

    assert response.status_code == 400
    assert "in the future" in response.content.decode()
    assert Invoice.objects.get(pk=invoice.pk).status == InvoiceStatus.ISSUED


def test_voiding_needs_a_reason(login, finance, books):
    client = login(finance)
    invoice = books["acme_jan"]

    refused = client.post(f"{LIST}{invoice.pk}/void/", {"reason": "  "})
    voided = client.post(f"{LIST}{invoice.pk}/void/", {"reason": "Billed twice."})

    assert refused.status_code == 400
    assert "Say why the invoice is void" in refused.content.decode()
    assert voided.status_code == 302
    invoice.refresh_from_db()
    assert invoice.status == InvoiceStatus.VOID and invoice.void_reason == "Billed twice."


def test_a_credit_note_larger_than_the_invoice_is_a_form_error_and_nothing_is_credited(
    login, finance, books
):
    client = login(finance)
    invoice = books["acme_jan"]

    too_much = client.post(f"{LIST}{invoice.pk}/credit-notes/",
                           {"amount": "25.01", "reason": "Outage"})
    negative = client.post(f"{LIST}{invoice.pk}/credit-notes/",
                           {"amount": "-5", "reason": "Outage"})

    assert too_much.status_code == negative.status_code == 400
    assert 'id="id_amount-errors"' in too_much.content.decode()
    assert "positive amount" in negative.content.decode()
    assert too_much.context["open_form"] == "credit_form"
    assert not CreditNote.objects.exists()

    done = client.post(f"{LIST}{invoice.pk}/credit-notes/", {"amount": "5.00", "reason": "Outage"})

    assert done.status_code == 302
    note = CreditNote.objects.get()
    assert (note.invoice_id, note.amount, note.number) == (invoice.pk, Decimal("5.00"),
                                                            "CN-2026-0001")
    page = client.get(f"{LIST}{invoice.pk}/").content.decode()
    assert 'data-credit-note="CN-2026-0001"' in page and "credit_note.create" in page


def test_the_detail_names_its_tenant_and_who_issued_paid_and_voided_it(
    login, finance, books, api_client
):
    from tenants.models import RoleAssignment
    from tests.factories import RoleAssignmentFactory, UserFactory

    cashier = RoleAssignmentFactory(user=UserFactory(username="cashier", first_name="",
                                                     last_name=""),
                                    role=RoleAssignment.Role.FINANCE).user
    type(finance).objects.filter(pk=finance.pk).update(first_name="Fiona", last_name="Ledger")
    paid = books["acme_jan"]  # issued by finance
    invoicing.invoice_mark_paid(invoice_id=paid.pk, actor=cashier, reference="TX-1")
    void = invoicing.invoice_issue(invoice_id=books["acme_feb"].pk, actor=cashier)
    invoicing.invoice_void(invoice_id=void.pk, actor=finance, reason="Billed twice.")
    client = login(finance)

    paid_page = client.get(f"{LIST}{paid.pk}/").content.decode()
    void_page = client.get(f"{LIST}{void.pk}/").content.decode()

    slug = paid.tenant.slug
    assert f'<span class="text-muted small">{slug}</span>' in paid_page
    assert "Fiona Ledger" in paid_page and "recorded by cashier" in paid_page
    assert 'Issued by</dt><dd class="col-sm-8">cashier ' in void_page  # no name: the username
    assert "by finance</span>" in void_page
    api_client.force_authenticate(finance)
    answer = api_client.get(f"/api/v1/billing/invoices/{paid.pk}/").json()
    assert (answer["tenant"], answer["issued_by"]) == (slug, "finance")
    answer = api_client.get(f"/api/v1/billing/invoices/{books['globex_jan'].pk}/").json()
    assert answer["issued_by"] is None  # a draft


def _credit_note_reads(client, path: str) -> int:
    """How many queries of `path` read the credit notes table itself (not in a subquery)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    return sum(1 for query in queries
               if query["sql"].startswith('SELECT "billing_creditnote".'))


def test_an_invoice_reads_its_credit_notes_once_whether_it_has_any(login, finance, books):
    client = login(finance)
    invoice = books["acme_jan"]
    path = f"{LIST}{invoice.pk}/"
    client.get(path)  # the session and its user, warmed up

    assert _credit_note_reads(client, path) == 1
    invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance, amount=Decimal("2.00"),
                                 reason="Outage")
    assert _credit_note_reads(client, path) == 1
    assert 'data-credit-note="CN-2026-0001"' in client.get(path).content.decode()


def test_an_illegal_move_is_refused_with_a_message(login, finance, books):
    draft = books["acme_feb"]

    response = login(finance).post(f"{LIST}{draft.pk}/void/", {"reason": "why not"})

    assert response.status_code == 302
    assert "cannot go from draft to void" in " ".join(_messages(response))
    assert Invoice.objects.get(pk=draft.pk).status == InvoiceStatus.DRAFT


def test_a_void_invoice_offers_no_moves(login, finance, books):
    invoice = books["acme_jan"]
    invoicing.invoice_void(invoice_id=invoice.pk, actor=finance, reason="Wrong tenant")

    body = login(finance).get(f"{LIST}{invoice.pk}/").content.decode()

    assert "Wrong tenant" in body
    for action in ("recompute", "issue", "pay", "void", "credit"):
        assert f'id="action-{action}"' not in body


# --- exports, parsed back -----------------------------------------------------------------------


def _csv(response) -> list[dict]:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_the_filtered_list_exports_as_csv_one_row_per_line(login, finance, books):
    response = login(finance).get(f"{LIST}export.csv?period=2026-01")

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="invoices-')
    rows = _csv(response)
    assert {row["tenant_slug"] for row in rows} == {"acme", "globex"}
    acme = next(row for row in rows if row["tenant_slug"] == "acme")
    assert acme["invoice_number"] == books["acme_jan"].number
    assert acme["period_start"] == "2026-01-01" and acme["period_end"] == "2026-01-31"
    assert acme["cost_center"] == "CC-100" and acme["amount"] == "25.00"
    assert acme["quantity_hours"] == "10.000000" and acme["resource_class"] == H100
    event = AuditEvent.objects.get(action="invoices.export")
    assert event.actor == finance
    assert event.changes == {"format": "csv", "invoices": 2, "filters": {"period": ["2026-01"]}}


def test_the_list_exports_read_one_query_whatever_the_number_of_invoices(
    login, finance, tenant, other_tenant, credited, monkeypatch
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from billing.selectors import invoices as invoice_selectors

    # Fetched two rows at a time, as if each export were thousands of invoices.
    monkeypatch.setattr(invoice_selectors, "EXPORT_CHUNK", 2)
    client = login(finance)
    client.get(LIST)  # the session and its user, warmed up
    counts = {}
    for size in (1, 2):
        if size == 2:
            for month in (FEB, date(2026, 3, 1)):
                bill(tenant, month, 3)
                bill(other_tenant, month, 5)
        for fmt in ("csv", "xlsx"):
            with CaptureQueriesContext(connection) as queries:
                response = client.get(f"{LIST}export.{fmt}")
                b"".join(response.streaming_content)
            counts[size, fmt] = len(queries)

    assert Invoice.objects.count() == 5
    assert counts[1, "csv"] == counts[2, "csv"] and counts[1, "xlsx"] == counts[2, "xlsx"], counts


def test_the_list_xlsx_says_what_each_invoices_document_says(login, finance, tenant, credited):
    bill(tenant, FEB, 4)  # a draft
    invoices = Invoice.objects.order_by("-period_start", "tenant_name", "-id")
    expected = [invoice_document(invoice=invoice) for invoice in invoices]

    assert list(invoice_documents(invoices=invoices)) == expected


def test_the_list_csv_says_what_each_invoices_document_says(
    login, finance, tenant, other_tenant, credited
):
    # The list's CSV is written from plain values; it must match, byte for byte, the rows of
    # each invoice's document: usage, credits, discount, tax, unpriced usage, drafts.
    bill(tenant, FEB, 4)  # a draft
    Invoice.objects.filter(pk=bill(other_tenant, JAN, 20).pk).update(
        discount_percent=Decimal("10"), discount=Decimal("-5.00"), tax_percent=Decimal("19"),
        tax=Decimal("8.55"), cost_center="=1+2",
    )
    invoices = Invoice.objects.order_by("pk")
    # Each invoice's own document, as one invoice's download reads it (not the list's stream).
    expected = exports.invoices_csv(
        documents=[invoice_document(invoice=invoice) for invoice in invoices]
    )

    response = login(finance).get(f"{LIST}export.csv")

    content = b"".join(response.streaming_content).decode()
    assert sorted(content.splitlines()) == sorted(expected.splitlines())
    kinds = {row["line_type"] for row in csv.DictReader(io.StringIO(content))}
    assert kinds == {"usage", "credit", "discount", "tax", "unpriced"}
    assert "'=1+2" in content


def test_the_filtered_list_exports_as_xlsx_with_number_and_date_cells(login, finance, books):
    response = login(finance).get(f"{LIST}export.xlsx?tenant=acme")

    assert response["Content-Disposition"].endswith('.xlsx"')
    assert response.streaming  # written to a temporary file, then streamed from it
    workbook = openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    # Two sheets whatever the number of invoices: a row per invoice, a row per line.
    assert workbook.sheetnames == ["Invoices", "Lines"]
    summary = workbook["Invoices"]
    header = [cell.value for cell in summary[1]]
    rows = [dict(zip(header, [c.value for c in row], strict=True))
            for row in summary.iter_rows(min_row=2)]
    assert {row["Tenant slug"] for row in rows} == {"acme"}
    issued = next(row for row in rows if row["Invoice"] == books["acme_jan"].number)
    assert isinstance(issued["Total"], int | float) and issued["Total"] == 25
    assert isinstance(issued["Period start"], datetime)
    assert issued["Period start"].date() == date(2026, 1, 1)
    assert summary.cell(row=2, column=14).data_type == "n"
    assert summary.cell(row=2, column=5).is_date
    lines = workbook["Lines"]
    titles = [cell.value for cell in lines[1]]
    line_rows = [dict(zip(titles, row, strict=True)) for row in lines.iter_rows(min_row=2)]
    usage = [row for row in line_rows if row["Type"].value == "usage"]
    assert {row["Tenant slug"].value for row in line_rows} == {"acme"}
    jan = next(row for row in usage if row["Invoice"].value == books["acme_jan"].number)
    assert jan["Amount"].data_type == "n" and jan["Amount"].value == 25
    assert jan["Resource class"].value == H100 and jan["Period start"].is_date


def test_one_invoice_downloads_as_csv_xlsx_and_pdf(login, finance, books):
    client = login(finance)
    invoice = books["acme_jan"]

    rows = _csv(client.get(f"{LIST}{invoice.pk}/invoice.csv"))
    xlsx = client.get(f"{LIST}{invoice.pk}/invoice.xlsx")
    pdf = client.get(f"{LIST}{invoice.pk}/invoice.pdf")

    assert [row["invoice_number"] for row in rows] == [invoice.number]
    assert xlsx["Content-Disposition"] == f'attachment; filename="{invoice.number}.xlsx"'
    sheet = openpyxl.load_workbook(io.BytesIO(xlsx.content))[invoice.number]
    amounts = [row[9].value for row in sheet.iter_rows(min_row=11) if row[0].value == "usage"]
    assert amounts == [25]
    assert pdf["Content-Type"] == "application/pdf"
    assert pdf["Content-Disposition"] == f'attachment; filename="{invoice.number}.pdf"'
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages)
    assert invoice.number in text and "Acme Labs" in text and "25.00" in text
    trail = list(AuditEvent.objects.filter(action="invoice.export", object_id=str(invoice.pk))
                 .values_list("changes__format", flat=True))
    assert sorted(trail) == ["csv", "pdf", "xlsx"]


def test_a_draft_downloads_under_a_draft_name(login, finance, books):
    response = login(finance).get(f"{LIST}{books['acme_feb'].pk}/invoice.pdf")

    assert response["Content-Disposition"] == 'attachment; filename="draft-acme-2026-02.pdf"'


def test_an_unknown_download_format_is_404(login, finance, books):
    client = login(finance)

    assert client.get(f"{LIST}{books['acme_jan'].pk}/invoice.docx").status_code == 404
    assert client.get(f"{LIST}export.pdf").status_code == 404


def test_a_formula_in_a_tenant_name_stays_text_in_every_export(login, finance):
    hostile = tenant_with_cost_center("evil", '=HYPERLINK("http://x.example","pay")', "@SUM(1)")
    invoice = bill(hostile, JAN, 1)
    client = login(finance)

    rows = _csv(client.get(f"{LIST}export.csv"))
    single = _csv(client.get(f"{LIST}{invoice.pk}/invoice.csv"))
    xlsx = client.get(f"{LIST}export.xlsx")

    for row in rows + single:
        assert row["tenant"] == '\'=HYPERLINK("http://x.example","pay")'
        assert row["cost_center"] == "'@SUM(1)"
    workbook = openpyxl.load_workbook(io.BytesIO(b"".join(xlsx.streaming_content)))
    for cell in (workbook["Invoices"]["B2"], workbook["Lines"]["B2"]):
        assert cell.data_type == "s" and cell.value.startswith("=HYPERLINK")


def test_an_export_with_a_filter_that_cannot_be_read_exports_nothing(login, finance, books):
    response = login(finance).get(f"{LIST}export.csv?period=soon")

    assert response.status_code == 302
    assert not AuditEvent.objects.filter(action="invoices.export").exists()


# --- the roll-up by cost center ------------------------------------------------------------------


def test_the_cost_center_rollup_sums_billed_invoices_per_month(login, finance, books):
    invoicing.invoice_issue(invoice_id=books["globex_jan"].pk, actor=finance)
    invoicing.invoice_mark_paid(invoice_id=books["acme_jan"].pk, actor=finance)

    response = login(finance).get("/billing/cost-centers/")

    rows = [(r.cost_center, f"{r.month:%Y-%m}", r.invoices, r.total, r.paid, r.outstanding)
            for r in response.context["rows"]]
    # Issued and paid only, by default: Acme's February draft is not counted.
    assert rows == [
        ("CC-100", "2026-01", 1, Decimal("25.00"), Decimal("25.00"), Decimal("0.00")),
        ("CC-200", "2026-01", 1, Decimal("50.00"), Decimal("0.00"), Decimal("50.00")),
    ]
    assert response.context["totals"]["total"] == Decimal("75.00")
    chart = response.context["chart"]
    assert chart["labels"] == ["2026-01"]
    assert [(s["label"], s["data"]) for s in chart["datasets"]] == [
        ("CC-100", [25.0]), ("CC-200", [50.0])]
    assert 'id="cost-center-chart"' in response.content.decode()


def test_the_rollup_counts_drafts_when_asked_and_exports_csv(login, finance, books):
    client = login(finance)

    page = client.get("/billing/cost-centers/?status=draft&status=issued")
    export = client.get("/billing/cost-centers/?status=draft&status=issued&format=csv")

    assert [(r.cost_center, f"{r.month:%Y-%m}") for r in page.context["rows"]] == [
        ("CC-100", "2026-02"), ("CC-100", "2026-01"), ("CC-200", "2026-01")]
    assert export["Content-Disposition"].startswith('attachment; filename="cost-centers-')
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert rows[0] == {"cost_center": "CC-100", "month": "2026-02", "invoices": "1",
                       "subtotal": "10.00", "total": "10.00", "credited": "0.00",
                       "net_total": "10.00", "paid": "0.00", "outstanding": "0.00",
                       "over_settled": "0.00"}
    assert len(rows) == 3


def test_an_empty_rollup_says_so(login, finance):
    response = login(finance).get("/billing/cost-centers/")

    assert 'id="rollup-empty"' in response.content.decode()
    assert 'id="cost-center-chart"' not in response.content.decode()


# --- queries do not grow with the data ------------------------------------------------------------


def _grow(n: int, start: int) -> None:
    for i in range(start, start + n):
        tenant = tenant_with_cost_center(f"qc-{i}", f"Team {i}", f"CC-{i % 4}")
        bill(tenant, JAN, 1 + i % 3)
        invoicing.invoice_issue(invoice_id=bill(tenant, FEB, 2).pk, actor=None)


@pytest.mark.parametrize("path", [LIST, f"{LIST}?status=issued&sort=-total",
                                  "/billing/cost-centers/?status=draft&status=issued"])
def test_finance_lists_make_the_same_queries_at_two_sizes(
    login, finance, path, django_assert_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login(finance)
    client.get(path)  # the session and its user, warmed up
    counts = []
    for size, start in ((3, 0), (25, 100)):
        _grow(size, start)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        counts.append(len(queries))

    assert counts[0] == counts[1], counts
    with django_assert_num_queries(counts[1]):
        client.get(path)
    assert counts[1] <= 12


def test_the_period_filter_reads_the_month_in_utc(login, finance, tenant):
    invoice = bill(tenant, JAN, 1)
    assert invoice.period_start == datetime(2026, 1, 1, tzinfo=UTC)

    response = login(finance).get(f"{LIST}?period=2025-12")

    assert _rows(response) == []


def test_the_detail_shows_discount_and_tax_when_there_are_some(login, finance, tenant, settings):
    from billing.services.accounts import billing_account_update

    settings.BILLING_TAX_PERCENT = Decimal("19")
    billing_account_update(actor=finance, tenant=tenant, discount_percent=Decimal("10"))
    invoice = bill(tenant, JAN, 10)  # 25.00, less 10 % = 22.50, plus 19 % tax 4.28 = 26.78

    body = login(finance).get(f"{LIST}{invoice.pk}/").content.decode()

    assert "Discount 10 %" in body and "Tax 19 %" in body
    assert 'id="total-tax">4.28' in body
    assert 'id="total-total">EUR 26.78' in body


def test_the_detail_makes_the_same_queries_whatever_its_lines_and_trail(login, finance, tenant):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # Both with credit notes (one without reads one query fewer: the test above).
    small = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 1).pk, actor=finance)
    invoicing.credit_note_create(invoice_id=small.pk, actor=finance, amount=Decimal("0.50"),
                                 reason="Goodwill")
    for hour in range(6):
        UsageRecord.objects.create(tenant=tenant, source=UsageRecord.Source.ALLOCATED,
                                   resource=L40S, hour=utc(2026, 2, 2, hour), unit_seconds=3600)
    large = invoicing.invoice_issue(invoice_id=bill(tenant, FEB, 30).pk, actor=finance)
    for amount in ("1.00", "2.00", "3.00"):
        invoicing.credit_note_create(invoice_id=large.pk, actor=finance, amount=Decimal(amount),
                                     reason="Goodwill")
    client = login(finance)
    client.get(f"{LIST}{small.pk}/")
    counts = []
    for invoice in (small, large):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"{LIST}{invoice.pk}/").status_code == 200
        counts.append(len(queries))

    assert large.lines.count() == 2 and small.lines.count() == 1
    assert counts[0] == counts[1], counts


def test_the_trail_shows_every_decision_and_the_latest_downloads_with_a_count_of_the_rest(
        login, finance, tenant):
    from billing.selectors.finance import TRAIL_DOWNLOADS_SHOWN

    invoice = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 1).pk, actor=finance)
    client = login(finance)
    downloads = TRAIL_DOWNLOADS_SHOWN + 7
    for n in range(downloads):
        assert client.get(f"{LIST}{invoice.pk}/invoice.{('csv', 'xlsx')[n % 2]}").status_code == 200
    invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance, amount=Decimal("1.00"),
                                 reason="Goodwill after the downloads")

    response = client.get(f"{LIST}{invoice.pk}/")
    body = response.content.decode()

    assert response.status_code == 200
    trail = body[body.index('id="audit-trail"'):]
    trail = trail[:trail.index("</ul>")]
    # Every decision, whenever it was made: the issue before the downloads, the credit after;
    # and the latest downloads.
    assert "invoice.issue" in trail and "Goodwill after the downloads" in trail
    decisions = AuditEvent.objects.filter(object_type__in=["billing.invoice", "billing.creditnote"]
                                          ).exclude(action="invoice.export").count()
    assert decisions >= 2
    assert trail.count("<li") == decisions + TRAIL_DOWNLOADS_SHOWN
    assert "7 earlier downloads not shown" in trail
    assert AuditEvent.objects.filter(action="invoice.export", object_id=str(invoice.pk)).count() \
        == downloads


def test_bulk_issue_of_ids_that_are_not_invoices_says_so_and_issues_nothing(login, finance,
                                                                            books):
    client = login(finance)

    garbled = client.post(f"{LIST}issue/", {"invoice": ["²", "abc", books["acme_feb"].pk]})
    missing = client.post(f"{LIST}issue/", {"invoice": ["9" * 30]})

    assert garbled.status_code == missing.status_code == 302
    assert _messages(garbled) == ["Select the drafts to issue."]
    assert any(m.startswith("Not issued") and "999" in m for m in _messages(missing))
    assert Invoice.objects.filter(status=InvoiceStatus.DRAFT).count() == 2


# --- page size, and light rows ---------------------------------------------------------------


def test_page_size_asks_for_more_or_fewer_rows_up_to_a_cap(login, finance):
    for i in range(3):
        bill(tenant_with_cost_center(f"ps-{i}", f"Team {i}", "CC-1"), JAN, 1)
    client = login(finance)

    two = client.get(f"{LIST}?page_size=2&status=draft")
    assert two.status_code == 200
    assert len(two.context["page"].object_list) == 2
    assert "?page=2&amp;page_size=2&amp;status=draft" in two.content.decode()  # keeps its size
    assert client.get(f"{LIST}?page_size=100000").context["page"].paginator.per_page == 500
    assert client.get(f"{LIST}?page_size=0").context["page"].paginator.per_page == 1
    unread = client.get(f"{LIST}?page_size=many")
    assert unread.status_code == 200 and unread.context["page"].paginator.per_page == 50
    assert client.get(f"{LIST}export.csv?page_size=2").status_code == 200  # not a filter error


def test_a_row_links_to_its_invoice_and_shows_its_tenant(login, finance):
    invoice = bill(tenant_with_cost_center("row-1", "Row Labs", "CC-9"), JAN, 1)
    content = login(finance).get(LIST).content.decode()

    assert f'href="/billing/invoices/{invoice.pk}/"' in content
    assert 'Row Labs <span class="small text-muted">row-1</span>' in content
    assert '<option value="CC-9">CC-9</option>' in content


def test_the_chosen_filters_are_shown_and_escaped(login, finance):
    bill(tenant_with_cost_center("sel-1", "<b>Sel</b> & Co", "CC-<1>"), JAN, 1)
    content = login(finance).get(f"{LIST}?tenant=sel-1&cost_center=CC-<1>").content.decode()

    assert 'name="tenant" id="id_tenant" value="sel-1"' in content
    name = "&lt;b&gt;Sel&lt;/b&gt; &amp; Co"
    assert f'<span class="text-muted" id="tenant-name">{name}</span>' in content
    assert '<option value="CC-&lt;1&gt;" selected>CC-&lt;1&gt;</option>' in content


def test_the_list_rows_show_dates_and_amounts_as_before(login, finance, books):
    html = login(finance).get(LIST).content.decode()

    issued = books["acme_jan"]
    row = html[html.index(f'data-invoice="{issued.pk}"') :]
    row = row[: row.index("</tr>")]
    assert '<td class="text-nowrap">2026-01</td>' in row
    assert f'<td class="text-nowrap small">{issued.issue_date:%Y-%m-%d}</td>' in row
    assert f'<td class="text-nowrap small">{issued.due_date:%Y-%m-%d}</td>' in row
    assert '<td class="text-end text-nowrap">25.00</td>' in row
    assert "EUR 25.00</td>" in row
    draft = html[html.index(f'data-invoice="{books["acme_feb"].pk}"') :]
    draft = draft[: draft.index("</tr>")]
    assert draft.count('<td class="text-nowrap small">—</td>') == 2
