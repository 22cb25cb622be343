"""An issued invoice's files (PDF, CSV, XLSX) are rendered once and kept (InvoiceFile):
rendered after its issue, payment or void (a task after the commit) or at the first download,
served as kept while the invoice keeps the status they print, never stale; a draft's are
always rendered live. Finance, the API and the tenant get the same kept PDF, and every
download is still audited."""

import io

import pytest
from pypdf import PdfReader

from billing.models import InvoiceFile
from billing.services import invoice_files, invoicing
from core.models import AuditEvent

from .finance_data import FEB, JAN, bill

pytestmark = pytest.mark.django_db

LIST = "/billing/invoices/"


def _text(pdf: bytes) -> str:
    """The PDF's text, in capitals as the status prints."""
    return "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages).upper()


@pytest.fixture
def acme(tenant):
    return tenant  # acme, "Acme Labs"


@pytest.fixture
def issued(acme, finance):
    return invoicing.invoice_issue(invoice_id=bill(acme, JAN, 10).pk, actor=finance)


@pytest.mark.parametrize("fmt", ["pdf", "csv", "xlsx"])
def test_the_first_download_keeps_the_file_and_the_next_are_served_from_it(
    login, finance, issued, fmt, django_assert_num_queries
):
    client = login(finance)
    first = client.get(f"{LIST}{issued.pk}/invoice.{fmt}")
    kept = InvoiceFile.objects.get(invoice=issued, fmt=fmt)

    assert first.status_code == 200 and bytes(kept.body) == first.content
    assert kept.status == "issued" and kept.layout == invoice_files.LAYOUT
    # Served as kept: the session, its user, the user's roles and tenants (one query), the
    # invoice with its file, and the audit event (in a savepoint here, the test being a
    # transaction). No lines read, nothing rendered.
    with django_assert_num_queries(7):
        again = client.get(f"{LIST}{issued.pk}/invoice.{fmt}")
    assert again.content == first.content
    assert again["Content-Disposition"] == f'attachment; filename="{issued.number}.{fmt}"'
    assert AuditEvent.objects.filter(action="invoice.export", object_id=str(issued.pk)).count() == 2


def test_a_kept_file_is_what_rendering_it_now_gives(login, finance, issued):
    client = login(finance)
    client.get(f"{LIST}{issued.pk}/invoice.csv")

    served = client.get(f"{LIST}{issued.pk}/invoice.csv").content
    issued.refresh_from_db()
    assert served == invoice_files.render(invoice=issued, fmt="csv")


def test_issuing_paying_and_voiding_render_the_files_after_the_commit(
    acme, finance, django_capture_on_commit_callbacks, settings
):
    settings.INVOICE_FILES_PRERENDER = True  # as with a worker (the tests run tasks eagerly)
    with django_capture_on_commit_callbacks(execute=True):
        invoice = invoicing.invoice_issue(invoice_id=bill(acme, JAN, 10).pk, actor=finance)
    files = {f.fmt: f for f in InvoiceFile.objects.filter(invoice=invoice)}
    assert set(files) == {"pdf", "csv", "xlsx"} and {f.status for f in files.values()} == {
        "issued"}
    assert "ISSUED" in _text(bytes(files["pdf"].body))

    with django_capture_on_commit_callbacks(execute=True):
        invoicing.invoice_mark_paid(invoice_id=invoice.pk, actor=finance)
    pdf = InvoiceFile.objects.get(invoice=invoice, fmt="pdf")
    assert pdf.status == "paid" and "PAID" in _text(bytes(pdf.body))

    other = invoicing.invoice_issue(invoice_id=bill(acme, FEB, 3).pk, actor=finance)
    with django_capture_on_commit_callbacks(execute=True):
        invoicing.invoice_void(invoice_id=other.pk, actor=finance, reason="wrong")
    assert InvoiceFile.objects.get(invoice=other, fmt="csv").status == "void"
    # Nothing left to render: the task does nothing the second time.
    assert invoice_files.invoice_files_render(invoice_id=other.pk) == []


def test_without_a_worker_issuing_renders_nothing_and_the_first_download_does(
    login, acme, finance, django_capture_on_commit_callbacks
):
    # Eager mode (the demo, the tests): rendering after the decision would run in the request.
    with django_capture_on_commit_callbacks(execute=True):
        invoice = invoicing.invoice_issue(invoice_id=bill(acme, JAN, 1).pk, actor=finance)
    assert not InvoiceFile.objects.filter(invoice=invoice).exists()

    assert login(finance).get(f"/billing/invoices/{invoice.pk}/invoice.pdf").status_code == 200
    assert InvoiceFile.objects.filter(invoice=invoice, fmt="pdf").exists()


@pytest.mark.parametrize("move", ["pay", "void"])
def test_a_file_kept_before_a_status_change_is_never_served_after_it(
    login, finance, issued, move
):
    client = login(finance)
    before = client.get(f"{LIST}{issued.pk}/invoice.pdf").content
    assert "ISSUED" in _text(before)
    # The change's task has not run (a broker down, a worker behind): the kept file is stale.
    if move == "pay":
        invoicing.invoice_mark_paid(invoice_id=issued.pk, actor=finance)
    else:
        invoicing.invoice_void(invoice_id=issued.pk, actor=finance, reason="wrong")

    after = client.get(f"{LIST}{issued.pk}/invoice.pdf").content
    status = "paid" if move == "pay" else "void"
    assert status.upper() in _text(after) and "ISSUED" not in _text(after)
    assert InvoiceFile.objects.get(invoice=issued, fmt="pdf").status == status
    csv_after = client.get(f"{LIST}{issued.pk}/invoice.csv").content.decode()
    assert f",{status}," in csv_after


def test_a_file_of_an_older_layout_is_rendered_again(login, finance, issued):
    client = login(finance)
    client.get(f"{LIST}{issued.pk}/invoice.csv")
    InvoiceFile.objects.filter(invoice=issued).update(body=b"old layout")
    assert client.get(f"{LIST}{issued.pk}/invoice.csv").content == b"old layout"

    InvoiceFile.objects.filter(invoice=issued).update(layout=invoice_files.LAYOUT - 1)

    assert issued.number.encode() in client.get(f"{LIST}{issued.pk}/invoice.csv").content


def test_a_draft_is_rendered_live_and_never_kept(login, finance, acme):
    draft = bill(acme, JAN, 10)
    client = login(finance)

    first = client.get(f"{LIST}{draft.pk}/invoice.pdf")
    bill(acme, JAN, 20)  # 20 GPU-hours more, recomputed: 30 in all
    second = client.get(f"{LIST}{draft.pk}/invoice.csv").content.decode()

    assert "DRAFT" in _text(first.content) and ",75.00," in second
    assert not InvoiceFile.objects.exists()


def test_finance_the_api_and_the_tenant_get_the_same_kept_pdf(
    login, finance, issued, tenant_owner, api_client
):
    login(finance).get(f"{LIST}{issued.pk}/invoice.pdf")
    # Whatever is kept is what everyone is served (a marker instead of a PDF shows it).
    InvoiceFile.objects.filter(invoice=issued, fmt="pdf").update(body=b"%PDF kept")
    tenant_pdf = login(tenant_owner).get(f"/billing/t/acme/invoices/{issued.pk}.pdf")
    api_client.force_authenticate(finance)
    api_pdf = api_client.get(f"/api/v1/billing/invoices/{issued.pk}/export.pdf")
    finance_pdf = login(finance).get(f"{LIST}{issued.pk}/invoice.pdf")

    assert tenant_pdf.content == api_pdf.content == finance_pdf.content == b"%PDF kept"
