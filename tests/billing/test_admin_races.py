"""Two admins saving at once on PostgreSQL, each in their own transaction and connection: the one
that loses the race gets the form again with the service's error on it, never a server error,
and nothing of theirs is saved. Behind the service's lock, an exclusion constraint makes two
overlapping rates of one class impossible in the database itself."""

import threading
import time
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client

from billing.models import CreditNote, Rate, UsageRecord
from billing.services import invoicing, rates
from core.models import AuditEvent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's locks"),
]

H100 = "gpu:nvidia-h100-80gb"


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _rate_form(valid_from: str, price: str = "3.00") -> dict:
    return {"resource": H100, "unit_price": price, "unit": "hour",
            "valid_from_0": valid_from, "valid_from_1": "00:00:00",
            "valid_to_0": "", "valid_to_1": "", "note": ""}


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                       " AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


def _race(first, second):
    """Run `first` in a transaction of its own and hold it open; run `second` (an admin's
    request) meanwhile, until it waits on a lock `first` holds; then commit `first`. Returns
    what each returned (or raised)."""
    saved, release = threading.Event(), threading.Event()
    results: dict = {}

    def hold():
        try:
            with transaction.atomic():
                results["first"] = first()
                saved.set()
                assert release.wait(timeout=30)
        except Exception as error:
            results["first"] = error
            saved.set()
        finally:
            connection.close()

    def run():
        try:
            results["second"] = second()
        except Exception as error:  # what a server error would have been
            results["second"] = error
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert saved.wait(timeout=30)
    racer = threading.Thread(target=run)
    racer.start()
    deadline = time.monotonic() + 20
    while not _waiting_on_a_lock():
        assert time.monotonic() < deadline, "the second save never waited for the first"
        time.sleep(0.05)
    release.set()
    holder.join(timeout=30)
    racer.join(timeout=30)
    return results["first"], results["second"]


@pytest.fixture
def admin_client(platform_admin) -> Client:
    client = Client()
    client.force_login(platform_admin, backend="django.contrib.auth.backends.ModelBackend")
    return client


def test_overlapping_rates_of_one_class_are_impossible_in_the_database():
    Rate.objects.create(resource=H100, unit_price=Decimal("2"), valid_from=utc(2025, 1, 1),
                        valid_to=utc(2025, 7, 1))
    # Back to back, another class, and after the end: all fine.
    Rate.objects.create(resource=H100, unit_price=Decimal("3"), valid_from=utc(2025, 7, 1))
    Rate.objects.create(resource="cpu", unit_price=Decimal("1"), valid_from=utc(2025, 1, 1))

    with pytest.raises(IntegrityError, match=rates.OVERLAP_CONSTRAINT), transaction.atomic():
        Rate.objects.create(resource=H100, unit_price=Decimal("4"), valid_from=utc(2026, 1, 1))
    with pytest.raises(IntegrityError, match=rates.OVERLAP_CONSTRAINT), transaction.atomic():
        Rate.objects.create(resource=H100, unit_price=Decimal("4"), valid_from=utc(2024, 1, 1),
                            valid_to=utc(2025, 1, 1, 1))
    assert Rate.objects.count() == 3


def test_two_admins_adding_overlapping_rates_the_loser_gets_a_form_error(
    platform_admin, admin_client
):
    def first():
        return rates.rate_save(actor=platform_admin, rate=Rate(
            resource=H100, unit_price=Decimal("2.50"), valid_from=utc(2026, 1, 1)))

    won, lost = _race(first, lambda: admin_client.post("/admin/billing/rate/add/",
                                                       _rate_form("2026-03-01")))

    assert isinstance(won, Rate), won
    assert not isinstance(lost, Exception), lost
    assert lost.status_code == 200
    page = lost.content.decode()
    assert "errorlist" in page and "periods overlap" in page
    assert list(Rate.objects.values_list("pk", flat=True)) == [won.pk]
    assert AuditEvent.objects.filter(action="rate.create").count() == 1


def test_a_rate_written_past_the_service_meets_the_constraint_as_a_form_error(admin_client):
    # A write that skipped the service's lock (a script, a shell): the database refuses the
    # second rate, and the service shows it as the check would have.
    def first():
        return Rate.objects.create(resource=H100, unit_price=Decimal("2.50"),
                                   valid_from=utc(2026, 1, 1))

    won, lost = _race(first, lambda: admin_client.post("/admin/billing/rate/add/",
                                                       _rate_form("2026-03-01")))

    assert isinstance(won, Rate), won
    assert not isinstance(lost, Exception), lost
    assert lost.status_code == 200 and "periods overlap" in lost.content.decode()
    assert list(Rate.objects.values_list("pk", flat=True)) == [won.pk]


def test_two_credit_notes_together_over_the_total_the_loser_gets_a_form_error(
    tenant, finance, platform_admin, admin_client
):
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"), valid_from=utc(2025, 1, 1))
    for hour in range(10):
        UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                                   hour=utc(2026, 1, 2, hour), unit_seconds=3600)
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    invoice = invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)
    assert invoice.total == Decimal("25.00")

    def first():
        return invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance,
                                            amount=Decimal("15.00"), reason="outage")

    won, lost = _race(first, lambda: admin_client.post("/admin/billing/creditnote/add/", {
        "invoice": invoice.pk, "amount": "15.00", "reason": "the same outage"}))

    assert isinstance(won, CreditNote), won
    assert not isinstance(lost, Exception), lost
    assert lost.status_code == 200
    page = lost.content.decode()
    assert "errorlist" in page and "10.00" in page  # what is left to credit
    assert list(CreditNote.objects.values_list("pk", flat=True)) == [won.pk]
    assert AuditEvent.objects.filter(action="credit_note.create").count() == 1
