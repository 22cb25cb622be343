"""The price a quota request's increase is quoted at when it is sent (billing's quote, as the
request form's price card shows it), kept on the request for the requester and reviewer.

Prices are billing's, and billing sits above tenants (core < inventory < tenants < billing): it
installs its quote when Django starts (billing.apps). Without billing, nothing is quoted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from django.utils import timezone

from .services import QuotedPrice

# (demand: resource class -> units, at) -> QuotedPrice, or None when nothing in it is billed
Quote = Callable[[Mapping[str, int], datetime], QuotedPrice | None]
_quote: Quote | None = None


def install(quote: Quote) -> None:
    """Called once by the billing app when Django starts."""
    global _quote
    _quote = quote


def quoted_price(lines: Iterable[tuple[str, int]]) -> QuotedPrice | None:
    """Today's price of `lines` (resource, more), or None when nothing in them is billed."""
    demand = dict(lines)
    if not demand or _quote is None:
        return None
    return _quote(demand, timezone.now())
