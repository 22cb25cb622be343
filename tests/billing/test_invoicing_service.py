"""Invoices through the services, against amounts worked out by hand in the comments.

Rates used throughout (gpu:nvidia-h100-80gb): 2.50 per GPU-hour until 2026-01-16 00:00 UTC,
3.00 from then on. All periods are UTC calendar months; "now" is after them.
"""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from billing.models import (
    CreditNote,
    DocumentSequence,
    Invoice,
    InvoiceLine,
    Rate,
    UsageRecord,
)
from billing.selectors.invoices import invoice_document, invoices_visible_to
from billing.services import invoicing
from billing.services.accounts import billing_account_update
from core.errors import InvalidTransition, RuleViolation
from core.models import AuditEvent
from inventory.models import HealthEvent, Severity
from tests.factories import NodeFactory

H100 = "gpu:nvidia-h100-80gb"
L40S = "gpu:nvidia-l40s"
JAN = date(2026, 1, 1)


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def rates(db):
    return [
        Rate.objects.create(
            resource=H100, unit_price=Decimal("2.50"),
            valid_from=utc(2025, 11, 1), valid_to=utc(2026, 1, 16),
        ),
        Rate.objects.create(
            resource=H100, unit_price=Decimal("3.00"), valid_from=utc(2026, 1, 16), valid_to=None
        ),
    ]


def allocated(tenant, hour: datetime, seconds: int, resource: str = H100, **extra):
    return UsageRecord.objects.create(
        tenant=tenant, source=UsageRecord.Source.ALLOCATED, resource=resource, hour=hour,
        unit_seconds=seconds, **extra,
    )


def measured(tenant, hostname: str, hour: datetime, seconds: int, resource: str = H100):
    return UsageRecord.objects.create(
        tenant=tenant, source=UsageRecord.Source.MEASURED, resource=resource, hour=hour,
        hostname=hostname, unit_seconds=seconds, busy_seconds=seconds // 2,
    )


@pytest.fixture
def january(tenant, rates):
    """A workload's January, hour by hour, with its hand-computed price."""
    # Dec 31 23:00: the workload started in December; that hour belongs to December's invoice.
    allocated(tenant, utc(2025, 12, 31, 23), 3600)
    # Jan 1 00:00, the same workload on the other side of the month end: 1 GPU-hour at 2.50.
    allocated(tenant, utc(2026, 1, 1, 0), 3600)
    # Jan 10 10:00 a whole hour, 11:00 a partial one (deleted at 11:30): 1.5 GPU-hours at 2.50.
    allocated(tenant, utc(2026, 1, 10, 10), 3600)
    allocated(tenant, utc(2026, 1, 10, 11), 1800)
    # Jan 20 05:00: 2 GPUs for the hour; 06:00 scaled from 2 to 4 GPUs at 06:15:
    # 2 * 900 + 4 * 2700 = 12 600 GPU-seconds; 7 200 + 12 600 = 19 800 s = 5.5 GPU-hours at 3.00.
    allocated(tenant, utc(2026, 1, 20, 5), 7200)
    allocated(tenant, utc(2026, 1, 20, 6), 12600)
    # February: not January's business.
    allocated(tenant, utc(2026, 2, 1, 0), 3600)


def test_a_mid_month_price_change_splits_the_line_and_partial_hours_count(tenant, january):
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    lines = list(invoice.lines.order_by("position"))
    # 1 + 1 + 0.5 = 2.5 GPU-hours at 2.50 = 6.25 (Jan 1 to Jan 16); 5.5 at 3.00 = 16.50.
    shown = [(line.resource, line.quantity_hours, line.unit_price, line.amount) for line in lines]
    assert shown == [
        (H100, Decimal("2.500000"), Decimal("2.500000"), Decimal("6.25")),
        (H100, Decimal("5.500000"), Decimal("3.000000"), Decimal("16.50")),
    ]
    assert [line.unit_seconds for line in lines] == [9000, 19800]
    assert (lines[0].period_start, lines[0].period_end) == (utc(2026, 1, 1), utc(2026, 1, 16))
    assert (lines[1].period_start, lines[1].period_end) == (utc(2026, 1, 16), utc(2026, 2, 1))
    assert invoice.subtotal == invoice.total == Decimal("22.75")
    assert invoice.status == Invoice.Status.DRAFT and invoice.number is None
    assert invoice.tenant_name == "Acme Labs" and invoice.currency == "EUR"
    assert invoice.unpriced == []


def test_the_workload_spanning_two_months_is_billed_once_in_each(tenant, january):
    december = invoicing.invoice_compute(tenant=tenant, month=date(2025, 12, 1))
    january_invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    # December holds only its last hour: 1 GPU-hour at 2.50.
    assert [line.unit_seconds for line in december.lines.all()] == [3600]
    assert december.total == Decimal("2.50")
    jan_seconds = sum(line.unit_seconds for line in january_invoice.lines.all())
    assert jan_seconds == 3600 + 3600 + 1800 + 7200 + 12600


def test_discount_and_tax_are_each_rounded_once(tenant, january, settings, finance):
    settings.BILLING_TAX_PERCENT = Decimal("19")
    billing_account_update(actor=finance, tenant=tenant, discount_percent=Decimal("10"))

    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    # subtotal 22.75; discount 10 % = 2.275 -> -2.28; taxable 20.47; tax 19 % = 3.8893 -> 3.89;
    # total 20.47 + 3.89 = 24.36.
    assert (invoice.subtotal, invoice.discount, invoice.tax, invoice.total) == (
        Decimal("22.75"), Decimal("-2.28"), Decimal("3.89"), Decimal("24.36"),
    )
    assert invoice.discount_percent == Decimal("10") and invoice.tax_percent == Decimal("19")


def test_no_tax_configured_means_none_charged_or_shown(tenant, january, settings):
    settings.BILLING_TAX_PERCENT = None

    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    assert invoice.tax_percent is None and invoice.tax == Decimal("0")


def test_a_downtime_credit_from_a_critical_event_on_the_host_the_tenant_ran_on(tenant, rates):
    node = NodeFactory(hostname="gpu-a")
    other = NodeFactory(hostname="gpu-b")
    critical = HealthEvent.objects.create(
        node=node, kind=HealthEvent.Kind.XID, subject="gpu:0", severity=Severity.CRITICAL,
        detail="XID 79: GPU fell off the bus",
        opened_at=utc(2026, 1, 15, 10, 30), resolved_at=utc(2026, 1, 15, 12, 0),
    )
    # Not credited: a warning on the same host, a critical event on a host the tenant never used.
    HealthEvent.objects.create(
        node=node, kind=HealthEvent.Kind.THERMAL, severity=Severity.WARNING,
        opened_at=utc(2026, 1, 15, 9), resolved_at=utc(2026, 1, 15, 13),
    )
    HealthEvent.objects.create(
        node=other, kind=HealthEvent.Kind.XID, severity=Severity.CRITICAL,
        opened_at=utc(2026, 1, 15, 0), resolved_at=None,
    )
    # 2 GPUs held 10:00 to 13:00: 3 hours * 7 200 = 21 600 s = 6 GPU-hours at 2.50 = 15.00.
    for hour in (10, 11, 12):
        allocated(tenant, utc(2026, 1, 15, hour), 7200)
        measured(tenant, "gpu-a", utc(2026, 1, 15, hour), 7200)

    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    # Credit: 10:00 hour half under the event: 7 200 * 1 800 / 3 600 = 3 600 s; 11:00 wholly:
    # 7 200 s; 12:00 resolved: 0. 10 800 s = 3 GPU-hours at 2.50 = -7.50.
    usage, credit = invoice.lines.order_by("position")
    assert (usage.kind, usage.amount) == ("usage", Decimal("15.00"))
    assert (credit.kind, credit.unit_seconds, credit.quantity_hours, credit.amount) == (
        "credit", -10800, Decimal("-3.000000"), Decimal("-7.50"),
    )
    assert credit.description.startswith("Downtime credit")
    assert credit.events == [{
        "id": critical.pk, "hostname": "gpu-a", "kind": "xid",
        "detail": "XID 79: GPU fell off the bus",
        "opened_at": "2026-01-15T10:30:00+00:00", "resolved_at": "2026-01-15T12:00:00+00:00",
    }]
    assert invoice.subtotal == invoice.total == Decimal("7.50")
    document = invoice_document(invoice=invoice)
    assert [line.amount for line in document.credit_lines] == [Decimal("-7.50")]


def test_usage_without_a_price_is_reported_never_billed_at_zero(tenant, rates, finance):
    allocated(tenant, utc(2026, 1, 5, 0), 3600)
    allocated(tenant, utc(2026, 1, 5, 0), 7200, resource=L40S)  # no rate for the L40S
    allocated(tenant, utc(2026, 1, 5, 1), 3600, resource="gpu:no-such-model")

    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    assert invoice.total == Decimal("2.50")
    assert [(u["resource"], u["reason"], u["unit_seconds"]) for u in invoice.unpriced] == [
        ("gpu:no-such-model", "unknown resource class", 3600),
        (L40S, "no rate in force", 7200),
    ]
    assert [line.resource for line in invoice.lines.all()] == [H100]
    document = invoice_document(invoice=invoice)
    assert [line.quantity_hours for line in document.unpriced] == [Decimal("1"), Decimal("2")]
    # Issuing it would bill the L40S hours at zero: refused until the rate card prices them.
    with pytest.raises(RuleViolation, match="no rate prices"):
        invoicing.invoice_issue(invoice_id=invoice.pk, actor=finance, issue_date=date(2026, 2, 2))
    assert Invoice.objects.get(pk=invoice.pk).status == "draft"


def test_a_billing_period_in_the_future_or_not_ended_is_refused(tenant, rates):
    today = date.today()
    this_month = today.replace(day=1)
    next_month = (this_month + timedelta(days=32)).replace(day=1)
    allocated(tenant, utc(today.year, today.month, 1), 3600)
    audits = AuditEvent.objects.count()

    with pytest.raises(RuleViolation, match="has not ended yet"):
        invoicing.invoice_compute(tenant=tenant, month=this_month)
    for month in (next_month, date(today.year + 1, 6, 1)):
        with pytest.raises(RuleViolation, match="is in the future"):
            invoicing.invoice_compute(tenant=tenant, month=month)
    with pytest.raises(RuleViolation, match="has not ended yet"):
        invoicing.invoices_draft_month(month=this_month)

    assert Invoice.objects.count() == 0 and AuditEvent.objects.count() == audits


def test_recomputing_a_draft_replaces_its_lines(tenant, january):
    first = invoicing.invoice_compute(tenant=tenant, month=JAN)
    allocated(tenant, utc(2026, 1, 25, 0), 3600)  # late data: one more GPU-hour at 3.00

    second = invoicing.invoice_compute(tenant=tenant, month=JAN)

    assert second.pk == first.pk
    assert second.total == Decimal("25.75")
    assert InvoiceLine.objects.filter(invoice=second).count() == 2


def test_issue_numbers_dates_and_freezes_the_invoice(tenant, january, finance, settings):
    settings.BILLING_PAYMENT_TERMS_DAYS = 14
    draft = invoicing.invoice_compute(tenant=tenant, month=JAN)
    allocated(tenant, utc(2026, 1, 25, 0), 3600)  # arrives after the draft: issue recomputes

    invoice = invoicing.invoice_issue(
        invoice_id=draft.pk, actor=finance, issue_date=date(2026, 2, 3)
    )

    invoice.refresh_from_db()
    assert invoice.status == "issued" and invoice.number == "INV-2026-0001"
    assert (invoice.issue_date, invoice.due_date) == (date(2026, 2, 3), date(2026, 2, 17))
    assert invoice.issued_by == finance and invoice.issued_at is not None
    assert invoice.total == Decimal("25.75")
    event = AuditEvent.objects.get(action="invoice.issue")
    assert event.actor == finance and event.tenant_slug == "acme"
    assert event.changes["number"] == "INV-2026-0001" and event.changes["total"] == "25.75"
    with pytest.raises(RuleViolation, match="never changes"):
        invoicing.invoice_compute(tenant=tenant, month=JAN)
    with pytest.raises(InvalidTransition):
        invoicing.invoice_issue(invoice_id=invoice.pk, actor=finance)
    assert Invoice.objects.get(pk=invoice.pk).total == Decimal("25.75")


def test_numbers_run_in_sequence_per_year(finance, rates):
    from tests.factories import TenantFactory

    tenants = [TenantFactory(slug=f"team-{n}") for n in range(3)]
    for tenant in tenants:
        allocated(tenant, utc(2025, 11, 3), 3600)
        allocated(tenant, utc(2026, 1, 3), 3600)
    november = invoicing.invoices_draft_month(month=date(2025, 11, 1))
    january_drafts = invoicing.invoices_draft_month(month=JAN)
    assert len(november) == len(january_drafts) == 3

    issued_2025 = [
        invoicing.invoice_issue(invoice_id=draft.pk, actor=finance, issue_date=date(2025, 12, 1))
        for draft in november
    ]
    issued_now, errors = invoicing.invoices_issue(
        invoice_ids=[draft.pk for draft in january_drafts] + [issued_2025[0].pk], actor=finance
    )

    year = date.today().year
    assert [i.number for i in issued_2025] == ["INV-2025-0001", "INV-2025-0002", "INV-2025-0003"]
    assert [i.number for i in issued_now] == [f"INV-{year}-000{n}" for n in (1, 2, 3)]
    assert errors == {
        issued_2025[0].pk: "INV-2025-0001 cannot go from issued to issued."
    }
    assert DocumentSequence.objects.get(prefix="INV", year=2025).last == 3


def test_paid_and_void_move_an_issued_invoice_and_are_audited(tenant, january, finance):
    draft = invoicing.invoice_compute(tenant=tenant, month=JAN)
    with pytest.raises(InvalidTransition):
        invoicing.invoice_mark_paid(invoice_id=draft.pk, actor=finance)
    invoice = invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)

    paid = invoicing.invoice_mark_paid(invoice_id=invoice.pk, actor=finance, reference="BANK-42")

    paid.refresh_from_db()
    assert paid.status == "paid" and paid.payment_reference == "BANK-42"
    assert paid.paid_by == finance
    with pytest.raises(InvalidTransition):
        invoicing.invoice_void(invoice_id=paid.pk, actor=finance, reason="late")
    actions = list(AuditEvent.objects.filter(object_type="billing.invoice")
                   .order_by("id").values_list("action", flat=True))
    assert actions == ["invoice.compute", "invoice.issue", "invoice.pay"]


def test_void_needs_a_reason_and_lets_the_month_be_drafted_again(tenant, january, finance):
    invoice = invoicing.invoice_issue(
        invoice_id=invoicing.invoice_compute(tenant=tenant, month=JAN).pk, actor=finance
    )

    with pytest.raises(ValidationError) as refused:
        invoicing.invoice_void(invoice_id=invoice.pk, actor=finance, reason="  ")
    assert "reason" in refused.value.message_dict
    assert Invoice.objects.get(pk=invoice.pk).status == "issued"

    void = invoicing.invoice_void(invoice_id=invoice.pk, actor=finance, reason="Wrong tenant")

    void.refresh_from_db()
    assert (void.status, void.void_reason, void.voided_by) == ("void", "Wrong tenant", finance)
    assert AuditEvent.objects.get(action="invoice.void").changes["reason"] == "Wrong tenant"
    again = invoicing.invoice_compute(tenant=tenant, month=JAN)
    assert again.pk != void.pk and again.is_draft and again.total == void.total


def test_credit_notes_never_exceed_what_is_left(tenant, january, finance):
    invoice = invoicing.invoice_issue(
        invoice_id=invoicing.invoice_compute(tenant=tenant, month=JAN).pk, actor=finance
    )  # total 22.75

    note = invoicing.credit_note_create(
        invoice_id=invoice.pk, actor=finance, amount=Decimal("20.00"), reason="Goodwill"
    )
    assert note.number == f"CN-{date.today().year}-0001" and note.amount == Decimal("20.00")
    for amount in (Decimal("2.76"), Decimal("0"), Decimal("-1"), Decimal("0.001")):
        with pytest.raises(ValidationError) as refused:
            invoicing.credit_note_create(
                invoice_id=invoice.pk, actor=finance, amount=amount, reason="More"
            )
        assert "amount" in refused.value.message_dict
    with pytest.raises(ValidationError, match="more than is left"):
        invoicing.credit_note_create(
            invoice_id=invoice.pk, actor=finance, amount=Decimal("2.76"), reason="More"
        )
    last = invoicing.credit_note_create(
        invoice_id=invoice.pk, actor=finance, amount=Decimal("2.75"), reason="Rest"
    )

    assert last.number.endswith("-0002")
    assert CreditNote.objects.filter(invoice=invoice).count() == 2
    invoice.refresh_from_db()
    assert invoice.total == Decimal("22.75")  # the invoice itself never changes
    assert AuditEvent.objects.filter(action="credit_note.create").count() == 2


def test_a_credit_note_larger_than_its_invoice_changes_nothing(tenant, january, finance):
    invoice = invoicing.invoice_issue(
        invoice_id=invoicing.invoice_compute(tenant=tenant, month=JAN).pk, actor=finance
    )
    audits = AuditEvent.objects.count()

    with pytest.raises(ValidationError, match="more than is left"):
        invoicing.credit_note_create(
            invoice_id=invoice.pk, actor=finance, amount=Decimal("1000.00"), reason="Oops"
        )

    assert CreditNote.objects.count() == 0
    assert not DocumentSequence.objects.filter(prefix="CN").exclude(last=0).exists()
    assert AuditEvent.objects.count() == audits


def test_a_draft_takes_no_credit_note(tenant, january, finance):
    draft = invoicing.invoice_compute(tenant=tenant, month=JAN)

    with pytest.raises(RuleViolation, match="only an issued or paid invoice"):
        invoicing.credit_note_create(
            invoice_id=draft.pk, actor=finance, amount=Decimal("1.00"), reason="x"
        )
    assert CreditNote.objects.count() == 0


def test_tenant_members_see_their_issued_invoices_only(
    tenant, other_tenant, january, finance, tenant_member, other_tenant_member, platform_admin
):
    allocated(other_tenant, utc(2026, 1, 2), 3600)
    mine = invoicing.invoice_compute(tenant=tenant, month=JAN)
    theirs = invoicing.invoice_compute(tenant=other_tenant, month=JAN)

    assert set(invoices_visible_to(finance)) == {mine, theirs}
    assert set(invoices_visible_to(platform_admin)) == {mine, theirs}
    assert list(invoices_visible_to(tenant_member)) == []  # a draft is finance's working copy
    invoicing.invoice_issue(invoice_id=mine.pk, actor=finance)
    invoicing.invoice_issue(invoice_id=theirs.pk, actor=finance)
    assert list(invoices_visible_to(tenant_member)) == [mine]
    assert list(invoices_visible_to(other_tenant_member)) == [theirs]


def test_the_document_of_an_issued_invoice_is_what_was_stored(tenant, january, finance):
    invoice = invoicing.invoice_issue(
        invoice_id=invoicing.invoice_compute(tenant=tenant, month=JAN).pk,
        actor=finance, issue_date=date(2026, 2, 2),
    )
    Rate.objects.filter(unit_price=Decimal("3.00")).delete()  # the card changes afterwards

    document = invoice_document(invoice=Invoice.objects.get(pk=invoice.pk))

    assert document.number == "INV-2026-0001" and document.tenant_slug == "acme"
    assert (document.period_start, document.period_end) == (date(2026, 1, 1), date(2026, 1, 31))
    assert document.due_date == date(2026, 2, 2) + timedelta(days=30)
    assert [line.amount for line in document.lines] == [Decimal("6.25"), Decimal("16.50")]
    assert document.totals.total == Decimal("22.75")


def test_a_downtime_credit_never_exceeds_what_the_hour_billed(tenant, rates):
    node = NodeFactory(hostname="gpu-c")
    HealthEvent.objects.create(
        node=node, kind=HealthEvent.Kind.NOT_READY, severity=Severity.CRITICAL,
        opened_at=utc(2026, 1, 8, 0), resolved_at=None,  # still open
    )
    # Reserved 1 GPU-hour, DCGM saw 2 (clock skew): the credit is the hour billed, -2.50.
    allocated(tenant, utc(2026, 1, 8, 3), 3600)
    measured(tenant, "gpu-c", utc(2026, 1, 8, 3), 7200)
    # DCGM saw usage in an hour nothing was reserved: nothing billed, nothing credited.
    measured(tenant, "gpu-c", utc(2026, 1, 8, 4), 3600)

    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    credit = invoice.lines.get(kind="credit")
    assert (credit.unit_seconds, credit.amount) == (-3600, Decimal("-2.50"))
    assert [event["resolved_at"] for event in credit.events] == [None]
    assert invoice.total == Decimal("0.00")


def test_the_month_end_drafts_leave_issued_invoices_alone(tenant, other_tenant, rates, finance):
    allocated(tenant, utc(2026, 1, 3), 3600)
    allocated(other_tenant, utc(2026, 1, 3), 7200)
    first = invoicing.invoices_draft_month(month=JAN)
    issued = invoicing.invoice_issue(invoice_id=first[0].pk, actor=finance)
    allocated(tenant, utc(2026, 1, 4), 3600)
    allocated(other_tenant, utc(2026, 1, 4), 3600)

    again = invoicing.invoices_draft_month(month=JAN)

    assert [invoice.tenant_name for invoice in first] == ["Acme Labs", "Globex Corp"]
    assert [(invoice.tenant_name, invoice.total) for invoice in again] == [
        ("Globex Corp", Decimal("7.50"))
    ]
    assert Invoice.objects.get(pk=issued.pk).total == Decimal("2.50")


def test_documents_of_many_invoices_take_the_same_queries(tenant, other_tenant, rates,
                                                          django_assert_num_queries):
    from billing.selectors.invoices import invoice_documents

    allocated(tenant, utc(2026, 1, 3), 3600)
    allocated(other_tenant, utc(2026, 1, 20), 7200)
    invoicing.invoices_draft_month(month=JAN)

    with django_assert_num_queries(1):  # a generator: its query runs as it is read
        documents = list(invoice_documents(invoices=Invoice.objects.order_by("tenant_name")))

    assert [(d.tenant_slug, d.number, d.totals.total) for d in documents] == [
        ("acme", "DRAFT", Decimal("2.50")), ("globex", "DRAFT", Decimal("6.00")),
    ]


def test_a_payment_in_the_future_is_refused(tenant, january, finance):
    invoice = invoicing.invoice_issue(
        invoice_id=invoicing.invoice_compute(tenant=tenant, month=JAN).pk, actor=finance
    )

    with pytest.raises(ValidationError) as refused:
        invoicing.invoice_mark_paid(
            invoice_id=invoice.pk, actor=finance,
            paid_at=datetime.now(tz=UTC) + timedelta(days=3),
        )
    assert "paid_at" in refused.value.message_dict
    assert Invoice.objects.get(pk=invoice.pk).status == "issued"


def _meter(workload, history, *, ended_at) -> None:
    """Allocated records of `workload` as the meter writes them (one per class and hour)."""
    from billing import calculations

    allocations = calculations.allocation_history(history, ended_at=ended_at)
    buckets = calculations.allocated_seconds(
        allocations, window_start=utc(2025, 12, 1), window_end=utc(2026, 2, 1)
    )
    for (hour, resource), seconds in buckets.items():
        allocated(workload.tenant, hour, seconds, resource=resource, workload=workload)


def test_workloads_metered_across_the_month_end_and_a_mid_hour_scale(tenant, rates):
    from tenants.models import Workload

    spanning = Workload.objects.create(tenant=tenant, kind="vm", name="spanning")
    scaled = Workload.objects.create(tenant=tenant, kind="inference", name="scaled")
    # 1 GPU from Dec 31 22:30 to Jan 1 01:15: 5 400 s in December, 4 500 s in January.
    _meter(spanning, [(utc(2025, 12, 31, 22, 30), {H100: 1})], ended_at=utc(2026, 1, 1, 1, 15))
    # 2 GPUs from Jan 20 05:00, scaled to 4 at 06:15, deleted at 07:00:
    # 2 * 3 600 + 2 * 900 + 4 * 2 700 = 19 800 s.
    _meter(scaled, [(utc(2026, 1, 20, 5), {H100: 2}), (utc(2026, 1, 20, 6, 15), {H100: 4})],
           ended_at=utc(2026, 1, 20, 7))

    december = invoicing.invoice_compute(tenant=tenant, month=date(2025, 12, 1))
    january_invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    # December: 1.5 GPU-hours at 2.50 = 3.75.
    assert [(line.unit_seconds, line.amount) for line in december.lines.all()] == [
        (5400, Decimal("3.75"))
    ]
    # January: 1.25 GPU-hours at 2.50 = 3.125 -> 3.13 (rounded once, half up);
    # 5.5 GPU-hours at 3.00 = 16.50. Total 19.63.
    assert [(line.unit_seconds, line.quantity_hours, line.amount)
            for line in january_invoice.lines.order_by("position")] == [
        (4500, Decimal("1.250000"), Decimal("3.13")),
        (19800, Decimal("5.500000"), Decimal("16.50")),
    ]
    assert january_invoice.total == Decimal("19.63")
    stored = UsageRecord.objects.filter(source="allocated").values_list("unit_seconds", flat=True)
    assert sum(stored) == 5400 + 4500 + 19800  # every second on exactly one invoice


@pytest.mark.parametrize("issue_date", [date(2026, 1, 31), date.today() + timedelta(days=1)])
def test_an_issue_date_inside_the_month_or_in_the_future_is_refused(
    tenant, january, finance, issue_date
):
    draft = invoicing.invoice_compute(tenant=tenant, month=JAN)

    with pytest.raises(ValidationError) as refused:
        invoicing.invoice_issue(invoice_id=draft.pk, actor=finance, issue_date=issue_date)

    assert "issue_date" in refused.value.message_dict
    assert Invoice.objects.get(pk=draft.pk).status == "draft"
    assert not DocumentSequence.objects.exclude(last=0).exists()
