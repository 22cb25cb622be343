"""Rate cards: a price per unit-hour (or unit-month) of a resource class over a period.

A rate is checked with `billing.calculations.check_rates` against the other stored rates of
its class: no overlapping periods, no negative price, no unknown class, whole UTC hours, a
period that ends after it starts. Errors are field errors naming the conflicting period.

What an issued invoice was priced at never changes: a rate that priced part of an issued (or
paid) invoice keeps its class, price and unit, and its period may only be shortened down to
the end of what it priced. New prices start from a later date, as new rates.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from core.audit import audit
from core.errors import RuleViolation

from .. import calculations
from ..models import InvoiceLine, InvoiceStatus, Rate

FIELDS = ("resource", "unit_price", "unit", "valid_from", "valid_to", "note")
FROZEN = (InvoiceStatus.ISSUED, InvoiceStatus.PAID)
# PostgreSQL's exclusion constraint (migration 0006): no two rates of a class overlap in time.
OVERLAP_CONSTRAINT = "billing_rate_periods_never_overlap"


def _as_calculation(rate: Rate) -> calculations.Rate:
    return calculations.Rate(
        resource=rate.resource,
        unit_price=rate.unit_price,
        valid_from=rate.valid_from,
        valid_to=rate.valid_to,
        unit=rate.unit,
    )


def _field_for(problem: str) -> str:
    """Which form field a problem of `check_rates` is about."""
    if "not a known resource class" in problem:
        return "resource"
    if "unit must be" in problem:
        return "unit"
    if "price" in problem or "Decimal or int" in problem or "finite" in problem:
        return "unit_price"
    if "valid_to" in problem or "open end" in problem:
        return "valid_to"
    return "valid_from"


def _add(errors: dict[str, list[str]], field: str, message: str) -> None:
    errors.setdefault(field, []).append(message)


def _lock_class(resource: str) -> None:
    """Serialise saves of one resource class: two overlapping rates cannot both pass the check.
    (Row locks cannot guard a class that has no rates yet.)"""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            key = f"billing.rate:{resource}"
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key])
    list(Rate.objects.select_for_update().filter(resource=resource).values_list("pk"))


def rate_validate(*, rate: Rate) -> None:
    """Raise ValidationError (field errors) if `rate` is not a valid rate on the stored card."""
    errors: dict[str, list[str]] = {}
    if not rate.resource:
        _add(errors, "resource", "Name the resource class, e.g. gpu:nvidia-h100-80gb.")
    if rate.unit_price is None:
        _add(errors, "unit_price", "Give a price (0 or more).")
    if rate.valid_from is None:
        _add(errors, "valid_from", "Give the first hour the price is in force (UTC).")
    if errors:
        raise ValidationError(errors)
    candidate = _as_calculation(rate)
    try:
        calculations.check_rates([candidate])
    except calculations.RateCardError as error:
        for problem in error.problems:
            _add(errors, _field_for(problem), problem)
    if errors:
        raise ValidationError(errors)
    others = Rate.objects.filter(resource=rate.resource)
    if rate.pk is not None:
        others = others.exclude(pk=rate.pk)
    try:
        calculations.check_rates(
            [*map(_as_calculation, others), candidate], known_classes_only=False
        )
    except calculations.RateCardError as error:
        for problem in error.problems:
            _add(errors, "valid_from", f"{problem}: end the other rate first, or start later.")
    try:
        rate.full_clean(exclude=[name for name in errors])
    except ValidationError as error:
        for name, messages in error.message_dict.items():
            for message in messages:
                _add(errors, name, message)
    if errors:
        raise ValidationError(errors)


def _issued_until(rate: Rate) -> datetime | None:
    """The end of the last issued period this rate priced (None if it priced none)."""
    lines = InvoiceLine.objects.filter(
        invoice__status__in=FROZEN,
        resource=rate.resource,
        unit_price=rate.unit_price,
        unit=rate.unit,
        period_end__gt=rate.valid_from,
    )
    if rate.valid_to is not None:
        lines = lines.filter(period_start__lt=rate.valid_to)
    return lines.aggregate(until=Max("period_end"))["until"]


def _check_issued_prices_kept(stored: Rate, rate: Rate) -> None:
    until = _issued_until(stored)
    if until is None:
        return
    why = (
        f"This rate priced invoices already issued (up to {until:%Y-%m-%d %H:%M} UTC), which "
        "never change: issue new rates from a later date instead."
    )
    errors: dict[str, list[str]] = {}
    for name in ("resource", "unit_price", "unit", "valid_from"):
        if getattr(stored, name) != getattr(rate, name):
            _add(errors, name, why)
    if rate.valid_to is not None and rate.valid_to < until:
        earliest = f"{until:%Y-%m-%d %H:%M} UTC"
        _add(errors, "valid_to", f"{why} It can end at {earliest} at the earliest.")
    if errors:
        raise ValidationError(errors)


def _snapshot(rate: Rate) -> dict[str, Any]:
    values = {name: getattr(rate, name) for name in FIELDS}
    return {
        name: value.isoformat() if isinstance(value, datetime) else (
            None if value is None else str(value)
        )
        for name, value in values.items()
    }


def rate_check(*, rate: Rate) -> None:
    """Everything `rate_save` checks, without saving (forms show the errors on their fields)."""
    rate_validate(rate=rate)
    stored = Rate.objects.filter(pk=rate.pk).first() if rate.pk is not None else None
    if stored is not None:
        _check_issued_prices_kept(stored, rate)


def _save_without_overlap(rate: Rate) -> None:
    """Save `rate`; a rate of its class written meanwhile by a path that skipped the class lock
    trips the database's exclusion constraint, which is the same refusal as the check's."""
    adding = rate._state.adding
    try:
        with transaction.atomic():
            rate.save()
    except IntegrityError as error:
        if OVERLAP_CONSTRAINT not in str(error):
            raise
        rate._state.adding = adding
        if adding:
            rate.pk = None
        rate_validate(rate=rate)  # names the overlapping rate, now committed
        raise ValidationError({"valid_from": [
            "Another rate of this class, saved at the same time, covers part of this period: "
            "end it first, or start later."]}) from None


@transaction.atomic
def rate_save(*, actor, rate: Rate) -> Rate:
    """Create or change a rate (validated against the card and issued invoices; audited)."""
    stored = None
    if rate.pk is not None:
        stored = Rate.objects.select_for_update().filter(pk=rate.pk).first()
        if stored is None:
            raise RuleViolation("That rate no longer exists: it was deleted meanwhile.")
    for resource in sorted({rate.resource or "", stored.resource if stored else ""} - {""}):
        _lock_class(resource)
    rate_validate(rate=rate)
    if stored is not None:
        _check_issued_prices_kept(stored, rate)
    _save_without_overlap(rate)
    after = _snapshot(rate)
    changes = (
        {"created": after}
        if stored is None
        else {
            name: [before, after[name]]
            for name, before in _snapshot(stored).items()
            if before != after[name]
        }
    )
    audit(
        actor=actor,
        action="rate.create" if stored is None else "rate.update",
        obj=rate,
        changes=changes,
    )
    return rate


@transaction.atomic
def rate_delete(*, actor, rate_id: int) -> None:
    """Delete a rate that priced no issued invoice (audited)."""
    rate = Rate.objects.select_for_update().filter(pk=rate_id).first()
    if rate is None:
        return  # gone already: deleting is idempotent
    until = _issued_until(rate)
    if until is not None:
        raise RuleViolation(
            f"The rate {rate} priced invoices already issued (up to {until:%Y-%m-%d} UTC), "
            "which never change: it cannot be deleted. End it, and issue new rates from a "
            "later date instead."
        )
    audit(actor=actor, action="rate.delete", obj=rate, changes={"deleted": _snapshot(rate)})
    rate.delete()
