"""An invoice's total broken down by workload, by person or by label, to the cent.

An invoice rounds once per line (a resource class over a rate period), then once for the
discount and once for the tax. A breakdown must add up to that total exactly, so it never
rounds a group on its own: each line's rounded amount is shared out between the groups in
proportion to the unit-seconds each held of it (the exact amount each would pay at the line's
rate), by the largest-remainder method, a cent at a time; the discount is then shared in
proportion to each row's amount, the tax in proportion to each row's amount after discount.

Rows: one per group key; `UNATTRIBUTED` for a line no group's usage explains (usage of no
workload or person or label, or a line whose usage has gone since it was billed); `CREDIT`
for the downtime credit lines (GPU time measured on a host under a critical event: a host's,
not a workload's). Sum of the rows' totals == the invoice's total, always.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import Enum
from fractions import Fraction
from math import floor
from typing import NamedTuple


class Special(Enum):
    """The keys of the rows no group explains: members of their own type, so that no workload
    id, username or label (a person's text, which may read "__credit__") is ever equal to one."""

    UNATTRIBUTED = "unattributed"
    CREDIT = "credit"


UNATTRIBUTED = Special.UNATTRIBUTED
CREDIT = Special.CREDIT
CENT = Decimal("0.01")


class GroupUsage(NamedTuple):
    """Unit-seconds a group held of one invoice line: (resource class, the line's start)."""

    key: Hashable
    resource: str
    line_start: datetime
    unit_seconds: int


class BilledLine(NamedTuple):
    """What an invoice line bills: a usage line's class, start and amount; or a credit."""

    kind: str  # "usage" or "credit"
    resource: str
    period_start: datetime
    amount: Decimal


@dataclass
class BreakdownRow:
    """What one group comes to on an invoice (or several, summed)."""

    key: Hashable
    usage: Decimal = Decimal("0.00")
    credit: Decimal = Decimal("0.00")
    discount: Decimal = Decimal("0.00")
    tax: Decimal = Decimal("0.00")
    unit_seconds: int = 0

    @property
    def subtotal(self) -> Decimal:
        return self.usage + self.credit

    @property
    def total(self) -> Decimal:
        return self.usage + self.credit + self.discount + self.tax

    def add(self, other: BreakdownRow) -> None:
        self.usage += other.usage
        self.credit += other.credit
        self.discount += other.discount
        self.tax += other.tax
        self.unit_seconds += other.unit_seconds


def key_order(key: Hashable) -> tuple:
    """A total order over group keys of any kind (ids, usernames, labels, the special keys,
    and (line, key) pairs): the weights come from a query in no set order, and the same
    invoice must share out the same way, and list its pieces in the same order, every time."""
    if isinstance(key, Special):
        return (0, key.value)
    if isinstance(key, int | Decimal | Fraction) and not isinstance(key, bool):
        return (1, key)
    if isinstance(key, str):
        return (2, key)
    if isinstance(key, tuple):
        return (3, tuple(key_order(part) for part in key))
    return (4, repr(key))


def apportion(amount: Decimal, weights: Mapping[Hashable, Fraction | int | Decimal]
              ) -> dict[Hashable, Decimal]:
    """`amount` (whole cents) shared in proportion to `weights`, in whole cents adding up to
    `amount` exactly: each share's exact value rounded down, then the cents left over given
    one each to the shares with the largest remainders (ties: in `key_order`). With no weight
    at all, everything is UNATTRIBUTED's. The shares come in `key_order`."""
    cents = int((amount / CENT).to_integral_value())
    total_weight = sum((Fraction(w) for w in weights.values()), Fraction(0))
    if not weights or total_weight == 0:
        return {UNATTRIBUTED: amount} if amount else {}
    keys = sorted(weights, key=key_order)
    exact = {key: Fraction(cents) * Fraction(weights[key]) / total_weight for key in keys}
    shares = {key: floor(value) for key, value in exact.items()}
    left = cents - sum(shares.values())
    # Stable: equal remainders keep `key_order`.
    order = sorted(keys, key=lambda key: exact[key] - shares[key], reverse=True)
    for key in order[:left]:
        shares[key] += 1
    return {key: Decimal(share) * CENT for key, share in shares.items()}


def breakdown(
    *, lines: Iterable[BilledLine], usage: Iterable[GroupUsage], discount: Decimal,
    tax: Decimal,
) -> dict[Hashable, BreakdownRow]:
    """One invoice's lines, discount and tax broken down by the groups of `usage`."""
    held: dict[tuple[str, datetime], dict[Hashable, int]] = defaultdict(lambda: defaultdict(int))
    for item in usage:
        if item.unit_seconds:
            held[item.resource, item.line_start][item.key] += item.unit_seconds
    rows: dict[Hashable, BreakdownRow] = {}

    def row(key: Hashable) -> BreakdownRow:
        return rows.setdefault(key, BreakdownRow(key))

    for line in lines:
        if line.kind == "credit":
            row(CREDIT).credit += line.amount
            continue
        weights = held.get((line.resource, line.period_start), {})
        for key, share in apportion(line.amount, weights).items():
            row(key).usage += share
        for key, seconds in weights.items():
            row(key).unit_seconds += seconds
    for key, share in apportion(discount, {k: r.subtotal for k, r in rows.items()}).items():
        row(key).discount += share
    for key, share in apportion(
        tax, {k: r.subtotal + r.discount for k, r in rows.items()}
    ).items():
        row(key).tax += share
    return rows


class Piece(NamedTuple):
    """One group's part of one invoice line (a usage line's share, or a whole credit line),
    with its share of the discount: what a FOCUS row bills."""

    line: int  # the line's index in the invoice's lines
    key: Hashable
    amount: Decimal
    discount: Decimal
    unit_seconds: int


def line_pieces(
    *, lines: list[BilledLine], usage: Iterable[GroupUsage], discount: Decimal
) -> list[Piece]:
    """Each line shared out between the groups that held it (as `breakdown` shares it), and the
    discount shared out between all the pieces: their amounts and discounts add up to the
    invoice's subtotal and discount exactly (the tax, on the whole invoice, stays apart)."""
    held: dict[tuple[str, datetime], dict[Hashable, int]] = defaultdict(lambda: defaultdict(int))
    for item in usage:
        if item.unit_seconds:
            held[item.resource, item.line_start][item.key] += item.unit_seconds
    amounts: dict[tuple[int, Hashable], Decimal] = {}
    seconds: dict[tuple[int, Hashable], int] = {}
    for index, line in enumerate(lines):
        if line.kind == "credit":
            amounts[index, CREDIT] = line.amount
            continue
        weights = held.get((line.resource, line.period_start), {})
        for key, share in apportion(line.amount, weights).items():
            amounts[index, key] = share
            seconds[index, key] = weights.get(key, 0)
    discounts = apportion(discount, amounts)
    return [
        Piece(index, key, amount, discounts.get((index, key), Decimal("0.00")),
              seconds.get((index, key), 0))
        for (index, key), amount in amounts.items()
    ]
