"""Property tests of invoices computed from stored usage: the lines, discount and tax add up to
the total, and every unit-second of the month's allocated records is on the invoice exactly
once (billed on a line, or shown as unpriced): none lost, none doubled."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing.models import Invoice, Rate, UsageRecord
from billing.selectors.invoices import invoice_document
from billing.services import invoicing
from billing.services.accounts import billing_account_update
from inventory.models import HealthEvent, Severity
from tests.factories import NodeFactory

H100, CPU, L40S = "gpu:nvidia-h100-80gb", "cpu", "gpu:nvidia-l40s"  # L40S has no rate
JAN = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = 744

record = st.tuples(
    st.sampled_from([H100, CPU, L40S]),
    st.integers(min_value=-3, max_value=HOURS + 2),  # a few hours outside January
    st.integers(min_value=0, max_value=8 * 3600),
)
price = st.decimals(min_value=0, max_value=60, places=4)


@pytest.mark.django_db
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    records=st.lists(record, max_size=40),
    split=st.integers(min_value=1, max_value=HOURS - 1),
    prices=st.tuples(price, price, price),
    discount=st.decimals(min_value=0, max_value=100, places=2),
    tax=st.none() | st.decimals(min_value=0, max_value=30, places=2),
    outage=st.tuples(st.integers(min_value=0, max_value=HOURS * 60),
                     st.integers(min_value=1, max_value=48 * 60)),
)
def test_lines_add_up_and_no_unit_second_is_lost_or_doubled(
    tenant, finance, records, split, prices, discount, tax, outage
):
    with transaction.atomic():
        node = NodeFactory(hostname="gpu-a")
        Rate.objects.create(resource=H100, unit_price=prices[0], valid_from=JAN - timedelta(
            days=31), valid_to=JAN + timedelta(hours=split))
        Rate.objects.create(resource=H100, unit_price=prices[1],
                            valid_from=JAN + timedelta(hours=split))
        Rate.objects.create(resource=CPU, unit_price=prices[2], valid_from=JAN)
        billing_account_update(actor=finance, tenant=tenant, discount_percent=discount)
        for resource, hour, seconds in records:
            at = JAN + timedelta(hours=hour)
            UsageRecord.objects.create(tenant=tenant, source="allocated", resource=resource,
                                       hour=at, unit_seconds=seconds)
            if resource == H100:  # DCGM saw what was reserved, on one host
                UsageRecord.objects.update_or_create(
                    tenant=tenant, source="measured", resource=resource, hour=at,
                    hostname="gpu-a", defaults={"unit_seconds": seconds},
                )
        opened = JAN + timedelta(minutes=outage[0])
        HealthEvent.objects.create(node=node, kind="xid", severity=Severity.CRITICAL,
                                   opened_at=opened,
                                   resolved_at=opened + timedelta(minutes=outage[1]))

        with override_settings(BILLING_TAX_PERCENT=tax):
            invoice = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))

        lines = list(invoice.lines.all())
        usage = [line for line in lines if line.kind == "usage"]
        credits = [line for line in lines if line.kind == "credit"]
        assert sum((line.amount for line in lines), Decimal(0)) == invoice.subtotal
        assert invoice.subtotal + invoice.discount + invoice.tax == invoice.total
        assert invoice.total >= 0 and invoice.discount <= 0 and invoice.tax >= 0
        in_january = sum(
            seconds for _, hour, seconds in records if 0 <= hour < HOURS
        )
        billed = sum(line.unit_seconds for line in usage)
        unpriced = sum(item["unit_seconds"] for item in invoice.unpriced)
        assert billed + unpriced == in_january
        h100 = sum(s for r, hour, s in records if r == H100 and 0 <= hour < HOURS)
        assert 0 <= -sum(line.unit_seconds for line in credits) <= h100
        document = invoice_document(invoice=Invoice.objects.get(pk=invoice.pk))
        assert document.totals.total == invoice.total
        assert sum((line.amount for line in document.lines + document.credit_lines),
                   Decimal(0)) == invoice.subtotal
        transaction.set_rollback(True)
