"""Issuing on PostgreSQL from several connections at once: one issue of a draft wins, and
numbers taken concurrently run without gaps or duplicates."""

import threading
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.db import connection

from billing.models import CreditNote, Invoice, Rate, UsageRecord
from billing.services import invoicing
from core.errors import InvalidTransition
from core.models import AuditEvent
from tests.factories import TenantFactory

H100 = "gpu:nvidia-h100-80gb"


def _drafts(count: int) -> list[Invoice]:
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"),
                        valid_from=datetime(2025, 1, 1, tzinfo=UTC))
    drafts = []
    for n in range(count):
        tenant = TenantFactory(slug=f"race-{n}")
        UsageRecord.objects.create(tenant=tenant, source="allocated", resource=H100,
                                   hour=datetime(2026, 1, 2, tzinfo=UTC), unit_seconds=3600)
        drafts.append(invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1)))
    return drafts


def _at_once(calls) -> list:
    """Run each call in its own thread (its own database connection), started together."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait(timeout=10)
            results[index] = call()
        except Exception as error:  # the test inspects what each one got
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_issues_of_one_draft_one_wins(finance):
    (draft,) = _drafts(1)

    results = _at_once([
        lambda: invoicing.invoice_issue(invoice_id=draft.pk, actor=finance),
        lambda: invoicing.invoice_issue(invoice_id=draft.pk, actor=finance),
    ])

    won = [r for r in results if isinstance(r, Invoice)]
    lost = [r for r in results if not isinstance(r, Invoice)]
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], InvalidTransition), lost
    invoice = Invoice.objects.get(pk=draft.pk)
    assert invoice.status == "issued" and invoice.number == won[0].number
    assert AuditEvent.objects.filter(action="invoice.issue").count() == 1


@pytest.mark.django_db(transaction=True)
def test_numbers_taken_at_once_have_no_gaps_or_duplicates(finance):
    drafts = _drafts(4)

    results = _at_once([
        (lambda pk=draft.pk: invoicing.invoice_issue(invoice_id=pk, actor=finance))
        for draft in drafts
    ])

    assert all(isinstance(r, Invoice) for r in results), results
    year = date.today().year
    assert sorted(r.number for r in results) == [f"INV-{year}-000{n}" for n in (1, 2, 3, 4)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_credit_notes_never_credit_more_than_the_invoice(finance):
    (draft,) = _drafts(1)
    invoice = invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)  # 2.50

    results = _at_once([
        lambda: invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance,
                                             amount=Decimal("2.00"), reason="outage"),
        lambda: invoicing.credit_note_create(invoice_id=invoice.pk, actor=finance,
                                             amount=Decimal("2.00"), reason="outage"),
    ])

    assert sum(isinstance(r, CreditNote) for r in results) == 1, results
    assert CreditNote.objects.count() == 1
