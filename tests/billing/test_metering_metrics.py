"""/metrics says when metering last recorded an hour: the end of the latest done allocated
window (what invoices bill), absent before any."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from billing.models import MeteringWindow, UsageRecord, WindowStatus

pytestmark = pytest.mark.django_db
METRIC = re.compile(r"^portal_metering_last_hour_timestamp_seconds ([0-9.e+]+)$", re.MULTILINE)


def _scraped(client) -> float | None:
    response = client.get("/metrics")
    assert response.status_code == 200
    found = METRIC.search(response.content.decode())
    return None if found is None else float(found.group(1))


def test_metering_last_hour_is_the_end_of_the_latest_allocated_hour_metered(client):
    assert _scraped(client) is None
    hour = datetime(2026, 11, 30, 22, tzinfo=UTC)
    allocated, measured = UsageRecord.Source.ALLOCATED, UsageRecord.Source.MEASURED
    MeteringWindow.objects.create(source=allocated, hour=hour, status=WindowStatus.DONE)
    # Neither a gap nor another source's hour moves it on.
    MeteringWindow.objects.create(source=allocated, hour=hour + timedelta(hours=1),
                                  status=WindowStatus.GAP)
    MeteringWindow.objects.create(source=measured, hour=hour + timedelta(hours=2),
                                  status=WindowStatus.DONE)
    assert _scraped(client) == (hour + timedelta(hours=1)).timestamp()
