"""The month-end drafts, computed for every tenant at once from usage summed per rate period in
SQL, come to exactly what each tenant's month comes to hour by hour through the calculations
(how invoices were computed before): the same lines, amounts, unpriced usage, credits, discount
and tax, whatever the mix of rate periods, monthly rates, unpriced and unknown classes, downtime
credits and records off the hour (that tenant refused, the others drafted)."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing import calculations
from billing.models import Invoice, Rate, UsageRecord
from billing.selectors.invoices import downtime_credit
from billing.selectors.rates import rate_card
from billing.selectors.usage import usage_amounts
from billing.services import invoicing
from billing.services.accounts import billing_account_for, billing_account_update
from core.errors import RuleViolation
from core.models import AuditEvent
from inventory.models import HealthEvent, Severity
from tests.factories import NodeFactory, TenantFactory

JAN = datetime(2026, 1, 1, tzinfo=UTC)
FEB = datetime(2026, 2, 1, tzinfo=UTC)
HOURS = 744
H100, CPU, L40S = "gpu:nvidia-h100-80gb", "cpu", "gpu:nvidia-l40s"  # L40S has no rate
STORAGE = "storage-gib"  # priced per GiB-month
UNKNOWN = "gpu:made-up-9000"  # outside the vocabulary, yet the card prices it
CLASSES = [H100, CPU, L40S, STORAGE, UNKNOWN]

record = st.tuples(
    st.integers(min_value=0, max_value=2),  # which tenant
    st.sampled_from(CLASSES),
    st.integers(min_value=-2, max_value=HOURS + 1),  # a few hours outside January
    st.integers(min_value=0, max_value=8 * 3600),
)
price = st.decimals(min_value=0, max_value=60, places=4)


def hourly_computation(tenant, *, tax) -> calculations.InvoiceComputation:
    """The tenant's January as it was computed before: its hours priced one by one."""
    rates = rate_card(start=JAN, end=FEB)
    usage = usage_amounts(tenant_ids=[tenant.pk], start=JAN, end=FEB).get(tenant.pk, [])
    credits = downtime_credit(tenant_id=tenant.pk, start=JAN, end=FEB, rates=rates,
                              usage=usage).lines
    return calculations.invoice_lines(
        usage,
        rates,
        period_start=JAN,
        period_end=FEB,
        discount_percent=billing_account_for(tenant=tenant).discount_percent,
        tax_percent=tax,
        credits=credits,
    )


def stored(invoice: Invoice) -> tuple:
    lines = [
        (
            line.position,
            line.kind,
            line.resource,
            line.period_start,
            line.period_end,
            line.unit_seconds,
            line.quantity_hours,
            line.quantity,
            line.unit,
            line.unit_price,
            line.amount,
        )
        for line in invoice.lines.order_by("position")
    ]
    return (
        invoice.subtotal,
        invoice.discount,
        invoice.tax,
        invoice.total,
        invoice.tax_percent,
        invoice.discount_percent,
        lines,
        invoice.unpriced,
    )


def expected(computation: calculations.InvoiceComputation) -> tuple:
    lines = [
        (
            position,
            line.kind,
            line.resource,
            line.period_start,
            line.period_end,
            line.unit_seconds,
            line.quantity_hours,
            line.quantity,
            line.unit,
            line.unit_price,
            line.amount,
        )
        for position, line in enumerate(computation.lines + computation.credit_lines, start=1)
    ]
    unpriced = [
        {
            "resource": u.resource,
            "label": u.label,
            "reason": u.reason,
            "period_start": u.period_start.isoformat(),
            "period_end": u.period_end.isoformat(),
            "unit_seconds": u.unit_seconds,
            "quantity_hours": str(u.quantity_hours),
        }
        for u in computation.unpriced
    ]
    return (
        computation.subtotal,
        computation.discount,
        computation.tax,
        computation.total,
        computation.tax_percent,
        computation.discount_percent,
        lines,
        unpriced,
    )


@pytest.mark.django_db
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    records=st.lists(record, max_size=40),
    split=st.integers(min_value=1, max_value=HOURS - 1),
    prices=st.tuples(price, price, price, price, price),
    discount=st.decimals(min_value=0, max_value=100, places=2),
    tax=st.none() | st.decimals(min_value=0, max_value=30, places=2),
    outage=st.tuples(
        st.integers(min_value=0, max_value=HOURS * 60), st.integers(min_value=1, max_value=48 * 60)
    ),
    off_the_hour=st.booleans(),
)
def test_the_month_drafted_at_once_is_each_tenants_month_hour_by_hour(
    finance, records, split, prices, discount, tax, outage, off_the_hour
):
    with transaction.atomic():
        tenants = [TenantFactory(slug=f"team-{n}", name=f"Team {n}") for n in range(3)]
        node = NodeFactory(hostname="gpu-a")
        Rate.objects.create(
            resource=H100,
            unit_price=prices[0],
            valid_from=JAN - timedelta(days=31),
            valid_to=JAN + timedelta(hours=split),
        )
        Rate.objects.create(
            resource=H100, unit_price=prices[1], valid_from=JAN + timedelta(hours=split)
        )
        Rate.objects.create(resource=CPU, unit_price=prices[2], valid_from=JAN)
        Rate.objects.create(
            resource=STORAGE,
            unit_price=prices[3],
            unit="month",
            valid_from=JAN - timedelta(days=31),
        )
        Rate.objects.create(resource=UNKNOWN, unit_price=prices[4], valid_from=JAN)
        billing_account_update(actor=finance, tenant=tenants[1], discount_percent=discount)
        for index, resource, hour, seconds in records:
            at = JAN + timedelta(hours=hour)
            UsageRecord.objects.update_or_create(
                tenant=tenants[index],
                source="allocated",
                resource=resource,
                hour=at,
                defaults={"unit_seconds": seconds},
            )
            if resource == H100 and index == 0:  # DCGM saw what was reserved, on one host
                UsageRecord.objects.update_or_create(
                    tenant=tenants[index],
                    source="measured",
                    resource=resource,
                    hour=at,
                    hostname="gpu-a",
                    defaults={"unit_seconds": seconds},
                )
        if off_the_hour:  # never written by metering: the calculations refuse it
            UsageRecord.objects.create(
                tenant=tenants[2],
                source="allocated",
                resource=CPU,
                hour=JAN + timedelta(hours=3, minutes=30),
                unit_seconds=60,
            )
        opened = JAN + timedelta(minutes=outage[0])
        HealthEvent.objects.create(
            node=node,
            kind="xid",
            severity=Severity.CRITICAL,
            opened_at=opened,
            resolved_at=opened + timedelta(minutes=outage[1]),
        )

        with override_settings(BILLING_TAX_PERCENT=tax):
            expectations = {}
            for tenant in tenants:
                try:
                    expectations[tenant.pk] = expected(hourly_computation(tenant, tax=tax))
                except calculations.BillingError:
                    expectations[tenant.pk] = None
            drafts = invoicing.invoices_draft_month(month=date(2026, 1, 1))
            again = invoicing.invoices_draft_month(month=date(2026, 1, 1))

        with_usage = {tenants[index].pk for index, _, hour, _ in records if 0 <= hour < HOURS}
        if off_the_hour:
            with_usage.add(tenants[2].pk)
        drafted = {pk for pk in with_usage if expectations[pk] is not None}
        assert {invoice.tenant_id for invoice in drafts} == drafted
        assert [invoice.pk for invoice in again] == [invoice.pk for invoice in drafts]
        assert Invoice.objects.count() == len(drafted)
        for invoice in Invoice.objects.all():
            assert stored(invoice) == expectations[invoice.tenant_id]
        assert AuditEvent.objects.filter(action="invoice.compute").count() == 2 * len(drafted)
        transaction.set_rollback(True)


def test_a_tenants_draft_and_the_month_end_agree_and_each_is_audited(tenant, other_tenant, finance):
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"), valid_from=JAN)
    for owner, seconds in ((tenant, 3600), (other_tenant, 5400)):
        UsageRecord.objects.create(
            tenant=owner,
            source="allocated",
            resource=H100,
            hour=JAN + timedelta(hours=5),
            unit_seconds=seconds,
        )
    alone = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1), actor=finance)

    drafts = invoicing.invoices_draft_month(month=date(2026, 1, 1), actor=finance)

    assert [(d.tenant.slug, d.total) for d in drafts] == [
        ("acme", Decimal("2.50")),
        ("globex", Decimal("3.75")),
    ]
    assert drafts[0].pk == alone.pk
    events = AuditEvent.objects.filter(action="invoice.compute").order_by("id")
    assert [
        (e.object_id, e.actor, e.tenant_slug, e.changes["created"], e.changes["total"])
        for e in events
    ] == [
        (str(alone.pk), finance, "acme", True, "2.50"),
        (str(alone.pk), finance, "acme", False, "2.50"),
        (str(drafts[1].pk), finance, "globex", True, "3.75"),
    ]


def test_a_month_that_cannot_be_priced_is_refused_for_one_tenant_alone(tenant):
    Rate.objects.create(resource=H100, unit_price=Decimal("2.50"), valid_from=JAN)
    UsageRecord.objects.create(
        tenant=tenant,
        source="allocated",
        resource=H100,
        hour=JAN + timedelta(minutes=30),
        unit_seconds=60,
    )

    with pytest.raises(RuleViolation, match="does not start on the hour"):
        invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    assert invoicing.invoices_draft_month(month=date(2026, 1, 1)) == []
