"""Rate cards through `rate_save` / `rate_delete`: bad input is refused with field errors and
changes nothing; what priced an issued invoice stays as it was."""

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from billing.models import Rate, UsageRecord
from billing.services import invoicing
from billing.services.rates import rate_delete, rate_save
from core.errors import RuleViolation
from core.models import AuditEvent

H100 = "gpu:nvidia-h100-80gb"


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def new_rate(**fields) -> Rate:
    values = {
        "resource": H100, "unit_price": Decimal("2.50"),
        "valid_from": utc(2026, 1, 1), "valid_to": utc(2026, 2, 1),
    }
    return Rate(**(values | fields))


@pytest.fixture
def january_rate(platform_admin):
    return rate_save(actor=platform_admin, rate=new_rate())


def _refused(platform_admin, rate: Rate) -> dict[str, list[str]]:
    before = list(Rate.objects.values_list("pk", "resource", "unit_price", "valid_from",
                                           "valid_to"))
    audits = AuditEvent.objects.count()
    with pytest.raises(ValidationError) as refused:
        rate_save(actor=platform_admin, rate=rate)
    after = list(Rate.objects.values_list("pk", "resource", "unit_price", "valid_from",
                                          "valid_to"))
    assert after == before and AuditEvent.objects.count() == audits
    return refused.value.message_dict


def test_a_rate_is_saved_and_audited(platform_admin):
    rate = rate_save(actor=platform_admin, rate=new_rate(note="launch price"))

    assert Rate.objects.get(pk=rate.pk).unit_price == Decimal("2.50")
    event = AuditEvent.objects.get(action="rate.create")
    assert event.actor == platform_admin
    assert event.changes["created"]["resource"] == H100
    assert event.changes["created"]["valid_from"] == "2026-01-01T00:00:00+00:00"


def test_an_overlapping_period_is_refused_naming_the_other_period(platform_admin, january_rate):
    errors = _refused(platform_admin, new_rate(valid_from=utc(2026, 1, 20), valid_to=None))

    assert list(errors) == ["valid_from"]
    assert "periods overlap" in errors["valid_from"][0]
    assert "2026-01-01T00:00:00+00:00 to 2026-02-01T00:00:00+00:00" in errors["valid_from"][0]


def test_an_open_ended_rate_overlaps_every_later_one(platform_admin):
    rate_save(actor=platform_admin, rate=new_rate(valid_to=None))

    errors = _refused(platform_admin, new_rate(valid_from=utc(2027, 1, 1), valid_to=None))
    assert "open end" in errors["valid_from"][0]


def test_adjacent_periods_and_other_classes_do_not_overlap(platform_admin, january_rate):
    rate_save(actor=platform_admin, rate=new_rate(valid_from=utc(2026, 2, 1), valid_to=None))
    rate_save(actor=platform_admin, rate=new_rate(resource="cpu", unit_price=Decimal("0.04")))

    assert Rate.objects.count() == 3


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"unit_price": Decimal("-0.01")}, "unit_price", "negative price"),
        ({"resource": "gpu:nvidia-h999"}, "resource", "not a known resource class"),
        ({"resource": "bananas"}, "resource", "not a known resource class"),
        ({"valid_from": utc(2026, 1, 1, 0, 30)}, "valid_from", "not on the hour"),
        ({"valid_to": utc(2026, 1, 31, 23, 59)}, "valid_to", "not on the hour"),
        ({"valid_to": utc(2025, 12, 1)}, "valid_to", "not after valid_from"),
        ({"valid_from": datetime(2026, 1, 1)}, "valid_from", "timezone-aware"),
        ({"unit": "fortnight"}, "unit", "unit must be"),
        ({"unit_price": None}, "unit_price", "Give a price"),
        ({"resource": ""}, "resource", "Name the resource class"),
    ],
)
def test_bad_input_is_refused_with_a_field_error(platform_admin, january_rate, fields, field,
                                                  words):
    rate = Rate.objects.get(pk=january_rate.pk)
    for name, value in fields.items():
        setattr(rate, name, value)

    errors = _refused(platform_admin, rate)

    assert words in " ".join(errors[field])


def test_a_price_too_large_for_the_column_is_a_field_error(platform_admin):
    errors = _refused(platform_admin, new_rate(unit_price=Decimal("1e12")))

    assert "unit_price" in errors


def test_a_rate_is_changed_and_deleted_with_audit_events(platform_admin, january_rate):
    january_rate.unit_price = Decimal("2.75")
    rate_save(actor=platform_admin, rate=january_rate)
    rate_delete(actor=platform_admin, rate_id=january_rate.pk)

    assert not Rate.objects.exists()
    update = AuditEvent.objects.get(action="rate.update")
    assert update.changes == {"unit_price": ["2.500000", "2.75"]}
    assert AuditEvent.objects.get(action="rate.delete").changes["deleted"]["resource"] == H100


@pytest.fixture
def issued_january(tenant, finance, january_rate):
    UsageRecord.objects.create(
        tenant=tenant, source="allocated", resource=H100, hour=utc(2026, 1, 5), unit_seconds=3600
    )
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    return invoicing.invoice_issue(invoice_id=draft.pk, actor=finance)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("unit_price", Decimal("9.99")),
        ("valid_from", utc(2026, 1, 2)),
        ("valid_to", utc(2026, 1, 20)),
        ("resource", "gpu:nvidia-h200"),
    ],
)
def test_a_rate_that_priced_an_issued_invoice_cannot_change(
    platform_admin, january_rate, issued_january, field, value
):
    rate = Rate.objects.get(pk=january_rate.pk)
    setattr(rate, field, value)

    errors = _refused(platform_admin, rate)

    assert "issue new rates from a later date" in " ".join(errors[field])


def test_a_rate_that_priced_an_issued_invoice_may_still_be_extended(
    platform_admin, january_rate, issued_january
):
    rate = Rate.objects.get(pk=january_rate.pk)
    rate.valid_to, rate.note = utc(2026, 3, 1), "extended to February"

    rate_save(actor=platform_admin, rate=rate)

    assert Rate.objects.get(pk=rate.pk).valid_to == utc(2026, 3, 1)


def test_a_rate_that_priced_an_issued_invoice_cannot_be_deleted(
    platform_admin, january_rate, issued_january
):
    with pytest.raises(RuleViolation, match="issue new rates from a later date"):
        rate_delete(actor=platform_admin, rate_id=january_rate.pk)

    assert Rate.objects.filter(pk=january_rate.pk).exists()
    assert not AuditEvent.objects.filter(action="rate.delete").exists()


def test_a_rate_that_priced_only_a_draft_may_change(platform_admin, tenant, january_rate):
    UsageRecord.objects.create(
        tenant=tenant, source="allocated", resource=H100, hour=utc(2026, 1, 5), unit_seconds=3600
    )
    draft = invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1))
    january_rate.unit_price = Decimal("3.00")

    rate_save(actor=platform_admin, rate=january_rate)

    assert invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1)).total == Decimal(
        "3.00"
    )
    assert draft.pk == invoicing.invoice_compute(tenant=tenant, month=date(2026, 1, 1)).pk
