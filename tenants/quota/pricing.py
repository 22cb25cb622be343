"""The price a quota request's increase is quoted at when it is sent (billing's quote, as the
request form's price card shows it), kept on the request for the requester and reviewer."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from billing.selectors.spend import quote_demand

from .services import QuotedPrice


def quoted_price(lines: Iterable[tuple[str, int]]) -> QuotedPrice | None:
    """Today's price of `lines` (resource, more), or None when nothing in them is billed."""
    demand = dict(lines)
    if not demand:
        return None
    quote = quote_demand(demand=demand, at=timezone.now())
    if not quote.lines:
        return None
    return QuotedPrice(per_hour=quote.per_hour, per_month=quote.per_month,
                       currency=quote.currency, complete=quote.complete)
