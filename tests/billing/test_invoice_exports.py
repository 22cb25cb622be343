"""Invoice list exports too long to write while one waits: asked for on the page or over the
API, written by a worker (eagerly here, by a real Celery worker over Redis in the last test),
listed on "Your exports" while in progress, downloaded once written with what the inline export
of the same filters holds; each person's own (anyone else's is a 404); a broker that is down
loses nothing (the sweep writes it later); old exports are deleted."""

import csv
import io
from datetime import timedelta

import openpyxl
import pytest
from django.contrib.messages import get_messages
from django.utils import timezone

from billing.models import ExportStatus, InvoiceExport
from billing.services import invoice_exports, invoicing
from core.models import AuditEvent
from tests.factories import RoleAssignmentFactory, UserFactory
from tests.support.fixtures_celery import CLOSED_PORT_BROKER, celery_broker, wait_until

from .finance_data import FEB, JAN, bill

pytestmark = pytest.mark.django_db

LIST = "/billing/invoices/"
EXPORTS = "/billing/invoices/exports/"
API = "/api/v1/billing/invoice-exports/"


@pytest.fixture
def books(tenant, other_tenant, finance):
    """Acme: January issued, February a draft; Globex: January a draft."""
    acme_jan = invoicing.invoice_issue(invoice_id=bill(tenant, JAN, 10).pk, actor=finance)
    return {"acme_jan": acme_jan, "acme_feb": bill(tenant, FEB, 4),
            "globex_jan": bill(other_tenant, JAN, 20)}


@pytest.fixture
def small_limits(settings):
    """Lists of more than one invoice are written in the background."""
    settings.INVOICE_EXPORT_INLINE_MAX = {"csv": 1, "xlsx": 1}


@pytest.fixture
def other_finance(db):
    return RoleAssignmentFactory(user=UserFactory(username="finance-2"), role="finance").user


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _messages(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def _sheets(body: bytes) -> dict[str, list[tuple]]:
    workbook = openpyxl.load_workbook(io.BytesIO(body))
    return {name: list(workbook[name].iter_rows(values_only=True))
            for name in workbook.sheetnames}


# --- the page ---------------------------------------------------------------------------------


def test_a_short_list_downloads_at_once_and_a_long_one_offers_the_background(
    login, finance, books, settings
):
    client = login(finance)
    settings.INVOICE_EXPORT_INLINE_MAX = {"csv": 5, "xlsx": 2}

    page = client.get(LIST).content.decode()

    # Three invoices: the CSV is a link that downloads, the XLSX a button that asks for it.
    assert 'id="export-csv" hx-boost="false" download' in page
    assert 'id="export-xlsx" data-background="true"' in page
    assert f'action="{LIST}export.xlsx"' in page
    # Filtered to two, both download at once.
    filtered = client.get(f"{LIST}?tenant=acme").content.decode()
    assert 'id="export-xlsx" hx-boost="false" download' in filtered


def test_following_a_long_lists_export_link_asks_before_writing_anything(
    login, finance, books, small_limits
):
    response = login(finance).get(f"{LIST}export.xlsx?status=draft")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Export 2 invoices as XLSX" in page and "more than the 1 written while you wait" in page
    assert f'action="{LIST}export.xlsx?status=draft"' in page
    assert not InvoiceExport.objects.exists()
    assert not AuditEvent.objects.filter(action="invoices.export").exists()


def test_asking_for_a_long_export_writes_it_and_lists_it_ready_to_download(
    login, finance, books, small_limits, settings, django_capture_on_commit_callbacks
):
    client = login(finance)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{LIST}export.csv?period=2026-01&page=2")

    export = InvoiceExport.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{EXPORTS}?new={export.pk}"
    assert export.requested_by == finance and export.fmt == "csv"
    assert export.filters == {"period": ["2026-01"]}  # the page is not a filter
    assert export.invoice_count == 2 and export.status == ExportStatus.READY
    assert export.attempts == 1 and export.finished_at is not None
    event = AuditEvent.objects.get(action="invoices.export")
    assert event.actor == finance and event.object_id == str(export.pk)
    assert event.changes == {"format": "csv", "invoices": 2, "filters": {"period": ["2026-01"]},
                             "background": True}
    assert "is being written" in _messages(response)[0]

    listed = client.get(response["Location"]).content.decode()
    assert f'id="export-{export.pk}" data-status="ready" class="table-active"' in listed
    assert f'href="{EXPORTS}{export.pk}/download/"' in listed
    assert "hx-trigger" not in listed  # nothing in progress: no polling

    download = client.get(f"{EXPORTS}{export.pk}/download/")
    assert download["Content-Disposition"] == (
        f'attachment; filename="invoices-{export.created_at:%Y-%m-%d}-{export.pk}.csv"')
    rows = list(csv.DictReader(io.StringIO(download.content.decode())))
    assert {row["tenant_slug"] for row in rows} == {"acme", "globex"}
    assert {row["invoice_number"] for row in rows} == {books["acme_jan"].number, "DRAFT"}
    # What the inline export of the same filters holds, byte for byte.
    settings.INVOICE_EXPORT_INLINE_MAX = {"csv": 100, "xlsx": 100}
    assert _body(client.get(f"{LIST}export.csv?period=2026-01")) == download.content


def test_a_background_xlsx_holds_what_the_inline_one_holds(
    login, finance, books, settings, django_capture_on_commit_callbacks
):
    client = login(finance)
    settings.INVOICE_EXPORT_INLINE_MAX = {"csv": 100, "xlsx": 100}
    inline = _sheets(_body(client.get(f"{LIST}export.xlsx?tenant=acme")))

    settings.INVOICE_EXPORT_INLINE_MAX = {"csv": 1, "xlsx": 1}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"{LIST}export.xlsx?tenant=acme")
    export = InvoiceExport.objects.get()
    written = _sheets(client.get(f"{EXPORTS}{export.pk}/download/").content)

    assert written == inline
    assert len(written["Invoices"]) == 3  # the header and Acme's two invoices


def test_the_exports_page_polls_while_one_is_being_written_and_says_why_one_failed(
    login, finance, books, small_limits
):
    client = login(finance)
    assert 'id="exports-empty"' in client.get(EXPORTS).content.decode()
    # Asked for while no worker ran (eager tasks run only on commit callbacks here).
    client.post(f"{LIST}export.xlsx")
    export = InvoiceExport.objects.get()
    assert export.status == ExportStatus.QUEUED

    page = client.get(EXPORTS).content.decode()
    assert f'hx-get="{EXPORTS}?page=1" hx-trigger="every 3s"' in page
    assert 'data-status="queued"' in page and "download/" not in page
    # The download of an export not written yet says so and goes back to the list.
    early = client.get(f"{EXPORTS}{export.pk}/download/")
    assert early.status_code == 302 and "is not written: Queued" in _messages(early)[0]

    # Its filters no longer read (say, a status that was renamed): it fails with the reason.
    InvoiceExport.objects.filter(pk=export.pk).update(filters={"status": ["archived"]})
    assert invoice_exports.invoice_export_render(export_id=export.pk) == ExportStatus.FAILED
    partial = client.get(EXPORTS, headers={"HX-Request": "true"}).content.decode()
    assert partial.strip().startswith('<div class="card" id="export-table">')  # no polling
    assert 'data-status="failed"' in partial and "It could not be written" in partial
    assert "archived" in partial


def test_each_person_sees_and_downloads_only_their_own_exports(
    login, finance, other_finance, books, small_limits, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        login(finance).post(f"{LIST}export.csv")
    export = InvoiceExport.objects.get()

    client = login(other_finance)
    assert client.get(f"{EXPORTS}{export.pk}/download/").status_code == 404
    assert f'id="export-{export.pk}"' not in client.get(EXPORTS).content.decode()


def test_tenants_cannot_open_the_exports_page(login, tenant_member, books):
    assert login(tenant_member).get(EXPORTS).status_code == 403


def test_asking_needs_the_csrf_token(finance, books, small_limits):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(finance, backend="django.contrib.auth.backends.ModelBackend")

    assert client.post(f"{LIST}export.csv").status_code == 403
    assert not InvoiceExport.objects.exists()


# --- written once, whatever happens -----------------------------------------------------------


def test_an_export_is_written_once_however_often_its_message_arrives(finance, books):
    export = invoice_exports.invoice_export_request(
        actor=finance, fmt="csv", filters={}, invoice_count=3)

    assert invoice_exports.invoice_export_render(export_id=export.pk) == ExportStatus.READY
    written = InvoiceExport.objects.get(pk=export.pk)
    assert invoice_exports.invoice_export_render(export_id=export.pk) == ExportStatus.READY
    again = InvoiceExport.objects.get(pk=export.pk)
    assert again.attempts == 1 and again.finished_at == written.finished_at
    assert invoice_exports.invoice_export_render(export_id=export.pk + 1000) == "gone"


def test_an_export_in_a_live_workers_hands_is_left_alone_and_a_dead_ones_is_taken_over(
    finance, books, settings
):
    export = invoice_exports.invoice_export_request(
        actor=finance, fmt="csv", filters={}, invoice_count=3)
    InvoiceExport.objects.filter(pk=export.pk).update(
        status=ExportStatus.RUNNING, started_at=timezone.now(), attempts=1)

    assert invoice_exports.invoice_export_render(export_id=export.pk) == ExportStatus.RUNNING

    # Past the time limit, the worker that took it is gone: the sweep queues it again.
    InvoiceExport.objects.filter(pk=export.pk).update(
        started_at=timezone.now() - timedelta(seconds=settings.INVOICE_EXPORT_TIME_LIMIT + 61))
    queued, deleted = invoice_exports.invoice_exports_sweep()
    assert (queued, deleted) == (1, 0)
    export.refresh_from_db()
    assert export.status == ExportStatus.READY and export.attempts == 2


def test_a_broker_that_is_down_loses_no_export_and_the_sweep_writes_it(
    login, finance, books, small_limits, django_capture_on_commit_callbacks
):
    with celery_broker(CLOSED_PORT_BROKER), django_capture_on_commit_callbacks(execute=True):
        response = login(finance).post(f"{LIST}export.xlsx")

    assert response.status_code == 302
    export = InvoiceExport.objects.get()
    assert export.status == ExportStatus.QUEUED
    # A minute later, with the broker back (eager here), the sweep queues it and it is written.
    InvoiceExport.objects.filter(pk=export.pk).update(
        created_at=timezone.now() - timedelta(minutes=2))
    assert invoice_exports.invoice_exports_sweep() == (1, 0)
    export.refresh_from_db()
    assert export.status == ExportStatus.READY and export.size > 0


def test_the_sweep_deletes_exports_past_their_keeping(finance, books, settings):
    old = invoice_exports.invoice_export_request(
        actor=finance, fmt="csv", filters={}, invoice_count=3)
    invoice_exports.invoice_export_render(export_id=old.pk)
    InvoiceExport.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=settings.INVOICE_EXPORT_KEEP_DAYS, hours=1))
    recent = invoice_exports.invoice_export_request(
        actor=finance, fmt="csv", filters={}, invoice_count=3)
    invoice_exports.invoice_export_render(export_id=recent.pk)

    assert invoice_exports.invoice_exports_sweep() == (0, 1)
    assert list(InvoiceExport.objects.values_list("pk", flat=True)) == [recent.pk]


# --- the API ----------------------------------------------------------------------------------


def test_the_api_writes_any_number_of_invoices_in_the_background(
    as_user, finance, books, django_capture_on_commit_callbacks
):
    client = as_user(finance)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(API, {"format": "xlsx", "filters": {"tenant": ["acme"]}},
                               format="json")

    assert response.status_code == 202
    export = InvoiceExport.objects.get()
    assert response["Location"] == f"http://testserver{API}{export.pk}/"
    assert response.json()["status"] == "queued" and response.json()["invoice_count"] == 2
    state = client.get(f"{API}{export.pk}/").json()
    assert state["status"] == "ready" and state["format"] == "xlsx"
    assert state["file_url"] == f"http://testserver{API}{export.pk}/file/"
    assert [item["id"] for item in client.get(API).json()["results"]] == [export.pk]

    download = client.get(state["file_url"])
    assert download.status_code == 200
    assert download["Content-Type"].startswith("application/vnd.openxmlformats")
    assert len(_sheets(download.content)["Invoices"]) == 3


def test_the_api_refuses_what_it_cannot_read_and_hides_others_exports(
    as_user, finance, other_finance, books
):
    client = as_user(finance)
    assert client.post(API, {"format": "pdf"}, format="json").status_code == 400
    bad = client.post(API, {"format": "csv", "filters": {"period": ["13-2026"]}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["error"]["fields"]["filters"] == [
        "Period: Enter a month as YYYY-MM, e.g. 2026-03."]
    unknown = client.post(API, {"format": "csv", "filters": {"colour": ["red"]}}, format="json")
    assert unknown.status_code == 400 and "colour" in str(unknown.json())
    assert not InvoiceExport.objects.exists()

    export = invoice_exports.invoice_export_request(
        actor=finance, fmt="csv", filters={}, invoice_count=3)
    not_yet = client.get(f"{API}{export.pk}/file/", HTTP_ACCEPT="text/csv")
    assert not_yet.status_code == 409
    assert not_yet.json()["error"]["message"] == f"Export {export.pk} is queued, not ready."

    other = as_user(other_finance)
    assert other.get(f"{API}{export.pk}/").status_code == 404
    assert other.get(f"{API}{export.pk}/file/").status_code == 404
    assert other.get(API).json()["results"] == []


def test_the_inline_api_export_of_a_long_list_points_to_the_background_one(
    as_user, finance, books, small_limits
):
    response = as_user(finance).get("/api/v1/billing/invoices/export.xlsx",
                                    HTTP_ACCEPT="application/vnd.openxmlformats-"
                                    "officedocument.spreadsheetml.sheet")

    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "3 invoices are more than the 1 written while you wait: POST the filters to "
        f"http://testserver{API} to have them written in the background.")
    assert not AuditEvent.objects.filter(action="invoices.export").exists()


@pytest.mark.worker
def test_a_real_worker_writes_an_export_asked_for_over_the_api(
    celery_worker, api_client, finance, books
):
    celery_worker()
    api_client.force_authenticate(finance)

    created = api_client.post(API, {"format": "csv", "filters": {"status": ["draft"]}},
                              format="json")
    url = created["Location"]

    state = wait_until(lambda: (s := api_client.get(url).json())["status"] == "ready" and s,
                       timeout=60)
    rows = list(csv.DictReader(io.StringIO(api_client.get(state["file_url"]).content.decode())))
    assert {row["tenant_slug"] for row in rows} == {"acme", "globex"}
    assert {row["invoice_number"] for row in rows} == {"DRAFT"}
