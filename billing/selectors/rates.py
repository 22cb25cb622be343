"""The rate card as the calculations read it."""

from datetime import datetime

from django.db.models import Q

from .. import calculations
from ..models import Rate


def rate_card(
    *, start: datetime | None = None, end: datetime | None = None
) -> list[calculations.Rate]:
    """Every rate in force at some instant of [start, end) (all of them without bounds)."""
    rates = Rate.objects.all()
    if end is not None:
        rates = rates.filter(valid_from__lt=end)
    if start is not None:
        rates = rates.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=start))
    return [
        calculations.Rate(
            resource=rate.resource,
            unit_price=rate.unit_price,
            valid_from=rate.valid_from,
            valid_to=rate.valid_to,
            unit=rate.unit,
        )
        for rate in rates.order_by("resource", "valid_from")
    ]
