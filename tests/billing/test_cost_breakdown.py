"""Issue 35, part 4: cost by workload, by person and by label, priced as the invoices are.

Each month's rows share out the invoice's rounded lines, discount and tax, so every breakdown
adds up to the invoice total to the cent, whatever the rounding; usage of no workload, person
or label is an "unattributed" row, the downtime credit a row of its own."""

from datetime import date
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.calculations.breakdown import (
    CREDIT,
    UNATTRIBUTED,
    BilledLine,
    GroupUsage,
    apportion,
    breakdown,
    line_pieces,
)
from billing.services import invoicing
from billing.services.accounts import billing_account_update
from billing.services.cost_breakdown import By, cost_breakdown, month_range
from core.errors import RuleViolation

from .cost_data import H100, allocated, cost_month, cost_rates, people, utc, workload

JAN = date(2026, 1, 1)


# --- the arithmetic -----------------------------------------------------------------------------


def test_apportion_gives_the_leftover_cents_to_the_largest_remainders():
    # 10.00 in thirds: 3.33 each, and the cent left over to the first of the equal remainders.
    shares = apportion(Decimal("10.00"), {"a": 1, "b": 1, "c": 1})
    assert sum(shares.values()) == Decimal("10.00")
    assert sorted(shares.values()) == [Decimal("3.33"), Decimal("3.33"), Decimal("3.34")]


def test_apportion_of_a_negative_amount_and_of_nothing():
    assert apportion(Decimal("-0.05"), {"a": 2, "b": 1}) == {"a": Decimal("-0.03"),
                                                              "b": Decimal("-0.02")}
    assert apportion(Decimal("1.00"), {}) == {UNATTRIBUTED: Decimal("1.00")}
    assert apportion(Decimal("0.00"), {"a": 0}) == {}


def test_apportion_breaks_ties_by_key_whatever_order_the_weights_come_in():
    # The weights come from a query in no set order: the same invoice shares out the same.
    weights = {"b": 1, 7: 1, UNATTRIBUTED: 1, "a": 1, 3: 1, (0, "a"): 1}
    shares = apportion(Decimal("0.04"), weights)
    assert shares == apportion(Decimal("0.04"), dict(reversed(weights.items())))
    assert list(shares) == [UNATTRIBUTED, 3, 7, "a", "b", (0, "a")]
    assert [key for key, share in shares.items() if share] == [UNATTRIBUTED, 3, 7, "a"]


def test_line_pieces_are_the_same_whatever_order_the_usage_comes_in():
    start = utc(2026, 1, 1)
    lines = [BilledLine("usage", H100, start, Decimal("10.00")),
             BilledLine("usage", "gpu:b", start, Decimal("0.05")),
             BilledLine("credit", H100, start, Decimal("-1.00"))]
    usage = [GroupUsage(key, resource, start, 3600) for key in (9, 2, UNATTRIBUTED, 5)
             for resource in (H100, "gpu:b")]

    pieces = line_pieces(lines=lines, usage=usage, discount=Decimal("-0.07"))

    assert pieces == line_pieces(lines=lines, usage=usage[::-1], discount=Decimal("-0.07"))
    assert sum(piece.amount for piece in pieces) == Decimal("9.05")
    assert sum(piece.discount for piece in pieces) == Decimal("-0.07")


@given(
    amounts=st.lists(st.integers(min_value=0, max_value=10**7), min_size=1, max_size=4),
    seconds=st.lists(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1,
                              max_size=4), min_size=1, max_size=4),
    credit=st.integers(min_value=-10**5, max_value=0),
    discount=st.integers(min_value=-10**5, max_value=0),
    tax=st.integers(min_value=0, max_value=10**6),
)
def test_a_breakdown_always_adds_up_to_the_invoice(amounts, seconds, credit, discount, tax):
    start = utc(2026, 1, 1)
    lines = [BilledLine("usage", f"gpu:{i}", start, Decimal(cents) / 100)
             for i, cents in enumerate(amounts)]
    lines.append(BilledLine("credit", H100, start, Decimal(credit) / 100))
    usage = [GroupUsage(f"g{g}", f"gpu:{i}", start, held)
             for g, per_line in enumerate(seconds) for i, held in enumerate(per_line)]
    rows = breakdown(lines=lines, usage=usage, discount=Decimal(discount) / 100,
                     tax=Decimal(tax) / 100)
    total = sum(line.amount for line in lines) + Decimal(discount + tax) / 100
    assert sum(row.total for row in rows.values()) == total
    assert all(row.total == row.total.quantize(Decimal("0.01")) for row in rows.values())
    # Each group's usage is within a cent per line of its exact share.
    for key, row in rows.items():
        if key in (UNATTRIBUTED, CREDIT):
            continue
        exact = Fraction(0)
        for i, cents in enumerate(amounts):
            held = [per_line[i] if i < len(per_line) else 0 for per_line in seconds]
            if sum(held):
                g = int(key[1:])
                exact += Fraction(cents, 100) * held[g] / sum(held)
        assert abs(Fraction(row.usage) - exact) <= Fraction(len(amounts), 100)


# --- a tenant's month -----------------------------------------------------------------------------


@pytest.fixture
def rates(db):
    cost_rates()


@pytest.fixture
def january(tenant, rates):
    ada, bob = people()
    return cost_month(tenant, ada=ada, bob=bob)


@pytest.fixture
def discounted(tenant, settings, finance):
    settings.BILLING_TAX_PERCENT = Decimal("19")
    billing_account_update(actor=finance, tenant=tenant, discount_percent=Decimal("7.5"))


JANUARY = month_range(JAN, JAN)


@pytest.mark.parametrize("by", [By.WORKLOAD, By.PERSON, By.LABEL])
def test_each_breakdown_adds_up_to_the_invoice_total_to_the_cent(tenant, january, discounted,
                                                                  by):
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)
    assert invoice.lines.filter(kind="credit").exists() and invoice.discount < 0 < invoice.tax

    result = cost_breakdown(tenant=tenant, by=by, start=JANUARY[0], end=JANUARY[1])

    assert result.total == invoice.total
    assert sum(row.usage for row in result.rows) + sum(
        row.credit for row in result.rows) == invoice.subtotal
    assert sum(row.discount for row in result.rows) == invoice.discount
    assert sum(row.tax for row in result.rows) == invoice.tax
    assert result.invoiced_months == ["2026-01"] and result.computed_months == []
    kinds = {row.kind for row in result.rows}
    assert {"unattributed", "credit"} <= kinds


def test_the_rows_name_the_workloads_the_people_and_the_labels(tenant, january, discounted):
    start, end = JANUARY
    by_workload = {row.name: row for row in cost_breakdown(tenant=tenant, by=By.WORKLOAD,
                                                           start=start, end=end).rows}
    by_person = {row.name: row for row in cost_breakdown(tenant=tenant, by=By.PERSON,
                                                         start=start, end=end).rows}
    by_label = {row.name: row for row in cost_breakdown(tenant=tenant, by=By.LABEL,
                                                        start=start, end=end).rows}

    assert set(by_workload) == {"chat", "train", "evals", "orphan", "Unattributed",
                                "Downtime credit"}
    assert by_workload["chat"].key == str(january["chat"].pk)
    assert set(by_person) == {"Ada L", "bob", "Unattributed", "Downtime credit"}
    assert by_person["Ada L"].key == "ada"
    assert set(by_label) == {"support-bot", "llama ft", "Unattributed", "Downtime credit"}
    # Ada launched chat and train: her cost is theirs, give or take the cents shared out.
    both = by_workload["chat"].total + by_workload["train"].total
    assert abs(by_person["Ada L"].total - both) <= Decimal("0.05")
    assert by_workload["Downtime credit"].credit < 0


def test_a_month_without_an_invoice_is_computed_as_its_draft_would_be(tenant, january,
                                                                       discounted):
    start, end = JANUARY
    before = cost_breakdown(tenant=tenant, by=By.LABEL, start=start, end=end)
    assert before.computed_months == ["2026-01"]

    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    assert before.total == invoice.total
    after = cost_breakdown(tenant=tenant, by=By.LABEL, start=start, end=end)
    assert [(r.name, r.total) for r in after.rows] == [(r.name, r.total) for r in before.rows]


def test_an_issued_invoice_is_broken_down_as_billed_even_if_usage_changes_later(
    tenant, january, finance
):
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)
    invoicing.invoice_issue(invoice_id=invoice.pk, actor=finance, unmetered_reason="test data")
    # Late usage after the invoice was issued is not on it: the breakdown still adds up to it.
    allocated(tenant, january["chat"], utc(2026, 1, 30, 3), 3600)

    result = cost_breakdown(tenant=tenant, by=By.WORKLOAD, start=JANUARY[0], end=JANUARY[1])

    invoice.refresh_from_db()
    assert result.total == invoice.total


def test_a_range_ending_in_the_last_month_a_date_holds_is_refused_not_overflowed():
    assert month_range(date(9998, 12, 1), date(9998, 12, 1))[1] == utc(9999, 1, 1)
    with pytest.raises(RuleViolation):
        month_range(date(9999, 12, 1), date(9999, 12, 1))


def test_a_range_of_months_adds_up_each_months_invoice(tenant, january, rates):
    feb = allocated(tenant, january["chat"], utc(2026, 2, 3, 1), 5000)
    december = allocated(tenant, january["train"], utc(2025, 12, 31, 23), 3599)
    totals = [invoicing.invoice_compute(tenant=tenant, month=month).total
              for month in (date(2025, 12, 1), JAN, date(2026, 2, 1))]
    start, end = month_range(date(2025, 12, 1), date(2026, 2, 1))

    result = cost_breakdown(tenant=tenant, by=By.WORKLOAD, start=start, end=end)

    assert result.total == sum(totals)
    assert result.invoiced_months == ["2025-12", "2026-01", "2026-02"]
    assert feb.pk and december.pk


def test_another_tenants_usage_never_counts(tenant, other_tenant, january):
    stranger = workload(other_tenant, "chat", by=None, label="support-bot")
    allocated(other_tenant, stranger, utc(2026, 1, 5, 5), 3600)
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    result = cost_breakdown(tenant=tenant, by=By.WORKLOAD, start=JANUARY[0], end=JANUARY[1])

    assert result.total == invoice.total
    assert str(stranger.pk) not in {row.key for row in result.rows}


def test_a_label_spelled_like_a_special_row_stays_a_group_of_its_own(tenant, january):
    # A label may hold "_": one reading like the old special keys never merges into those rows.
    for label in ("__credit__", "__unattributed__"):
        allocated(tenant, workload(tenant, label, by=None, label=label), utc(2026, 1, 4, 4), 3600)
    invoice = invoicing.invoice_compute(tenant=tenant, month=JAN)

    result = cost_breakdown(tenant=tenant, by=By.LABEL, start=JANUARY[0], end=JANUARY[1])

    rows = {(row.kind, row.key): row for row in result.rows}
    assert {("group", "__credit__"), ("group", "__unattributed__"), ("credit", ""),
            ("unattributed", "")} <= set(rows)
    assert rows["group", "__credit__"].credit == 0 < rows["group", "__credit__"].usage
    assert rows["credit", ""].usage == 0 > rows["credit", ""].credit
    assert result.total == invoice.total
