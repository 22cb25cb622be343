"""The list rows' cheap formatting says exactly what Django's filters say."""

import datetime
import random

import pytest
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone
from django.utils.timesince import timesince

from portal.display import grouped, iso_date, time_since
from portal.paging import page_size_from, url_maker


def test_time_since_is_djangos_timesince():
    now = timezone.now()
    ago = time_since(now)
    rng = random.Random(13)
    seconds = [
        0,
        59,
        60,
        3599,
        3600,
        86399,
        86400,
        7 * 86400,
        28 * 86400 - 1,
        28 * 86400,
        400 * 86400,
        -30,
    ]
    seconds += [rng.randint(0, 60 * 86400) for _ in range(5000)]
    for s in seconds:
        value = now - datetime.timedelta(seconds=s, microseconds=rng.randint(0, 999_999))
        assert ago(value) == timesince(value, now), s
    assert ago(None) == ""


def test_grouped_and_iso_date():
    assert grouped(1234567) == "1,234,567" and grouped(12) == "12"
    assert iso_date(datetime.date(2026, 3, 4)) == "2026-03-04" and iso_date(None) == ""


@pytest.mark.parametrize(
    ("query", "size"),
    [
        ({}, 50),
        ({"page_size": "400"}, 400),
        ({"page_size": "9999"}, 400),
        ({"page_size": "-3"}, 1),
        ({"page_size": "ten"}, 50),
    ],
)
def test_page_size_from(query, size):
    assert page_size_from(RequestFactory().get("/", query), default=50, maximum=400) == size


def test_url_maker_builds_what_reverse_builds():
    detail = url_maker("tenants:workload-detail", "slug", "pk")
    assert detail("acme", 42) == reverse("tenants:workload-detail", args=["acme", 42])
    dashboard = url_maker("tenants:dashboard", "slug")
    assert dashboard("team-0001") == reverse("tenants:dashboard", args=["team-0001"])
