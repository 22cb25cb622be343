"""The tenant pages' `grouped` filter writes every count as humanize's `intcomma` does."""

from decimal import Decimal

import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.template import engines

from tenants.templatetags.tenant_format import grouped


@pytest.mark.parametrize(
    "value",
    [
        0,
        7,
        999,
        1000,
        -1000,
        12345,
        1_000_000,
        -98_765_432,
        10**15,
        True,
        None,
        "",
        "abc",
        "12345",
        1234.5,
        Decimal("1234567.89"),
    ],
)
def test_grouped_writes_what_intcomma_writes(value):
    assert grouped(value) == intcomma(value)


def test_the_quota_bars_group_their_counts():
    html = (
        engines["django"]
        .from_string("{% load tenant_format %}{{ n|grouped }}")
        .render({"n": 2_500_000})
    )
    assert html == "2,500,000"
