"""Billing's quote of a quota request's increase, as tenants keep it (tenants.quota.pricing)."""

from collections.abc import Mapping
from datetime import datetime

from tenants.quota.services import QuotedPrice

from .selectors.spend import quote_demand


def quoted_price(demand: Mapping[str, int], at: datetime) -> QuotedPrice | None:
    """The price of holding `demand` at `at`, or None when nothing in it is billed."""
    quote = quote_demand(demand=demand, at=at)
    if not quote.lines:
        return None
    return QuotedPrice(per_hour=quote.per_hour, per_month=quote.per_month,
                       currency=quote.currency, complete=quote.complete,
                       unit_prices={line.resource: line.unit_price_per_hour
                                    for line in quote.lines if line.priced})
